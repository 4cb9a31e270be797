//! Fuzzing of replay: traces with every op (states opened, dropped, flushed and
//! checkpointed, ranges, batches) and value lengths at the edges, binary and text, mutated at
//! random, are read back and replayed into the in-memory store as `gadget replay` does (the
//! producer thread, its blocks, the store's every request). Replay must end with a value or
//! an error, never a panic, in bounded time and memory: what a case allocates is bounded by
//! its input and the values it asks the store to keep. See `crates/gadget/tests/fuzz/mod.rs`
//! for the budget and how to replay a case.

#[path = "../../gadget/tests/fuzz/every_op.rs"]
mod every_op;
#[path = "../../gadget/tests/fuzz/mod.rs"]
mod fuzz;

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use gadget::trace::{open_trace, RecordRef, MAX_VALUE_LEN};
use gadget_eval::store::{issue, open_store, StoreKind, StoreSettings};
use gadget_eval::value::{ValueBytes, DEFAULT_COMPRESSION_RATIO};
use gadget_eval::workload::{RequestStream, WorkloadSource};

/// The longest one case may take: a hang, not a slow case, fails it.
const CASE_LIMIT: Duration = Duration::from_secs(20);

/// Replays the trace at `path` into a fresh in-memory store with `values`; how many requests
/// the store answered.
fn replay(path: &Path, dir: &Path, values: &mut ValueBytes) -> u64 {
    let source = WorkloadSource::Trace {
        path: path.to_path_buf(),
        limit: None,
    };
    let Ok(mut stream) = RequestStream::start(source) else {
        return 0;
    };
    let settings = StoreSettings::default();
    let mut store = open_store(StoreKind::Memory, dir, &stream.state_names, &settings)
        .expect("the memory store opens over any state table a trace reader gives");
    let mut answered = 0;
    'blocks: while let Some(block) = stream.next_block() {
        for r in &block.requests {
            if issue(store.as_mut(), &block, r, values).is_err() {
                break 'blocks;
            }
            answered += 1;
        }
        stream.recycle(block);
    }
    // the producer's error, if any, is the replay's partial reason: a value, not a panic
    let _ = stream.finish();
    answered
}

/// The bytes of values the trace at `path` asks the store to keep, read as far as it reads.
fn values_asked(path: &Path) -> usize {
    let Ok(mut reader) = open_trace(path) else {
        return 0;
    };
    let mut asked = 0usize;
    while let Ok(Some(record)) = reader.next_record() {
        if let RecordRef::Access(a) = record {
            if a.op.writes_value() {
                asked = asked.saturating_add(a.value_len as usize);
            }
        }
    }
    asked
}

/// Values of the longest length a trace holds are replayed whole.
fn values_of_the_longest_length_replay(dir: &Path) {
    let path = dir.join("longest.gtrace");
    // the puts of each round 64 MiB long, the merge and batch put empty
    std::fs::write(&path, every_op::binary(1, &[MAX_VALUE_LEN, 0, 0])).unwrap();
    let mut values = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
    // all 18 requests of the round
    assert_eq!(replay(&path, dir, &mut values), 18);
}

/// One test for both: the allocation counters are process-wide, so they run one after
/// another, alone in this test binary.
#[test]
fn traces_with_every_op_replay_from_any_bytes_without_panic_in_bounded_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    values_of_the_longest_length_replay(dir.path());
    let path = dir.path().join("fuzzed.trace");
    let lens = [0, 1, 127, 128, 16_383, 16_384, 1 << 16];
    let gzipped = {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&every_op::binary(20, &lens)).unwrap();
        gz.finish().unwrap()
    };
    let seeds = vec![
        every_op::binary(3, &lens),
        every_op::binary(60, &lens),
        every_op::text(3, &lens),
        every_op::text(30, &lens),
        gzipped,
        // puts of 2 MiB, longer than the value pool starts
        every_op::binary(2, &[2 << 20, 0, 0]),
    ];
    // one value pool for every case, as a long replay keeps one: it grows to the longest
    // value once
    let values = std::cell::RefCell::new(ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO));
    let asked = Cell::new(0usize);
    // the producer's blocks in flight (a few MiB), the store's state table and keys (a few
    // hundred bytes per input byte), the values it keeps and the pool's growth to the longest
    let bound = |len: usize| (32 << 20) + 600 * len + 3 * asked.get();
    fuzz::fuzz("replayed trace", &seeds, bound, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        asked.set(values_asked(&path));
        let started = Instant::now();
        replay(&path, dir.path(), &mut values.borrow_mut());
        assert!(
            started.elapsed() < CASE_LIMIT,
            "a replay of {} bytes took {:?}",
            bytes.len(),
            started.elapsed()
        );
    });
}
