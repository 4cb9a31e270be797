//! The four paths the harness-overhead benches hold against each other, over one workload.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use gadget::access::{Access, AccessSink};
use gadget::config::Config;
use gadget::trace::{BinaryTraceWriter, TraceFooter};
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::run::{drive, Measured, RunOptions, Warmup};
use gadget_eval::shard::Shard;
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::store::{issue, Store};
use gadget_eval::value::{ValueBytes, DEFAULT_COMPRESSION_RATIO};
use gadget_eval::workload::{
    Production, RequestBlock, RequestStream, WorkloadError, WorkloadSource,
};

/// Requests of the benchmark workload.
pub const REQUESTS: u64 = 2_000_000;

/// `gadget replay`'s time-series interval: a second.
pub const SECOND: u64 = 1_000_000_000;

/// The requests a closed-loop driver issues before it records their completions.
const CHUNK: usize = 256;

/// The driver's clock read as the driver reads it where the CPU has an invariant time-stamp
/// counter (`RunClock::raw`): the counter, inline (elsewhere the
/// monotonic clock through `quanta`, as the driver reads it there).
#[inline(always)]
fn clock_reading(clock: &quanta::Clock) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let _ = clock;
        // SAFETY: every x86_64 CPU has the instruction.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        clock.raw()
    }
}

/// The requests in blocks as the driver receives them, and as a binary trace.
struct Recording {
    blocks: Vec<RequestBlock>,
    trace: BinaryTraceWriter<std::fs::File>,
}

impl AccessSink for Recording {
    fn access(&mut self, a: Access<'_>) {
        if self.blocks.last().is_none_or(|b| b.is_full()) {
            self.blocks.push(RequestBlock::default());
        }
        self.blocks.last_mut().expect("a block").push(&a);
        self.trace.access(a);
    }
}

/// The benchmark workload: `examples/bench/tumbling-incr-zipf.toml` cut at [`REQUESTS`] (or
/// a given count).
pub struct Workload {
    /// The requests in memory, in blocks.
    pub blocks: Vec<RequestBlock>,
    /// The same requests as a binary trace file.
    pub trace: std::path::PathBuf,
    /// How many states the requests address.
    pub states: usize,
}

impl Workload {
    /// Generates the workload, writing its trace to `trace`.
    pub fn generate(trace: &Path) -> Workload {
        Workload::generate_requests(trace, REQUESTS)
    }

    /// Generates the workload's first `requests` requests, writing their trace to `trace`.
    pub fn generate_requests(trace: &Path, requests: u64) -> Workload {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/bench/tumbling-incr-zipf.toml");
        let config = Config::load(&path).expect("the bench config loads");
        let mut operator = config.build_operator();
        let states = operator.states();
        let header = config.trace_header(states.clone());
        let file = std::fs::File::create(trace).expect("the trace file is created");
        let mut sink = Recording {
            blocks: Vec::new(),
            trace: BinaryTraceWriter::new(file, &header).expect("the trace header is written"),
        };
        let generated = gadget::generate::generate(
            config.open_source().expect("the source opens"),
            operator.as_mut(),
            &mut sink,
            Some(requests),
            &mut |_| {},
        )
        .expect("generation succeeds");
        sink.trace
            .finish(TraceFooter::new(generated.truncated))
            .expect("the trace is written");
        Workload {
            blocks: sink.blocks,
            trace: trace.to_path_buf(),
            states: states.len(),
        }
    }

    /// Requests in the workload.
    pub fn requests(&self) -> u64 {
        self.blocks.iter().map(|b| b.requests.len() as u64).sum()
    }

    /// The floor: requests already in memory, no producer thread, no clock reads, no
    /// histograms. Returns the reads that found a value.
    pub fn tight_loop(&self) -> u64 {
        self.tight_loop_then(|| {})
    }

    /// The tight loop with the driver's clock read once per request, each reading kept as the
    /// driver keeps it (in a chunk of 256), nothing else measured: what timing every request
    /// costs on its own, before any recording. Returns the reads that found a value.
    pub fn tight_loop_timed(&self) -> u64 {
        let clock = quanta::Clock::new();
        let mut ticks = [0u64; CHUNK];
        let mut at = 0;
        let found = self.tight_loop_then(|| {
            ticks[at] = clock_reading(&clock);
            at = (at + 1) % CHUNK;
        });
        std::hint::black_box(&ticks);
        found
    }

    /// The tight loop, `after_each` called after each request (compiled into the loop).
    #[inline(always)]
    fn tight_loop_then(&self, mut after_each: impl FnMut()) -> u64 {
        let mut store = MemoryStore::new(self.states);
        let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
        let mut found = 0u64;
        for block in &self.blocks {
            for r in &block.requests {
                if let Ok(Some(Some(_))) = issue(&mut store, block, r, &mut value) {
                    found += 1;
                }
                after_each();
            }
        }
        store.flush().expect("flush");
        found
    }

    /// From the trace through the producer thread and its queue, as `gadget replay` reads it
    /// (as `shard`'s stream keeps its own requests, when one is given), but nothing measured.
    /// Returns the reads that found a value.
    pub fn stream_unmeasured(&self, shard: Option<Shard>) -> u64 {
        let mut store = MemoryStore::new(self.states);
        let mut stream = self.stream(shard);
        let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
        let mut found = 0u64;
        while let Some(block) = stream.next_block() {
            for r in &block.requests {
                if let Ok(Some(Some(_))) = issue(&mut store, &block, r, &mut value) {
                    found += 1;
                }
            }
            stream.recycle(block);
        }
        stream.finish().expect("the trace reads");
        store.flush().expect("flush");
        found
    }

    /// `gadget replay`'s driver itself: closed loop, every request timed and recorded, its
    /// time series in intervals of `interval_ns` (`gadget replay`'s default: [`SECOND`]).
    pub fn driver(&self, interval_ns: u64) -> Measured {
        self.drive_closed_loop(Warmup::None, interval_ns, None).0
    }

    /// The driver in a closed loop after `warmup`, its time series in intervals of
    /// `interval_ns`, into a fresh memory store, as `shard` of the workload when one is given;
    /// what it measured and the options it ran with.
    pub fn drive_closed_loop(
        &self,
        warmup: Warmup,
        interval_ns: u64,
        shard: Option<Shard>,
    ) -> (Measured, RunOptions) {
        let options = RunOptions {
            arrival: ArrivalProcess::ClosedLoop,
            seed: 1,
            warmup,
            interval_ns,
            keep_intervals: false,
            stop: Arc::new(AtomicBool::new(false)),
            value_compression_ratio: DEFAULT_COMPRESSION_RATIO,
            duration_ns: None,
            shard,
            start_at: None,
            job: None,
        };
        let mut store = MemoryStore::new(self.states);
        let (mut measured, producer) = self.drive_into(&mut store, &options);
        assert!(measured.take_failure().is_none(), "the run succeeds");
        producer.expect("the trace reads");
        (measured, options)
    }

    /// The trace's requests through the producer thread, as `shard`'s stream keeps them
    /// (every request without one).
    fn stream(&self, shard: Option<Shard>) -> RequestStream {
        RequestStream::start_with(
            WorkloadSource::Trace {
                path: self.trace.clone(),
                limit: None,
            },
            Production {
                event_times: false,
                shard,
            },
        )
        .expect("trace opens")
    }

    /// The driver with `options`, from the trace into `store`: what it measured, and how the
    /// trace's producer ended.
    pub fn drive_into(
        &self,
        store: &mut dyn Store,
        options: &RunOptions,
    ) -> (Measured, Result<(), WorkloadError>) {
        let mut stream = self.stream(options.shard);
        let measured = drive(store, &mut stream, options, Instant::now(), &mut |_| {});
        (measured, stream.finish())
    }
}
