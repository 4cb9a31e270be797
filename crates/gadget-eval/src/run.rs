//! The driver: issues a request stream to a store on schedule and measures every request.
//!
//! One concept, the driver's loop and what it measures; its results document is the
//! `gadget-results` crate's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gadget::access::Op;
use gadget::PROGRESS_EVERY;

use crate::arrival::ArrivalProcess;
use crate::clock::RunClock;
use crate::completion::{CompletedChunk, ReadOutcome};
use crate::measure::Recorder;
use crate::store::{issue, Store, StoreError};
use crate::value::ValueBytes;
use crate::workload::{RequestBlock, RequestStream, WorkloadError};
use gadget_results::{RunReport, WallClock, INTERRUPTED_REASON};

/// What is left out of the results at the start of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmup {
    /// Measure from the first request.
    None,
    /// Leave out the first N requests.
    Requests(u64),
    /// Leave out requests completed in the first N nanoseconds.
    Duration(u64),
}

/// How to drive the store.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// When requests are meant to start.
    pub arrival: ArrivalProcess,
    /// Seed of the arrival schedule.
    pub seed: u64,
    /// Warm-up excluded from the results.
    pub warmup: Warmup,
    /// Time-series interval, ns.
    pub interval_ns: u64,
    /// Keep every interval histogram (for an HDR interval log).
    pub keep_intervals: bool,
    /// Set from elsewhere (Ctrl-C) to stop early; results are then marked partial.
    pub stop: Arc<AtomicBool>,
    /// What the values written compress to, as a fraction of their size
    /// ([`crate::value::ValueBytes`]; `db_bench --compression_ratio`).
    pub value_compression_ratio: f64,
    /// The longest the run lasts from its start, warm-up included (`--duration`): no request
    /// starts after it (in an open loop, none is scheduled after it). A run that reaches it is
    /// complete, not partial. `None`: until the workload ends.
    pub duration_ns: Option<u64>,
    /// Drive only this shard's requests (`--shard i/N`, [`crate::shard`]): its stream keeps
    /// them ([`crate::workload::Production::shard`], as
    /// [`run_instances`](crate::concurrent::run_instances) starts it) and counts the others
    /// before each, for which an open loop's schedule is still drawn, so that the shards
    /// together follow the one schedule of the whole workload.
    pub shard: Option<crate::shard::Shard>,
    /// Start on this wall-clock instant (`--start-at`) rather than as soon as every
    /// instance is ready; shards on several machines agree on it.
    pub start_at: Option<std::time::SystemTime>,
    /// The instances are subtasks of one parallel job ([`crate::job`]): they share the
    /// arrival seed and follow the job's one schedule, each with its own requests' starts.
    /// `None`: independent instances, instance i with seed + i.
    pub job: Option<crate::job::JobSubtasks>,
}

/// A run that failed; results up to the failure are lost only when the store broke.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The store failed a request.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request producer failed.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The agreed start (`--start-at`) passed before the run was ready to start.
    #[error("the agreed start (--start-at) passed {late:?} before the store was open and the first requests ready, so nothing ran; agree on a start further ahead")]
    MissedStart {
        /// How late the run was ready.
        late: Duration,
    },
}

/// Progress of a run, for progress bars.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Requests issued so far.
    pub requests: u64,
    /// Time since the start.
    pub elapsed: Duration,
}

/// Everything the driver measured; [`Measured::report`] turns it into a [`RunReport`].
#[derive(Debug)]
pub struct Measured {
    /// The histograms and time series.
    pub recorder: Recorder,
    partial: bool,
    /// The error that ended the run early, if one did.
    failure: Option<RunError>,
    warmup_requests: u64,
    requests: u64,
    measure_start_ns: u64,
    end_ns: u64,
    max_start_lag_ns: u64,
    producer_stalls: u64,
    producer_stall_ns: u64,
    reads_found: u64,
    reads_empty: u64,
    bytes_read: u64,
    /// Requests of the workload left to other shards (`--shard`).
    others_requests: u64,
    /// The run's time zero on the wall clock, ns since the Unix epoch.
    zero_unix_ns: u64,
}

impl Measured {
    /// True when the run was stopped early.
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// The error that ended the run early (a store or the workload failed), taken out.
    pub fn take_failure(&mut self) -> Option<RunError> {
        self.failure.take()
    }

    /// Ends the run here because of `failure`: what was measured so far stands, marked partial.
    /// A store that gave up waiting because of a stop request did not fail: the run is
    /// interrupted.
    pub(crate) fn fail(&mut self, failure: impl Into<RunError>) {
        self.partial = true;
        match failure.into() {
            RunError::Store(StoreError::Interrupted { .. }) => {}
            failure => {
                self.failure.get_or_insert(failure);
            }
        }
    }

    /// Why the run stopped early, `None` when it ran to the end.
    fn partial_reason(&self) -> Option<String> {
        self.partial.then(|| match &self.failure {
            Some(e) => e.to_string(),
            None => INTERRUPTED_REASON.to_string(),
        })
    }

    /// The measurements of concurrent instances together: histograms merged, counts added,
    /// the measured time from the earliest start to the latest end. Instance i's states are
    /// numbered from `first_states[i]` in the whole.
    pub fn combine(
        all: &[Measured],
        first_states: &[usize],
        interval_ns: u64,
        keep_intervals: bool,
    ) -> Measured {
        let mut recorder = Recorder::new(interval_ns, keep_intervals, false);
        for (m, &first) in all.iter().zip(first_states) {
            recorder.merge(&m.recorder, first);
        }
        Measured {
            recorder,
            partial: all.iter().any(|m| m.partial),
            failure: None,
            warmup_requests: all.iter().map(|m| m.warmup_requests).sum(),
            requests: all.iter().map(|m| m.requests).sum(),
            others_requests: all.iter().map(|m| m.others_requests).sum(),
            measure_start_ns: all.iter().map(|m| m.measure_start_ns).min().unwrap_or(0),
            end_ns: all.iter().map(|m| m.end_ns).max().unwrap_or(0),
            max_start_lag_ns: all.iter().map(|m| m.max_start_lag_ns).max().unwrap_or(0),
            producer_stalls: all.iter().map(|m| m.producer_stalls).sum(),
            producer_stall_ns: all.iter().map(|m| m.producer_stall_ns).sum(),
            reads_found: all.iter().map(|m| m.reads_found).sum(),
            reads_empty: all.iter().map(|m| m.reads_empty).sum(),
            bytes_read: all.iter().map(|m| m.bytes_read).sum(),
            // the instances share their epoch: each read it off the wall clock a little apart
            zero_unix_ns: all.iter().map(|m| m.zero_unix_ns).min().unwrap_or(0),
        }
    }

    /// The report of a run of `store` with `options`.
    pub fn report(&self, store: &str, emulated: &[Op], options: &RunOptions) -> RunReport {
        let seconds = self.end_ns.saturating_sub(self.measure_start_ns) as f64 / 1e9;
        let (latency, service) = self.recorder.summary(seconds);
        let throughput = if seconds > 0.0 {
            self.requests as f64 / seconds
        } else {
            0.0
        };
        // a shard's part of the schedule: the workload's rate times its share of the requests
        let own = self.requests + self.warmup_requests;
        let target_rate = options.arrival.rate().map(|rate| {
            if (options.shard.is_some() || options.job.is_some()) && own + self.others_requests > 0
            {
                rate * own as f64 / (own + self.others_requests) as f64
            } else {
                rate
            }
        });
        RunReport {
            gadget_version: env!("CARGO_PKG_VERSION").to_string(),
            store: store.to_string(),
            arrival: options.arrival.describe(),
            open_loop: !options.arrival.is_closed_loop(),
            target_rate,
            seed: options.seed,
            value_compression_ratio: Some(options.value_compression_ratio),
            partial: self.partial,
            partial_reason: self.partial_reason(),
            warmup_requests: self.warmup_requests,
            requests: self.requests,
            seconds,
            throughput,
            sustained: target_rate
                .filter(|_| self.requests > 0)
                .map(|r| throughput >= 0.95 * r),
            max_start_lag_ns: self.max_start_lag_ns,
            producer_stalls: self.producer_stalls,
            producer_stall_ns: self.producer_stall_ns,
            // the emulated ops this run actually issued
            emulated_ops: emulated
                .iter()
                .filter(|o| self.recorder.occurred(**o))
                .map(|o| o.name().to_string())
                .collect(),
            reads_found: self.reads_found,
            reads_empty: self.reads_empty,
            bytes_read: self.bytes_read,
            latency,
            service,
            latency_spectrum: self.recorder.spectra(),
            time_series: self.recorder.series.clone(),
            time_series_truncated: self.recorder.is_series_truncated(),
            store_counters: BTreeMap::new(),
            per_state: Vec::new(),
            per_store: Vec::new(),
            instances: Vec::new(),
            context: None,
            wall_clock: Some(WallClock {
                zero_unix_ns: self.zero_unix_ns,
                measure_start_ns: self.measure_start_ns.min(self.end_ns),
                measure_end_ns: self.end_ns,
                interval_ns: options.interval_ns.max(1),
            }),
            histograms: Some(self.recorder.histograms()),
            shards: Vec::new(),
        }
    }
}

/// `instant` on the wall clock, ns since the Unix epoch (0 before it).
fn unix_ns(instant: Instant) -> u64 {
    let now = std::time::SystemTime::now();
    let at = now
        .checked_sub(instant.elapsed())
        .unwrap_or(std::time::UNIX_EPOCH);
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Requests a closed loop issues between two recordings of their completions: few enough that
/// the readings stay in the first-level cache beside the store's data.
const RECORD_EVERY: usize = 256;

/// True once the warm-up is over: `issued` requests done, the last at `done_ns`.
fn warmup_over(warmup: Warmup, issued: u64, done_ns: u64) -> bool {
    match warmup {
        Warmup::None => true,
        Warmup::Requests(n) => issued > n,
        Warmup::Duration(ns) => done_ns >= ns,
    }
}

impl Measured {
    /// A run stopped (or abandoned by another instance) before it started: nothing measured,
    /// marked partial.
    pub(crate) fn stopped_before_start(interval_ns: u64) -> Self {
        let mut m = Measured::new(Recorder::new(interval_ns, false, false));
        m.partial = true;
        m.zero_unix_ns = unix_ns(Instant::now());
        m
    }

    /// Nothing measured yet, to be recorded by `recorder`.
    fn new(recorder: Recorder) -> Self {
        Measured {
            recorder,
            partial: false,
            failure: None,
            warmup_requests: 0,
            requests: 0,
            measure_start_ns: 0,
            end_ns: 0,
            max_start_lag_ns: 0,
            producer_stalls: 0,
            producer_stall_ns: 0,
            reads_found: 0,
            reads_empty: 0,
            bytes_read: 0,
            others_requests: 0,
            zero_unix_ns: 0,
        }
    }

    /// Counts a measured request and what it read.
    #[inline]
    fn count(&mut self, read: Option<Option<usize>>) {
        self.requests += 1;
        match read {
            Some(Some(n)) => {
                self.reads_found += 1;
                self.bytes_read += n as u64;
            }
            Some(None) => self.reads_empty += 1,
            None => {}
        }
    }

    /// The next block of `stream`, counting the wait as a producer stall once requests are
    /// under way; `None` at its end.
    fn next_block(
        &mut self,
        stream: &mut RequestStream,
        clock: &RunClock,
        issued: u64,
    ) -> Option<RequestBlock> {
        if let Some(block) = stream.try_next_block() {
            return Some(block);
        }
        let waited_from = clock.now_ns();
        let block = stream.next_block()?;
        // the very first block is not a stall: nothing was due yet
        if issued > 0 {
            self.producer_stalls += 1;
            self.producer_stall_ns += clock.now_ns() - waited_from;
        }
        Some(block)
    }
}

/// What a closed loop keeps of its requests' completions.
struct CompletionRecorder<'a> {
    clock: &'a RunClock,
    warmup: Warmup,
    m: Measured,
    measuring: bool,
    issued: u64,
}

impl CompletionRecorder<'_> {
    /// Records a chunk: each request's latency runs from the previous one's completion (the
    /// first's from the chunk's start) to its own.
    fn record(&mut self, chunk: &CompletedChunk) {
        let mut start_ns = self.clock.ns_of(chunk.start);
        let mut completions = &chunk.completions[..];
        while !self.measuring {
            let Some((c, rest)) = completions.split_first() else {
                return;
            };
            let done = self.clock.ns_of(c.ticks);
            self.issued += 1;
            if warmup_over(self.warmup, self.issued, done) {
                // this request is the first measured one
                self.measuring = true;
                self.m.measure_start_ns = start_ns;
                self.m.recorder.start(start_ns);
                self.issued -= 1;
                break;
            }
            self.m.warmup_requests += 1;
            start_ns = done;
            completions = rest;
        }
        // the chunk's requests by what they read, indexed by `ReadOutcome`
        let mut outcomes = [0u64; 3];
        let mut bytes = 0;
        for c in completions {
            let done = self.clock.ns_of(c.ticks);
            let latency = done - start_ns;
            self.m
                .recorder
                .record_completion(c.op, c.state as usize, latency, done);
            outcomes[c.read as usize] += 1;
            bytes += u64::from(c.read_len);
            start_ns = done;
        }
        let measured = completions.len() as u64;
        self.issued += measured;
        self.m.requests += measured;
        self.m.reads_found += outcomes[ReadOutcome::Found as usize];
        self.m.reads_empty += outcomes[ReadOutcome::Empty as usize];
        self.m.bytes_read += bytes;
    }
}

/// Drives `store` with every request of `stream` on the schedule of `options`, the schedule
/// counting from `epoch` (the same for concurrent instances, so their intervals line up).
///
/// A stop request (Ctrl-C) or a failed request ends the run early with what was measured,
/// marked partial; a failure is kept for [`Measured::take_failure`] (the failed request itself
/// is not measured). What the run needs is made first, after `epoch`: a caller whose epoch is
/// a start line makes a [`Driver`] before it instead.
pub fn drive(
    store: &mut dyn Store,
    stream: &mut RequestStream,
    options: &RunOptions,
    epoch: Instant,
    progress: &mut dyn FnMut(Progress),
) -> Measured {
    Driver::new(options).drive(store, stream, options, epoch, progress)
}

/// What a run makes before its first request (the value bytes, a megabyte drawn from the seed,
/// and the histograms), made before the start line so that it is no request's latency.
pub struct Driver {
    values: ValueBytes,
    measured: Measured,
}

impl Driver {
    /// Makes what a run with `options` needs.
    pub fn new(options: &RunOptions) -> Self {
        Driver {
            values: ValueBytes::new(options.seed, options.value_compression_ratio),
            measured: Measured::new(Recorder::new(
                options.interval_ns,
                options.keep_intervals,
                options.arrival.is_closed_loop(),
            )),
        }
    }

    /// Runs as [`drive`] does, with what was made already.
    pub fn drive(
        self,
        store: &mut dyn Store,
        stream: &mut RequestStream,
        options: &RunOptions,
        epoch: Instant,
        progress: &mut dyn FnMut(Progress),
    ) -> Measured {
        debug_assert_eq!(
            stream.shard(),
            options.shard,
            "a shard's run drives a stream that keeps the shard's requests"
        );
        let clock = RunClock::new(epoch);
        let zero_unix_ns = unix_ns(epoch);
        let Driver {
            mut values,
            measured,
        } = self;
        let driver = if options.arrival.is_closed_loop() {
            drive_closed_loop
        } else {
            drive_open_loop
        };
        let mut m = driver(
            store,
            stream,
            options,
            &clock,
            measured,
            &mut values,
            progress,
        );
        // the workload's requests after a job subtask's or a shard's last one are others'
        // share (known once the run read its stream to the end: not cut short)
        if !m.partial && options.duration_ns.is_none() {
            m.others_requests += stream.others_after_last();
        }
        m.zero_unix_ns = zero_unix_ns;
        m
    }
}

/// A closed loop: a request starts as soon as the previous one completes. The clock is read
/// once per request, at its completion, which is also the next request's start; between two
/// requests the driver only notes that reading. Every [`RECORD_EVERY`] requests' readings are
/// recorded after them, and the next request is timed from a fresh reading, so recording is
/// outside every request's time.
fn drive_closed_loop(
    store: &mut dyn Store,
    stream: &mut RequestStream,
    options: &RunOptions,
    clock: &RunClock,
    m: Measured,
    values: &mut ValueBytes,
    progress: &mut dyn FnMut(Progress),
) -> Measured {
    let mut recording = CompletionRecorder {
        clock,
        warmup: options.warmup,
        m,
        measuring: options.warmup == Warmup::None,
        issued: 0,
    };
    let mut done = CompletedChunk::with_capacity(RECORD_EVERY);
    let mut timed_out = false;
    while let Some(block) = recording.m.next_block(stream, clock, recording.issued) {
        for (c, chunk) in block.requests.chunks(RECORD_EVERY).enumerate() {
            let chunk_start = c * RECORD_EVERY;
            if options.stop.load(Ordering::Relaxed) {
                recording.m.partial = true;
                break;
            }
            done.begin(clock);
            let issued = store.issue_chunk(&block, chunk, values, clock, &mut done);
            if !block.others_before.is_empty() {
                // a job subtask's or a shard's: the others' requests before the first not
                // issued (all of the chunk's once every request was)
                let reached = (done.completions.len() + 1).min(chunk.len());
                recording.m.others_requests += block.others_before
                    [chunk_start..chunk_start + reached]
                    .iter()
                    .sum::<u64>();
            }
            if let Err(e) = issued {
                recording.m.fail(e);
            }
            let before = recording.issued;
            recording.record(&done);
            let last = done.last_ticks();
            if recording.issued / PROGRESS_EVERY > before / PROGRESS_EVERY {
                progress(Progress {
                    requests: recording.issued,
                    elapsed: Duration::from_nanos(clock.ns_of(last)),
                });
            }
            if options.duration_ns.is_some_and(|d| clock.ns_of(last) >= d) {
                timed_out = true;
            }
            if recording.m.partial || timed_out {
                break;
            }
        }
        stream.recycle(block);
        if recording.m.partial || timed_out {
            break;
        }
    }
    let mut m = recording.m;
    m.end_ns = clock.now_ns();
    m.recorder.finish(m.end_ns);
    progress(Progress {
        requests: recording.issued,
        elapsed: Duration::from_nanos(m.end_ns),
    });
    m
}

/// An open loop: each request waits for its intended start from the schedule (or from its
/// event time); the clock is read when it starts and when it completes.
fn drive_open_loop(
    store: &mut dyn Store,
    stream: &mut RequestStream,
    options: &RunOptions,
    clock: &RunClock,
    mut m: Measured,
    values: &mut ValueBytes,
    progress: &mut dyn FnMut(Progress),
) -> Measured {
    let event_time_speed = match options.arrival {
        crate::arrival::ArrivalProcess::EventTime { speed } => Some(speed),
        _ => None,
    };
    let mut first_event_time_us: Option<i64> = None;
    // the whole workload's schedule, of which a job subtask or a shard keeps its own
    // requests' starts
    let mut schedule = options.arrival.schedule(options.seed);
    let mut measuring = options.warmup == Warmup::None;
    let mut issued: u64 = 0;
    'blocks: while let Some(block) = m.next_block(stream, clock, issued) {
        for (i, r) in block.requests.iter().enumerate() {
            if options.stop.load(Ordering::Relaxed) {
                m.partial = true;
                stream.recycle(block);
                break 'blocks;
            }
            let others = block.others_before(i);
            if others > 0 {
                // other clients' requests (a job's other subtasks, other shards): their starts
                // are drawn all the same
                m.others_requests += others;
                if event_time_speed.is_none() {
                    schedule.skip(others);
                }
            }
            let intended = match event_time_speed {
                Some(speed) => {
                    let time_us = block.event_times_us.get(i).copied().unwrap_or(0);
                    // the workload's first event time, whichever shard issues it
                    let first = *first_event_time_us
                        .get_or_insert_with(|| stream.first_event_time_us().unwrap_or(time_us));
                    ((time_us - first).max(0) as f64 * 1e3 / speed) as u64
                }
                None => schedule.next_start(),
            };
            if options.duration_ns.is_some_and(|d| intended >= d) {
                stream.recycle(block);
                break 'blocks;
            }
            let Some(actual) = clock.wait_until(intended, &options.stop) else {
                m.partial = true;
                stream.recycle(block);
                break 'blocks;
            };
            let read = match issue(store, &block, r, values) {
                Ok(read) => read,
                Err(e) => {
                    m.fail(e);
                    stream.recycle(block);
                    break 'blocks;
                }
            };
            let done = clock.now_ns();
            issued += 1;
            if !measuring && warmup_over(options.warmup, issued, done) {
                measuring = true;
                m.measure_start_ns = actual;
                m.recorder.start(actual);
            } else if !measuring {
                m.warmup_requests += 1;
            }
            if measuring {
                m.recorder.record_in_state(
                    r.op,
                    r.state as usize,
                    done - intended,
                    done - actual,
                    done,
                );
                m.max_start_lag_ns = m.max_start_lag_ns.max(actual - intended);
                m.count(read);
            }
            if issued % PROGRESS_EVERY == 0 {
                progress(Progress {
                    requests: issued,
                    elapsed: Duration::from_nanos(done),
                });
            }
        }
        stream.recycle(block);
    }
    m.end_ns = clock.now_ns();
    m.recorder.finish(m.end_ns);
    progress(Progress {
        requests: issued,
        elapsed: Duration::from_nanos(m.end_ns),
    });
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_producer_stall_is_said_to_be_in_the_latencies_only_in_an_open_loop() {
        let options = |arrival| RunOptions {
            arrival,
            seed: 1,
            warmup: Warmup::None,
            interval_ns: 1_000_000_000,
            keep_intervals: false,
            stop: Arc::new(AtomicBool::new(false)),
            value_compression_ratio: crate::value::DEFAULT_COMPRESSION_RATIO,
            duration_ns: None,
            shard: None,
            start_at: None,
            job: None,
        };
        let mut m = Measured::new(Recorder::new(1_000_000_000, false, true));
        m.producer_stalls = 2;
        m.producer_stall_ns = 3_000_000;
        let closed = m.report("memory", &[], &options(ArrivalProcess::ClosedLoop));
        let warning = closed.warnings().join("\n");
        assert!(
            warning.contains("fell behind 2 times (3.0 ms in all)")
                && warning.contains("in no request's latency"),
            "{warning}"
        );
        let open = m.report(
            "memory",
            &[],
            &options(ArrivalProcess::Constant { rate: 1000.0 }),
        );
        let warning = open.warnings().join("\n");
        assert!(warning.contains("their latencies include it"), "{warning}");
    }
}
