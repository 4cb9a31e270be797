//! Ctrl-C for long commands: the first stops the work cleanly (partial results are kept,
//! marked partial); a second one exits at once. SIGTERM and SIGHUP count as Ctrl-C, so that
//! `timeout`, `kill` and job schedulers stop a run as cleanly.

use std::ops::ControlFlow;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exit status of a command stopped by Ctrl-C (128 + SIGINT), SIGTERM or SIGHUP, after its
/// partial results are written.
pub const INTERRUPTED: i32 = 130;

/// Installs the handler of Ctrl-C, SIGTERM and SIGHUP; the flag it sets on the first of them.
///
/// One interrupt can arrive twice (`timeout -s INT` signals the command and then its whole
/// process group), so a repeat within half a second counts as the same one; a later one
/// exits with [`INTERRUPTED`] at once.
pub fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = stop.clone();
    let mut first: Option<Instant> = None;
    let _ = ctrlc::set_handler(move || {
        let now = Instant::now();
        match first {
            None => {
                first = Some(now);
                handler_stop.store(true, Ordering::SeqCst);
            }
            Some(t) if now.duration_since(t) < Duration::from_millis(500) => {}
            Some(_) => std::process::exit(INTERRUPTED),
        }
    });
    stop
}

/// Whether long work should go on: `Break` once the flag of [`stop_flag`] is set.
pub fn go_on(stop: &AtomicBool) -> ControlFlow<()> {
    if stop.load(Ordering::Relaxed) {
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}

/// How often a wait for a child looks at the flag of [`stop_flag`].
const POLL: Duration = Duration::from_millis(50);

/// Waits for a child this command started, forwarding a stop to it as one SIGINT (so that it
/// stops cleanly: a run removes its store directory, a JVM runs its shutdown hooks); its exit
/// status.
pub fn wait_forwarding(mut child: Child, stop: &AtomicBool) -> std::io::Result<ExitStatus> {
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if stop.load(Ordering::Relaxed) && !forwarded {
            // SAFETY: kill(2) on our own child's pid, not yet reaped (try_wait above saw it
            // running), has no memory effects.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            forwarded = true;
        }
        std::thread::sleep(POLL);
    }
}
