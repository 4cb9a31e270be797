//! A run that meets a failing store or a stop request keeps what it measured: the results up
//! to the failure, marked partial with the reason, and the failure itself for the caller.

// the harness-overhead benches' workload (this test uses part of the module)
#[allow(dead_code)]
#[path = "../benches/common/mod.rs"]
mod common;
#[path = "support/faulty_store.rs"]
mod faulty_store;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::run::{RunError, RunOptions, Warmup};

use common::Workload;
use faulty_store::{Fault, FaultyStore};

/// Requests of the workload.
const REQUESTS: u64 = 10_000;

fn options(arrival: ArrivalProcess) -> RunOptions {
    RunOptions {
        arrival,
        seed: 1,
        warmup: Warmup::Requests(100),
        interval_ns: 1_000_000_000,
        keep_intervals: false,
        stop: Arc::new(AtomicBool::new(false)),
        value_compression_ratio: gadget_eval::value::DEFAULT_COMPRESSION_RATIO,
        duration_ns: None,
        shard: None,
        start_at: None,
        job: None,
    }
}

#[test]
fn a_store_failure_mid_run_keeps_every_request_measured_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let workload = Workload::generate_requests(&dir.path().join("w.gtrace"), REQUESTS);
    for arrival in [
        ArrivalProcess::ClosedLoop,
        ArrivalProcess::Constant { rate: 1e6 },
    ] {
        // request 5,000 is in the middle of a chunk of the closed loop's recording
        let mut store = FaultyStore::new(workload.states, 5_000, Fault::Fail);
        let options = options(arrival);
        let (mut measured, _) = workload.drive_into(&mut store, &options);
        assert_eq!(
            store.requests(),
            5_000,
            "{arrival:?}: the run stops at the failure"
        );
        let report = measured.report("faulty-memory", &[], &options);
        assert!(report.partial, "{arrival:?}");
        assert_eq!(report.warmup_requests, 100, "{arrival:?}");
        assert_eq!(
            report.requests, 4_899,
            "{arrival:?}: every request before the failed one is measured"
        );
        assert_eq!(report.latency.last().unwrap().ops, 4_899, "{arrival:?}");
        let reason = report.partial_reason.clone().unwrap_or_default();
        assert!(
            reason.contains("failed a") && reason.contains("No space left on device"),
            "{arrival:?}: {reason}"
        );
        assert!(
            report.warnings()[0].starts_with("PARTIAL: the faulty-memory store failed"),
            "{:?}",
            report.warnings()
        );
        assert!(
            matches!(measured.take_failure(), Some(RunError::Store(_))),
            "{arrival:?}: the failure is handed to the caller"
        );
    }
}

#[test]
fn a_stop_request_ends_a_wait_for_a_far_intended_start() {
    let dir = tempfile::tempdir().unwrap();
    let workload = Workload::generate_requests(&dir.path().join("w.gtrace"), 100);
    // one request every 11.6 days: the second one's wait is what the stop must end
    let mut options = options(ArrivalProcess::Constant { rate: 1e-6 });
    options.warmup = Warmup::None;
    let stop = options.stop.clone();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let mut store = FaultyStore::new(workload.states, u64::MAX, Fault::Fail);
        let (measured, _) = workload.drive_into(&mut store, &options);
        done.send(measured.report("faulty-memory", &[], &options))
            .unwrap();
    });
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let report = finished
        .recv_timeout(Duration::from_secs(20))
        .expect("the driver stops waiting once asked to");
    assert!(report.partial);
    assert_eq!(report.requests, 1, "the first request starts at once");
    assert_eq!(
        report.partial_reason.as_deref(),
        Some("interrupted (Ctrl-C, SIGTERM or SIGHUP)")
    );
}
