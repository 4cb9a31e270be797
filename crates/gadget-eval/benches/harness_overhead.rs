//! What measuring costs: the same requests issued to the in-memory store three ways.
//!
//! - `tight loop`: from requests already in memory, no producer thread, no clock reads, no
//!   histograms; the floor `gadget replay --store memory` is held against (BENCHMARKS.md,
//!   harness overhead).
//! - `stream, unmeasured`: from a binary trace through the producer thread and its queue, as
//!   `gadget replay` reads it, but without measuring: what the producer running beside the
//!   store costs.
//! - `driver`: `gadget replay`'s driver itself (closed loop, every request timed and recorded).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gadget::access::{Access, AccessSink};
use gadget::config::Config;
use gadget::trace::{BinaryTraceWriter, TraceFooter, TraceHeader};
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::run::{drive, issue, RunOptions, Warmup};
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::store::Store;
use gadget_eval::workload::{RequestBlock, RequestStream, WorkloadSource};

/// Requests of the benchmark workload.
const REQUESTS: u64 = 2_000_000;

/// The requests in blocks as the driver receives them, and as a binary trace.
struct Workload {
    blocks: Vec<RequestBlock>,
    trace: BinaryTraceWriter<std::fs::File>,
}

impl AccessSink for Workload {
    fn access(&mut self, a: Access<'_>) {
        if self.blocks.last().is_none_or(|b| b.is_full()) {
            self.blocks.push(RequestBlock::default());
        }
        self.blocks.last_mut().expect("a block").push(&a);
        self.trace.access(a);
    }
}

fn workload(trace: &std::path::Path) -> (Vec<RequestBlock>, usize) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/bench/tumbling-incr-zipf.toml");
    let config = Config::load(&path).expect("the bench config loads");
    let mut operator = config.build_operator();
    let states = operator.states();
    let header = TraceHeader::new(
        config.operator_name.clone(),
        states.clone(),
        Some(config.seed),
        serde_json::Value::Null,
    );
    let file = std::fs::File::create(trace).expect("the trace file is created");
    let mut sink = Workload {
        blocks: Vec::new(),
        trace: BinaryTraceWriter::new(file, &header).expect("the trace header is written"),
    };
    let generated = gadget::generate::generate(
        config.open_source().expect("the source opens"),
        operator.as_mut(),
        &mut sink,
        Some(REQUESTS),
        &mut |_| {},
    )
    .expect("generation succeeds");
    sink.trace
        .finish(TraceFooter::new(generated.truncated))
        .expect("the trace is written");
    (sink.blocks, states.len())
}

fn harness_overhead(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let trace = dir.path().join("bench.gtrace");
    let (blocks, states) = workload(&trace);
    let requests: u64 = blocks.iter().map(|b| b.requests.len() as u64).sum();
    let mut group = c.benchmark_group("harness_overhead");
    group.throughput(Throughput::Elements(requests));
    group.sample_size(10);
    group.bench_function("memory store, tight loop", |b| {
        b.iter(|| {
            let mut store = MemoryStore::new(states);
            let mut value = Vec::new();
            let mut found = 0u64;
            for block in &blocks {
                for r in &block.requests {
                    if let Ok(Some(Some(_))) = issue(&mut store, block, r, &mut value) {
                        found += 1;
                    }
                }
            }
            store.flush().expect("flush");
            found
        })
    });
    group.bench_function("memory store, stream, unmeasured", |b| {
        b.iter(|| {
            let mut store = MemoryStore::new(states);
            let mut stream =
                RequestStream::start(WorkloadSource::Trace(trace.clone())).expect("trace opens");
            let mut value = Vec::new();
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
        })
    });
    let options = RunOptions {
        arrival: ArrivalProcess::ClosedLoop,
        seed: 1,
        warmup: Warmup::None,
        interval_ns: 1_000_000_000,
        keep_intervals: false,
        stop: Arc::new(AtomicBool::new(false)),
    };
    group.bench_function("memory store, driver", |b| {
        b.iter(|| {
            let mut store = MemoryStore::new(states);
            let mut stream =
                RequestStream::start(WorkloadSource::Trace(trace.clone())).expect("trace opens");
            let measured = drive(
                &mut store,
                &mut stream,
                &options,
                Instant::now(),
                &mut |_| {},
            )
            .expect("the run succeeds");
            stream.finish().expect("the trace reads");
            measured
        })
    });
    group.finish();
}

criterion_group!(benches, harness_overhead);
criterion_main!(benches);
