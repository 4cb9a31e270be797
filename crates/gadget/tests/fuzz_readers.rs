//! Fuzzing of every reader and parser, for a fixed budget of inputs: valid inputs of each
//! kind (traces with every op and value lengths up to the longest allowed among them),
//! mutated at random (bytes flipped, inserted, removed, repeated, cut, numbers made
//! huge), are read to the end. A reader must give a value or an error, never panic, and must
//! not allocate more than a bound proportional to its input plus its documented buffers.
//! Engine configs (Flink, Kafka Streams, Spark) are mutated at their operators' settings
//! instead, and each that loads must generate traces that read back (a tenth of the budget).
//!
//! The budget is `GADGET_FUZZ_CASES` inputs per target (default 2,000, what CI runs: about a
//! second); a longer run is `GADGET_FUZZ_CASES=100000 cargo test --release --test
//! fuzz_readers`. A failing case prints its target, case number and seed, and replays with `GADGET_FUZZ_SEED`.

mod common;
mod engines;
#[path = "fuzz/every_op.rs"]
mod every_op;
mod fuzz;

use std::io::Cursor;
use std::path::Path;
use std::time::{Duration, Instant};

use fuzz::fuzz;
use gadget::access::{Access, AccessSink, Op};
use gadget::config::Config;
use gadget::trace::{
    BinaryTraceWriter, TextTraceWriter, TraceFooter, TraceHeader, TraceReader, MAX_KEY_LEN,
};

/// Reads a whole trace: every record, then the footer; errors are fine, panics are not.
fn read_trace(bytes: &[u8]) {
    let Ok(mut reader) = TraceReader::from_reader(Cursor::new(bytes.to_vec())) else {
        return;
    };
    let mut n = 0u64;
    while let Ok(Some(_)) = reader.next_record() {
        n += 1;
        if n > 10_000_000 {
            break;
        }
    }
}

/// Records over several states with keys that share prefixes and suffixes, as operators'
/// keys do, and markers.
fn feed(sink: &mut impl AccessSink, records: u32) {
    for i in 0..records {
        let key = [b"key-".as_slice(), &(i % 97).to_be_bytes(), b"-tail"].concat();
        let op = [Op::Get, Op::Put, Op::Merge, Op::Delete, Op::Seek][i as usize % 5];
        sink.access(Access {
            op,
            state: (i % 3) as u16,
            key: &key,
            value_len: if op == Op::Seek { 0 } else { i % 40 },
        });
        if i % 7 == 0 {
            sink.event((i % 2) as u8);
        }
        if i % 50 == 0 {
            sink.watermark(i64::from(i) * 10);
        }
    }
}

fn header() -> TraceHeader {
    let names = ["window-contents", "timers", "a-state"]
        .map(String::from)
        .to_vec();
    TraceHeader::new("fuzz", names, Some(1), serde_json::json!({"seed": 1}))
}

fn binary_trace(records: u32) -> Vec<u8> {
    let mut w = BinaryTraceWriter::new(Vec::new(), &header()).unwrap();
    feed(&mut w, records);
    w.finish(TraceFooter::new(false)).unwrap()
}

fn text_trace(records: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = TextTraceWriter::new(&mut out, &header()).unwrap();
    feed(&mut w, records);
    w.finish(TraceFooter::new(false)).unwrap();
    out
}

const FLINK_RECORDING: &str = "#op\tcf\tkeyhex\tvlen
cf_create\tLEFT_BUFFER\t\t0
#ev\tIntervalJoinOperator\t\t1
get\tLEFT_BUFFER\t0c00\t-1
put\tLEFT_BUFFER\t0c00\t29
iter_new\tRIGHT_BUFFER\t\t0
iter_seek\tRIGHT_BUFFER\t0c00>0d01\t29
iter_next\tRIGHT_BUFFER\t0e\t29
#wm\t\t\t1000
";

/// A trace reader holds one block (2 MiB), its header (bounded by the input), one key per
/// state and its line buffer; 16 MiB plus 16 bytes per input byte covers them all.
fn trace_bound(len: usize) -> usize {
    (16 << 20) + 2 * MAX_KEY_LEN + 16 * len
}

fn binary_traces_read_any_bytes_without_panic_in_bounded_memory() {
    let gzipped = {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&binary_trace(300)).unwrap();
        gz.finish().unwrap()
    };
    let seeds = vec![
        binary_trace(0),
        binary_trace(30),
        binary_trace(3000),
        gzipped,
        // every op (open, drop, flush, checkpoint, ranges, batches), values up to the longest
        every_op::binary(40, &every_op::EXTREME_VALUE_LENS),
    ];
    fuzz("binary trace", &seeds, trace_bound, read_trace);
}

fn text_traces_and_flink_recordings_read_any_bytes_without_panic_in_bounded_memory() {
    let seeds = vec![
        text_trace(0),
        text_trace(40),
        text_trace(400),
        FLINK_RECORDING.as_bytes().to_vec(),
        every_op::text(20, &every_op::EXTREME_VALUE_LENS),
    ];
    fuzz("text trace", &seeds, trace_bound, read_trace);
}

/// Every bundled config of `folders`, as bytes.
fn bundled_configs(folders: &[&str]) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for folder in folders {
        let dir = common::project_root().join("examples").join(folder);
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        all.extend(paths.iter().map(|p| std::fs::read(p).unwrap()));
    }
    all
}

/// Parses config bytes as `gadget` does: UTF-8 first, then the config.
fn parse_config(bytes: &[u8], path: &Path) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = Config::parse(text, path);
    }
}

/// A config parser keeps the text, its syntax tree and the config: a few hundred bytes per
/// input byte at most, plus a fixed part.
fn config_bound(len: usize) -> usize {
    (8 << 20) + 400 * len
}

fn toml_configs_parse_any_text_without_panic_in_bounded_memory() {
    let seeds = bundled_configs(&["paper", "flink-reference", "synthetic", "ycsb", "kvbench"]);
    let path = common::project_root().join("examples/paper/fuzzed.toml");
    fuzz("toml config", &seeds, config_bound, |b| {
        parse_config(b, &path)
    });
}

/// The bundled original-format config.
const ORIGINAL: &str = include_str!("../../../examples/original/tumbling-keyed-incremental.conf");

const YCSB_PROPERTIES: &str = "workload=site.ycsb.workloads.CoreWorkload
recordcount=1000
operationcount=1000
readproportion=0.5
updateproportion=0.5
requestdistribution=zipfian
fieldcount=10
fieldlength=100
";

fn original_gadget_and_ycsb_property_configs_parse_any_text_without_panic_in_bounded_memory() {
    let seeds = vec![
        ORIGINAL.as_bytes().to_vec(),
        YCSB_PROPERTIES.as_bytes().to_vec(),
    ];
    let path = Path::new("fuzzed.conf");
    fuzz("original and ycsb config", &seeds, config_bound, |b| {
        parse_config(b, path)
    });
}

fn csv_event_files_read_any_bytes_without_panic_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("events.csv");
    let config = dir.path().join("job.toml");
    std::fs::write(
        &config,
        "[source]\ntype = \"file\"\npath = \"events.csv\"\nkey_column = 0\ntime_column = 1\n\
         type_column = 2\ntypes = [\"SUBMIT\", \"FINISH\"]\nheader = true\n\
         [source.watermarks]\nevery = 10\n[operator]\ntype = \"tumbling\"\nsize = 500\n",
    )
    .unwrap();
    let config = Config::load(&config).unwrap();
    let rows: String = (0..300)
        .map(|i| format!("{},{},{}\n", i % 17, i * 37, ["SUBMIT", "FINISH"][i % 2]))
        .collect();
    let seeds = vec![format!("key,time,type\n{rows}").into_bytes()];
    // the source keeps one line and one interned string per distinct key
    let bound = |len: usize| (4 << 20) + 64 * len;
    fuzz("csv events", &seeds, bound, |bytes| {
        std::fs::write(&data, bytes).unwrap();
        let Ok(source) = config.open_source() else {
            return;
        };
        for element in source.take(1_000_000) {
            if element.is_err() {
                break;
            }
        }
    });
}

/// A mutated engine config that loads generates its first 20,000 elements (at most 3,000
/// requests) into a binary and a text trace in memory, and reads both back: the traces, the
/// operator's state (200 Spark partitions, a Kafka Streams record cache) and the source's
/// buffers take a few MiB (7 MiB at most in 3,000 cases); 64 MiB covers them.
fn engine_config_bound(_: usize) -> usize {
    64 << 20
}

fn engine_configs_that_load_give_traces_that_read_back_in_bounded_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let csv = common::events_csv(dir.path());
    let seeds: Vec<Vec<u8>> = engines::examples(&csv)
        .into_iter()
        .map(|(_, text)| text.into_bytes())
        .collect();
    let path = common::project_root().join("examples/kafka-streams-reference/fuzzed.toml");
    let mutate = |bytes: &[u8], rng: &mut gadget::source::random::Rng| {
        engines::mutate(&String::from_utf8_lossy(bytes), rng).into_bytes()
    };
    // a generation per case: a tenth of the readers' budget
    let cases = fuzz::cases().div_ceil(10);
    fuzz::fuzz_with(
        "engine config",
        &seeds,
        cases,
        engine_config_bound,
        mutate,
        |bytes| {
            let Ok(text) = std::str::from_utf8(bytes) else {
                return;
            };
            let Ok(config) = Config::parse(text, &path) else {
                return;
            };
            let started = Instant::now();
            if let Err(e) = common::generate_and_read_back_first(&config, 3_000, 20_000) {
                panic!("{e}; the config:\n{text}");
            }
            let took = started.elapsed();
            assert!(
                took < Duration::from_secs(30),
                "generating 3,000 requests took {took:?}; the config:\n{text}"
            );
        },
    );
}

/// One test for all targets: the allocation counters are process-wide, so the targets run one
/// after another, alone in this test binary.
#[test]
fn every_reader_and_parser_survives_fuzzing_in_bounded_memory() {
    binary_traces_read_any_bytes_without_panic_in_bounded_memory();
    text_traces_and_flink_recordings_read_any_bytes_without_panic_in_bounded_memory();
    toml_configs_parse_any_text_without_panic_in_bounded_memory();
    original_gadget_and_ycsb_property_configs_parse_any_text_without_panic_in_bounded_memory();
    csv_event_files_read_any_bytes_without_panic_in_bounded_memory();
    engine_configs_that_load_give_traces_that_read_back_in_bounded_time_and_memory();
}
