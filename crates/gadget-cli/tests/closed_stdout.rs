//! Every command with its standard output closed by the reader (`gadget … | head -1`, `| true`):
//! no panic, the status of a quiet stop (0, or 141 as SIGPIPE gives), and the files it was
//! asked to write still written.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod interrupt;

use interrupt::{endless_workload, wait_bounded};

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// Runs gadget with `args` and its standard output a pipe whose reader has gone; the exit
/// status and standard error.
fn with_closed_stdout(args: &[String]) -> (Option<i32>, String) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = wait_bounded(child, Duration::from_secs(60), &format!("{args:?}"));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_command_ends_quietly_when_its_reader_closes_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let trace = dir.path().join("t.gtrace");
    let text = dir.path().join("t.txt");
    let report = dir.path().join("report.html");
    let results = dir.path().join("r.json");
    let (c, t, x, r, o) = (s(&cfg), s(&trace), s(&text), s(&report), s(&results));
    let commands: Vec<Vec<&str>> = vec![
        vec!["gen", &c, "--limit", "20000", "-o", &t],
        vec!["gen", &c, "--limit", "200000", "-o", "-"],
        vec!["gen", &c, "--limit", "20000", "-o", &t, "--json"],
        vec!["trace", "convert", &t, "-o", &x, "--format", "text"],
        vec!["trace", "diff", &t, &x],
        vec!["run", &c, "--limit", "20000", "--store", "memory", "-o", &o],
        vec!["replay", &t, "--store", "memory", "--json"],
        vec!["analyze", &t, "--report", &r],
        vec!["compare", &t, &x],
        vec!["--help"],
    ];
    for args in commands {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        let (code, stderr) = with_closed_stdout(&args);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            matches!(code, Some(0) | Some(141)),
            "{args:?}: exit {code:?}: {stderr}"
        );
    }
    for written in [&trace, &text, &results, &report] {
        assert!(written.exists(), "{} was not written", written.display());
    }
}
