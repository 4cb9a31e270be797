//! `gadget run` and `gadget replay` as users run them: real stores, the paper's table, JSON
//! checked against the committed schema, clean stops.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

mod interrupt;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A synthetic sliding-window workload; `events` bounds it (omit for an endless stream).
fn workload(dir: &Path, events: Option<u64>) -> PathBuf {
    let path = dir.join("workload.toml");
    let events = events.map_or(String::new(), |n| format!("events = {n}\n"));
    std::fs::write(
        &path,
        format!(
            "seed = 5\n[source]\ntype = \"synthetic\"\n{events}key_space = 200\n\
             [source.keys]\ndistribution = \"zipf\"\ns = 1.0\n\
             [source.gaps]\ndistribution = \"exponential\"\nrate = 1.0\n\
             [source.watermarks]\ntype = \"punctuated\"\nevery = 20\n\
             [operator]\ntype = \"sliding\"\nsize = 200\nslide = 50\nfunction = \"holistic\"\n"
        ),
    )
    .unwrap();
    path
}

/// Fails the test with the command's stderr unless it succeeded.
fn assert_succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `gadget run CONFIG --json` with `extra` arguments; the results, once it succeeded.
fn run_json(cfg: &Path, extra: &[&str]) -> serde_json::Value {
    let out = gadget()
        .args(["run", cfg.to_str().unwrap(), "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert_succeeded(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn trace(dir: &Path) -> PathBuf {
    let cfg = workload(dir, Some(3_000));
    let out = dir.join("t.gtrace");
    gadget()
        .args(["gen", cfg.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .assert()
        .success();
    out
}

#[test]
fn replay_on_every_store_prints_the_papers_table() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    for store in [
        "memory",
        "rocksdb",
        "leveldb",
        "berkeleydb",
        "berkeleydb-hash",
        "lmdb",
        "redb",
        "fjall",
        "sqlite",
        "faster",
        "lethe",
    ] {
        gadget()
            .args(["replay", t.to_str().unwrap(), "--store", store])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!(
                "store {store}, closed loop"
            )))
            .stdout(predicate::str::contains("p99.99"))
            .stdout(predicate::str::contains("merge"))
            .stdout(predicate::str::contains("batch_commit"));
    }
}

#[test]
fn run_results_match_the_committed_json_schema_and_every_output_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = workload(dir.path(), None);
    let results = dir.path().join("results.json");
    let csv = dir.path().join("series.csv");
    let hlog = dir.path().join("latency.hlog");
    let out = gadget()
        .args([
            "run",
            cfg.to_str().unwrap(),
            "--limit",
            "20000",
            "--store",
            "rocksdb",
        ])
        .args([
            "--arrival",
            "poisson",
            "--rate",
            "40000",
            "--warmup",
            "1000",
        ])
        .args(["--interval", "100ms", "--json", "-o"])
        .arg(&results)
        .arg("--csv")
        .arg(&csv)
        .arg("--hdr-log")
        .arg(&hlog)
        .output()
        .unwrap();
    assert_succeeded(&out);
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(printed, written);

    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(project_root().join("docs/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&printed)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "results do not match the schema: {errors:#?}"
    );
    // the schema is strict enough to catch a missing field
    let mut broken = printed.clone();
    broken.as_object_mut().unwrap().remove("latency");
    assert!(!validator.is_valid(&broken));

    assert_eq!(printed["requests"], 19_000);
    assert_eq!(printed["warmup_requests"], 1_000);
    assert_eq!(printed["store"], "rocksdb");
    assert_eq!(printed["target_rate"], 40_000.0);
    assert!(printed["time_series"].as_array().unwrap().len() >= 3);

    let series = std::fs::read_to_string(&csv).unwrap();
    assert!(series.starts_with("start_s,end_s,op,ops,ops_per_s,p50_ns,p99_ns,p999_ns\n"));
    assert!(series.contains(",all,"));
    let log = std::fs::read_to_string(&hlog).unwrap();
    assert!(log.contains("Tag=merge,"), "{log}");
}

#[test]
fn bad_evaluation_options_say_what_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let t = t.to_str().unwrap();
    gadget()
        .args(["replay", t, "--store", "cassandra"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "use one of: memory, rocksdb, redis, redis-cluster, leveldb, berkeleydb, berkeleydb-hash, lmdb, redb, fjall, sqlite, faster",
        ));
    gadget()
        .args(["replay", t, "--arrival", "poisson"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("needs --rate"));
    gadget()
        .args([
            "replay",
            t,
            "--arrival",
            "b-model",
            "--rate",
            "10",
            "--bias",
            "1.2",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--bias 1.2 is out of range"));
    gadget()
        .args(["replay", t, "--warmup", "soon"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--warmup"));
}

#[test]
fn store_directory_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let bad = file.join("store");
    gadget()
        .args(["replay", t.to_str().unwrap(), "--dir"])
        .arg(&bad)
        .assert()
        .failure()
        .stderr(predicate::str::contains(bad.to_str().unwrap()));
}

#[test]
fn the_temporary_store_is_removed_unless_kept() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path());
    let out = gadget()
        .args(["replay", t.to_str().unwrap(), "--keep"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kept = stderr
        .lines()
        .find_map(|l| l.strip_prefix("store data kept in "))
        .unwrap_or_else(|| panic!("no kept directory in {stderr}"));
    assert!(
        Path::new(kept).join("CURRENT").exists(),
        "{kept} is not a RocksDB directory"
    );

    let scratch = tempfile::tempdir().unwrap();
    gadget()
        .args(["replay", t.to_str().unwrap()])
        .env("TMPDIR", scratch.path())
        .assert()
        .success();
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
}

/// Starts an endless `gadget run` on RocksDB, stops it with `stop` after 1.5 s, and checks
/// that the results so far are printed and written, marked partial.
fn stopped_run_keeps_partial_results(
    stop: fn(std::process::Child, std::time::Duration, &str) -> std::process::Output,
) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = workload(dir.path(), None); // endless
    let results = dir.path().join("results.json");
    let child = interrupt::spawn_gadget([
        "run",
        cfg.to_str().unwrap(),
        "--store",
        "rocksdb",
        "--arrival",
        "constant",
        "--rate",
        "5000",
        "-o",
        results.to_str().unwrap(),
    ]);
    // with Ctrl-C, the second signal (from `timeout -s INT`'s process-group kill) arrives
    // while RocksDB may still be closing: it must count as the same interrupt
    let out = stop(child, std::time::Duration::from_millis(1500), "gadget run");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("PARTIAL"), "{stdout}");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(written["partial"], true);
    assert!(written["requests"].as_u64().unwrap() > 0);
}

#[test]
fn ctrl_c_stops_cleanly_and_keeps_partial_results() {
    stopped_run_keeps_partial_results(interrupt::interrupt_and_wait);
}

#[test]
fn sigterm_stops_a_run_as_ctrl_c_does() {
    stopped_run_keeps_partial_results(interrupt::terminate_and_wait);
}

#[test]
fn concurrent_instances_report_each_and_combined_on_a_shared_or_own_store() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = workload(dir.path(), Some(2_000));
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(project_root().join("docs/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let setups = [
        (false, "rocksdb"),
        (true, "rocksdb"),
        (true, "fjall"),
        (true, "lmdb"),
        (true, "leveldb"),
        (true, "redb"),
        (true, "sqlite"),
        (true, "faster"),
        (true, "berkeleydb"),
        (true, "berkeleydb-hash"),
        (true, "lethe"),
    ];
    for (shared, store) in setups {
        let mut cmd = gadget();
        cmd.args(["run", cfg.to_str().unwrap(), "--instances", "3", "--json"]);
        cmd.args(["--store", store]);
        if shared {
            cmd.arg("--shared-store");
        }
        let out = cmd.output().unwrap();
        assert_succeeded(&out);
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            validator.is_valid(&r),
            "combined results do not match the schema"
        );
        let instances = r["instances"].as_array().unwrap();
        assert_eq!(instances.len(), 3);
        let sum: u64 = instances
            .iter()
            .map(|i| i["requests"].as_u64().unwrap())
            .sum();
        assert_eq!(r["requests"].as_u64().unwrap(), sum);
        // each instance has its own workload seed, so the request counts differ
        let counts: std::collections::BTreeSet<u64> = instances
            .iter()
            .map(|i| i["requests"].as_u64().unwrap())
            .collect();
        assert!(
            counts.len() > 1,
            "instances ran identical workloads: {counts:?}"
        );
        let all = r["latency"].as_array().unwrap().last().unwrap()["ops"]
            .as_u64()
            .unwrap();
        assert_eq!(all, sum);
        let how = if shared {
            "one shared store"
        } else {
            "a store each"
        };
        assert!(
            r["arrival"].as_str().unwrap().contains(how),
            "{}",
            r["arrival"]
        );
        assert_eq!(r["store"], store);
    }
}

#[test]
fn a_store_that_cannot_be_shared_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = workload(dir.path(), Some(100));
    gadget()
        .args(["run", cfg.to_str().unwrap(), "--instances", "2"])
        .args(["--store", "memory", "--shared-store"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("cannot be shared"));
}

#[test]
fn the_configs_run_section_chooses_store_and_arrival_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = workload(dir.path(), Some(1_000));
    let workload_text = std::fs::read_to_string(&cfg).unwrap();
    let run_section = "[run]\nstore = \"memory\"\narrival = \"constant\"\nrate = 200000\n\
                       instances = 2\nwarmup = 100\ninterval = \"50ms\"\n";
    std::fs::write(&cfg, format!("{workload_text}{run_section}")).unwrap();
    let run = |extra: &[&str]| run_json(&cfg, extra);
    let r = run(&[]);
    assert_eq!(r["store"], "memory");
    assert_eq!(r["target_rate"], 400_000.0, "two instances at 200000 each");
    assert_eq!(r["instances"].as_array().unwrap().len(), 2);
    assert_eq!(r["warmup_requests"], 200);
    assert!(
        r.get("store_counters").is_none(),
        "the memory store keeps no counters"
    );

    // RocksDB's settings in a config that chooses the memory store contradict it
    let rocksdb_settings = "store_counters = true\n[run.rocksdb]\nblock_cache_mb = 8\n";
    std::fs::write(
        &cfg,
        format!("{workload_text}{run_section}{rocksdb_settings}"),
    )
    .unwrap();
    gadget()
        .args(["run", cfg.to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "`run.store_counters`: the memory store does not read `store_counters`",
        ));

    // a config for RocksDB run on another store from the command line: warned, not refused
    let for_rocksdb = run_section.replace("\"memory\"", "\"rocksdb\"");
    std::fs::write(
        &cfg,
        format!("{workload_text}{for_rocksdb}{rocksdb_settings}"),
    )
    .unwrap();
    let out = gadget()
        .args(["run", cfg.to_str().unwrap(), "--store", "memory", "--json"])
        .output()
        .unwrap();
    assert_succeeded(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "`run.rocksdb.block_cache_mb` has no effect with --store memory: the memory store does not read `block_cache_mb`"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = run(&["--arrival", "closed", "--instances", "1"]);
    assert_eq!(r["store"], "rocksdb");
    assert_eq!(r["open_loop"], false);
    assert!(r.get("instances").is_none());
    assert!(
        r["store_counters"].is_object(),
        "store_counters = true in [run] turns RocksDB's counters on"
    );
}

#[test]
fn run_section_errors_name_file_line_and_allowed_values() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = workload(dir.path(), Some(100));
    let base = std::fs::read_to_string(&cfg).unwrap();
    let lines = base.lines().count();
    for (run, needle, line_offset) in [
        (
            "[run]\nstore = \"cassandra\"\n",
            "`run.store`: `cassandra` is not a store of this build; use one of: memory, rocksdb",
            2,
        ),
        ("[run]\nspeed_up = 2\n", "unknown key; allowed here", 2),
        ("[run]\narrival = \"poisson\"\n", "`run.rate`: missing", 1),
        ("[run]\nwarmup = \"soon\"\n", "not a time", 2),
        ("[run]\n[run.lmdb]\nmap_gb = 0\n", "`run.lmdb.map_gb`", 3),
        (
            "[run]\n[run.faster]\nlog_mb = 64\n",
            "`run.faster.log_mb`",
            3,
        ),
    ] {
        std::fs::write(&cfg, format!("{base}{run}")).unwrap();
        let line = format!("workload.toml:{}", lines + line_offset);
        gadget()
            .args(["run", cfg.to_str().unwrap()])
            .assert()
            .failure()
            .stderr(predicate::str::contains(needle))
            .stderr(predicate::str::contains(line));
    }
}

#[test]
fn store_counters_count_the_tombstones_rocksdb_iterators_step_over() {
    // RocksDB timers: reloading a key group's timer cache seeks from the last deleted timer,
    // so the store's iterators step over tombstones
    let cfg = project_root().join("examples/bench/tumbling-incr-zipf.toml");
    let run = |extra: &[&str]| run_json(&cfg, &[&["--limit", "200000"], extra].concat());
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(project_root().join("docs/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();

    let plain = run(&[]);
    assert!(
        plain.get("store_counters").is_none(),
        "counters only when asked for"
    );

    let counted = run(&["--store-counters"]);
    assert!(
        validator.is_valid(&counted),
        "results do not match the schema"
    );
    let counters = counted["store_counters"].as_object().unwrap();
    let names: Vec<&str> = counters.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "rocksdb.block_read_count",
            "rocksdb.held.live_sst_bytes",
            "rocksdb.held.tombstones_in_files",
            "rocksdb.held.tombstones_in_memtables",
            "rocksdb.internal_delete_skipped_count",
            "rocksdb.internal_key_skipped_count"
        ]
    );
    let tombstones = counters["rocksdb.internal_delete_skipped_count"]
        .as_u64()
        .unwrap();
    let seeks = counted["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["op"] == "seek")
        .expect("the run seeks")["ops"]
        .as_u64()
        .unwrap();
    assert!(
        tombstones >= seeks,
        "each reload seeks onto the timer just deleted: {tombstones} tombstones skipped, {seeks} seeks"
    );

    // two instances on one store: each counts its own thread's requests, the top level sums
    let both = run(&["--store-counters", "--instances", "2", "--shared-store"]);
    assert!(validator.is_valid(&both), "results do not match the schema");
    let instances = both["instances"].as_array().unwrap();
    for name in names {
        let sum: u64 = instances
            .iter()
            .map(|i| i["store_counters"][name].as_u64().unwrap())
            .sum();
        assert_eq!(
            both["store_counters"][name].as_u64().unwrap(),
            sum,
            "{name}"
        );
    }
    assert_eq!(
        instances[0]["store_counters"], counted["store_counters"],
        "instance 0 runs the same workload as the single run"
    );

    let human = gadget()
        .args([
            "run",
            cfg.to_str().unwrap(),
            "--limit",
            "50000",
            "--store-counters",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("store counters") && text.contains("rocksdb.internal_delete_skipped_count"),
        "{text}"
    );

    // a store without counters says so instead of silently reporting nothing
    gadget()
        .args([
            "run",
            cfg.to_str().unwrap(),
            "--limit",
            "1000",
            "--store-counters",
        ])
        .args(["--store", "memory"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "store memory keeps no counters of its own",
        ));
}
