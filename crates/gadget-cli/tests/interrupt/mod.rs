//! Starting `gadget`, interrupting it as Ctrl-C does and waiting for it with a bound, for the
//! tests of clean stops and failures. Each test uses part of it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
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
fn signal_and_wait(child: Child, after: Duration, script: &str, what: &str) -> Output {
    std::thread::sleep(after);
    let script = script.replace("{pid}", &child.id().to_string());
    let status = Command::new("sh").args(["-c", &script]).status().unwrap();
    assert!(status.success());
    wait_bounded(
        child,
        Duration::from_secs(30),
        &format!("{what}, signalled,"),
    )
}

/// Waits at most `limit` for `child` to exit; its output. Panics (after killing it) if it
/// has not: a command that hangs must fail its test, not hang the suite.
pub fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Writes `workload.toml` in `dir`: a synthetic tumbling window whose stream never ends, for
/// runs that only a signal, a failure or `--limit` stops; its path.
pub fn endless_workload(dir: &Path) -> PathBuf {
    endless_window(dir, 200, 20, 100, "incremental")
}

/// Writes `workload.toml` in `dir`: an endless tumbling window of `size` ms with the
/// `function` (incremental or holistic) over `key_space` uniform keys, a watermark every
/// `every` events; its path.
pub fn endless_window(
    dir: &Path,
    key_space: u64,
    every: u64,
    size: u64,
    function: &str,
) -> PathBuf {
    let path = dir.join("workload.toml");
    std::fs::write(
        &path,
        format!(
            "seed = 5\n[source]\ntype = \"synthetic\"\nkey_space = {key_space}\n\
             [source.keys]\ndistribution = \"uniform\"\n\
             [source.gaps]\ndistribution = \"exponential\"\nrate = 1.0\n\
             [source.watermarks]\ntype = \"punctuated\"\nevery = {every}\n\
             [operator]\ntype = \"tumbling\"\nsize = {size}\nfunction = \"{function}\"\n"
        ),
    )
    .unwrap();
    path
}
