//! A Kafka Streams application as a parallel job of its stream threads, and a Spark query as
//! one of its shuffle partitions: `gen --parallelism P --subtask all` writes a trace per
//! subtask, and `run --parallelism P` drives every subtask against a store of its own, each
//! state reported under its own name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use gadget::trace::{open_trace, RecordRef};

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

/// `gadget gen CONFIG ARGS -o OUT`, its output.
fn gen(config: &Path, args: &[&str], out: &Path) -> std::process::Output {
    gadget()
        .arg("gen")
        .arg(config)
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

/// A count over five input partitions, the record cache small enough to evict.
fn application(dir: &Path) -> PathBuf {
    let path = dir.join("app.toml");
    std::fs::write(
        &path,
        "engine = \"kafka-streams\"\nseed = 3\n\n[source]\ntype = \"synthetic\"\nevents = 3000\n\
         key_space = 200\n[source.keys]\ndistribution = \"zipf\"\ns = 0.9\n[source.gaps]\n\
         distribution = \"constant\"\nvalue = 1\n\n[operator]\ntype = \"count\"\n\
         runner = \"application\"\npartitions = 5\ncache_bytes = 4000\n",
    )
    .unwrap();
    path
}

/// A trace's requests by state name, and its header's config.
fn requests_by_state(path: &Path) -> (BTreeMap<String, u64>, serde_json::Value) {
    let mut reader = open_trace(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let config = reader.header().unwrap().config.clone();
    let names = reader.state_names().to_vec();
    let mut by_state = BTreeMap::new();
    while let Some(record) = reader.next_record().unwrap() {
        if let RecordRef::Access(a) = record {
            *by_state.entry(names[a.state as usize].clone()).or_default() += 1;
        }
    }
    (by_state, config)
}

/// The task a state's store belongs to: `gadget/0_3/rocksdb/...` -> `0_3`.
fn task(state: &str) -> &str {
    state.split('/').nth(1).unwrap()
}

#[test]
fn subtask_all_writes_a_trace_per_stream_thread_with_its_tasks_stores() {
    let dir = tempfile::tempdir().unwrap();
    let config = application(dir.path());
    let every = ["--parallelism", "2", "--subtask", "all"];
    let out = gen(
        &config,
        &[&every[..], &["--json"]].concat(),
        &dir.path().join("t.gtrace"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(summary.get("max_parallelism").is_none(), "{summary}");
    // the application in one trace on the same two threads: every request is one thread's
    let whole = dir.path().join("whole.gtrace");
    let text = std::fs::read_to_string(&config).unwrap() + "threads = 2\n";
    std::fs::write(dir.path().join("whole.toml"), text).unwrap();
    assert!(gen(&dir.path().join("whole.toml"), &[], &whole)
        .status
        .success());
    let (all, _) = requests_by_state(&whole);
    let mut seen = BTreeMap::new();
    for (thread, tasks) in [(0, ["0_0", "0_2", "0_4"].as_slice()), (1, &["0_1", "0_3"])] {
        let listed = &summary["subtasks"][thread];
        assert_eq!(listed["subtask"], thread);
        assert_eq!(listed["tasks"], serde_json::json!(tasks), "{listed}");
        let (by_state, header) = requests_by_state(&dir.path().join(format!("t.{thread}.gtrace")));
        assert_eq!(header["subtask"], thread);
        assert_eq!(header["operator"]["threads"], 2);
        let mut thread_tasks: Vec<&str> = by_state.keys().map(|s| task(s)).collect();
        thread_tasks.dedup();
        assert_eq!(thread_tasks, tasks, "thread {thread}'s stores");
        assert_eq!(listed["requests"], by_state.values().sum::<u64>());
        seen.extend(by_state);
    }
    assert_eq!(
        seen, all,
        "the threads' requests are the application's, state by state"
    );

    let out = gen(&config, &every, &dir.path().join("t.gtrace"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("parallelism 2)") && text.contains("tasks") && text.contains("0_1 0_3"),
        "{text}"
    );
}

#[test]
fn a_thread_alone_and_more_threads_than_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let config = application(dir.path());
    let out = gen(
        &config,
        &["--parallelism", "2", "--subtask", "1"],
        &dir.path().join("one.gtrace"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("subtask 1 of 2 (a stream thread: tasks 0_1, 0_3)"),
        "{text}"
    );
    let out = gen(
        &config,
        &["--parallelism", "6", "--subtask", "all"],
        &dir.path().join("six.gtrace"),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--parallelism") && err.contains("partitions = 5"),
        "{err}"
    );
}

/// `gadget run CONFIG --parallelism 2` into the memory store: each state's requests by name
/// (every request counted under one), and how many instances ran.
fn run_two_subtasks(config: &Path) -> (BTreeMap<String, u64>, usize) {
    let out = gadget()
        .arg("run")
        .arg(config)
        .args(["--parallelism", "2", "--store", "memory", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_state: BTreeMap<String, u64> = results["per_state"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let name = s["name"].as_str().unwrap().to_string();
            (name, s["latency"]["ops"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        by_state.values().sum::<u64>(),
        results["requests"].as_u64().unwrap()
    );
    (by_state, results["instances"].as_array().unwrap().len())
}

#[test]
fn run_drives_every_thread_and_reports_each_tasks_stores() {
    let dir = tempfile::tempdir().unwrap();
    let (by_state, instances) = run_two_subtasks(&application(dir.path()));
    let mut tasks: Vec<&str> = by_state.keys().map(|s| task(s)).collect();
    tasks.dedup();
    assert_eq!(tasks, ["0_0", "0_1", "0_2", "0_3", "0_4"], "{by_state:?}");
    assert_eq!(instances, 2);
}

/// A tumbling count over five shuffle partitions, in micro-batches of 300 events.
fn spark_query(dir: &Path) -> PathBuf {
    let path = dir.join("query.toml");
    std::fs::write(
        &path,
        "engine = \"spark\"\nseed = 3\n\n[source]\ntype = \"synthetic\"\nevents = 3000\n\
         key_space = 200\n[source.keys]\ndistribution = \"zipf\"\ns = 0.9\n[source.gaps]\n\
         distribution = \"constant\"\nvalue = 1\n\n[operator]\ntype = \"tumbling-count\"\n\
         size = 100\npartitions = 5\ntrigger_events = 300\n",
    )
    .unwrap();
    path
}

/// The shuffle partition of a Spark state store: `…(opId=0,partId=3,name=default)…` -> 3.
fn partition(state: &str) -> u64 {
    let from = state.find("partId=").unwrap() + "partId=".len();
    state[from..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn a_spark_querys_subtasks_hold_its_shuffle_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let config = spark_query(dir.path());
    let out = gen(
        &config,
        &["--parallelism", "2", "--subtask", "all", "--json"],
        &dir.path().join("s.gtrace"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let whole = dir.path().join("whole.gtrace");
    let done = gen(&config, &["--json"], &whole);
    let whole_summary: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    // each event is marked in one subtask's trace: its row's partition's
    assert_eq!(summary["events"], whole_summary["events"], "{summary}");
    let (all, _) = requests_by_state(&whole);
    let mut seen = BTreeMap::new();
    for (i, partitions) in [(0, [0, 2, 4].as_slice()), (1, &[1, 3])] {
        let listed = &summary["subtasks"][i];
        assert_eq!(
            listed["partitions"],
            serde_json::json!(partitions),
            "{listed}"
        );
        let (by_state, header) = requests_by_state(&dir.path().join(format!("s.{i}.gtrace")));
        assert_eq!(header["subtask"], i);
        let held: Vec<u64> = by_state.keys().map(|s| partition(s)).collect();
        assert_eq!(held, partitions, "subtask {i}'s stores");
        seen.extend(by_state);
    }
    assert_eq!(
        seen, all,
        "the subtasks' requests are the query's, state by state"
    );
    let (by_state, instances) = run_two_subtasks(&config);
    assert_eq!(by_state.len(), 5, "{by_state:?}");
    assert_eq!(instances, 2);
}
