//! `gadget run --shard i/N` and `--start-at` as users run them: shards of a YCSB workload
//! add up to the whole, a Flink job is refused with the flags that split it, a bad shard and
//! a start that passed say what to give.

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
        e.contains("--parallelism") && e.contains("--subtask"),
        "{e}"
    );
    let e = said(&["--start-at", "1000"], ycsb);
    assert!(e.contains("passed") && e.contains("--start-at"), "{e}");
    let e = said(&["--start-at", "soon"], ycsb);
    assert!(e.contains("Unix seconds"), "{e}");
}
