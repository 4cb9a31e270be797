//! Latency is measured from each request's intended start, so a stall shows up in every request
//! queued behind it (coordinated-omission-correct), while service time shows the stall once.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use gadget::access::Op;
use gadget::config::Config;
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::run::{drive, Measured, RunOptions, Warmup};
use gadget_eval::workload::{RequestStream, WorkloadSource};

#[path = "support/faulty_store.rs"]
mod faulty_store;

use faulty_store::{Fault, FaultyStore};

#[path = "support/workload.rs"]
mod workload;

use workload::ENDLESS_TUMBLING as WORKLOAD;

/// Drives 10,000 requests of [`WORKLOAD`] into a memory store that stalls once for 100 ms at
/// request `stall_at`.
fn drive_stalling(
    arrival: ArrivalProcess,
    warmup: Warmup,
    stall_at: u64,
) -> (Measured, RunOptions) {
    let config = Config::parse(WORKLOAD, Path::new("stall.toml")).unwrap();
    let mut stream = RequestStream::start(WorkloadSource::Generate {
        config: Box::new(config),
        limit: Some(10_000),
    })
    .unwrap();
    let mut store = FaultyStore::new(
        stream.state_names.len(),
        stall_at,
        Fault::Stall(Duration::from_millis(100)),
    );
    let options = RunOptions {
        arrival,
        seed: 1,
        warmup,
        interval_ns: 100_000_000,
        keep_intervals: false,
        stop: Arc::new(AtomicBool::new(false)),
        value_compression_ratio: gadget_eval::value::DEFAULT_COMPRESSION_RATIO,
        duration_ns: None,
        shard: None,
        start_at: None,
        job: None,
    };
    let mut measured = drive(
        &mut store,
        &mut stream,
        &options,
        std::time::Instant::now(),
        &mut |_| {},
    );
    assert!(measured.take_failure().is_none(), "the run succeeds");
    stream.finish().unwrap();
    (measured, options)
}

#[test]
fn a_stall_shows_in_the_latency_of_the_backlog_but_once_in_service_time() {
    let (measured, options) = drive_stalling(
        ArrivalProcess::Constant { rate: 20_000.0 },
        Warmup::None,
        2_000,
    );
    let report = measured.report("stalling-memory", &[], &options);
    assert_eq!(report.requests, 10_000);

    let mut latency_over = 0;
    let mut service_over = 0;
    for op in Op::ALL {
        if let Some(h) = measured.recorder.op_histograms(op) {
            latency_over += h.latency.count_between(50_000_000, 3_600_000_000_000);
            service_over += h.service.count_between(50_000_000, 3_600_000_000_000);
        }
    }
    // requests due in the first 50 ms of the 100 ms stall waited at least 50 ms: ~1000 of them
    assert!(
        latency_over >= 800,
        "{latency_over} requests with latency >= 50 ms"
    );
    // the store itself was slow once (allow one more hiccup of a loaded machine)
    assert!(
        (1..=2).contains(&service_over),
        "{service_over} requests with service time >= 50 ms"
    );
    let all = report.latency.last().unwrap();
    assert!(all.max_ns >= 100_000_000, "max latency {} ns", all.max_ns);
    assert!(report.max_start_lag_ns >= 90_000_000);
}

#[test]
fn in_a_closed_loop_each_request_is_timed_from_the_previous_completion() {
    let (measured, options) =
        drive_stalling(ArrivalProcess::ClosedLoop, Warmup::Requests(1_000), 6_000);
    let report = measured.report("stalling-memory", &[], &options);
    assert_eq!(report.warmup_requests, 1_000);
    assert_eq!(report.requests, 9_000);

    let (mut stalled, mut total_ns, mut recorded) = (0, 0u128, 0);
    for op in Op::ALL {
        if let Some(h) = measured.recorder.op_histograms(op) {
            stalled += h.latency.count_between(50_000_000, 3_600_000_000_000);
            total_ns += h
                .latency
                .iter_recorded()
                .map(|v| v.value_iterated_to() as u128 * v.count_at_value() as u128)
                .sum::<u128>();
            recorded += h.latency.len();
            assert_eq!(
                h.latency, h.service,
                "{op:?}: in a closed loop service time is latency"
            );
        }
    }
    assert_eq!(recorded, 9_000);
    // the stalled request alone (allow one more hiccup of a loaded machine): the next one starts
    // when it completes, so nothing queues behind it
    assert!((1..=2).contains(&stalled), "{stalled} requests over 50 ms");
    // requests are timed over disjoint stretches of the run: their latencies add up to at most
    // the measured time (histogram values are within 0.1 % of the true ones)
    let run_ns = (report.seconds * 1e9).round() as u128;
    assert!(total_ns >= 100_000_000, "latencies add up to {total_ns} ns");
    assert!(
        total_ns <= run_ns + run_ns / 1000,
        "latencies add up to {total_ns} ns over a {run_ns} ns run"
    );
}
