//! Running `ip` and `tc`, waiting for processes with a stop flag, reading their logs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::RemoteError;

/// How long one poll of [`poll`] sleeps: well within the 100 ms in which a stop is honoured.
const POLL_PAUSE: Duration = Duration::from_millis(20);

/// Runs `program args…` (`ip` or `tc`) to completion and returns its standard output. A
/// missing program is [`RemoteError::ToolMissing`], a refusal for lack of privileges
/// [`RemoteError::NeedsRoot`], any other failure [`RemoteError::Command`] with `hint`.
pub(crate) fn run(
    program: &'static str,
    args: &[&str],
    hint: &'static str,
) -> Result<String, RemoteError> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => RemoteError::ToolMissing { tool: program },
            _ => RemoteError::io(format!("cannot run `{program}`"), e),
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    let command = format!("{program} {}", args.join(" "));
    if stderr.contains("Operation not permitted") || stderr.contains("Permission denied") {
        return Err(RemoteError::NeedsRoot {
            detail: format!("`{command}` said: {stderr}"),
        });
    }
    Err(RemoteError::Command {
        command,
        message: format!("{}: {stderr}", output.status),
        hint,
    })
}

/// Runs `program args…` and ignores how it ends: for removing what may already be gone.
pub(crate) fn run_quietly(program: &str, args: &[&str]) {
    let _ = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Calls `attempt` until it is ready (`Ok(Ok(value))`), fails (`Err`), `timeout` passes
/// ([`RemoteError::Timeout`] with the last `Ok(Err(detail))`) or `stop` is raised
/// ([`RemoteError::Stopped`]). Each attempt must return within tens of milliseconds.
pub(crate) fn poll<T>(
    what: &'static str,
    stop: &AtomicBool,
    timeout: Duration,
    mut attempt: impl FnMut() -> Result<Result<T, String>, RemoteError>,
) -> Result<T, RemoteError> {
    let start = Instant::now();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(RemoteError::Stopped);
        }
        match attempt()? {
            Ok(value) => return Ok(value),
            Err(detail) if start.elapsed() >= timeout => {
                return Err(RemoteError::Timeout {
                    what,
                    waited: timeout,
                    detail,
                })
            }
            Err(_) => std::thread::sleep(POLL_PAUSE),
        }
    }
}

/// The last 2000 bytes of a log file, or a note that there is none.
pub(crate) fn log_tail(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let tail = &bytes[bytes.len().saturating_sub(2000)..];
            let text = String::from_utf8_lossy(tail).trim().to_string();
            if text.is_empty() {
                "(nothing)".to_string()
            } else {
                text
            }
        }
        Err(e) => format!("(no log: {e})"),
    }
}

/// Whether a process with this id is alive (not a zombie) on this machine.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // the state follows the command name in parentheses: `123 (redis-server) S …`
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_stop_flag_ends_a_wait_within_100_ms() {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let raise = stop.clone();
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            raise.store(true, Ordering::Relaxed);
        });
        let waited = poll("nothing", &stop, Duration::from_secs(60), || {
            Ok(Err::<(), _>("not yet".to_string()))
        });
        raiser.join().unwrap();
        // without the stop flag it would have waited a minute and timed out
        assert!(matches!(waited, Err(RemoteError::Stopped)), "{waited:?}");
    }

    #[test]
    fn a_wait_that_times_out_says_what_it_waited_for_and_the_last_error() {
        let stop = AtomicBool::new(false);
        let waited = poll("the thing", &stop, Duration::ZERO, || {
            Ok(Err::<(), _>("connection refused".to_string()))
        });
        let message = waited.unwrap_err().to_string();
        assert!(message.contains("the thing did not answer"), "{message}");
        assert!(message.contains("connection refused"), "{message}");
    }
}
