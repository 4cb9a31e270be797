//! Traces of the three engines' configs, bundled and mutated at their edges (hopping windows,
//! Spark partitions, Kafka Streams names, caches and commits), written to a file, read back and
//! replayed into the in-memory store: every request the trace holds is issued, none fails.
//! `crates/gadget/tests/fuzz_readers.rs` reads many more such traces back; this replays a few.

#[path = "../../gadget/tests/common.rs"]
mod common;
#[path = "../../gadget/tests/engines/mod.rs"]
mod engines;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use gadget::config::Config;
use gadget::source::random::Rng;
use gadget::trace::{BinaryTraceWriter, TraceFooter};
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::concurrent::run_streams;
use gadget_eval::run::{RunOptions, Warmup};
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::store::{Store, StoreError};
use gadget_eval::workload::{RequestStream, WorkloadSource};

/// Requests a trace holds at most.
const LIMIT: u64 = 2_000;

/// Writes `config`'s trace (its source's first 20,000 elements, at most [`LIMIT`] requests)
/// to `path`; its requests, or `None` when its source cannot open.
fn write_trace(config: &Config, path: &Path) -> Option<u64> {
    let source = Box::new(config.open_source().ok()?.take(20_000));
    let mut operator = config.build_operator();
    let header = config.trace_header(operator.states());
    let file = std::fs::File::create(path).unwrap();
    let mut writer = BinaryTraceWriter::new(std::io::BufWriter::new(file), &header)
        .unwrap_or_else(|e| panic!("{}: the header: {e}", config.operator_name));
    let generated = gadget::generate::generate(
        source,
        operator.as_mut(),
        &mut writer,
        Some(LIMIT),
        &mut |_| {},
    )
    .ok()?;
    writer
        .finish(TraceFooter::new(generated.truncated))
        .unwrap_or_else(|e| panic!("{}: a record: {e}", config.operator_name));
    Some(generated.counts.requests())
}

/// Replays the trace at `path` into the in-memory store as fast as it goes; the requests
/// issued.
fn replay(path: &Path) -> u64 {
    let stream = RequestStream::start(WorkloadSource::Trace {
        path: path.to_path_buf(),
        limit: None,
    })
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let open = |_: usize, states: &[String]| -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(MemoryStore::new(states.len())))
    };
    let options = RunOptions {
        arrival: ArrivalProcess::ClosedLoop,
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
    let outcome = run_streams(vec![stream], &open, "memory", &options, &|_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if let Some(e) = outcome.failure {
        panic!("{}: {e}", path.display());
    }
    outcome.report.requests
}

#[test]
fn engine_traces_bundled_and_mutated_replay_into_the_memory_store_request_for_request() {
    let dir = tempfile::tempdir().unwrap();
    let csv = common::events_csv(dir.path());
    let examples = engines::examples(&csv);
    let here = common::project_root().join("examples/kafka-streams-reference/replayed.toml");
    // each Kafka Streams and Spark reference config as it is (opens, drops, flushes and
    // checkpoints of states), then mutations of every engine's configs that load
    let mut texts: Vec<String> = examples
        .iter()
        .filter(|(path, _)| path.to_string_lossy().contains("streams-reference"))
        .chain(
            examples
                .iter()
                .filter(|(path, _)| path.to_string_lossy().contains("spark-reference")),
        )
        .map(|(_, text)| text.clone())
        .collect();
    let mut rng = Rng::new(42);
    let mut mutated = 0;
    while mutated < 16 {
        let (_, text) = &examples[rng.below(examples.len() as u64) as usize];
        let text = engines::mutate(text, &mut rng);
        if Config::parse(&text, &here).is_ok() {
            texts.push(text);
            mutated += 1;
        }
    }
    for (i, text) in texts.iter().enumerate() {
        let config = Config::parse(text, &here).unwrap();
        let path = dir.path().join(format!("{i}.gtrace"));
        let Some(written) = write_trace(&config, &path) else {
            continue;
        };
        assert_eq!(replay(&path), written, "case {i}, the config:\n{text}");
    }
}
