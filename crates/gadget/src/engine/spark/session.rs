//! `withWatermark("time", delay).groupBy(session_window("time", gap), "key").count()` in
//! append mode: Spark's native session windows (`SessionWindowStateStoreRestoreExec`, a merge
//! of sessions, `SessionWindowStateStoreSaveExec`; state format 1, one state store whose key
//! is the grouping key as a prefix and the session's start, its value the aggregate row).
//!
//! Per micro-batch, in each shuffle partition's task in turn, the batch's records whose
//! session (`[time, time + gap)`) ends after the previous batch's watermark, sorted by key and
//! time, flow through three iterators, each pulling from the one before it:
//!
//! 1. **Restore** reads a key's stored sessions when its first record arrives (after it has
//!    handed over what is left of the previous key's): a prefix scan (`seek` to the key's
//!    prefix, a `next` per session), merging them with the records by start.
//! 2. **Merge** joins overlapping sessions (a start at or before the current end); it hands a
//!    session over once it has pulled the first item that does not belong to it.
//! 3. **Save** gathers a key's sessions and, once the next key's first session arrives,
//!    replaces the stored ones (`updateSessions`): a prefix scan, a `get` and a `delete` of each
//!    stored session no longer there, a `get` and a `put` of each session.
//!
//! So the requests of neighbouring keys interleave as far as the pulls reach ahead. Then an
//! iterator over the whole store removes every session that ended at or before the batch's
//! watermark (a `get` and a `delete`), and `flush` and `checkpoint` commit. A batch without
//! data follows the last one when the watermark moved ([`super::batch`]). Spark refuses update
//! mode for session windows.

use std::collections::VecDeque;

use crate::access::{AccessSink, Op, StateId};
use crate::source::element::Event;

use super::batch::{batches_in_fields, BatchRows, MicroBatched, MicroBatches};
use super::held::Held;
use super::partition::key_partition;
use super::{key_order, key_row, SparkSpec};

/// The value row for a long key: the version byte, the bitset, three field words (the key,
/// the session struct's place, the count) and the session struct (a bitset, start, end).
const VALUE_BYTES: usize = 1 + 8 + 3 * 8 + 3 * 8;

/// A key row of a long key: a string key's row is longer by its padded bytes.
const LONG_KEY_ROW: usize = 17;

/// A session on its way through the iterators: its key (the index of the key's first
/// record in the sorted batch), start and end in µs.
#[derive(Debug, Clone, Copy)]
struct Session {
    key: usize,
    start: i64,
    end: i64,
}

/// One shuffle partition: its records of the current batch (key row, time in ms) and its
/// state store, each stored session held until the watermark reaches its end.
#[derive(Debug, Default)]
struct Partition {
    records: BatchRows<i64>,
    held: Held,
}

/// What the iterators share while a partition's batch runs.
struct Task<'a> {
    state: StateId,
    records: &'a BatchRows<i64>,
    held: &'a mut Held,
    out: &'a mut dyn AccessSink,
    gap_us: i64,
    /// A key's prefix in the store, and a state key.
    prefix: Vec<u8>,
    state_key: Vec<u8>,
}

impl Task<'_> {
    /// Writes the store's prefix of the key of record `key` into `prefix`: the key row's
    /// length (4 bytes) and the key row.
    fn set_prefix(&mut self, key: usize) {
        let (row, _) = self.records.get(key);
        self.prefix.clear();
        self.prefix
            .extend_from_slice(&(row.len() as i32).to_le_bytes());
        self.prefix.extend_from_slice(row);
    }

    /// Writes the state key of the session starting at `start_us` under `prefix`: the
    /// session's row after the prefix (version byte, bitset, start).
    fn set_state_key(&mut self, start_us: i64) {
        self.state_key.clear();
        self.state_key.extend_from_slice(&self.prefix);
        self.state_key.push(0);
        self.state_key.extend_from_slice(&0u64.to_le_bytes());
        self.state_key.extend_from_slice(&start_us.to_le_bytes());
    }

    /// The stored sessions of record `key`'s key (a prefix scan), in `into` sorted by start.
    fn load(&mut self, key: usize, into: &mut Vec<(i64, i64)>) {
        self.set_prefix(key);
        into.clear();
        self.held
            .scan_prefix(self.state, &self.prefix, self.out, |stored, end| {
                into.push((start_of(stored), end));
            });
        into.sort_unstable();
    }

    /// `updateSessions` of record `key`'s key: its stored sessions replaced by `sessions`.
    fn save(&mut self, key: usize, sessions: &[(i64, i64)], stored: &mut Vec<(i64, i64)>) {
        self.set_prefix(key);
        stored.clear();
        self.held
            .scan_prefix(self.state, &self.prefix, self.out, |old, end| {
                stored.push((start_of(old), end));
            });
        for &(start, _) in stored.iter() {
            if !sessions.iter().any(|&(s, _)| s == start) {
                self.set_state_key(start);
                let gone = [(Op::Get, 0), (Op::Delete, 0)];
                self.out.access_all(self.state, &self.state_key, &gone);
                self.held.remove(&self.state_key);
            }
        }
        let value_bytes = (VALUE_BYTES + self.records.get(key).0.len() - LONG_KEY_ROW) as u32;
        for &(start, end) in sessions {
            self.set_state_key(start);
            let write = [(Op::Get, 0), (Op::Put, value_bytes)];
            self.out.access_all(self.state, &self.state_key, &write);
            self.held.set(&self.state_key, end, ());
        }
    }
}

/// A stored session's start: the last 8 bytes of its state key.
fn start_of(state_key: &[u8]) -> i64 {
    let at = state_key.len().saturating_sub(8);
    state_key
        .get(at..)
        .and_then(|b| b.try_into().ok())
        .map_or(0, i64::from_le_bytes)
}

/// The restore iterator: the records with their keys' stored sessions, by key and start.
#[derive(Debug, Default)]
struct Restore {
    next_record: usize,
    /// The current key (its first record) and its stored sessions not yet handed over.
    key: Option<usize>,
    stored: VecDeque<(i64, i64)>,
    /// The previous key's stored sessions still to hand over before the next key loads.
    left: VecDeque<(i64, i64)>,
    left_key: usize,
    /// A key whose stored sessions load once `left` is empty.
    to_load: Option<usize>,
    /// A record read but not handed over yet.
    pending: Option<Session>,
    scratch: Vec<(i64, i64)>,
}

impl Restore {
    fn next(&mut self, task: &mut Task<'_>) -> Option<Session> {
        loop {
            if let Some((start, end)) = self.left.pop_front() {
                let key = self.left_key;
                return Some(Session { key, start, end });
            }
            if let Some(key) = self.to_load.take() {
                task.load(key, &mut self.scratch);
                self.stored.extend(self.scratch.drain(..));
                self.key = Some(key);
                continue;
            }
            let Some(record) = self.pending else {
                if self.next_record < task.records.len() {
                    self.read(task);
                    continue;
                }
                let key = self.key?;
                let (start, end) = self.stored.pop_front()?;
                return Some(Session { key, start, end });
            };
            let key = record.key;
            if let Some(&(start, end)) = self.stored.front().filter(|s| s.0 < record.start) {
                self.stored.pop_front();
                return Some(Session { key, start, end });
            }
            self.pending = None;
            return Some(record);
        }
    }

    /// Reads the next record; the first of a key hands over what is left of the previous
    /// key's stored sessions, then loads its own.
    fn read(&mut self, task: &mut Task<'_>) {
        let i = self.next_record;
        self.next_record += 1;
        let (row, time) = task.records.get(i);
        let same = self.key.is_some_and(|k| task.records.get(k).0 == row);
        let key = if same {
            self.key.unwrap_or(i)
        } else {
            self.left_key = self.key.unwrap_or(i);
            self.left.extend(self.stored.drain(..));
            self.to_load = Some(i);
            i
        };
        let start = time.saturating_mul(1000);
        let end = start.saturating_add(task.gap_us);
        self.pending = Some(Session { key, start, end });
    }
}

/// The merge of overlapping sessions of a key.
#[derive(Debug, Default)]
struct Merge {
    current: Option<Session>,
}

impl Merge {
    fn next(&mut self, restore: &mut Restore, task: &mut Task<'_>) -> Option<Session> {
        loop {
            let Some(item) = restore.next(task) else {
                return self.current.take();
            };
            match &mut self.current {
                Some(c) if c.key == item.key && item.start <= c.end => c.end = c.end.max(item.end),
                Some(c) => {
                    let done = *c;
                    self.current = Some(item);
                    return Some(done);
                }
                None => self.current = Some(item),
            }
        }
    }
}

/// A session-window count.
#[derive(Debug)]
pub struct SessionCount {
    gap: i64,
    batches: MicroBatches,
    partitions: Vec<Partition>,
    key: Vec<u8>,
    prefix: Vec<u8>,
    state_key: Vec<u8>,
    restore: Restore,
    merge: Merge,
    sessions: Vec<(i64, i64)>,
    stored: Vec<(i64, i64)>,
}

impl SessionCount {
    /// The session count of `spec` (its gap in `size`, `delay`, `trigger`, `partitions`).
    pub fn new(spec: &SparkSpec) -> SessionCount {
        SessionCount {
            gap: spec.size,
            batches: MicroBatches::of(spec),
            partitions: spec.per_partition(),
            key: Vec::with_capacity(32),
            prefix: Vec::with_capacity(40),
            state_key: Vec::with_capacity(64),
            restore: Restore::default(),
            merge: Merge::default(),
            sessions: Vec::new(),
            stored: Vec::new(),
        }
    }
}

impl MicroBatched for SessionCount {
    batches_in_fields!(one_store_per_partition);

    fn buffer(&mut self, event: &Event) -> Option<usize> {
        // a record whose session ended by the previous batch's watermark is late
        if !self
            .batches
            .is_late(event.timestamp.saturating_add(self.gap))
        {
            key_row(&mut self.key, &event.key);
            let p = key_partition(&event.key, self.partitions.len());
            self.partitions[p].records.push(&self.key, event.timestamp);
        }
        Some(0)
    }

    /// A micro-batch: each partition's task in turn restores, merges and saves its keys'
    /// sessions, evicts and commits.
    fn run_batch(&mut self, out: &mut dyn AccessSink) {
        let watermark = self.batches.watermark();
        for (state, partition) in (0u16..).zip(&mut self.partitions) {
            let Partition { records, held } = partition;
            records.sort_by(|(a, ta), (b, tb)| key_order(a, b).then(ta.cmp(&tb)));
            let mut task = Task {
                state,
                records,
                held,
                out: &mut *out,
                gap_us: self.gap.saturating_mul(1000),
                prefix: std::mem::take(&mut self.prefix),
                state_key: std::mem::take(&mut self.state_key),
            };
            self.restore = Restore {
                scratch: std::mem::take(&mut self.restore.scratch),
                ..Restore::default()
            };
            self.merge = Merge::default();
            self.sessions.clear();
            let mut group = None;
            while let Some(s) = self.merge.next(&mut self.restore, &mut task) {
                if let Some(g) = group.filter(|&g| g != s.key) {
                    task.save(g, &self.sessions, &mut self.stored);
                    self.sessions.clear();
                }
                group = Some(s.key);
                self.sessions.push((s.start, s.end));
            }
            if let Some(g) = group {
                task.save(g, &self.sessions, &mut self.stored);
            }
            self.prefix = std::mem::take(&mut task.prefix);
            self.state_key = std::mem::take(&mut task.state_key);
            held.evict(state, watermark, out);
            MicroBatches::commit(state, out);
            records.clear();
        }
        self.batches.advance();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The requests of `events` (key, time in s) through a session count with a `gap` s gap,
    /// a watermark `delay` s behind and micro-batches of `trigger` events: a prefix as
    /// `p<key>`, a stored session as `<key>@<start s>`.
    fn requests(events: &[(i64, i64)], trigger: u64, gap: i64, delay: i64) -> Vec<String> {
        let spec = SparkSpec {
            query: super::super::SparkQuery::SessionCount,
            trigger: super::super::Trigger::Events(trigger),
            size: gap * 1000,
            delay: delay * 1000,
            ..SparkSpec::default()
        };
        let mut op = SessionCount::new(&spec);
        super::super::requests_of(&mut op, events, |key| {
            let k = i64::from_le_bytes(key[13..21].try_into().unwrap());
            if key.len() == 4 + LONG_KEY_ROW {
                format!("p{k}")
            } else {
                format!("{k}@{}", start_of(key) / 1_000_000)
            }
        })
    }

    #[test]
    fn the_restore_reads_two_keys_ahead_of_the_save() {
        let got = requests(&[(2, 11), (1, 10), (3, 12)], 3, 5, 0);
        assert_eq!(
            got[..12],
            [
                // the save of key 1 waits for the merge to hand over key 2's session, which
                // waits for key 3's record
                "seek p1", "seek p2", "seek p3", "seek p1", "get 1@10", "put 1@10", "seek p2",
                "get 2@11", "put 2@11", "seek p3", "get 3@12", "put 3@12",
            ]
        );
    }

    #[test]
    fn a_stored_session_merges_with_a_record_and_one_merged_away_is_deleted() {
        // batch 2: the stored [10, 15) comes before the record at 12 and takes it in
        let got = requests(&[(1, 10), (1, 12)], 1, 5, 0);
        let batch_2 = got.split(|r| r == "|").nth(1).unwrap();
        assert_eq!(
            batch_2,
            [
                "seek p1", "next -", "seek p1", "next -", "get 1@10", "put 1@10", "seek -",
                "next -"
            ]
        );
        // batch 2: the record at 17 opens [17, 22), which takes in the stored [20, 25)
        let got = requests(&[(1, 20), (1, 17)], 1, 5, 10);
        let batch_2 = got.split(|r| r == "|").nth(1).unwrap();
        assert_eq!(
            batch_2,
            [
                "seek p1",
                "next -",
                "seek p1",
                "next -",
                "get 1@20",
                "delete 1@20",
                "get 1@17",
                "put 1@17",
                "seek -",
                "next -",
            ]
        );
    }

    #[test]
    fn a_session_goes_once_the_watermark_reaches_its_end_and_a_late_record_sends_nothing() {
        // the batch without data (watermark 30 s) removes [10, 15) and keeps [30, 35)
        let got = requests(&[(1, 10), (1, 30)], 1, 5, 0);
        let last = got.split(|r| r == "|").nth(2).unwrap();
        assert_eq!(
            last,
            ["seek -", "next 1@30", "get 1@10", "delete 1@10", "next -"]
        );
        // key 2's session [12, 17) ended by the previous batch's watermark (20 s)
        let got = requests(&[(1, 20), (1, 25), (2, 12)], 1, 5, 0);
        assert!(
            !got.iter().any(|r| r.ends_with("p2") || r.contains(" 2@")),
            "{got:?}"
        );
        // a record at the end of a session (25 s, [20, 25)) extends it
        assert!(got.contains(&"put 1@20".to_string()) && !got.contains(&"put 1@25".to_string()));
    }
}
