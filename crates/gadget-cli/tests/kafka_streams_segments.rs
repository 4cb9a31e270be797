//! A Kafka Streams window store's segments through the whole tool: generated with `open` and
//! `drop` requests, run against real stores (which drop the states), and compared with a trace
//! that lacks them, as a recording does.

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

/// A 5 s tumbling count without a cache over 3,000 events 100 ms apart: five minutes of
/// event time, so five 60 s segments open and four are dropped.
const WINDOWED: &str = r#"
engine = "kafka-streams"
seed = 7
[source]
type = "synthetic"
events = 3000
key_space = 40
[source.keys]
distribution = "uniform"
[source.gaps]
distribution = "constant"
value = 100
[operator]
type = "tumbling-count"
size = 5000
cache_bytes = 0
"#;

fn write_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("windowed.toml");
    std::fs::write(&path, WINDOWED).unwrap();
    path
}

fn run_json(config: &Path, store: &str, dir: &Path) -> serde_json::Value {
    let out = gadget()
        .arg("run")
        .arg(config)
        .args(["--store", store, "--json", "--dir"])
        .arg(dir.join(store))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{store}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ops(results: &serde_json::Value, op: &str) -> u64 {
    results["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .map_or(0, |o| o["ops"].as_u64().unwrap())
}

#[test]
fn segments_open_and_drop_in_real_stores_which_then_read_what_the_memory_store_reads() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let memory = run_json(&config, "memory", dir.path());
    assert_eq!(ops(&memory, "open"), 5 * 3, "five segments of three states");
    assert_eq!(ops(&memory, "drop"), 4 * 3, "four segments left behind");
    // without a cache every record but a window's first reads its count back
    let found = memory["reads_found"].as_u64().unwrap();
    assert!(found > 1_000, "{found} reads found");
    let rocksdb = run_json(&config, "rocksdb", dir.path());
    for key in ["reads_found", "reads_empty", "bytes_read", "requests"] {
        assert_eq!(rocksdb[key], memory[key], "{key}");
    }
    assert_eq!(ops(&rocksdb, "drop"), 12);
    // RocksDB drops a column family natively: not an emulated op
    let emulated = rocksdb["emulated_ops"].as_array().unwrap();
    assert!(!emulated.iter().any(|o| o == "drop"), "{emulated:?}");
}

#[test]
fn trace_diff_leaves_out_the_ops_a_recording_cannot_see_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let generated = dir.path().join("gadget.txt");
    let gen = gadget()
        .arg("gen")
        .arg(&config)
        .args(["--format", "text", "-o"])
        .arg(&generated)
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    // the same trace as the recorder would see it: every segment's states in the header, no
    // open, no drop
    let text = std::fs::read_to_string(&generated).unwrap();
    let mut removed = 0;
    let mut lines = Vec::new();
    let mut names = Vec::new();
    for line in text.lines() {
        if line.starts_with("open\t") || line.starts_with("drop\t") {
            removed += 1;
            if let Some(hex) = line
                .strip_prefix("open\t")
                .and_then(|l| l.split('\t').nth(1))
            {
                let bytes: Vec<u8> = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                names.push(String::from_utf8(bytes).unwrap());
            }
        } else if let Some(json) = line.strip_prefix("#footer\t") {
            let mut footer: serde_json::Value = serde_json::from_str(json).unwrap();
            footer["requests"] = (footer["requests"].as_u64().unwrap() - removed).into();
            let by_op = footer["requests_by_op"].as_object_mut().unwrap();
            by_op.remove("open");
            by_op.remove("drop");
            lines.push(format!("#footer\t{footer}"));
        } else {
            lines.push(line.to_string());
        }
    }
    assert_eq!(removed, 15 + 12);
    let header = lines
        .iter_mut()
        .find(|l| l.starts_with("#header\t"))
        .unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&header["#header\t".len()..]).unwrap();
    json["state_names"] = names.into();
    *header = format!("#header\t{json}");
    let unseen = dir.path().join("recorded.txt");
    std::fs::write(&unseen, lines.join("\n") + "\n").unwrap();

    let plain = gadget()
        .args(["trace", "diff"])
        .arg(&generated)
        .arg(&unseen)
        .output()
        .unwrap();
    assert!(!plain.status.success());
    let hint = String::from_utf8_lossy(&plain.stderr);
    assert!(hint.contains("--skip-ops open,drop"), "{hint}");
    let skipping = gadget()
        .args(["trace", "diff", "--skip-ops", "open,drop"])
        .arg(&generated)
        .arg(&unseen)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&skipping.stdout);
    assert!(
        skipping.status.success() && report.contains("identical request sequences"),
        "{report}"
    );
}
