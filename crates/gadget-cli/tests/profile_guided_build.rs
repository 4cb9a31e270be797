//! The profile-guided build (`make build-pgo`, `scripts/pgo.sh`) trains an instrumented
//! `gadget` on a set of bundled workloads. Building it takes about nine minutes, so this test
//! checks what would break it without building: every training run still works with this
//! build of the CLI (its subcommands, flags and example configs), at 1% of its requests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `scripts/pgo.sh --train-with gadget`: the training set alone, run by `gadget`.
fn train_with(gadget: &Path) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new("bash")
        .arg(root.join("scripts/pgo.sh"))
        .arg("--train-with")
        .arg(gadget)
        .output()
        .expect("bash runs scripts/pgo.sh")
}

#[test]
fn every_training_run_of_the_profile_guided_build_succeeds() {
    let out = train_with(&assert_cmd::cargo::cargo_bin("gadget"));
    assert!(
        out.status.success(),
        "a training run of scripts/pgo.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_training_set_fails_loudly_when_a_run_fails() {
    let out = train_with(Path::new("/bin/false"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pgo: training step failed: gadget gen examples/bench/"),
        "{stderr}"
    );
}
