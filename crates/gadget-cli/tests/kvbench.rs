//! KVBench workloads through the `gadget` command: generated and replayed on real stores.

use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn example(n: u32) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../examples/kvbench/kvbench-{n}.toml"))
        .to_str()
        .unwrap()
        .to_string()
}

/// A small copy of a bundled preset (2000 operations instead of 100000).
fn small_preset(dir: &std::path::Path, n: u32) -> PathBuf {
    let text = std::fs::read_to_string(example(n))
        .unwrap()
        .replace("operations = 100000", "operations = 2000");
    assert!(text.contains("operations = 2000"));
    let path = dir.join(format!("kvbench-{n}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn kvbench_presets_generate_deterministically_and_replay_on_memory_and_rocksdb() {
    let dir = tempfile::tempdir().unwrap();
    // II interleaves inserts, deletes, queries and updates; IV range-deletes a preload: 2000
    // preloaded puts, then 1000 updates and 1000 range deletes of one request each.
    for (preset, requests) in [(2, 2000), (4, 2000 + 1000 + 1000)] {
        let config = small_preset(dir.path(), preset);
        let t1 = dir.path().join(format!("{preset}a.gtrace"));
        let t2 = dir.path().join(format!("{preset}b.gtrace"));
        for t in [&t1, &t2] {
            gadget()
                .args(["gen", config.to_str().unwrap(), "-o", t.to_str().unwrap()])
                .assert()
                .success()
                .stdout(predicate::str::contains("(kvbench, seed 1)"));
        }
        assert_eq!(std::fs::read(&t1).unwrap(), std::fs::read(&t2).unwrap());
        for store in ["memory", "rocksdb"] {
            gadget()
                .args(["replay", t1.to_str().unwrap(), "--store", store])
                .assert()
                .success()
                .stdout(predicate::str::contains(format!(
                    "store {store}, closed loop: {requests} requests"
                )));
        }
    }
}

#[test]
fn kvbench_ii_counts_its_operations() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_preset(dir.path(), 2);
    let out = dir.path().join("t.gtrace");
    let assert = gadget()
        .args([
            "gen",
            config.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--json",
        ])
        .assert()
        .success();
    let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(json["operator"], "kvbench");
    assert_eq!(json["events"], 2000, "one event per KVBench operation");
    assert_eq!(
        json["requests_by_op"]["put"], 1500,
        "inserts and updates: {json}"
    );
    assert_eq!(json["requests_by_op"]["delete"], 200, "{json}");
    assert_eq!(json["requests_by_op"]["get"], 300, "{json}");
}

#[test]
fn a_kvbench_preset_runs_online() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_preset(dir.path(), 3);
    gadget()
        .args(["run", config.to_str().unwrap(), "--store", "memory"])
        .args(["--arrival", "poisson", "--rate", "200000"])
        .assert()
        .success()
        .stdout(predicate::str::contains("4000 requests"));
}

#[test]
fn range_deletes_are_native_on_rocksdb_and_reported_emulated_on_leveldb() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_preset(dir.path(), 4);
    let trace = dir.path().join("iv.gtrace");
    gadget()
        .args([
            "gen",
            config.to_str().unwrap(),
            "-o",
            trace.to_str().unwrap(),
        ])
        .assert()
        .success();
    for (store, emulated) in [("rocksdb", false), ("leveldb", true)] {
        let assert = gadget()
            .args([
                "replay",
                trace.to_str().unwrap(),
                "--store",
                store,
                "--json",
            ])
            .assert()
            .success();
        let json: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
        let ops: Vec<&str> = json["emulated_ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(ops.contains(&"range_delete"), emulated, "{store}: {ops:?}");
        assert_eq!(json["requests"], 4000, "{json}");
    }
}
