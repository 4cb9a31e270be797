//! YCSB workloads through the `gadget` command: generated, replayed and run like any workload.

use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(w: &str) -> String {
    project_root()
        .join(format!("examples/ycsb/workload{w}.toml"))
        .to_str()
        .unwrap()
        .to_string()
}

fn ycsb_file(w: &str) -> String {
    project_root()
        .join(format!("crates/gadget/tests/data/ycsb/workload{w}"))
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_generated_ycsb_trace_is_deterministic_and_replays_on_rocksdb() {
    let dir = tempfile::tempdir().unwrap();
    let t1 = dir.path().join("a1.gtrace");
    let t2 = dir.path().join("a2.gtrace");
    for t in [&t1, &t2] {
        gadget()
            .args(["gen", &example("a"), "-o", t.to_str().unwrap()])
            .assert()
            .success()
            .stdout(predicate::str::contains("(ycsb, seed 1)"))
            .stdout(predicate::str::contains("usertable"));
    }
    assert_eq!(std::fs::read(&t1).unwrap(), std::fs::read(&t2).unwrap());
    gadget()
        .args(["replay", t1.to_str().unwrap(), "--store", "rocksdb"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "store rocksdb, closed loop: 2000 requests",
        ));
}

#[test]
fn ycsbs_own_workload_files_take_p_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.gtrace");
    let assert = gadget()
        .args([
            "gen",
            &ycsb_file("c"),
            "-o",
            out.to_str().unwrap(),
            "--json",
        ])
        .args(["-p", "recordcount=300", "-p", "operationcount=700"])
        .assert()
        .success();
    let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(json["operator"], "ycsb");
    assert_eq!(json["requests"], 1000, "{json}");
    assert_eq!(json["events"], 1000, "one event per YCSB operation");
    assert_eq!(json["requests_by_op"]["get"], 700, "{json}");
    assert_eq!(json["requests_by_op"]["put"], 300, "{json}");

    gadget()
        .args(["gen", &ycsb_file("c"), "-o", out.to_str().unwrap()])
        .args(["-p", "requestdistribution=gaussian"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "-p requestdistribution: `gaussian` is not allowed; use one of: uniform, zipfian",
        ));
    gadget()
        .args(["gen", &ycsb_file("c"), "-o", out.to_str().unwrap()])
        .args(["-p", "rocksdb.dir=/tmp/x"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "-p rocksdb.dir: unknown YCSB property",
        ));
}

#[test]
fn ycsb_workloads_run_with_every_arrival_process() {
    for (arrival, extra) in [
        ("closed", vec![]),
        ("constant", vec!["--rate", "200000"]),
        ("poisson", vec!["--rate", "200000"]),
        ("b-model", vec!["--rate", "200000"]),
        ("diurnal", vec!["--rate", "200000"]),
        ("event-time", vec!["--speed", "1000"]),
    ] {
        gadget()
            .args(["run", &example("d"), "--store", "memory"])
            .args(["--arrival", arrival])
            .args(extra)
            .args(["-p", "recordcount=200", "-p", "operationcount=300"])
            .assert()
            .success()
            .stdout(predicate::str::contains("500 requests"));
    }
}
