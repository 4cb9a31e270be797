//! Flink's RocksDB timer service: per key group a `RocksDBCachingPriorityQueueSet` (an ordered
//! cache of up to 128 serialized timers in front of a column family, written through a shared
//! write batch of 500 entries), and over them a heap of key groups ordered by their head timer
//! (`KeyGroupPartitionedPriorityQueue`). Every request the real service issues is emitted.

use std::collections::BTreeMap;
use std::hash::Hash;

use crate::access::{Access, AccessSink, Op, StateId};
use crate::key::KeyLayout;

use super::Timer;

const CACHE_CAPACITY: usize = 128;
const BATCH_CAPACITY: u32 = 500;

/// How a timer namespace is serialized into the timer key.
pub trait TimerNamespace: Clone + Eq + Hash {
    /// Appends the namespace bytes.
    fn serialize_into(&self, out: &mut Vec<u8>);
}

/// One key group. RocksDB holds `cache ∪ overflow`: the cache is written through, so every
/// cached timer is also in RocksDB, and `overflow` holds the timers only RocksDB has.
#[derive(Debug, Clone)]
struct KeyGroupQueue<N> {
    cache: BTreeMap<Vec<u8>, Timer<N>>,
    overflow: BTreeMap<Vec<u8>, Timer<N>>,
    all_in_cache: bool,
    seek_hint: Vec<u8>,
    outer_index: usize,
}

/// The event-time timer queue of one RocksDB timer service.
#[derive(Debug, Clone)]
pub struct RocksDbTimerQueue<N: TimerNamespace> {
    timer_state: StateId,
    batch_state: StateId,
    layout: KeyLayout,
    groups: Vec<KeyGroupQueue<N>>,
    /// The heap of key groups, 1-based as in Flink.
    outer: Vec<usize>,
    batch_entries: u32,
    scratch: Vec<u8>,
    key: Vec<u8>,
}

impl<N: TimerNamespace> RocksDbTimerQueue<N> {
    /// A queue writing timer requests to `timer_state` and batch commits to `batch_state`.
    pub fn new(max_parallelism: u32, timer_state: StateId, batch_state: StateId) -> Self {
        let layout = KeyLayout::new(max_parallelism);
        let prefix = layout.prefix_bytes();
        let groups = (0..max_parallelism as usize)
            .map(|g| KeyGroupQueue {
                cache: BTreeMap::new(),
                overflow: BTreeMap::new(),
                all_in_cache: true,
                seek_hint: if prefix == 2 {
                    (g as u16).to_be_bytes().to_vec()
                } else {
                    vec![g as u8]
                },
                outer_index: g + 1,
            })
            .collect();
        let mut outer = vec![usize::MAX];
        outer.extend(0..max_parallelism as usize);
        RocksDbTimerQueue {
            timer_state,
            batch_state,
            layout,
            groups,
            outer,
            batch_entries: 0,
            scratch: Vec::new(),
            key: Vec::new(),
        }
    }

    /// Serializes the timer key into `self.key`.
    fn serialize(&mut self, timer: &Timer<N>) {
        self.scratch.clear();
        timer.namespace.serialize_into(&mut self.scratch);
        let bytes = self
            .layout
            .timer_key(&timer.key, timer.timestamp, &self.scratch);
        self.key.clear();
        self.key.extend_from_slice(bytes);
    }

    fn group_of(&self, bytes: &[u8]) -> usize {
        if self.layout.prefix_bytes() == 2 {
            u16::from_be_bytes([bytes[0], bytes[1]]) as usize
        } else {
            bytes[0] as usize
        }
    }

    fn timestamp_of(&self, bytes: &[u8]) -> i64 {
        let p = self.layout.prefix_bytes();
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&bytes[p..p + 8]);
        (u64::from_be_bytes(ts) ^ (1 << 63)) as i64
    }

    fn batch_entry(&mut self, op: Op, key: &[u8], out: &mut dyn AccessSink) {
        out.access(Access {
            op,
            state: self.timer_state,
            key,
            value_len: 0,
        });
        self.batch_entries += 1;
        if self.batch_entries == BATCH_CAPACITY {
            self.flush(out);
        }
    }

    /// `RocksDBWriteBatchWrapper.flush()`: commits the batch, even an empty one.
    fn flush(&mut self, out: &mut dyn AccessSink) {
        out.access(Access {
            op: Op::BatchCommit,
            state: self.batch_state,
            key: &[],
            value_len: self.batch_entries,
        });
        self.batch_entries = 0;
    }

    /// `RocksDBWriteBatchWrapper.close()`: commits what is pending at the end of the job.
    pub fn close(&mut self, out: &mut dyn AccessSink) {
        if self.batch_entries != 0 {
            self.flush(out);
        }
    }

    /// `checkRefillCacheFromStore`: an empty cache with timers in the store reloads up to 128.
    fn check_refill(&mut self, g: usize, out: &mut dyn AccessSink) {
        if self.groups[g].all_in_cache || !self.groups[g].cache.is_empty() {
            return;
        }
        self.flush(out);
        out.access(Access {
            op: Op::Seek,
            state: self.timer_state,
            key: &self.groups[g].seek_hint,
            value_len: 0,
        });
        let group = &mut self.groups[g];
        let from = group.seek_hint.clone();
        let mut loaded = 0;
        while loaded < CACHE_CAPACITY {
            let Some(k) = group
                .overflow
                .range(from.clone()..)
                .next()
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            let timer = group.overflow.remove(&k).expect("ranged key exists");
            group.cache.insert(k, timer);
            loaded += 1;
        }
        let more = group.overflow.range(from..).next().is_some();
        for _ in 0..loaded {
            out.access(Access {
                op: Op::Next,
                state: self.timer_state,
                key: &[],
                value_len: 0,
            });
        }
        self.groups[g].all_in_cache = !more;
    }

    fn group_peek(&mut self, g: usize, out: &mut dyn AccessSink) -> Option<i64> {
        self.check_refill(g, out);
        let (first, _) = self.groups[g].cache.first_key_value()?;
        Some(self.timestamp_of(first))
    }

    /// `InternalPriorityQueueComparator`: by head timestamp, empty groups last.
    fn less(&mut self, a: usize, b: usize, out: &mut dyn AccessSink) -> bool {
        let left = self.group_peek(a, out);
        let right = self.group_peek(b, out);
        match (left, right) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(l), Some(r)) => l < r,
        }
    }

    fn outer_move(&mut self, g: usize, idx: usize) {
        self.outer[idx] = g;
        self.groups[g].outer_index = idx;
    }

    fn adjust(&mut self, g: usize, out: &mut dyn AccessSink) {
        let idx = self.groups[g].outer_index;
        if self.outer[idx] != g {
            return;
        }
        self.sift_down(idx, out);
        if self.outer[idx] == g {
            self.sift_up(idx, out);
        }
    }

    fn sift_up(&mut self, mut idx: usize, out: &mut dyn AccessSink) {
        let current = self.outer[idx];
        let mut parent = idx >> 1;
        while parent > 0 && self.less(current, self.outer[parent], out) {
            self.outer_move(self.outer[parent], idx);
            idx = parent;
            parent >>= 1;
        }
        self.outer_move(current, idx);
    }

    fn sift_down(&mut self, mut idx: usize, out: &mut dyn AccessSink) {
        let size = self.outer.len() - 1;
        let current = self.outer[idx];
        let mut first = idx << 1;
        let mut second = first + 1;
        if second <= size && self.less(self.outer[second], self.outer[first], out) {
            first = second;
        }
        while first <= size && self.less(self.outer[first], current, out) {
            self.outer_move(self.outer[first], idx);
            idx = first;
            first = idx << 1;
            second = first + 1;
            if second <= size && self.less(self.outer[second], self.outer[first], out) {
                first = second;
            }
        }
        self.outer_move(current, idx);
    }

    /// Registers a timer (`KeyGroupPartitionedPriorityQueue.add`).
    pub fn add(&mut self, timer: Timer<N>, out: &mut dyn AccessSink) {
        self.serialize(&timer);
        let g = self.group_of(&self.key);
        self.check_refill(g, out);
        let group = &self.groups[g];
        let full = group.cache.len() >= CACHE_CAPACITY;
        let goes_to_cache = (!full && group.all_in_cache)
            || group
                .cache
                .last_key_value()
                .is_some_and(|(last, _)| self.key.as_slice() < last.as_slice());
        if goes_to_cache && group.cache.contains_key(&self.key) {
            return; // the cache de-duplicates: no request
        }
        let bytes = std::mem::take(&mut self.key);
        self.batch_entry(Op::BatchPut, &bytes, out);
        let group = &mut self.groups[g];
        let mut head_changed = false;
        if goes_to_cache {
            if full {
                // the lowest-priority cached timer now lives only in RocksDB
                if let Some((k, t)) = group.cache.pop_last() {
                    group.overflow.insert(k, t);
                }
                group.all_in_cache = false;
            }
            head_changed = group
                .cache
                .first_key_value()
                .is_none_or(|(first, _)| bytes.as_slice() < first.as_slice());
            group.cache.insert(bytes, timer);
        } else {
            group.overflow.insert(bytes, timer);
            group.all_in_cache = false;
        }
        if head_changed {
            self.adjust(g, out);
        }
    }

    /// Deletes a timer (`KeyGroupPartitionedPriorityQueue.remove`); a key group with no cached
    /// timer returns early without a request.
    pub fn remove(&mut self, timer: &Timer<N>, out: &mut dyn AccessSink) {
        self.serialize(timer);
        let g = self.group_of(&self.key);
        self.check_refill(g, out);
        let Some(old_head) = self.groups[g]
            .cache
            .first_key_value()
            .map(|(k, _)| k.clone())
        else {
            return;
        };
        let bytes = std::mem::take(&mut self.key);
        self.batch_entry(Op::BatchDelete, &bytes, out);
        let group = &mut self.groups[g];
        group.overflow.remove(&bytes);
        group.cache.remove(&bytes);
        let changed = match group.cache.first_key_value() {
            None => {
                group.seek_hint.clear();
                group.seek_hint.extend_from_slice(&bytes);
                true
            }
            Some((first, _)) => *first != old_head,
        };
        self.key = bytes;
        if changed {
            self.adjust(g, out);
        }
    }

    /// The timestamp of the next timer (may reload a key group's cache).
    pub fn peek_timestamp(&mut self, out: &mut dyn AccessSink) -> Option<i64> {
        let g = self.outer[1];
        self.group_peek(g, out)
    }

    /// Removes and returns the next timer.
    pub fn poll(&mut self, out: &mut dyn AccessSink) -> Option<Timer<N>> {
        let g = self.outer[1];
        self.check_refill(g, out);
        let result = self.groups[g].cache.pop_first().map(|(bytes, timer)| {
            self.batch_entry(Op::BatchDelete, &bytes, out);
            let group = &mut self.groups[g];
            if group.cache.is_empty() {
                group.seek_hint = bytes;
            }
            timer
        });
        self.adjust(g, out);
        result
    }
}
