//! `withWatermark("time", delay).groupByKey(key).transformWithState(processor,
//! TimeMode.EventTime(), mode)` (Spark 4's `TransformWithStateExec`) with `processor` a
//! session count whose state is a `ValueState` of (count, latest event time) and whose end is
//! an event-time timer at the latest time plus the gap: the recorder's reference processor
//! (`TransformWithState.ValueSessions`).
//!
//! **One RocksDB instance per shuffle partition, its column families virtual**: every key
//! starts with its column family's id (two bytes, little-endian), the state variable's
//! `session` (2), the timers' `$eventTimers_keyToTimestamp` (3, keyed by the grouping key
//! then the time, for `exists` and `listTimers`) and `$eventTimers_timestampToKey` (4, keyed
//! by the time then the grouping key, in time order by a big-endian encoding).
//!
//! Per micro-batch, in each partition's task in turn, with the partition's records that are
//! not late (after the previous batch's watermark) sorted by key:
//!
//! 1. per key, `handleInputRows`: the state's `get`; when there was a session, `deleteTimer`
//!    of its timer; the state's update (row counting: a `get`, then a `put`); `registerTimer`
//!    at the new latest time plus the gap.
//! 2. the timers: an iterator over `timestampToKey` (a `seek` to its prefix, a `next` per
//!    entry read, landing on the key after it) hands over each timer at or before the batch's
//!    watermark, and stops at the first after it; per timer `handleExpiredTimer` reads the
//!    state and clears it (a `get`, then row counting's `get` and a `delete`), then the
//!    operator deletes the timer.
//! 3. `flush` and `checkpoint` commit the store; a batch without data follows when the
//!    watermark moved ([`super::batch`]).
//!
//! `registerTimer` reads `keyToTimestamp` first (`exists`) and writes both timer families
//! (each `put` read first) only when the timer is new; `deleteTimer` reads it too and deletes
//! from both (each `delete` read first) only when it is there.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use crate::access::{AccessSink, Op, StateId};
use crate::source::element::Event;

use super::batch::{buffer_keyed, KeyedPartition, MicroBatched, MicroBatches};
use super::{key_order, pointer, state_names, SparkSpec, ENCODING_VERSION};

/// The column family of the `ValueState` (the first state variable the processor creates).
const SESSION: u16 = 2;
/// The timers keyed by grouping key, then time.
const KEY_TO_TIMESTAMP: u16 = 3;
/// The timers keyed by time, then grouping key.
const TIMESTAMP_TO_KEY: u16 = 4;

/// The state's value row: the version byte, the null bitset, the count and the latest time.
const SESSION_VALUE_BYTES: u32 = 1 + 8 + 8 + 8;
/// A timer's value: the version byte and a row of one null field (bitset and word).
const TIMER_VALUE_BYTES: u32 = 1 + 8 + 8;

/// What one shuffle partition's RocksDB instance holds.
#[derive(Debug, Default)]
struct Partition {
    /// The batch's records; `held` is unused (the keys are in `keys`).
    batch: KeyedPartition<()>,
    /// Every key of the instance, column family prefix first, in RocksDB's order.
    keys: BTreeSet<Vec<u8>>,
    /// The latest event time (ms) of each grouping key's session (by key row).
    sessions: HashMap<Vec<u8>, i64>,
}

/// The keys of one grouping key's requests, rebuilt per key without allocating.
#[derive(Debug, Default)]
struct Keys {
    session: Vec<u8>,
    by_key: Vec<u8>,
    by_time: Vec<u8>,
    /// The timer the expiry scan handed over last.
    cursor: Vec<u8>,
    /// The key row of the timer being expired.
    row: Vec<u8>,
}

/// A session count per key by `transformWithState` with a `ValueState` and event-time timers.
#[derive(Debug)]
pub struct TransformWithState {
    gap: i64,
    batches: MicroBatches,
    partitions: Vec<Partition>,
    key: Vec<u8>,
    keys: Keys,
}

impl TransformWithState {
    /// The session count of `spec` (its gap in `size`, `delay`, `trigger`, `partitions`).
    pub fn new(spec: &SparkSpec) -> TransformWithState {
        TransformWithState {
            gap: spec.size,
            batches: MicroBatches::of(spec),
            partitions: spec.per_partition(),
            key: Vec::with_capacity(32),
            keys: Keys::default(),
        }
    }
}

impl MicroBatched for TransformWithState {
    fn batches(&self) -> &MicroBatches {
        &self.batches
    }

    fn batches_mut(&mut self) -> &mut MicroBatches {
        &mut self.batches
    }

    fn state_names(&self) -> Vec<String> {
        state_names(self.partitions.len() as u32)
    }

    fn buffer(&mut self, event: &Event) -> Option<usize> {
        let p = super::partition::key_partition(&event.key, self.partitions.len());
        let partition = &mut self.partitions[p];
        buffer_keyed(
            &self.batches,
            std::slice::from_mut(&mut partition.batch),
            &mut self.key,
            event,
        )
    }

    /// A micro-batch: each partition's task in turn handles its keys with data, in key
    /// order, then the timers the watermark reached, and commits.
    fn run_batch(&mut self, out: &mut dyn AccessSink) {
        let watermark = self.batches.watermark();
        let gap = self.gap;
        for (state, partition) in (0u16..).zip(&mut self.partitions) {
            let records = &mut partition.batch.records;
            records.sort_by_key(key_order);
            let mut group = 0;
            while group < records.len() {
                let (key, _) = records.get(group);
                let mut end = group;
                let before = partition.sessions.get(key).copied();
                let mut latest = before.unwrap_or(i64::MIN);
                while end < records.len() && records.get(end).0 == key {
                    latest = latest.max(records.get(end).1);
                    end += 1;
                }
                group = end;
                let store = Store {
                    state,
                    keys: &mut partition.keys,
                    scratch: &mut self.keys,
                };
                store.input_rows(key, before, latest, gap, out);
                match partition.sessions.get_mut(key) {
                    Some(held) => *held = latest,
                    None => {
                        partition.sessions.insert(key.to_vec(), latest);
                    }
                }
            }
            records.clear();
            expire(state, partition, watermark, &mut self.keys, out);
            MicroBatches::commit(state, out);
        }
        self.batches.advance();
    }
}

/// The timers at or before `watermark` (ms), in time order, each handed to
/// `handleExpiredTimer` (the session read and cleared), then deleted, as the iterator hands
/// it over: after the `next` that steps past it.
fn expire(
    state: StateId,
    partition: &mut Partition,
    watermark: i64,
    scratch: &mut Keys,
    out: &mut dyn AccessSink,
) {
    let prefix = TIMESTAMP_TO_KEY.to_le_bytes();
    out.access_all(state, &prefix, &[(Op::Seek, 0)]);
    scratch.cursor.clear();
    scratch.cursor.extend_from_slice(&prefix);
    let mut first = true;
    loop {
        let keys = &partition.keys;
        let from = if first {
            Bound::Included(&scratch.cursor[..])
        } else {
            Bound::Excluded(&scratch.cursor[..])
        };
        first = false;
        let Some(entry) = keys
            .range::<[u8], _>((from, Bound::Unbounded))
            .next()
            .filter(|entry| entry.starts_with(&prefix))
        else {
            break;
        };
        let landed = keys
            .range::<[u8], _>((Bound::Excluded(&entry[..]), Bound::Unbounded))
            .next()
            .map_or(&[][..], |k| &k[..]);
        out.access_all(state, landed, &[(Op::Next, 0)]);
        let (time, row) = timer_of(entry);
        if time > watermark {
            break;
        }
        scratch.row.clear();
        scratch.row.push(ENCODING_VERSION);
        scratch.row.extend_from_slice(row);
        scratch.cursor.clear();
        scratch.cursor.extend_from_slice(entry);
        let key = std::mem::take(&mut scratch.row);
        let store = Store {
            state,
            keys: &mut partition.keys,
            scratch,
        };
        store.expired_timer(&key, time, out);
        partition.sessions.remove(&key);
        scratch.row = key;
    }
}

/// The time and the grouping key's row (after its version byte) of a `timestampToKey` key.
fn timer_of(entry: &[u8]) -> (i64, &[u8]) {
    // prefix (2), the range part's length (4), its version byte, bitset and word (17), the
    // marker byte, then the time big-endian
    let time = entry.get(24..32).map_or(i64::MAX, |b| {
        i64::from_be_bytes(b.try_into().expect("8 bytes"))
    });
    // the range part (33 bytes after the length), then the version byte, bitset and word
    let key = entry.get(2 + 4 + 33 + 17..).unwrap_or_default();
    (time, key)
}

/// One partition's instance while a key is handled.
struct Store<'a> {
    state: StateId,
    keys: &'a mut BTreeSet<Vec<u8>>,
    scratch: &'a mut Keys,
}

impl Store<'_> {
    /// `handleInputRows` of the reference processor for `key` (its row), whose session
    /// ended at `before` (if any) and now ends at `latest`.
    fn input_rows(
        mut self,
        key: &[u8],
        before: Option<i64>,
        latest: i64,
        gap: i64,
        out: &mut dyn AccessSink,
    ) {
        self.prepare(key);
        out.access_all(self.state, &self.scratch.session, &[(Op::Get, 0)]);
        if let Some(before) = before {
            self.delete_timer(key, before.saturating_add(gap), out);
        }
        self.write(SESSION, SESSION_VALUE_BYTES, out);
        self.register_timer(key, latest.saturating_add(gap), out);
    }

    /// `handleExpiredTimer` of the reference processor (the state read, then cleared), then
    /// the operator's deletion of the timer.
    fn expired_timer(mut self, key: &[u8], time: i64, out: &mut dyn AccessSink) {
        self.prepare(key);
        let session = &self.scratch.session;
        out.access_all(
            self.state,
            session,
            &[(Op::Get, 0), (Op::Get, 0), (Op::Delete, 0)],
        );
        self.keys.remove(&session[..]);
        self.delete_timer(key, time, out);
    }

    /// Writes the state's key of `key` (a key row, version byte first).
    fn prepare(&mut self, key: &[u8]) {
        let session = &mut self.scratch.session;
        session.clear();
        session.extend_from_slice(&SESSION.to_le_bytes());
        session.extend_from_slice(key);
    }

    /// A `put` (row counting: a `get` first) of the state.
    fn write(&mut self, family: u16, bytes: u32, out: &mut dyn AccessSink) {
        debug_assert_eq!(family, SESSION);
        let session = &self.scratch.session;
        out.access_all(self.state, session, &[(Op::Get, 0), (Op::Put, bytes)]);
        if !self.keys.contains(&session[..]) {
            self.keys.insert(session.clone());
        }
    }

    /// `registerTimer(time)`: `exists`, then both timer keys written when new.
    fn register_timer(&mut self, key: &[u8], time: i64, out: &mut dyn AccessSink) {
        timer_keys(self.scratch, key, time);
        let Keys {
            by_key, by_time, ..
        } = &*self.scratch;
        out.access_all(self.state, by_key, &[(Op::Get, 0)]);
        if self.keys.contains(&by_key[..]) {
            return;
        }
        let put = [(Op::Get, 0), (Op::Put, TIMER_VALUE_BYTES)];
        out.access_all(self.state, by_key, &put);
        out.access_all(self.state, by_time, &put);
        self.keys.insert(by_key.clone());
        self.keys.insert(by_time.clone());
    }

    /// `deleteTimer(time)`: `exists`, then both timer keys deleted when there.
    fn delete_timer(&mut self, key: &[u8], time: i64, out: &mut dyn AccessSink) {
        timer_keys(self.scratch, key, time);
        let Keys {
            by_key, by_time, ..
        } = &*self.scratch;
        out.access_all(self.state, by_key, &[(Op::Get, 0)]);
        if !self.keys.contains(&by_key[..]) {
            return;
        }
        let delete = [(Op::Get, 0), (Op::Delete, 0)];
        out.access_all(self.state, by_key, &delete);
        out.access_all(self.state, by_time, &delete);
        self.keys.remove(&by_key[..]);
        self.keys.remove(&by_time[..]);
    }
}

/// Writes both timer keys of `key` (a key row, version byte first) at `time` (ms).
///
/// `keyToTimestamp` (prefix scan by the grouping key): the prefix's length, the prefix (a
/// row of the grouping key as a struct), then a row of the time. `timestampToKey` (range
/// scan by the time): the range part's length, the range part (a row of one binary field:
/// a sign marker and the time big-endian, so that keys sort by time), then a row of the
/// grouping key as a struct. Each row after its version byte.
fn timer_keys(keys: &mut Keys, key: &[u8], time: i64) {
    let row = key.get(1..).unwrap_or_default();
    let by_key = &mut keys.by_key;
    by_key.clear();
    by_key.extend_from_slice(&KEY_TO_TIMESTAMP.to_le_bytes());
    by_key.extend_from_slice(&((1 + 16 + row.len()) as i32).to_le_bytes());
    struct_row(by_key, row);
    by_key.push(ENCODING_VERSION);
    by_key.extend_from_slice(&0u64.to_le_bytes());
    by_key.extend_from_slice(&time.to_le_bytes());

    let by_time = &mut keys.by_time;
    by_time.clear();
    by_time.extend_from_slice(&TIMESTAMP_TO_KEY.to_le_bytes());
    by_time.extend_from_slice(&(1 + 16 + 16i32).to_le_bytes());
    by_time.push(ENCODING_VERSION);
    by_time.extend_from_slice(&0u64.to_le_bytes());
    by_time.extend_from_slice(&pointer(16, 9).to_le_bytes());
    by_time.push(u8::from(time >= 0));
    by_time.extend_from_slice(&time.to_be_bytes());
    by_time.extend_from_slice(&[0; 7]);
    struct_row(by_time, row);
}

/// Appends a row (version byte first) of one struct field holding `row`.
fn struct_row(out: &mut Vec<u8>, row: &[u8]) {
    out.push(ENCODING_VERSION);
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&pointer(16, row.len() as u64).to_le_bytes());
    out.extend_from_slice(row);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn timer_keys_are_laid_out_as_spark_writes_them() {
        let mut row = Vec::new();
        super::super::key_row(&mut row, &crate::key::Key::Long(0x0001_7562_7880));
        let mut keys = Keys::default();
        timer_keys(&mut keys, &row, 0x0915_9bd9);
        // the first timer of a recording of Spark 4.1.1 over the Borg events
        assert_eq!(
            hex(&keys.by_key),
            "030021000000000000000000000000100000001000000000000000000000008078627501000000\
             000000000000000000d99b150900000000"
        );
        assert_eq!(
            hex(&keys.by_time),
            "0400210000000000000000000000000900000010000000010000000009159bd900000000000000\
             000000000000000000100000001000000000000000000000008078627501000000"
        );
        let (time, key) = timer_of(&keys.by_time);
        assert_eq!((time, key), (0x0915_9bd9, &row[1..]));
    }

    /// The requests of `events` (key, time in s) through a session count with a `gap` s
    /// gap and micro-batches of `trigger` events, keys shown by their family and long.
    fn requests(events: &[(i64, i64)], trigger: u64, gap: i64) -> Vec<String> {
        let spec = SparkSpec {
            query: super::super::SparkQuery::TransformWithState,
            trigger: super::super::Trigger::Events(trigger),
            size: gap * 1000,
            ..SparkSpec::default()
        };
        let mut op = TransformWithState::new(&spec);
        super::super::requests_of(&mut op, events, |key| {
            let family = u16::from_le_bytes([key[0], key[1]]);
            let long = |at: usize| i64::from_le_bytes(key[at..at + 8].try_into().unwrap());
            match (family, key.len()) {
                (SESSION, 19) => format!("s{}", long(11)),
                (KEY_TO_TIMESTAMP, 56) => format!("k{}@{}", long(31), long(48) / 1000),
                (TIMESTAMP_TO_KEY, 72) => format!("t{}@{}", long(64), timer_of(key).0 / 1000),
                (_, 2) => format!("prefix{family}"),
                _ => hex(key),
            }
        })
    }

    #[test]
    fn a_session_moves_its_timer_and_ends_when_the_watermark_reaches_it() {
        let got = requests(&[(1, 10), (2, 11), (1, 20), (3, 40)], 2, 5);
        assert_eq!(
            got,
            [
                // batch 1 (watermark 0): keys 1 and 2 start sessions, timers at 15 and 16 s
                "get s1",
                "get s1",
                "put s1",
                "get k1@15",
                "get k1@15",
                "put k1@15",
                "get t1@15",
                "put t1@15",
                "get s2",
                "get s2",
                "put s2",
                "get k2@16",
                "get k2@16",
                "put k2@16",
                "get t2@16",
                "put t2@16",
                "seek prefix4",
                "next t2@16",
                "|",
                // batch 2 (watermark 11 s): key 1's timer moves to 25 s; none expires
                "get s1",
                "get k1@15",
                "get k1@15",
                "delete k1@15",
                "get t1@15",
                "delete t1@15",
                "get s1",
                "put s1",
                "get k1@25",
                "get k1@25",
                "put k1@25",
                "get t1@25",
                "put t1@25",
                "get s3",
                "get s3",
                "put s3",
                "get k3@45",
                "get k3@45",
                "put k3@45",
                "get t3@45",
                "put t3@45",
                "seek prefix4",
                "next t1@25",
                "|",
                // no data left, watermark 40 s: 16 s and 25 s expire, 45 s stays
                "seek prefix4",
                "next t1@25",
                "get s2",
                "get s2",
                "delete s2",
                "get k2@16",
                "get k2@16",
                "delete k2@16",
                "get t2@16",
                "delete t2@16",
                "next t3@45",
                "get s1",
                "get s1",
                "delete s1",
                "get k1@25",
                "get k1@25",
                "delete k1@25",
                "get t1@25",
                "delete t1@25",
                "next -",
                "|",
            ]
        );
    }
}
