//! Flags do what a careful user expects, or say why they cannot: a rate alone runs an open
//! loop at that rate; a warm-up that takes the whole run is an error, not 0 requests/s; one
//! seed seeds everything.

use std::path::PathBuf;

use assert_cmd::Command;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn ycsb(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/ycsb/{name}.toml"))
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let out = gadget()
        .arg("run")
        .arg(ycsb("workloadc"))
        .args(["--store", "memory", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_rate_without_an_arrival_runs_constant_arrivals_at_that_rate() {
    let r = run_json(&["--rate", "20000"]);
    assert_eq!(r["open_loop"], true, "{}", r["arrival"]);
    assert_eq!(r["target_rate"], 20000.0);
    assert!(r["arrival"].as_str().unwrap().starts_with("constant"));
}

#[test]
fn a_warm_up_that_takes_the_whole_run_is_an_error_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.json");
    let out = gadget()
        .arg("run")
        .arg(ycsb("workloadc"))
        .args(["--store", "memory", "--warmup", "1000000", "-o"])
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the warm-up took all 2000 requests"),
        "{stderr}"
    );
    assert!(stderr.contains("shorter --warmup"), "{stderr}");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(written["requests"], 0, "the results are still written");
}

#[test]
fn one_seed_seeds_the_workload_the_arrivals_and_the_values() {
    let given = run_json(&["--seed", "42"]);
    assert_eq!(given["seed"], 42);
    assert_eq!(given["context"]["workloads"][0]["seed"], 42);
    // without --seed, the config's seed (1 in workloadc.toml) seeds everything
    let default = run_json(&[]);
    assert_eq!(default["seed"], 1);
    assert_eq!(default["context"]["workloads"][0]["seed"], 1);
}

#[test]
fn a_trace_generated_to_a_pipe_replays_from_standard_input_with_a_limit() {
    let mut gen = std::process::Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .arg("gen")
        .arg(ycsb("workloadc"))
        .args(["-o", "-", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args([
            "replay", "-", "--store", "memory", "--limit", "500", "-o", "-",
        ])
        .stdin(gen.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // -o -: the results alone on standard output, the summary on standard error
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results["requests"], 500);
    assert_eq!(results["context"]["workloads"][0]["path"], "-");
    assert!(String::from_utf8_lossy(&out.stderr).contains("requests/s"));
    // gen's --json summary went to standard error, not into the trace
    let mut summary = String::new();
    std::io::Read::read_to_string(&mut gen.stderr.take().unwrap(), &mut summary).unwrap();
    assert!(gen.wait().unwrap().success());
    assert!(summary.contains("\"requests\""), "{summary}");
}

#[test]
fn standard_input_is_replayed_once() {
    let out = gadget()
        .args(["replay", "-", "-", "--store", "memory"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("can be replayed once"));
}

#[test]
fn an_endless_workload_is_not_written_to_a_file_without_a_limit() {
    let dir = tempfile::tempdir().unwrap();
    let endless = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/bench/tumbling-incr-zipf.toml");
    let trace = dir.path().join("t.gtrace");
    let out = gadget()
        .arg("gen")
        .arg(&endless)
        .arg("-o")
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("would grow until the disk is full; give --limit N"),
        "{stderr}"
    );
    assert!(!trace.exists());
    gadget()
        .arg("gen")
        .arg(&endless)
        .arg("-o")
        .arg(&trace)
        .args(["--limit", "1000"])
        .assert()
        .success();
}

#[test]
fn a_trace_on_standard_input_is_analyzed() {
    let mut gen = std::process::Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .arg("gen")
        .arg(ycsb("workloadc"))
        .args(["-o", "-"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args(["analyze", "-", "--json"])
        .stdin(gen.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(gen.wait().unwrap().success());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let analysis: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(analysis["requests"], 2000, "{analysis}");
}

/// `gadget run` of an endless synthetic workload on the memory store with `args`.
fn endless(args: &[&str]) -> std::process::Output {
    let cfg = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/bench/tumbling-incr-zipf.toml");
    gadget()
        .arg("run")
        .arg(cfg)
        .args(["--store", "memory", "--json"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_duration_ends_an_endless_run_complete_not_partial() {
    // open loop: requests are scheduled every millisecond from 0, none at or after 500 ms
    let out = endless(&["--rate", "1000", "--duration", "500ms"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["partial"], false);
    let requests = r["requests"].as_u64().unwrap();
    assert!((499..=500).contains(&requests), "{requests}");

    // closed loop: it runs until the duration is over
    let out = endless(&["--duration", "300ms"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["partial"], false);
    assert!(r["seconds"].as_f64().unwrap() >= 0.3, "{}", r["seconds"]);

    let out = endless(&["--duration", "soon"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--duration \"soon\""));
}

#[test]
fn store_flags_take_the_ranges_of_their_config_keys() {
    for (flag, value, range) in [
        ("--write-buffer-mb", "17592186044416", "[1, 1048576]"),
        ("--write-buffers", "0", "[1, 64]"),
        ("--block-cache-mb", "17592186044416", "[0, 1048576]"),
        ("--redis-pipeline", "0", "[1, 1048576]"),
        ("--lmdb-map-gb", "0", "[1, 1048576]"),
        ("--faster-log-mb", "1", "[192, 1048576]"),
        ("--faster-index-mb", "0", "[1, 65536]"),
    ] {
        let out = gadget()
            .arg("run")
            .arg(ycsb("workloadc"))
            .args(["--store", "memory", "--limit", "10", flag, value])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value} accepted");
        assert!(
            said.contains(flag) && said.contains("out of range") && said.contains(range),
            "{flag} {value}: {said}"
        );
    }
}

#[test]
fn a_store_flag_the_store_does_not_read_is_warned_about() {
    let out = gadget()
        .arg("run")
        .arg(ycsb("workloadc"))
        .args([
            "--store",
            "lmdb",
            "--limit",
            "100",
            "--block-cache-mb",
            "4",
            "--wal",
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    for flag in ["--block-cache-mb", "--wal"] {
        assert!(
            said.contains(&format!(
                "warning: {flag} has no effect: the lmdb store does not read"
            )),
            "{said}"
        );
    }
}
