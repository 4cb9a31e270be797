//! Where results go, as users get it wrong or lose it: an unwritable destination fails before
//! the run, an input is never written over, a full disk at the end leaves the results in a
//! fallback file, and the temporary files of a killed run are cleaned by the next one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod filesystem;
mod interrupt;

use filesystem::SmallFilesystem;
use interrupt::{endless_workload, spawn_gadget, terminate_and_wait, wait_bounded};

/// The longest a command here may take.
const LIMIT: Duration = Duration::from_secs(60);

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn an_unwritable_destination_fails_before_an_endless_run_starts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let missing = dir.path().join("no-such-dir/out");
    for (flag, path) in [
        ("-o", missing.clone()),
        ("--csv", missing.clone()),
        ("--hdr-log", missing.clone()),
        ("-o", dir.path().to_path_buf()),
    ] {
        // the workload never ends: only a check before the run lets the command return
        let child = spawn_gadget(["run", &s(&cfg), "--store", "memory", flag, &s(&path)]);
        let out = wait_bounded(child, LIMIT, &format!("run {flag} {}", path.display()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{flag} {}: cannot write there, so the run does not start",
                path.display()
            )),
            "{stderr}"
        );
    }
}

#[test]
fn no_command_writes_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let before = std::fs::read(&cfg).unwrap();
    let trace = dir.path().join("t.gtrace");
    let gen = |args: &[&str]| {
        Command::new(assert_cmd::cargo::cargo_bin("gadget"))
            .args(args)
            .output()
            .unwrap()
    };
    assert!(gen(&["gen", &s(&cfg), "--limit", "1000", "-o", &s(&trace)])
        .status
        .success());
    // the same file by another name
    let other_name = format!(
        "{}/../{}/workload.toml",
        s(dir.path()),
        dir.path().file_name().unwrap().to_str().unwrap()
    );
    for args in [
        vec!["gen", &s(&cfg), "--limit", "10", "-o", &other_name],
        vec![
            "run",
            &s(&cfg),
            "--limit",
            "10",
            "--store",
            "memory",
            "--csv",
            &s(&cfg),
        ],
        vec![
            "replay",
            &s(&trace),
            "--store",
            "memory",
            "--hdr-log",
            &s(&trace),
        ],
        vec![
            "trace",
            "convert",
            &s(&trace),
            "-o",
            &s(&trace),
            "--format",
            "text",
        ],
        vec!["analyze", &s(&trace), "--report", &s(&trace)],
    ] {
        let out = gen(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("is also an input"), "{args:?}: {stderr}");
    }
    assert_eq!(
        std::fs::read(&cfg).unwrap(),
        before,
        "the config is untouched"
    );
}

#[test]
fn a_killed_runs_temporary_file_is_removed_by_the_next_run_there() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let out = dir.path().join("t.gtrace");
    let temporaries = || -> Vec<PathBuf> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "tmp"))
            .collect()
    };
    // an endless generation, killed as the OOM killer or `kill -9` would
    let mut child = spawn_gadget(["gen", &s(&cfg), "-o", &s(&out), "--limit", "1000000000000"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while temporaries().is_empty() {
        assert!(Instant::now() < deadline, "gen made no temporary file");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = temporaries();
    assert_eq!(left.len(), 1, "SIGKILL leaves the temporary file: {left:?}");
    let next = Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args(["gen", &s(&cfg), "--limit", "100", "-o", &s(&out)])
        .output()
        .unwrap();
    assert!(next.status.success());
    assert!(
        temporaries().is_empty(),
        "{:?} is still there",
        temporaries()
    );
    assert!(out.exists());
}

#[test]
fn a_disk_full_at_the_end_prints_the_summary_and_keeps_the_results_in_a_fallback_file() {
    let Some(fs) = SmallFilesystem::mount(512, "disk full at the end") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let results = fs.path().join("r.json");
    let csv = fs.path().join("r.csv");
    let child = spawn_gadget([
        "run",
        &s(&cfg),
        "--store",
        "memory",
        "--arrival",
        "constant",
        "--rate",
        "20000",
        "-o",
        &s(&results),
        "--csv",
        &s(&csv),
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    fs.fill();
    let out = terminate_and_wait(child, Duration::ZERO, "a run on a full disk");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("latency (completion - intended start)"),
        "the summary is printed: {stdout}"
    );
    for (path, content) in [(&results, "\"partial\": true"), (&csv, "# PARTIAL")] {
        let said = format!("cannot write {}: ", path.display());
        let line = stderr
            .lines()
            .find(|l| l.contains(&said))
            .unwrap_or_else(|| panic!("{said:?} missing from {stderr}"));
        let fallback = line
            .split("its content is in ")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(" instead"))
            .unwrap_or_else(|| panic!("no fallback named in {line:?}"));
        let kept = std::fs::read_to_string(fallback).expect("the fallback file is written");
        assert!(kept.contains(content), "{kept}");
        std::fs::remove_file(fallback).unwrap();
    }
}
