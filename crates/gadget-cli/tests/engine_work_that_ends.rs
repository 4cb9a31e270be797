//! Engine configs whose work could run away end it, or are refused at their line: a Kafka
//! Streams record in 86 million hopping windows, names no trace reader takes, a Spark query
//! whose state stores RocksDB opens one at a time; and `gen` stops inside a record's long
//! work at Ctrl-C, its trace marked interrupted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

mod interrupt;

use interrupt::{spawn_gadget, wait_bounded};

/// Writes `name` in `dir`: a Kafka Streams hopping count of 1-day windows advancing every
/// `advance` ms over synthetic records a bit more than a day apart (so each falls in
/// 86,400,000 / `advance` windows), with `extra` lines in `[operator]`; its path.
fn hopping_count(dir: &Path, name: &str, advance: i64, extra: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "engine = \"kafka-streams\"\nseed = 1\n[source]\ntype = \"synthetic\"\n\
             events = 1000000\nkey_space = 10\n[source.keys]\ndistribution = \"uniform\"\n\
             [source.gaps]\ndistribution = \"constant\"\nvalue = 90000000\n[operator]\n\
             type = \"hopping-count\"\nsize = 86400000\nadvance = {advance}\n{extra}"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_hopping_count_putting_a_record_into_86_million_windows_is_refused_at_its_advance() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = hopping_count(dir.path(), "hop.toml", 1, "");
    let out = dir.path().join("t.gtrace");
    let child = spawn_gadget([
        "gen",
        cfg.to_str().unwrap(),
        "--limit",
        "1000",
        "-o",
        out.to_str().unwrap(),
    ]);
    // it used to generate for minutes (86.4 million windows a record)
    let done = wait_bounded(child, Duration::from_secs(20), "gen of 86 million windows");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success(), "{stderr}");
    assert!(
        stderr.contains("hop.toml:15: `operator.advance`")
            && stderr.contains("86400000 windows; at most 100000 are allowed"),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn ctrl_c_inside_a_record_in_100000_windows_ends_gen_at_once_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    // the most windows a record may fall in, each a cache write: seconds a record (debug)
    let cfg = hopping_count(dir.path(), "hop.toml", 864, "cache_bytes = 0\n");
    let out = dir.path().join("t.gtrace");
    let child = spawn_gadget(["gen", cfg.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let signalled = Instant::now();
    // the stop used to be looked at every 65,536 records: hours here
    let done = wait_bounded(
        child,
        Duration::from_secs(30),
        "gen interrupted in a record",
    );
    let waited = signalled.elapsed();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{stderr}");
    assert!(waited < Duration::from_secs(5), "{waited:?} after Ctrl-C");
    assert!(stderr.contains("interrupted:"), "{stderr}");
    let mut reader = gadget::trace::open_trace(&out).unwrap();
    let mut requests = 0u64;
    while let Some(r) = reader.next_record().unwrap() {
        requests += u64::from(matches!(r, gadget::trace::RecordRef::Access(_)));
    }
    assert!(requests > 0);
    let footer = reader.footer().expect("a finished trace has its footer");
    assert!(footer.truncated, "{footer:?}");
    assert_eq!(footer.extra["interrupted"], true, "{footer:?}");
}

#[test]
fn the_limit_cuts_a_record_in_100000_windows_at_exactly_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = hopping_count(dir.path(), "hop.toml", 864, "cache_bytes = 0\n");
    let out = dir.path().join("t.gtrace");
    let child = spawn_gadget([
        "gen",
        cfg.to_str().unwrap(),
        "--limit",
        "1000",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    let done = wait_bounded(child, Duration::from_secs(20), "gen with a limit");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(json["requests"], 1000, "{json}");
    // the first record (at time 0) falls in one window, the second's fill the limit
    assert_eq!(json["events"], 2, "{json}");
    assert_eq!(json["truncated"], true, "{json}");
}

#[test]
fn an_application_id_no_trace_reader_takes_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(1100);
    for value in ["\"a\\tb\"", "\"a\\nb\"", &format!("\"{long}\"")] {
        let cfg = hopping_count(
            dir.path(),
            "app.toml",
            1000,
            &format!("application_id = {value}\n"),
        );
        let out = dir.path().join("t.gtrace");
        let assert = Command::cargo_bin("gadget")
            .unwrap()
            .args(["gen", cfg.to_str().unwrap(), "--limit", "100"])
            .arg("-o")
            .arg(&out)
            .assert()
            .failure();
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(
            stderr.contains("app.toml:16: `operator.application_id`")
                && stderr.contains("1 to 249 ASCII letters, digits, `.`, `_` or `-`"),
            "{value}: {stderr}"
        );
        assert!(!out.exists(), "{value}: a trace was written");
    }
}

#[test]
fn sigterm_while_rocksdb_makes_the_column_families_of_200_spark_partitions_ends_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("spark.toml");
    std::fs::write(
        &cfg,
        "engine = \"spark\"\nseed = 1\n[source]\ntype = \"synthetic\"\nkey_space = 1000\n\
         [source.keys]\ndistribution = \"uniform\"\n[source.gaps]\ndistribution = \"constant\"\n\
         value = 1\n[operator]\ntype = \"tumbling-count\"\nsize = 5000\npartitions = 200\n",
    )
    .unwrap();
    // 200 column families: about 12 s to make with the default RocksDB (6.20), which writes
    // its OPTIONS file after each
    let child = spawn_gadget([
        "run",
        cfg.to_str().unwrap(),
        "--store",
        "rocksdb",
        "--limit",
        "100000",
    ]);
    std::thread::sleep(Duration::from_millis(1000));
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let signalled = Instant::now();
    let done = wait_bounded(child, Duration::from_secs(60), "a run opening RocksDB");
    let waited = signalled.elapsed();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{stderr}");
    assert!(
        waited < Duration::from_secs(3),
        "{waited:?} after SIGTERM: {stderr}"
    );
    assert!(
        stderr.contains("stopped while the rocksdb store was opening: nothing was measured"),
        "{stderr}"
    );
}
