//! One shuffle partition's RocksDB instance as `transformWithState` uses it: its keys (every
//! virtual column family's, in RocksDB's order), the requests of the state store's calls, and
//! the timers (`TimerStateImpl`).

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use crate::access::{AccessSink, Op, StateId};

use super::keys;

/// What one partition's instance holds.
#[derive(Debug, Default)]
pub(super) struct Instance {
    /// Every key, its column family's id first, in RocksDB's order.
    keys: BTreeSet<Vec<u8>>,
    /// The latest event time (ms) of each grouping key's session (by key row).
    pub(super) latest: HashMap<Vec<u8>, i64>,
}

/// The column families of the timers.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timers {
    /// `$eventTimers_keyToTimestamp`.
    pub(super) key_to_time: u16,
    /// `$eventTimers_timestampToKey`.
    pub(super) time_to_key: u16,
}

/// Buffers reused from request to request.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    key: Vec<u8>,
    other: Vec<u8>,
    cursor: Vec<u8>,
    /// The timers `listTimers` found.
    timers: Vec<i64>,
}

/// A partition's instance while the operator sends it requests.
pub(super) struct Store<'a> {
    pub(super) state: StateId,
    pub(super) db: &'a mut Instance,
    pub(super) timers: Timers,
    pub(super) scratch: &'a mut Scratch,
    pub(super) out: &'a mut dyn AccessSink,
}

/// The value of a timer: the version byte and a row of one null field (bitset and word).
const TIMER_VALUE_BYTES: u32 = 1 + 8 + 8;

impl Store<'_> {
    /// A `get` of `key`.
    pub(super) fn get(&mut self, key: &[u8]) {
        self.out.access_all(self.state, key, &[(Op::Get, 0)]);
    }

    /// A `put` of `bytes` under `key`, read first (row counting).
    pub(super) fn put(&mut self, key: &[u8], bytes: u32) {
        self.out
            .access_all(self.state, key, &[(Op::Get, 0), (Op::Put, bytes)]);
        self.hold(key);
    }

    /// A `merge` of `bytes` into `key`, read first (row counting).
    pub(super) fn merge(&mut self, key: &[u8], bytes: u32) {
        self.out
            .access_all(self.state, key, &[(Op::Get, 0), (Op::Merge, bytes)]);
        self.hold(key);
    }

    /// A `delete` of `key`, read first (row counting).
    pub(super) fn remove(&mut self, key: &[u8]) {
        self.out
            .access_all(self.state, key, &[(Op::Get, 0), (Op::Delete, 0)]);
        self.db.keys.remove(key);
    }

    fn hold(&mut self, key: &[u8]) {
        if !self.db.keys.contains(key) {
            self.db.keys.insert(key.to_vec());
        }
    }

    /// An iterator from `prefix` (a `seek`) over the keys under it: per key a `next`, landing
    /// on the key after it (the iterator steps before it hands the key over), then `visit`
    /// with the key, which may remove keys up to it; stops early when `visit` says false.
    pub(super) fn scan(&mut self, prefix: &[u8], mut visit: impl FnMut(&mut Self, &[u8]) -> bool) {
        self.out.access_all(self.state, prefix, &[(Op::Seek, 0)]);
        let mut cursor = std::mem::take(&mut self.scratch.cursor);
        cursor.clear();
        cursor.extend_from_slice(prefix);
        let mut from_prefix = true;
        loop {
            let from = if from_prefix {
                Bound::Included(&cursor[..])
            } else {
                Bound::Excluded(&cursor[..])
            };
            from_prefix = false;
            let keys = &self.db.keys;
            let Some(entry) = keys
                .range::<[u8], _>((from, Bound::Unbounded))
                .next()
                .filter(|entry| entry.starts_with(prefix))
            else {
                break;
            };
            let landed = keys
                .range::<[u8], _>((Bound::Excluded(&entry[..]), Bound::Unbounded))
                .next()
                .map_or(&[][..], |k| &k[..]);
            self.out.access_all(self.state, landed, &[(Op::Next, 0)]);
            cursor.clear();
            cursor.extend_from_slice(entry);
            if !visit(self, &cursor) {
                break;
            }
        }
        self.scratch.cursor = cursor;
    }

    /// `registerTimer(time)` for `key` (a key row): `exists` (a `get` of its
    /// `keyToTimestamp` key), then, when new, both timer keys written.
    pub(super) fn register_timer(&mut self, key: &[u8], time: i64) {
        let (mut by_key, mut by_time) = self.timer_keys(key, time);
        self.get(&by_key);
        if !self.db.keys.contains(&by_key) {
            self.put(&by_key, TIMER_VALUE_BYTES);
            self.put(&by_time, TIMER_VALUE_BYTES);
        }
        self.give_back(&mut by_key, &mut by_time);
    }

    /// `deleteTimer(time)` for `key`: `exists`, then, when there, both timer keys deleted.
    pub(super) fn delete_timer(&mut self, key: &[u8], time: i64) {
        let (mut by_key, mut by_time) = self.timer_keys(key, time);
        self.get(&by_key);
        if self.db.keys.contains(&by_key) {
            self.remove(&by_key);
            self.remove(&by_time);
        }
        self.give_back(&mut by_key, &mut by_time);
    }

    /// `listTimers()` for `key`: a prefix scan of `keyToTimestamp`; then each timer deleted
    /// (the reference processor keeps at most one).
    pub(super) fn drop_timers(&mut self, key: &[u8]) {
        let mut prefix = std::mem::take(&mut self.scratch.other);
        keys::prefix(&mut prefix, self.timers.key_to_time, key);
        let mut timers = std::mem::take(&mut self.scratch.timers);
        timers.clear();
        self.scan(&prefix, |_, entry| {
            let time = entry.len().checked_sub(8).map_or(0, |at| {
                i64::from_le_bytes(entry[at..].try_into().expect("8 bytes"))
            });
            timers.push(time);
            true
        });
        self.scratch.other = prefix;
        for &time in &timers {
            self.delete_timer(key, time);
        }
        self.scratch.timers = timers;
    }

    fn timer_keys(&mut self, key: &[u8], time: i64) -> (Vec<u8>, Vec<u8>) {
        let mut by_key = std::mem::take(&mut self.scratch.key);
        let mut by_time = std::mem::take(&mut self.scratch.other);
        keys::key_to_time(&mut by_key, self.timers.key_to_time, key, time);
        keys::time_to_key(&mut by_time, self.timers.time_to_key, key, time);
        (by_key, by_time)
    }

    fn give_back(&mut self, by_key: &mut Vec<u8>, by_time: &mut Vec<u8>) {
        self.scratch.key = std::mem::take(by_key);
        self.scratch.other = std::mem::take(by_time);
    }
}
