//! A closed loop records its requests in chunks after they ran; what it reports must still be
//! exact, request by request: the warm-up leaves out exactly its requests (wherever it ends in
//! a chunk), and the reads counted are those of the measured requests alone.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use gadget::access::{Access, AccessSink, Op};
use gadget::config::Config;
use gadget::trace::{BinaryTraceWriter, TraceFooter};
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::run::{drive, issue, RunOptions, Warmup};
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::workload::{RequestBlock, RequestStream, WorkloadSource};

/// Requests of the workload: several chunks and blocks, not a multiple of either.
const REQUESTS: u64 = 20_003;

/// Writes the trace and keeps the requests in one block.
struct Recording {
    block: RequestBlock,
    trace: BinaryTraceWriter<std::fs::File>,
}

impl AccessSink for Recording {
    fn access(&mut self, a: Access<'_>) {
        self.block.push(&a);
        self.trace.access(a);
    }
}

/// The workload's trace at `path`, and its requests.
fn workload(path: &Path) -> (RequestBlock, usize) {
    let config_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/tumbling-incr-zipf.toml");
    let config = Config::load(&config_path).expect("the bench config loads");
    let mut operator = config.build_operator();
    let states = operator.states();
    let header = config.trace_header(states.clone());
    let file = std::fs::File::create(path).expect("the trace file is created");
    let mut sink = Recording {
        block: RequestBlock::default(),
        trace: BinaryTraceWriter::new(file, &header).expect("the header is written"),
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
    (sink.block, states.len())
}

/// Reads found, reads that found nothing and bytes read by the requests after the first
/// `skip`, issued one by one to a fresh memory store.
fn expected_reads(block: &RequestBlock, states: usize, skip: usize) -> (u64, u64, u64) {
    let mut store = MemoryStore::new(states);
    let mut value = Vec::new();
    let (mut found, mut empty, mut bytes) = (0, 0, 0);
    for (i, r) in block.requests.iter().enumerate() {
        let read = issue(&mut store, block, r, &mut value).expect("the memory store answers");
        if i < skip {
            continue;
        }
        match read {
            Some(Some(n)) => {
                found += 1;
                bytes += n as u64;
            }
            Some(None) => empty += 1,
            None => {}
        }
    }
    (found, empty, bytes)
}

#[test]
fn a_closed_loop_leaves_out_exactly_the_warm_up_and_counts_only_measured_reads() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let trace = dir.path().join("w.gtrace");
    let (block, states) = workload(&trace);
    assert_eq!(block.requests.len() as u64, REQUESTS);
    let mut gets = block.requests.iter().filter(|r| r.op == Op::Get).count();
    gets -= block.requests[..1_000]
        .iter()
        .filter(|r| r.op == Op::Get)
        .count();
    assert!(gets > 1_000, "the workload reads after the warm-up");
    // 1,000 and 5,000 end inside a chunk; 0 measures everything
    for warmup in [0u64, 1_000, 5_000] {
        let options = RunOptions {
            arrival: ArrivalProcess::ClosedLoop,
            seed: 1,
            warmup: if warmup == 0 {
                Warmup::None
            } else {
                Warmup::Requests(warmup)
            },
            interval_ns: 1_000_000_000,
            keep_intervals: false,
            stop: Arc::new(AtomicBool::new(false)),
        };
        let mut store = MemoryStore::new(states);
        let mut stream =
            RequestStream::start(WorkloadSource::Trace(trace.clone())).expect("the trace opens");
        let measured = drive(
            &mut store,
            &mut stream,
            &options,
            Instant::now(),
            &mut |_| {},
        )
        .expect("the run succeeds");
        stream.finish().expect("the trace reads");
        let report = measured.report("memory", &[], &options);
        assert_eq!(report.warmup_requests, warmup);
        assert_eq!(report.requests, REQUESTS - warmup);
        let all = report.latency.last().expect("an `all` row");
        assert_eq!(
            all.ops,
            REQUESTS - warmup,
            "every measured request is in the histograms"
        );
        let (found, empty, bytes) = expected_reads(&block, states, warmup as usize);
        assert_eq!(
            (report.reads_found, report.reads_empty, report.bytes_read),
            (found, empty, bytes),
            "reads after a warm-up of {warmup}"
        );
    }
}
