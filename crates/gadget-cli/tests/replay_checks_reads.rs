//! `gadget gen --reads` writes into each get what it finds, and `gadget replay --check-reads`
//! holds a store to it: it passes when the store finds the same, fails at the first get that
//! does not (naming the request, state and key), and refuses a trace whose gets say nothing.
//! `gadget trace diff --reads` holds two traces of the same requests to the same answers.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

#[path = "../../gadget/tests/common.rs"]
mod common;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

/// The synthetic session workload (merges, late firings), its first `limit` requests, as a
/// text trace whose gets say what they found.
fn sessions(dir: &Path, limit: &str) -> PathBuf {
    let out = dir.join("sessions.txt");
    gadget()
        .arg("gen")
        .arg(common::project_root().join("examples/synthetic/session-out-of-order.toml"))
        .args(["--reads", "--format", "text", "--limit", limit, "-o"])
        .arg(&out)
        .assert()
        .success();
    out
}

#[test]
fn every_get_of_a_generated_trace_finds_what_it_says_in_an_embedded_store() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sessions(dir.path(), "20000");
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text
        .lines()
        .any(|l| l.starts_with("get\t") && l.ends_with("\t-1")));
    assert!(text
        .lines()
        .any(|l| l.starts_with("get\t") && l.rsplit('\t').next().unwrap().parse::<u32>().is_ok()));
    for store in ["memory", "rocksdb", "lmdb"] {
        let out = gadget()
            .args(["replay", "--check-reads", "--json", "--store", store])
            .arg(&trace)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{store}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &json[0];
        assert_eq!(c["store"], store);
        assert_eq!(c["requests"], 20000);
        assert!(c["gets"].as_u64().unwrap() > 1000, "{json}");
        assert_eq!(c["checked"], c["gets"]);
        assert!(c["found"].as_u64().unwrap() > 0 && c["found_nothing"].as_u64().unwrap() > 0);
    }
}

#[test]
fn a_get_that_finds_other_than_its_trace_says_fails_naming_the_request_state_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sessions(dir.path(), "5000");
    let text = std::fs::read_to_string(&trace).unwrap();
    // the first get that found a value now says it found one byte more
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("get\t") && !l.ends_with("\t-1") && !l.ends_with("\t?"))
        .expect("a get that found a value");
    let fields: Vec<&str> = lines[at].split('\t').collect();
    let len: u32 = fields[3].parse().unwrap();
    let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    edited[at] = format!("get\t{}\t{}\t{}", fields[1], fields[2], len + 1);
    let request = lines[..at].iter().filter(|l| !l.starts_with('#')).count();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, edited.join("\n") + "\n").unwrap();
    gadget()
        .args(["replay", "--check-reads", "--store", "rocksdb"])
        .arg(&bad)
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "request #{request} (a get of state {}, key {})",
            fields[1], fields[2]
        )))
        .stderr(predicate::str::contains(format!(
            "found {len} bytes in the rocksdb store; the trace says it found {} bytes",
            len + 1
        )));
}

#[test]
fn a_trace_whose_gets_say_nothing_is_refused_rather_than_passed() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.gtrace");
    gadget()
        .arg("gen")
        .arg(common::project_root().join("examples/synthetic/session-out-of-order.toml"))
        .args(["--limit", "2000", "-o"])
        .arg(&trace)
        .assert()
        .success();
    gadget()
        .args(["replay", "--check-reads"])
        .arg(&trace)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "say nothing about what they found",
        ))
        .stderr(predicate::str::contains("gadget gen --reads"));
}

#[test]
fn checking_reads_measures_nothing_so_the_measuring_flags_are_refused() {
    for flags in [
        &["--rate", "1000"][..],
        &["-o", "r.json"],
        &["--instances", "2"],
    ] {
        gadget()
            .args(["replay", "--check-reads", "t.gtrace"])
            .args(flags)
            .assert()
            .failure()
            .stderr(predicate::str::contains("cannot be used with"));
    }
}

#[test]
fn every_get_of_a_flink_reference_recording_finds_what_flink_found_in_rocksdb() {
    let Some(shared) = common::shared_dir("reads of the Flink reference recordings") else {
        return;
    };
    let recording = shared.join("reference-traces/flink-1.20/session-hol.tsv.gz");
    gadget()
        .args(["replay", "--check-reads", "--store", "rocksdb"])
        .arg(&recording)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "153318 requests, 56152 gets; 56152 found what the trace says (41997 a value, \
             14155 nothing)",
        ));
}

/// The synthetic session workload's first 60,000 requests (the first sessions fire, reading
/// their elements, after about 49,000) with `element_size` bytes per element, its gets saying
/// what they found.
fn sessions_of(dir: &Path, element_size: u32) -> PathBuf {
    let text = std::fs::read_to_string(
        common::project_root().join("examples/synthetic/session-out-of-order.toml"),
    )
    .unwrap()
    .replace(
        "[operator]\n",
        &format!("[operator]\nelement_size = {element_size}\n"),
    );
    let config = dir.join(format!("sessions-{element_size}.toml"));
    std::fs::write(&config, text).unwrap();
    let out = dir.join(format!("sessions-{element_size}.gtrace"));
    gadget()
        .arg("gen")
        .arg(&config)
        .args(["--reads", "--limit", "60000", "-o"])
        .arg(&out)
        .assert()
        .success();
    out
}

#[test]
fn trace_diff_with_reads_names_the_first_get_that_found_otherwise_in_the_same_requests() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (sessions_of(dir.path(), 24), sessions_of(dir.path(), 40));
    // the same requests, and the same answers to them
    gadget()
        .args(["trace", "diff", "--reads"])
        .arg(&a)
        .arg(&a)
        .assert()
        .success()
        .stdout(predicate::str::contains("identical request sequences"))
        .stdout(predicate::str::contains("gets found the same"));
    // without --reads, what the gets found is not compared
    gadget()
        .args(["trace", "diff"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success();
    let out = gadget()
        .args(["trace", "diff", "--reads", "--json"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["identical"], true);
    let first = &json["reads"]["first_difference"];
    assert!(
        first["request"].as_str().unwrap().starts_with("get "),
        "{json}"
    );
    assert_eq!(first["a"], "24 bytes", "{json}");
    assert_eq!(first["b"], "40 bytes", "{json}");
}
