//! Ctrl-C and SIGTERM in each phase of the long commands: while a store opens, during the
//! warm-up, while `analyze` reads a config's endless stream, and while `compare` reads an
//! endless trace. Each command ends (bounded in time), keeps what it measured marked partial,
//! and says what happened; the phase of measuring is in `run_and_replay.rs`.

use std::time::Duration;

mod interrupt;
#[path = "../../gadget-eval/tests/support/mod.rs"]
mod redis_support;

use interrupt::{
    endless_workload, interrupt_and_wait, spawn_gadget, terminate_and_wait, wait_bounded,
};
use redis_support::RedisServer;

#[test]
fn ctrl_c_during_the_warm_up_ends_the_run_partial_with_nothing_measured() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let results = dir.path().join("r.json");
    let child = spawn_gadget([
        "run",
        cfg.to_str().unwrap(),
        "--store",
        "rocksdb",
        "--warmup",
        "600s",
        "-o",
        results.to_str().unwrap(),
    ]);
    let out = interrupt_and_wait(child, Duration::from_millis(1500), "a run warming up");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("PARTIAL"),
        "{stderr}"
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).expect("the results are written");
    assert_eq!(written["partial"], true, "{written}");
    assert_eq!(
        written["requests"], 0,
        "the warm-up is not measured: {written}"
    );
    assert!(
        written["warmup_requests"].as_u64().unwrap() > 0,
        "{written}"
    );
}

#[test]
fn sigterm_while_a_store_does_not_answer_its_opening_ends_the_wait_at_once() {
    let Some(server) = RedisServer::start("signal_while_opening") else {
        return;
    };
    server.freeze();
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let child = spawn_gadget([
        "run",
        cfg.to_str().unwrap(),
        "--store",
        "redis",
        "--redis-url",
        &server.url,
        "--redis-timeout",
        "1h",
    ]);
    // bounded far below the hour-long timeout: only the signal can end the wait
    let out = terminate_and_wait(child, Duration::from_millis(300), "a run opening its store");
    server.thaw();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("stopped while the redis store was opening: nothing was measured"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_stops_the_analysis_of_a_configs_endless_stream_and_keeps_what_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let json = dir.path().join("a.json");
    let child = spawn_gadget([
        "analyze",
        cfg.to_str().unwrap(),
        "--events",
        "1000000000000",
        "-o",
        json.to_str().unwrap(),
    ]);
    let out = interrupt_and_wait(child, Duration::from_millis(1500), "analyze of a config");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("PARTIAL: stopped by Ctrl-C"), "{stdout}");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("the analysis is written");
    assert_eq!(written["partial"], true);
    assert!(written["event_stream"]["events"].as_u64().unwrap() > 0);
}

#[test]
fn ctrl_c_stops_compare_part_way_and_prints_the_partial_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = endless_workload(dir.path());
    let trace = dir.path().join("t.gtrace");
    let trace = trace.to_str().unwrap();
    // three million requests: several seconds of comparing in a debug build
    let made = spawn_gadget([
        "gen",
        cfg.to_str().unwrap(),
        "-o",
        trace,
        "--limit",
        "3000000",
    ]);
    assert!(wait_bounded(made, Duration::from_secs(120), "gen")
        .status
        .success());
    let child = spawn_gadget(["compare", trace, trace]);
    let out = interrupt_and_wait(child, Duration::from_millis(1000), "compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted: the comparison covers"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("PARTIAL (Ctrl-C)"), "{stdout}");
    assert!(stdout.contains("no locality"), "{stdout}");
}
