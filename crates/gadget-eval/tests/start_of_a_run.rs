//! A run starts when its stores are open and its workloads have their first requests ready:
//! a store that takes long to open is not charged to any request's latency, nor to the
//! throughput, and concurrent instances start together after the slowest one is ready.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use gadget::config::Config;
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::concurrent::{run_streams, InstancesOutcome};
use gadget_eval::run::{RunOptions, Warmup};
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::store::{Store, StoreError};
use gadget_eval::workload::{RequestStream, WorkloadSource};

#[path = "support/workload.rs"]
mod workload;

use workload::ENDLESS_TUMBLING as WORKLOAD;

/// How long the slowest store takes to open: far longer than the runs below take.
const SLOW_OPEN: Duration = Duration::from_millis(400);

/// Runs `instances` instances of `requests` requests each with `arrival`; instance `i`'s
/// store takes `SLOW_OPEN` × i / (instances − 1) to open (the last one the longest).
fn run(arrival: ArrivalProcess, instances: usize, requests: u64) -> InstancesOutcome {
    let streams = (0..instances)
        .map(|_| {
            let config = Config::parse(WORKLOAD, Path::new("start.toml")).unwrap();
            RequestStream::start(WorkloadSource::Generate {
                config: Box::new(config),
                limit: Some(requests),
            })
            .unwrap()
        })
        .collect();
    let open = |i: usize, states: &[String]| -> Result<Box<dyn Store>, StoreError> {
        let share = (i + 1) as u32;
        std::thread::sleep(SLOW_OPEN * share / instances as u32);
        Ok(Box::new(MemoryStore::new(states.len())))
    };
    let options = RunOptions {
        arrival,
        seed: 1,
        warmup: Warmup::None,
        interval_ns: 1_000_000_000,
        keep_intervals: false,
        stop: Arc::new(AtomicBool::new(false)),
        value_compression_ratio: gadget_eval::value::DEFAULT_COMPRESSION_RATIO,
        duration_ns: None,
        shard: None,
        start_at: None,
        job: None,
    };
    let outcome = run_streams(streams, &open, "a store each", &options, &|_| {}).unwrap();
    assert!(outcome.failure.is_none());
    assert!(!outcome.report.partial);
    outcome
}

#[test]
fn an_open_loop_run_is_not_charged_for_its_store_opening() {
    // 200 requests due at 1,000/s: all of them due before the store is open if the schedule
    // started before it (each would then wait 200–400 ms)
    let outcome = run(ArrivalProcess::Constant { rate: 1000.0 }, 1, 200);
    let latency = &outcome.report.latency[0];
    assert!(
        latency.p50_ns < SLOW_OPEN.as_nanos() as u64 / 4,
        "the median request waited for the store to open: {latency:?}"
    );
    assert!(outcome.report.max_start_lag_ns < SLOW_OPEN.as_nanos() as u64 / 4);
}

#[test]
fn a_short_closed_loop_run_is_not_diluted_by_its_store_opening() {
    let outcome = run(ArrivalProcess::ClosedLoop, 1, 10);
    assert_eq!(outcome.report.requests, 10);
    assert!(
        outcome.report.seconds < SLOW_OPEN.as_secs_f64() / 4.0,
        "the measured time includes the store's opening: {} s",
        outcome.report.seconds
    );
}

#[test]
fn concurrent_instances_start_together_after_the_slowest_store_opens() {
    let outcome = run(ArrivalProcess::Constant { rate: 1000.0 }, 3, 200);
    assert_eq!(outcome.report.instances.len(), 3);
    for instance in &outcome.report.instances {
        let latency = &instance.latency[0];
        assert!(
            latency.p50_ns < SLOW_OPEN.as_nanos() as u64 / 4,
            "an instance started before the slowest store opened: {latency:?}"
        );
    }
}
