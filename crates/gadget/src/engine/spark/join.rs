//! A stream–stream inner join with a time range: the left records (input 1) joined with the
//! right ones (input 2) of the same key at most `window` ms apart,
//! `left.join(right, "lkey = rkey AND rtime >= ltime - W AND rtime <= ltime + W")`, each
//! side with `withWatermark(delay)` (`StreamingSymmetricHashJoinExec`, state format 2).
//!
//! Each side keeps two state stores per partition, each its own RocksDB instance:
//! `<side>-keyToNumValues` (the key → how many records it buffers, 17-byte rows) and
//! `<side>-keyWithIndexToValue` ((key, index) → the record and whether it joined, 25-byte
//! keys, 33-byte values for a long key). Per micro-batch, each partition's task in turn:
//!
//! 1. Every left record of the batch, then every right one, in input order, unless late
//!    (its time at or before the previous batch's watermark: no request): the other side's
//!    count (`get`), then each of its values (`get`), rewriting those that join for the first
//!    time (`get` + `put`, marking them joined); then, unless the record is already behind its
//!    side's state watermark, its own append: the count read, the value written at that index
//!    and the count written (each write read first: row counting).
//! 2. Each side's eviction, left first (`removeByValueCondition`): an iterator over the counts
//!    (a `seek`, a `next` each time it moves to a key, landing on the key after it); each
//!    value of the key read; one at or behind the state watermark is replaced by the key's
//!    last value (read, then written at its index) and the last index deleted; when the key
//!    is done, its count is rewritten or, with no value left, deleted.
//! 3. The commit of the four stores (left counts, left values, right counts, right values).
//!
//! The watermark of a batch is the lowest of the two sides' (each its largest event time
//! less the delay; a side without data yet does not count); the state watermark of either
//! side is the watermark less `window` less 1 ms (`StreamingJoinHelper`: the range solved for
//! the buffered side, minus 1 for the inclusive bound).

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::access::{AccessSink, Op, StateId};
use crate::source::element::Event;

use super::batch::{batches_in_fields, BatchRows, MicroBatched, MicroBatches};
use super::partition::key_partition;
use super::{key_index_row, key_row, SparkSpec};

/// A count row: the version byte, the null bitset and the long.
const COUNT_VALUE_BYTES: u32 = 1 + 8 + 8;

/// A value row's size for the count's key row `key`: the version byte, the bitset, the key,
/// the time and the joined flag, and a string key's bytes as the key row holds them.
fn value_bytes(key: &[u8]) -> u32 {
    (1 + 8 + 3 * 8 + key.len().saturating_sub(17)) as u32
}

/// The state stores of a partition, in the order of their states: each side's key counts and
/// values (`SymmetricHashJoinStateManager`).
pub(crate) const STORES: [&str; 4] = [
    "left-keyToNumValues",
    "left-keyWithIndexToValue",
    "right-keyToNumValues",
    "right-keyWithIndexToValue",
];

/// The two sides.
const LEFT: usize = 0;
const RIGHT: usize = 1;

/// One side of a partition: what its stores hold and its records of the current batch.
#[derive(Debug, Default)]
struct Side {
    /// Per key row, its buffered records in index order: time (ms) and whether joined.
    values: BTreeMap<Vec<u8>, Vec<(i64, bool)>>,
    /// The batch's records: key row and time (ms).
    records: BatchRows<i64>,
}

/// The stream–stream join.
#[derive(Debug)]
pub struct StreamJoin {
    window: i64,
    batches: MicroBatches,
    partitions: Vec<[Side; 2]>,
    key: Vec<u8>,
    index_key: Vec<u8>,
    /// The eviction iterator's key and the one after it.
    cursor: Vec<u8>,
    ahead: Vec<u8>,
}

impl StreamJoin {
    /// The join of `spec` (its `size` is the range `window`).
    pub fn new(spec: &SparkSpec) -> StreamJoin {
        StreamJoin {
            window: spec.size,
            batches: MicroBatches::of(spec),
            partitions: spec.per_partition(),
            key: Vec::with_capacity(32),
            index_key: Vec::with_capacity(40),
            cursor: Vec::with_capacity(32),
            ahead: Vec::with_capacity(32),
        }
    }

    /// The state of partition `p`'s store: `side`'s counts (`values` false) or values.
    fn state(p: usize, side: usize, values: bool) -> StateId {
        (p * 4 + side * 2 + values as usize) as StateId
    }

    /// The records of `side` in partition `p`: each joined with the other side, then added.
    fn join_side(&mut self, p: usize, side: usize, state_watermark: i64, out: &mut dyn AccessSink) {
        let window = self.window;
        let other = 1 - side;
        let [left, right] = &mut self.partitions[p];
        let (own, theirs) = if side == LEFT {
            (left, right)
        } else {
            (right, left)
        };
        for (key, time) in own.records.iter() {
            let value_bytes = value_bytes(key);
            out.access_all(Self::state(p, other, false), key, &[(Op::Get, 0)]);
            let mut joined = false;
            if let Some(values) = theirs.values.get_mut(key) {
                for (i, (their_time, matched)) in values.iter_mut().enumerate() {
                    key_index_row(&mut self.index_key, key, i as i64);
                    let state = Self::state(p, other, true);
                    out.access_all(state, &self.index_key, &[(Op::Get, 0)]);
                    let (l, r) = if side == LEFT {
                        (time, *their_time)
                    } else {
                        (*their_time, time)
                    };
                    if r >= l.saturating_sub(window) && r <= l.saturating_add(window) {
                        joined = true;
                        if !*matched {
                            *matched = true;
                            let writes = [(Op::Get, 0), (Op::Put, value_bytes)];
                            out.access_all(state, &self.index_key, &writes);
                        }
                    }
                }
            }
            if time <= state_watermark {
                continue;
            }
            let values = match own.values.get_mut(key) {
                Some(values) => values,
                None => own.values.entry(key.to_vec()).or_default(),
            };
            out.access_all(Self::state(p, side, false), key, &[(Op::Get, 0)]);
            key_index_row(&mut self.index_key, key, values.len() as i64);
            let writes = [(Op::Get, 0), (Op::Put, value_bytes)];
            out.access_all(Self::state(p, side, true), &self.index_key, &writes);
            let count = [(Op::Get, 0), (Op::Put, COUNT_VALUE_BYTES)];
            out.access_all(Self::state(p, side, false), key, &count);
            values.push((time, joined));
        }
        own.records.clear();
    }

    /// `side`'s eviction in partition `p` (`removeByValueCondition`).
    fn evict(&mut self, p: usize, side: usize, state_watermark: i64, out: &mut dyn AccessSink) {
        let counts = Self::state(p, side, false);
        let values_state = Self::state(p, side, true);
        let StreamJoin {
            partitions,
            index_key,
            cursor,
            ahead,
            ..
        } = self;
        let held = &mut partitions[p][side].values;
        out.access_all(counts, b"", &[(Op::Seek, 0)]);
        // the iterator's key (`cursor`, once it has one) and the one it moves to next
        // (`ahead`): the eviction removes no key before it has passed it and adds none, so the
        // map itself shows what the iterator reads
        let mut has_current = false;
        let mut has_ahead = key_after(held, None, ahead);
        let mut index = 0;
        let mut removed = false;
        loop {
            // find the next value at or behind the state watermark
            let mut found = false;
            loop {
                if has_current {
                    let values = &held[cursor.as_slice()];
                    if index < values.len() {
                        key_index_row(index_key, cursor, index as i64);
                        out.access_all(values_state, index_key, &[(Op::Get, 0)]);
                        if values[index].0 <= state_watermark {
                            found = true;
                            break;
                        }
                        index += 1;
                        continue;
                    }
                }
                if !has_ahead {
                    break;
                }
                // the iterator reads the key ahead, stepping on to the one after it
                let landed = held
                    .range::<[u8], _>((Bound::Excluded(ahead.as_slice()), Bound::Unbounded))
                    .next()
                    .map_or(&[][..], |(k, _)| k.as_slice());
                out.access_all(counts, landed, &[(Op::Next, 0)]);
                Self::settle(
                    held,
                    has_current.then_some(cursor.as_slice()),
                    removed,
                    counts,
                    out,
                );
                std::mem::swap(cursor, ahead);
                has_current = true;
                has_ahead = key_after(held, Some(cursor), ahead);
                index = 0;
                removed = false;
            }
            if !found {
                Self::settle(
                    held,
                    has_current.then_some(cursor.as_slice()),
                    removed,
                    counts,
                    out,
                );
                break;
            }
            let key = cursor.as_slice();
            let value_bytes = value_bytes(key);
            let values = held.get_mut(key).expect("the key is held");
            let last = values.len() - 1;
            if index != last {
                key_index_row(index_key, key, last as i64);
                out.access_all(values_state, index_key, &[(Op::Get, 0)]);
                key_index_row(index_key, key, index as i64);
                let writes = [(Op::Get, 0), (Op::Put, value_bytes)];
                out.access_all(values_state, index_key, &writes);
                values[index] = values[last];
            }
            key_index_row(index_key, key, last as i64);
            out.access_all(values_state, index_key, &[(Op::Get, 0), (Op::Delete, 0)]);
            values.pop();
            removed = true;
        }
    }

    /// The count of the key the eviction leaves (`updateNumValueForCurrentKey`): rewritten
    /// when values were removed and some are left, deleted when none is.
    fn settle(
        held: &mut BTreeMap<Vec<u8>, Vec<(i64, bool)>>,
        key: Option<&[u8]>,
        removed: bool,
        counts: StateId,
        out: &mut dyn AccessSink,
    ) {
        let Some(key) = key else { return };
        if !removed {
            return;
        }
        if held.get(key).is_some_and(|v| !v.is_empty()) {
            out.access_all(counts, key, &[(Op::Get, 0), (Op::Put, COUNT_VALUE_BYTES)]);
        } else {
            out.access_all(counts, key, &[(Op::Get, 0), (Op::Delete, 0)]);
            held.remove(key);
        }
    }
}

/// Copies into `out` the first key of `held` after `after` (the first of all for `None`):
/// false when there is none.
fn key_after<V>(held: &BTreeMap<Vec<u8>, V>, after: Option<&[u8]>, out: &mut Vec<u8>) -> bool {
    let from = after.map_or(Bound::Unbounded, Bound::Excluded);
    match held.range::<[u8], _>((from, Bound::Unbounded)).next() {
        Some((key, _)) => {
            out.clear();
            out.extend_from_slice(key);
            true
        }
        None => false,
    }
}

impl MicroBatched for StreamJoin {
    batches_in_fields!();

    fn state_names(&self) -> Vec<String> {
        let mut names = Vec::with_capacity(self.partitions.len() * STORES.len());
        for p in 0..self.partitions.len() as u32 {
            for store in STORES {
                names.push(super::store_name(0, p, store));
            }
        }
        names
    }

    fn input_of(&self, event: &Event) -> Option<usize> {
        match event.input {
            1 => Some(LEFT),
            2 => Some(RIGHT),
            // a row of neither side counts into the batch, nothing else
            _ => None,
        }
    }

    fn buffer(&mut self, event: &Event) -> Option<usize> {
        let side = self.input_of(event)?;
        if !self.batches.is_late(event.timestamp) {
            key_row(&mut self.key, &event.key);
            let p = key_partition(&event.key, self.partitions.len());
            self.partitions[p][side]
                .records
                .push(&self.key, event.timestamp);
        }
        Some(side)
    }

    /// A micro-batch: each partition's task in turn.
    fn run_batch(&mut self, out: &mut dyn AccessSink) {
        let state_watermark = self
            .batches
            .watermark()
            .saturating_sub(self.window)
            .saturating_sub(1);
        for p in 0..self.partitions.len() {
            for side in [LEFT, RIGHT] {
                self.join_side(p, side, state_watermark, out);
            }
            for side in [LEFT, RIGHT] {
                self.evict(p, side, state_watermark, out);
            }
            for state in 0..4 {
                MicroBatches::commit((p * 4 + state) as StateId, out);
            }
        }
        self.batches.advance();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};
    use crate::key::Key;
    use crate::operator::Operator;

    /// The requests of `events` (key, time in s, input: 1 left, 2 right, 0 neither) through
    /// a join within 5 s in micro-batches of 2 events, as `op store key[/index]` with the
    /// stores `lc`/`lv`/`rc`/`rv` (left counts, left values, ...), `|` per batch's last commit.
    fn requests(events: &[(i64, i64, u8)]) -> Vec<String> {
        let spec = SparkSpec {
            query: super::super::SparkQuery::StreamJoin,
            size: 5000,
            trigger: super::super::Trigger::Events(2),
            ..SparkSpec::default()
        };
        let mut join = StreamJoin::new(&spec);
        let mut sink = VecSink::default();
        for &(key, seconds, input) in events {
            let event = Event {
                key: Key::Long(key),
                timestamp: seconds * 1000,
                input,
                closes: false,
                payload: 0,
            };
            join.on_event(&event, &mut sink);
        }
        join.on_end(&mut sink);
        let mut out = Vec::new();
        for r in &sink.records {
            let TraceRecord::Access { op, state, key, .. } = r else {
                continue;
            };
            let store = ["lc", "lv", "rc", "rv"][*state as usize];
            let detail = match key.len() {
                0 => "-".to_string(),
                17 => i64::from_le_bytes(key[9..17].try_into().unwrap()).to_string(),
                _ => format!(
                    "{}/{}",
                    i64::from_le_bytes(key[9..17].try_into().unwrap()),
                    i64::from_le_bytes(key[17..25].try_into().unwrap())
                ),
            };
            match op {
                Op::Flush => {}
                Op::Checkpoint if *state == 3 => out.push("|".to_string()),
                Op::Checkpoint => {}
                _ => out.push(format!("{} {store} {detail}", op.name())),
            }
        }
        out
    }

    #[test]
    fn a_record_reads_the_other_side_then_appends_to_its_own() {
        let got = requests(&[(1, 1, 1), (1, 3, 2)]);
        assert_eq!(
            got[..13],
            [
                // the left record: no right count yet, then its append
                "get rc 1",
                "get lc 1",
                "get lv 1/0",
                "put lv 1/0",
                "get lc 1",
                "put lc 1",
                // the right record joins it: the left value rewritten as joined, then the append
                "get lc 1",
                "get lv 1/0",
                "get lv 1/0",
                "put lv 1/0",
                "get rc 1",
                "get rv 1/0",
                "put rv 1/0",
            ]
        );
    }

    #[test]
    fn the_eviction_removes_values_behind_the_state_watermark_and_then_their_count() {
        // after the second batch the watermark is min(30, 40) = 30 s: state watermark 24.999 s
        let got = requests(&[(1, 1, 1), (1, 3, 2), (2, 30, 1), (3, 40, 2), (9, 41, 0)]);
        let last_batch: Vec<&str> = got
            .iter()
            .rev()
            .skip(1)
            .take_while(|r| *r != "|")
            .map(String::as_str)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        assert_eq!(
            last_batch,
            [
                "seek lc -",
                "next lc 2",
                "get lv 1/0",
                "get lv 1/0",
                "delete lv 1/0",
                "next lc -",
                "get lc 1",
                "delete lc 1",
                "get lv 2/0",
                "seek rc -",
                "next rc 3",
                "get rv 1/0",
                "get rv 1/0",
                "delete rv 1/0",
                "next rc -",
                "get rc 1",
                "delete rc 1",
                "get rv 3/0",
            ]
        );
    }
}
