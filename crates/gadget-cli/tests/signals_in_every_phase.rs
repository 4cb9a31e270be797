//! Ctrl-C and SIGTERM in each phase of the long commands: while a store opens, during the
//! warm-up, while `analyze` reads a config's endless stream, and while `compare` reads an
//! endless trace. Each command ends (bounded in time), keeps what it measured marked partial,
//! and says what happened; the phase of measuring is in `run_and_replay.rs`.

use std::path::PathBuf;
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

/// Starts a short open-loop run that prints its JSON, with two thousand 1 ms intervals, to a
/// pipe nobody reads yet, so that it stays in its last phase (writing results); returns it
/// once its results file is written.
fn run_blocked_writing_its_results(dir: &std::path::Path) -> (std::process::Child, PathBuf) {
    let cfg = endless_workload(dir);
    let results = dir.join("r.json");
    let child = spawn_gadget([
        "run",
        cfg.to_str().unwrap(),
        "--store",
        "memory",
        "--arrival",
        "constant",
        "--rate",
        "20000",
        "--limit",
        "40000",
        "--interval",
        "1ms",
        "--json",
        "-o",
        results.to_str().unwrap(),
    ]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !results.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the results are not written within 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, results)
}

#[test]
fn sigterm_while_results_are_written_lets_them_finish_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (child, results) = run_blocked_writing_its_results(dir.path());
    // the run is measured and blocked printing; the signal must not cut what it prints
    std::thread::sleep(Duration::from_millis(200));
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    // now read what it prints, on a thread, so that a run that never ends fails the test
    let (done, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let out = output
        .recv_timeout(Duration::from_secs(30))
        .expect("the run ends once its output is read")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the run was whole when the signal came: {stderr}"
    );
    let printed: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the printed JSON is whole");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(printed, written);
    assert_eq!(written["partial"], false);
    assert!(written["time_series"].as_array().unwrap().len() > 1000);
}

#[test]
fn a_second_signal_while_results_are_written_exits_at_once_leaving_written_files_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (child, results) = run_blocked_writing_its_results(dir.path());
    // two signals further apart than one interrupt's echo: the second exits at once, even
    // though the output it is printing is blocked
    let out = signal_twice_and_wait(child);
    assert_eq!(out.status.code(), Some(130));
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).expect("r.json is whole");
    assert_eq!(written["partial"], false);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// Sends SIGTERM twice, 0.7 s apart, without reading the child's output; its output.
fn signal_twice_and_wait(child: std::process::Child) -> std::process::Output {
    let pid = child.id().to_string();
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(700));
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
    }
    wait_bounded(child, Duration::from_secs(30), "a run signalled twice")
}

#[test]
fn ctrl_c_while_a_recorded_job_runs_stops_the_job_and_keeps_its_traces_in_text() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.jar");
    std::fs::write(&agent, b"not run: the job below is a shell").unwrap();
    let out = dir.path().join("traces");
    std::fs::create_dir(&out).unwrap();
    let earlier = out.join("earlier.trace.txt");
    std::fs::write(&earlier, b"an earlier run's").unwrap();
    // a job that writes its trace and then runs until it is stopped
    let job = format!(
        "echo partial > {}/op.0.trace.txt; exec sleep 60",
        out.display()
    );
    let child = spawn_gadget([
        "record",
        "flink",
        "--format",
        "bin",
        "--agent",
        agent.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &job,
    ]);
    let done = interrupt_and_wait(child, Duration::from_millis(1500), "record");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(stderr.contains("1 left in text"), "{stderr}");
    assert!(stderr.contains("op.0.trace.txt"), "{stderr}");
    assert!(
        out.join("op.0.trace.txt").is_file(),
        "the stopped job's trace is kept"
    );
    assert!(!out.join("op.0.gtrace").exists(), "nothing was converted");
    assert_eq!(std::fs::read(&earlier).unwrap(), b"an earlier run's");
}
