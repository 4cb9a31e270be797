//! `gadget gen --parallelism N --subtask I|all`: a parallel job's subtask traces as users
//! write them.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use gadget::trace::{open_trace, RecordRef};

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

/// A job over 2,000 events of 250 keys, a tumbling window with RocksDB timers.
fn config(dir: &Path) -> PathBuf {
    let mut csv = String::new();
    for i in 0..2000u64 {
        csv.push_str(&format!("{},{}\n", (i * 7919) % 250, i * 13));
    }
    std::fs::write(dir.join("events.csv"), csv).unwrap();
    let path = dir.join("job.toml");
    std::fs::write(
        &path,
        "seed = 7\n\n[source]\ntype = \"file\"\npath = \"events.csv\"\nkey_column = 0\n\
         time_column = 1\n\n[source.watermarks]\nevery = 20\n\n[operator]\ntype = \"tumbling\"\n\
         size = 1000\ntimers = \"rocksdb\"\n",
    )
    .unwrap();
    path
}

/// What a trace file holds: events, watermarks, requests by state name, the header's config.
struct Read {
    events: u64,
    watermarks: Vec<i64>,
    requests_by_state: std::collections::BTreeMap<String, u64>,
    config: serde_json::Value,
}

fn read(path: &Path) -> Read {
    let mut reader = open_trace(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let config = reader.header().unwrap().config.clone();
    let names = reader.state_names().to_vec();
    let mut r = Read {
        events: 0,
        watermarks: Vec::new(),
        requests_by_state: Default::default(),
        config,
    };
    while let Some(rec) = reader.next_record().unwrap() {
        match rec {
            RecordRef::Event { .. } => r.events += 1,
            RecordRef::Watermark { timestamp } => r.watermarks.push(timestamp),
            RecordRef::Access(a) => {
                *r.requests_by_state
                    .entry(names[a.state as usize].clone())
                    .or_default() += 1
            }
        }
    }
    r
}

fn json(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap()
}

#[test]
fn subtask_all_writes_one_trace_per_subtask_and_their_counts_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let cfg = cfg.to_str().unwrap();
    let whole = dir.path().join("whole.gtrace");
    gadget()
        .args(["gen", cfg, "-o", whole.to_str().unwrap()])
        .assert()
        .success();
    let whole = read(&whole);
    assert_eq!(whole.events, 2000);

    let out = dir.path().join("out/job.gtrace");
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let done = gadget()
        .args([
            "gen",
            cfg,
            "--parallelism",
            "3",
            "--subtask",
            "all",
            "--json",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success();
    let summary = json(&done.get_output().stdout);
    assert_eq!(summary["parallelism"], 3);
    assert_eq!(summary["max_parallelism"], 128);
    assert_eq!(summary["events"], 2000);
    let subtasks = summary["subtasks"].as_array().unwrap();
    assert_eq!(subtasks.len(), 3);

    let mut events = 0;
    let mut window_requests = 0;
    let mut next_group = 0;
    for (i, s) in subtasks.iter().enumerate() {
        let path = dir.path().join(format!("out/job.{i}.gtrace"));
        assert_eq!(s["output"], path.display().to_string());
        assert_eq!(s["subtask"], i);
        // contiguous key groups, Flink's: 0-42, 43-85, 86-127
        assert_eq!(s["key_groups"][0], next_group);
        next_group = s["key_groups"][1].as_u64().unwrap() + 1;
        let t = read(&path);
        assert_eq!(t.config["subtask"], i, "the header names the subtask");
        assert_eq!(t.config["parallelism"], 3);
        assert_eq!(s["events"], t.events);
        assert!(t.events > 0);
        events += t.events;
        assert_eq!(
            t.watermarks, whole.watermarks,
            "subtask {i} sees every watermark"
        );
        window_requests += t.requests_by_state["window-contents"];
    }
    assert_eq!(next_group, 128);
    assert_eq!(events, whole.events);
    // the window's state is keyed: its requests split among the subtasks, none added or lost
    assert_eq!(window_requests, whole.requests_by_state["window-contents"]);
    assert!(!dir.path().join("out/job.3.gtrace").exists());

    // one subtask alone is the same file as in the pass over all of them
    let one = dir.path().join("one.gtrace");
    gadget()
        .args(["gen", cfg, "--parallelism", "3", "--subtask", "1", "-o"])
        .arg(&one)
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "subtask 1 of 3 (key groups 43-85 of 128)",
        ));
    assert_eq!(
        std::fs::read(&one).unwrap(),
        std::fs::read(dir.path().join("out/job.1.gtrace")).unwrap()
    );
}

#[test]
fn the_text_summary_lists_every_subtask_and_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let out = dir.path().join("t.txt");
    let done = gadget()
        .args(["gen", cfg.to_str().unwrap(), "--format", "text"])
        .args(["--parallelism", "2", "--subtask", "all", "-o"])
        .arg(&out)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&done.get_output().stdout).to_string();
    assert!(stdout.contains("t.{0..1}.txt"), "{stdout}");
    assert!(
        stdout.contains("t.0.txt") && stdout.contains("t.1.txt"),
        "{stdout}"
    );
    assert!(stdout.contains("total"), "{stdout}");
    assert!(dir.path().join("t.0.txt").exists() && dir.path().join("t.1.txt").exists());
}

#[test]
fn a_subtask_outside_the_job_or_none_at_all_is_refused_with_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let cfg = cfg.to_str().unwrap();
    let out = dir.path().join("t.gtrace");
    let out = out.to_str().unwrap();
    for (args, said) in [
        (
            vec!["--parallelism", "4", "--subtask", "5"],
            "--subtask: 5 is not a subtask of this job of parallelism 4; allowed: 0 to 3 (or all)",
        ),
        (
            vec!["--subtask", "1"],
            "--subtask: 1 is not a subtask of this job of parallelism 1; allowed: 0 (or all)",
        ),
        (
            vec!["--parallelism", "4"],
            "the job has parallelism 4: choose a subtask with --subtask I (0 to 3), or --subtask all",
        ),
        (
            vec!["--parallelism", "0", "--subtask", "0"],
            "--parallelism: 0 is out of range; allowed: [1, 32768]",
        ),
        (vec!["--subtask", "first"], "give an index from 0"),
    ] {
        let got = gadget()
            .args(["gen", cfg, "-o", out])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert!(!got.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
    // more subtasks than a configured max parallelism has key groups
    let fixed = dir.path().join("fixed.toml");
    let text = std::fs::read_to_string(cfg).unwrap();
    std::fs::write(&fixed, format!("max_parallelism = 128\n{text}")).unwrap();
    let got = gadget()
        .args(["gen", fixed.to_str().unwrap(), "-o", out])
        .args(["--parallelism", "200", "--subtask", "0"])
        .output()
        .unwrap();
    assert!(!got.status.success());
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(
        stderr.contains(
            "--parallelism: 200 subtasks need at least as many key groups, and max_parallelism is \
             128; raise max_parallelism, or leave it out (Flink's default for parallelism 200 is 512)"
        ),
        "{stderr}"
    );
    // parallelism 200 without max_parallelism: Flink's default, 512 key groups
    gadget()
        .args([
            "gen",
            cfg,
            "-o",
            out,
            "--parallelism",
            "200",
            "--subtask",
            "199",
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains("of 200 (key groups"))
        .stdout(predicates::str::contains("of 512)"));
    assert_eq!(read(Path::new(out)).config["max_parallelism"], 512);
}

#[test]
fn all_subtasks_are_written_to_files_not_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let got = gadget()
        .args(["gen", cfg.to_str().unwrap(), "--parallelism", "2"])
        .args(["--subtask", "all", "-o", "-"])
        .output()
        .unwrap();
    assert!(!got.status.success());
    assert!(got.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert!(
        stderr.contains("--subtask all writes one trace per subtask, to files"),
        "{stderr}"
    );
    // one subtask may go to standard output
    let got = gadget()
        .args(["gen", cfg.to_str().unwrap(), "--parallelism", "2"])
        .args(["--subtask", "0", "-o", "-"])
        .output()
        .unwrap();
    assert!(got.status.success());
    assert_eq!(&got.stdout[..8], b"GADGTRC1");
}

#[test]
fn run_drives_one_subtask_and_refuses_subtask_all() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let cfg = cfg.to_str().unwrap();
    let got = gadget()
        .args([
            "run",
            cfg,
            "--store",
            "memory",
            "--parallelism",
            "2",
            "--subtask",
            "all",
        ])
        .output()
        .unwrap();
    assert!(!got.status.success());
    assert!(String::from_utf8_lossy(&got.stderr)
        .contains("gadget run drives every subtask when --subtask is left out"));
    let done = gadget()
        .args([
            "run",
            cfg,
            "--store",
            "memory",
            "--parallelism",
            "2",
            "--subtask",
            "1",
        ])
        .args(["--json"])
        .assert()
        .success();
    let results = json(&done.get_output().stdout);
    assert!(results["requests"].as_u64().unwrap_or(1) > 0);
    let command = results["context"]["command_line"].to_string();
    assert!(
        command.contains("\"--subtask\",\"1\""),
        "the results say which: {command}"
    );
}
