//! What the recorder tests share: the tools they need, generating a config's trace, and
//! comparing traces with `gadget trace diff`.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

/// JVM options for the recorder tests' short runs: the C1 compiler only and the serial
/// collector take about half the CPU of the default JVM over a run of seconds (a Spark query:
/// 23 s of CPU instead of 43 s), and the recording is the same (which RocksDB calls an
/// engine makes does not depend on how its code is compiled).
pub const QUICK_JVM: &[&str] = &["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"];

/// Whether `tool -version` runs; with `CI=true` a missing tool fails the test.
pub fn have(tool: &str, test: &str) -> bool {
    let ok = Command::new(tool)
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{test}: `{tool}` is missing, but CI=true: .ci/run must install it");
        }
        eprintln!("skipping {test}: `{tool}` is not installed (scripts/setup.sh installs it)");
    }
    ok
}

/// Writes `config` to `work/config.toml` and generates its trace, `work/gadget.gtrace`, its
/// gets saying what they found (`--reads`); `what` names the setting in a failure.
pub fn generate(config: &str, work: &Path, what: &str) -> PathBuf {
    let path = work.join("config.toml");
    std::fs::write(&path, config).unwrap();
    let generated = work.join("gadget.gtrace");
    let gen = Command::cargo_bin("gadget")
        .unwrap()
        .arg("gen")
        .arg(&path)
        .arg("--reads")
        .arg("-o")
        .arg(&generated)
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&gen.stderr)
    );
    generated
}

/// `gadget trace diff [FLAGS] A B`: whether it passed, and its report.
pub fn trace_diff(a: &Path, b: &Path, flags: &[&str]) -> (bool, String) {
    let out = Command::cargo_bin("gadget")
        .unwrap()
        .args(["trace", "diff"])
        .args(flags)
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}
