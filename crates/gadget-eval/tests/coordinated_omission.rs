//! Latency is measured from each request's intended start, so a stall shows up in every request
//! queued behind it (coordinated-omission-correct), while service time shows the stall once.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use gadget::access::{Op, StateId};
use gadget::config::Config;
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::run::{drive, Measured, RunOptions, Warmup};
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::store::{Store, StoreError};
use gadget_eval::workload::{RequestStream, WorkloadSource};

/// The memory store, stalling once for `stall` at request number `at`.
struct StallingStore {
    inner: MemoryStore,
    requests: u64,
    at: u64,
    stall: Duration,
}

impl StallingStore {
    fn tick(&mut self) {
        self.requests += 1;
        if self.requests == self.at {
            std::thread::sleep(self.stall);
        }
    }
}

impl Store for StallingStore {
    fn name(&self) -> &'static str {
        "stalling-memory"
    }
    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.tick();
        self.inner.get(state, key)
    }
    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.tick();
        self.inner.put(state, key, value)
    }
    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.tick();
        self.inner.merge(state, key, value)
    }
    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.tick();
        self.inner.delete(state, key)
    }
    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.tick();
        self.inner.seek(state, key)
    }
    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.tick();
        self.inner.next(state)
    }
    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.tick();
        self.inner.batch_put(state, key, value)
    }
    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.tick();
        self.inner.batch_delete(state, key)
    }
    fn batch_commit(&mut self) -> Result<(), StoreError> {
        self.tick();
        self.inner.batch_commit()
    }
    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        self.tick();
        self.inner.range_query(state, start, end)
    }
    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.tick();
        self.inner.range_delete(state, start, end)
    }
}

const WORKLOAD: &str = r#"
seed = 3
[source]
type = "synthetic"
key_space = 1000
[source.keys]
distribution = "uniform"
[source.gaps]
distribution = "constant"
value = 1
[source.watermarks]
type = "punctuated"
every = 100
[operator]
type = "tumbling"
size = 1000
timers = "heap"
"#;

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
    let mut store = StallingStore {
        inner: MemoryStore::new(stream.state_names.len()),
        requests: 0,
        at: stall_at,
        stall: Duration::from_millis(100),
    };
    let options = RunOptions {
        arrival,
        seed: 1,
        warmup,
        interval_ns: 100_000_000,
        keep_intervals: false,
        stop: Arc::new(AtomicBool::new(false)),
    };
    let measured = drive(
        &mut store,
        &mut stream,
        &options,
        std::time::Instant::now(),
        &mut |_| {},
    )
    .unwrap();
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
