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
pub fn interrupt_and_wait(mut child: Child, after: Duration, what: &str) -> Output {
    std::thread::sleep(after);
    let pid = child.id();
    let status = Command::new("sh")
        .args([
            "-c",
            &format!("kill -INT {pid}; sleep 0.01; kill -INT {pid}"),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{what} did not stop within 30 s of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
