//! Interrupting a running `gadget` as Ctrl-C does, for the tests of clean stops.

use std::ffi::OsStr;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Starts this build's `gadget` with `args`, its standard output and error captured.
pub fn spawn_gadget<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gadget starts")
}

/// Waits `after`, interrupts `child` the way `timeout -s INT` does (the command, then its
/// process group again: one interrupt to `gadget`, which counts a repeat within half a second
/// as the same one), and waits for it to exit; its output. Panics if it has not exited 30 s
/// later: an endless command that ignored the signal must not hang the test suite.
pub fn interrupt_and_wait(child: Child, after: Duration, what: &str) -> Output {
    signal_and_wait(
        child,
        after,
        "kill -INT {pid}; sleep 0.01; kill -INT {pid}",
        what,
    )
}

/// [`interrupt_and_wait`] with one SIGTERM, as `timeout` and `kill` send by default.
pub fn terminate_and_wait(child: Child, after: Duration, what: &str) -> Output {
    signal_and_wait(child, after, "kill -TERM {pid}", what)
}

/// Waits `after`, runs the shell `script` with `{pid}` replaced by the child's, and waits
/// for the child to exit (at most 30 s); its output.
fn signal_and_wait(mut child: Child, after: Duration, script: &str, what: &str) -> Output {
    std::thread::sleep(after);
    let script = script.replace("{pid}", &child.id().to_string());
    let status = Command::new("sh").args(["-c", &script]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{what} did not stop within 30 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
