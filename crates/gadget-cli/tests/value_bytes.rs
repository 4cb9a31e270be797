//! The values Gadget writes compress as real data does, not 20× as one repeated byte did: a
//! YCSB load into RocksDB (Snappy, its default compression) takes about records × value size
//! × the compression ratio on disk.

use std::path::Path;

use assert_cmd::Command;

/// Records loaded, each with YCSB's default value of 10 fields × 100 bytes.
const RECORDS: u64 = 20_000;
const VALUE_BYTES: u64 = 1000;

/// The bytes of RocksDB's table files under `dir`.
fn table_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in walk(dir) {
        if entry.extension().is_some_and(|e| e == "sst") {
            total += std::fs::metadata(&entry).unwrap().len();
        }
    }
    total
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Loads the YCSB records into RocksDB under `dir` with `extra` flags; the table bytes.
fn load(dir: &Path, extra: &[&str]) -> u64 {
    let workload = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ycsb/workloada.toml");
    let out = Command::cargo_bin("gadget")
        .unwrap()
        .args(["run", workload.to_str().unwrap(), "-p", "phase=load"])
        .args(["-p", &format!("recordcount={RECORDS}")])
        .args([
            "--store",
            "rocksdb",
            "--dir",
            dir.to_str().unwrap(),
            "--json",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results["requests"], RECORDS);
    table_bytes(dir)
}

fn assert_near(got: u64, expected: f64, what: &str) {
    let ratio = got as f64 / expected;
    assert!(
        (0.8..=1.2).contains(&ratio),
        "{what}: {got} bytes on disk, {ratio:.2} × the {expected} expected"
    );
}

#[test]
fn a_ycsb_load_takes_records_times_value_size_times_the_compression_ratio_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let raw = (RECORDS * VALUE_BYTES) as f64;
    let default = load(&dir.path().join("default"), &[]);
    assert_near(default, raw * 0.5, "the default ratio (0.5)");
    let incompressible = load(
        &dir.path().join("incompressible"),
        &["--value-compression-ratio", "1"],
    );
    assert_near(incompressible, raw, "incompressible values");
}
