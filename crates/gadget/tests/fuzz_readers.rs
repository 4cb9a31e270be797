//! Fuzzing of every reader and parser, for a fixed budget of inputs: valid inputs of each
//! kind, mutated at random (bytes flipped, inserted, removed, repeated, cut, numbers made
//! huge), are read to the end. A reader must give a value or an error, never panic, and must
//! not allocate more than a bound proportional to its input plus its documented buffers.
//!
//! The budget is `GADGET_FUZZ_CASES` inputs per target (default 2,000, what CI runs: about a
//! second); a longer run is `GADGET_FUZZ_CASES=100000 cargo test --release --test
//! fuzz_readers`. A failing case prints its target, case number and seed, and replays with `GADGET_FUZZ_SEED`.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Cursor;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use gadget::access::{Access, AccessSink, Op};
use gadget::config::Config;
use gadget::source::random::Rng;
use gadget::trace::{
    BinaryTraceWriter, TextTraceWriter, TraceFooter, TraceHeader, TraceReader, MAX_KEY_LEN,
};

/// Counts the bytes allocated now and at most, so each case can check its reader's peak.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Allocations beyond this fail outright (the case then aborts the test loudly) rather than
/// exhaust the machine.
const HARD_CAP: usize = 4 << 30;

fn grew(by: usize) -> bool {
    let now = CURRENT.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
    now <= HARD_CAP
}

// SAFETY: every call is passed to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !grew(layout.size()) {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !grew(layout.size()) {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !grew(new_size - old) {
            CURRENT.fetch_sub(new_size - old, Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() && new_size > old {
            CURRENT.fetch_sub(new_size - old, Ordering::Relaxed);
        } else if new_size < old {
            CURRENT.fetch_sub(old - new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Inputs per target.
fn cases() -> u64 {
    std::env::var("GADGET_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// The first seed (cases use seed, seed + 1, …).
fn first_seed() -> u64 {
    std::env::var("GADGET_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x6761_6467_6574)
}

/// A mutation of `input`: one to eight edits of the kinds that break parsers.
fn mutate(input: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(8) {
        let len = out.len() as u64;
        let at = |rng: &mut Rng| rng.below(len + 1) as usize;
        match rng.below(9) {
            0 if !out.is_empty() => {
                let i = at(rng).min(out.len() - 1);
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = at(rng).min(out.len() - 1);
                out[i] = rng.next_u64() as u8;
            }
            2 => {
                let i = at(rng);
                let n = 1 + rng.below(16) as usize;
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                out.splice(i..i, bytes);
            }
            3 if !out.is_empty() => {
                let i = at(rng).min(out.len() - 1);
                let n = (1 + rng.below(64) as usize).min(out.len() - i);
                out.drain(i..i + n);
            }
            4 if !out.is_empty() => {
                // a stretch repeated: long keys, many states, big numbers
                let i = at(rng).min(out.len() - 1);
                let n = (1 + rng.below(256) as usize).min(out.len() - i);
                let piece = out[i..i + n].to_vec();
                for _ in 0..1 + rng.below(64) {
                    out.splice(i..i, piece.iter().copied());
                }
            }
            5 => {
                let cut = at(rng);
                out.truncate(cut);
            }
            6 => {
                // a varint as large as they come
                let i = at(rng);
                out.splice(
                    i..i,
                    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                );
            }
            7 => {
                // a decimal number as large as they come
                let i = at(rng);
                out.splice(i..i, b"99999999999999999999".iter().copied());
            }
            _ => {
                let i = at(rng);
                out.splice(i..i, b"\n\t=\"[]{}".iter().copied());
            }
        }
    }
    out
}

/// Runs `read` on `cases()` mutations of each seed input; checks that no case panics and that
/// none allocates more than `bound(input length)` bytes at its peak.
fn fuzz(target: &str, seeds: &[Vec<u8>], bound: impl Fn(usize) -> usize, read: impl Fn(&[u8])) {
    assert!(!seeds.is_empty(), "{target}: no seed inputs");
    let first = first_seed();
    let mut worst = (0usize, 0usize);
    for case in 0..cases() {
        let seed = first.wrapping_add(case);
        let mut rng = Rng::new(seed);
        let base = &seeds[(case % seeds.len() as u64) as usize];
        let input = mutate(base, &mut rng);
        let before = CURRENT.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| read(&input)));
        let used = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        if outcome.is_err() {
            panic!("{target}: case {case} (GADGET_FUZZ_SEED={seed} GADGET_FUZZ_CASES=1) panicked");
        }
        let allowed = bound(input.len());
        assert!(
            used <= allowed,
            "{target}: case {case} (GADGET_FUZZ_SEED={seed} GADGET_FUZZ_CASES=1) allocated \
             {used} bytes for {} bytes of input, more than the {allowed} allowed",
            input.len()
        );
        if used > worst.0 {
            worst = (used, input.len());
        }
    }
    eprintln!(
        "{target}: {} cases, at most {} bytes allocated (for {} bytes of input)",
        cases(),
        worst.0,
        worst.1
    );
}

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
    ];
    fuzz("binary trace", &seeds, trace_bound, read_trace);
}

fn text_traces_and_flink_recordings_read_any_bytes_without_panic_in_bounded_memory() {
    let seeds = vec![
        text_trace(0),
        text_trace(40),
        text_trace(400),
        FLINK_RECORDING.as_bytes().to_vec(),
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

const ORIGINAL: &str = "operator.type = tumbling.keyed.incremental
expected.num.operations = 1000
window.length = 5
first.event.generator.type = gadget
first.event.generator.watermark.frequency = 1
first.event.generator.key.popularity.distrib.type = zipf
first.event.generator.key.popularity.distrib.params.keyspacesize = 1000
first.event.generator.key.popularity.distrib.params.s = 1
first.event.generator.event.occurrence.gap.distrib.type = exponential
first.event.generator.event.occurrence.gap.distrib.params.lambda = 10
operator.key.size.distrib.type = constant
operator.key.size.distrib.params.constant = 10
operator.value.size.distrib.type = constant
operator.value.size.distrib.params.constant = 10
";

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

/// One test for all targets: the allocation counters are process-wide, so the targets run one
/// after another, alone in this test binary.
#[test]
fn every_reader_and_parser_survives_fuzzing_in_bounded_memory() {
    binary_traces_read_any_bytes_without_panic_in_bounded_memory();
    text_traces_and_flink_recordings_read_any_bytes_without_panic_in_bounded_memory();
    toml_configs_parse_any_text_without_panic_in_bounded_memory();
    original_gadget_and_ycsb_property_configs_parse_any_text_without_panic_in_bounded_memory();
    csv_event_files_read_any_bytes_without_panic_in_bounded_memory();
}
