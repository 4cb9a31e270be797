//! Trace seeds for the fuzzers of trace readers and of replay: every op the formats have
//! (states opened, dropped, flushed and checkpointed, ranges, batches), markers of every
//! input, and value lengths from none to the longest a trace holds.
#![allow(dead_code)]

use gadget::access::{encode_range, Access, AccessSink, Op};
use gadget::trace::{BinaryTraceWriter, TextTraceWriter, TraceFooter, TraceHeader, MAX_VALUE_LEN};

/// The state table: two states, then two slots that segments open and drop.
pub fn header() -> TraceHeader {
    let names = [
        "window-contents",
        "timers",
        "store.(slot 0)/cf",
        "store.(slot 1)/cf",
    ]
    .map(String::from)
    .to_vec();
    TraceHeader::new("every-op", names, Some(1), serde_json::json!({"seed": 1}))
}

/// `rounds` rounds of every op over the states of [`header`], written to `sink`; the values
/// written take the lengths of `value_lens` in turn.
pub fn feed(sink: &mut impl AccessSink, rounds: u32, value_lens: &[u32]) {
    let mut range = Vec::new();
    let mut next_len = value_lens.iter().copied().cycle();
    let mut value = move || next_len.next().unwrap_or(0);
    for i in 0..rounds {
        let key = [b"key-".as_slice(), &(i % 13).to_be_bytes()].concat();
        let mut access = |op, state, key: &[u8], value_len| {
            sink.access(Access {
                op,
                state,
                key,
                value_len,
            })
        };
        access(Op::Get, 0, &key, 0);
        access(Op::Put, 0, &key, value());
        access(Op::Merge, 1, &key, value());
        access(Op::Seek, 0, &key[..4], 0);
        access(Op::Next, 0, &key, 0);
        access(Op::Next, 0, b"", 0);
        access(Op::BatchPut, 1, &key, value());
        access(Op::BatchDelete, 1, b"gone", 0);
        access(
            Op::BatchCommit,
            1,
            b"",
            if i % 2 == 0 { 2 } else { u32::MAX },
        );
        let start = encode_range(&mut range, b"key-", &key);
        access(Op::RangeQuery, 0, &range, start);
        let start = encode_range(&mut range, &key, b"key-");
        access(Op::RangeDelete, 1, &range, start);
        access(Op::Delete, 0, &key, 0);
        // a segment opened in a slot, written, persisted and dropped
        let slot = 2 + (i % 2) as u16;
        let name = format!("store.{}/cf", 60_000 * u64::from(i));
        access(Op::Open, slot, name.as_bytes(), 0);
        access(Op::Put, slot, &key, value());
        access(Op::Flush, slot, b"", 0);
        access(Op::Checkpoint, slot, b"", 0);
        access(Op::Get, slot, &key, 0);
        access(Op::Drop, slot, b"", 0);
        sink.event([0, 1, 2, 14, 15, 255][i as usize % 6]);
        if i % 3 == 0 {
            sink.watermark([i64::MIN, -1, 0, i64::MAX][i as usize % 4]);
        }
    }
}

/// Value lengths at the edges of the encodings: one-byte varints and beyond, up to the
/// longest a trace holds.
pub const EXTREME_VALUE_LENS: [u32; 8] = [0, 1, 127, 128, 16_383, 16_384, 1 << 21, MAX_VALUE_LEN];

/// A binary trace of [`feed`]'s records.
pub fn binary(rounds: u32, value_lens: &[u32]) -> Vec<u8> {
    let mut w = BinaryTraceWriter::new(Vec::new(), &header()).unwrap();
    feed(&mut w, rounds, value_lens);
    w.finish(TraceFooter::new(false)).unwrap()
}

/// A text trace of [`feed`]'s records.
pub fn text(rounds: u32, value_lens: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = TextTraceWriter::new(&mut out, &header()).unwrap();
    feed(&mut w, rounds, value_lens);
    w.finish(TraceFooter::new(false)).unwrap();
    out
}
