//! Results say what ran: command line, start time, build, workloads, store settings and
//! library, machine and label; `compare` names runs by label and warns when they differ in
//! more than the setting compared.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs YCSB C (1,000 records, 1,000 reads) on `store` with `extra` flags, writing `out`.
fn run(out: &Path, store: &str, extra: &[&str]) -> serde_json::Value {
    let cfg = project_root().join("examples/ycsb/workloadc.toml");
    let done = gadget()
        .args(["run", cfg.to_str().unwrap(), "--store", store, "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap()
}

#[test]
fn results_say_what_ran() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let r = run(
        &dir.path().join("r.json"),
        "rocksdb",
        &[
            "--label",
            "baseline",
            "--write-buffer-mb",
            "8",
            "--dir",
            store_dir.to_str().unwrap(),
        ],
    );
    let c = &r["context"];
    assert_eq!(c["label"], "baseline");
    assert!(c["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "--write-buffer-mb"));
    assert!(c["started_at"].as_str().unwrap().ends_with('Z'));
    let w = &c["workloads"][0];
    assert_eq!(w["kind"], "config");
    assert!(w["path"].as_str().unwrap().ends_with("workloadc.toml"));
    assert!(w["config"].as_str().unwrap().contains("readproportion = 1"));
    assert_eq!(w["seed"], 1);
    assert_eq!(w["states"], serde_json::json!(["usertable"]));
    assert_eq!(
        c["store_settings"]["write_buffer_bytes"],
        (8u64 << 20).to_string()
    );
    assert_eq!(c["store_settings"]["wal"], "false");
    // the default library: Flink 1.x's frocksdb, its version as the library itself says
    assert_eq!(c["store_settings"]["library"], "flink-1.20");
    assert_eq!(c["store_settings"]["rocksdb_version"], "6.20.3");
    assert_eq!(c["store_settings"]["compression"], "kSnappyCompression");
    let libraries = c["store_libraries"].as_array().unwrap();
    assert_eq!(libraries.len(), 1, "{c}");
    let library = libraries[0].as_str().unwrap();
    assert!(
        library.starts_with(
            "flink-1.20: RocksDB 6.20.3 from com.ververica:frocksdbjni:6.20.3-ververica-2.0 at /"
        ),
        "{library}"
    );
    if Path::new("/proc/meminfo").exists() {
        assert!(c["host"]["memory_bytes"].as_u64().unwrap() > 0);
        assert!(c["host"]["cpus"].as_u64().unwrap() >= 1);
        assert!(c["host"]["store_filesystem"].is_string(), "{c}");
    }
    assert!(
        c["gadget_commit"].is_string(),
        "built from this git checkout: {c}"
    );
    assert_eq!(r["value_compression_ratio"], 0.5);
}

#[test]
fn compare_names_runs_by_label_and_warns_when_they_differ_in_more_than_one_setting() {
    let dir = tempfile::tempdir().unwrap();
    for d in ["a", "b", "c"] {
        std::fs::create_dir(dir.path().join(d)).unwrap();
    }
    let a = dir.path().join("a/results.json");
    let b = dir.path().join("b/results.json");
    let c = dir.path().join("c/results.json");
    run(&a, "memory", &["--label", "in memory"]);
    run(&b, "rocksdb", &["--label", "on rocksdb"]);
    run(&c, "rocksdb", &["--value-compression-ratio", "1"]);

    let one_change = gadget().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert!(one_change.status.success());
    let table = String::from_utf8_lossy(&one_change.stdout);
    assert!(
        table.contains("in memory") && table.contains("on rocksdb"),
        "{table}"
    );
    let warned = String::from_utf8_lossy(&one_change.stderr);
    assert!(!warned.contains("differ in more"), "{warned}");

    let two_changes = gadget().arg("compare").arg(&a).arg(&c).output().unwrap();
    assert!(two_changes.status.success());
    let warned = String::from_utf8_lossy(&two_changes.stderr);
    assert!(
        warned.contains("differ in more than one setting (store, ")
            && warned.contains("value compressibility"),
        "{warned}"
    );
}
