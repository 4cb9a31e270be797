//! `gadget run --shard i/N` and `--start-at` as users run them: shards of a YCSB workload
//! add up to the whole, shards of a parallel Flink job run its subtasks in ranges and merge
//! into the whole job, a bad shard and a start that passed say what to give.

use std::path::PathBuf;

use assert_cmd::Command;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `gadget run` of YCSB-A into the memory store with `flags`; its results.
fn run(flags: &[&str]) -> serde_json::Value {
    let out = gadget()
        .arg("run")
        .arg(project_root().join("examples/ycsb/workloada.toml"))
        .args(["--store", "memory", "--limit", "3000", "--json"])
        .args(["--arrival", "poisson", "--rate", "20000"])
        .args(flags)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn shards_of_a_ycsb_run_issue_the_whole_runs_requests_between_them() {
    let whole = run(&[])["requests"].as_u64().unwrap();
    let parts: Vec<u64> = (0..3)
        .map(|i| {
            run(&["--shard", &format!("{i}/3")])["requests"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(parts.iter().sum::<u64>(), whole, "{parts:?}");
    assert!(parts.iter().all(|&p| p > whole / 6), "{parts:?}");

    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 1.0;
    let at = run(&["--shard", "0/3", "--start-at", &format!("{start:.3}")]);
    assert_eq!(at["requests"].as_u64().unwrap(), parts[0]);
    let zero_s = at["wall_clock"]["zero_unix_ns"].as_u64().unwrap() as f64 / 1e9;
    assert!(
        zero_s >= start - 0.001,
        "the schedule began at {zero_s}, before the agreed {start}"
    );
}

#[test]
fn a_bad_shard_a_flink_job_and_a_missed_start_are_refused_with_what_to_give() {
    let said = |args: &[&str], config: &str| {
        let out = gadget()
            .arg("run")
            .arg(project_root().join(config))
            .args(["--store", "memory", "--limit", "100"])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} was accepted");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let ycsb = "examples/ycsb/workloada.toml";
    let e = said(&["--shard", "3/3"], ycsb);
    assert!(e.contains("INDEX/COUNT") && e.contains("3/3"), "{e}");
    let e = said(
        &["--shard", "0/2"],
        "examples/flink-reference/tumbling-incr.toml",
    );
    assert!(
        e.contains("parallelism 1")
            && e.contains("at most 1 shards")
            && e.contains("--parallelism"),
        "{e}"
    );
    let job = "examples/bench/tumbling-incr-zipf.toml";
    let e = said(&["--parallelism", "4", "--shard", "0/5"], job);
    assert!(e.contains("at most 4 shards"), "{e}");
    let e = said(
        &["--parallelism", "4", "--shard", "0/2", "--subtask", "1"],
        job,
    );
    assert!(e.contains("not both"), "{e}");
    let e = said(&["--parallelism", "4", "--instances", "2"], job);
    assert!(e.contains("are its subtasks"), "{e}");
    let e = said(&["--start-at", "1000"], ycsb);
    assert!(e.contains("passed") && e.contains("--start-at"), "{e}");
    let e = said(&["--start-at", "soon"], ycsb);
    assert!(e.contains("Unix seconds"), "{e}");
}

/// `gadget run` of a parallel tumbling-window job of 4 subtasks on RocksDB with `flags`,
/// writing its results to `out`; its results.
fn run_job(flags: &[&str], out: &std::path::Path) -> serde_json::Value {
    let run = gadget()
        .arg("run")
        .arg(project_root().join("examples/bench/tumbling-incr-zipf.toml"))
        .args([
            "--store",
            "rocksdb",
            "--limit",
            "20000",
            "--parallelism",
            "4",
        ])
        .args(["--arrival", "poisson", "--rate", "40000", "--seed", "9"])
        .arg("-o")
        .arg(out)
        .args(flags)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{flags:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap()
}

/// Requests per op in results.
fn per_op(r: &serde_json::Value) -> Vec<(String, u64)> {
    r["latency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["op"].as_str().unwrap().to_string(),
                o["ops"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn shards_of_a_parallel_job_run_its_subtasks_in_ranges_and_merge_into_the_whole_job() {
    let dir = tempfile::tempdir().unwrap();
    let whole = run_job(&[], &dir.path().join("whole.json"));
    assert_eq!(whole["requests"], 20_000);
    let subtasks: Vec<&str> = whole["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["arrival"].as_str().unwrap())
        .collect();
    assert_eq!(subtasks.len(), 4, "one instance per subtask: {subtasks:?}");
    assert!(subtasks[3].starts_with("subtask 3 of 4"), "{subtasks:?}");

    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 2.0;
    let shards: Vec<std::path::PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("shard-{i}.json")))
        .collect();
    std::thread::scope(|scope| {
        for (i, out) in shards.iter().enumerate() {
            let at = format!("{start:.3}");
            scope.spawn(move || {
                let shard = format!("{i}/3");
                run_job(&["--shard", &shard, "--start-at", &at], out)
            });
        }
    });
    let parts: Vec<serde_json::Value> = shards
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    // 4 subtasks in 3 shards: 0, 1 and 2..4
    let ran: Vec<usize> = parts
        .iter()
        .map(|p| p["instances"].as_array().unwrap().len())
        .collect();
    assert_eq!(ran, [1, 1, 2]);
    assert!(parts[2]["instances"][0]["arrival"]
        .as_str()
        .unwrap()
        .starts_with("subtask 2 of 4"));
    // each shard's target is its share of the job's rate; together the job's
    let targets: f64 = parts
        .iter()
        .map(|p| p["target_rate"].as_f64().unwrap())
        .sum();
    assert!((targets - 40_000.0).abs() < 1e-6, "{targets}");

    let merged = dir.path().join("merged.json");
    let out = gadget()
        .arg("merge")
        .args(&shards)
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(merged["requests"], whole["requests"]);
    assert_eq!(
        per_op(&merged),
        per_op(&whole),
        "the same requests, op by op"
    );
    assert_eq!(merged["partial"], false);
}
