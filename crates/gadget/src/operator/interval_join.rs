//! Flink's `IntervalJoinOperator`: two `MapState<Long, List<BufferEntry>>` buffers, a scan of
//! the other side per element, and a cleanup timer per element.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use crate::access::{Access, AccessSink, Op};
use crate::key::{Key, KeyGroupRange, KeyLayout, Namespace};
use crate::source::element::Event;
use crate::timer::{Timer, TimerNamespace, TimerQueue, TimerService};

use super::Operator;

const LEFT_BUFFER: u16 = 0;
const RIGHT_BUFFER: u16 = 1;
/// `RocksDBMapState`'s iterator loads at most this many entries per RocksDB iterator.
const MAP_ITERATOR_CACHE: u64 = 128;

/// The namespace of a cleanup timer: which buffer it cleans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// `CLEANUP_LEFT`.
    Left,
    /// `CLEANUP_RIGHT`.
    Right,
}

impl Side {
    /// The timer namespace Flink gives the side's cleanup timers.
    fn timer_namespace(self) -> &'static str {
        match self {
            Side::Left => "CLEANUP_LEFT",
            Side::Right => "CLEANUP_RIGHT",
        }
    }
}

impl TimerNamespace for Side {
    fn serialize_into(&self, out: &mut Vec<u8>) {
        crate::key::write_java_string(self.timer_namespace(), out);
    }

    fn deserialize_suffix(bytes: &[u8]) -> Option<(Self, usize)> {
        // the names as `write_java_string` writes them: length + 1, then the characters
        // (a test checks these against serialize_into)
        const LEFT: &[u8] = b"\x0dCLEANUP_LEFT";
        const RIGHT: &[u8] = b"\x0eCLEANUP_RIGHT";
        if bytes.ends_with(LEFT) {
            Some((Side::Left, LEFT.len()))
        } else if bytes.ends_with(RIGHT) {
            Some((Side::Right, RIGHT.len()))
        } else {
            None
        }
    }
}

/// `left.intervalJoin(right).between(lower, upper)`: input 1 is left, input 2 is right.
#[derive(Debug)]
pub struct IntervalJoin {
    lower: i64,
    upper: i64,
    element_size: u32,
    layout: KeyLayout,
    timers: TimerQueue<Side>,
    timer_service: TimerService,
    watermark: i64,
    /// Entries per key and side: timestamp → elements in the bucket.
    buffers: HashMap<(Key, Side), BTreeMap<i64, u32>>,
}

impl IntervalJoin {
    /// Joins left elements at `t` with right elements in `[t + lower, t + upper]`.
    pub fn new(
        lower: i64,
        upper: i64,
        element_size: u32,
        timer_service: TimerService,
        max_parallelism: u32,
    ) -> Self {
        IntervalJoin {
            lower,
            upper,
            element_size,
            layout: KeyLayout::new(max_parallelism),
            timers: TimerQueue::new(timer_service, max_parallelism, 2),
            timer_service,
            watermark: i64::MIN,
            buffers: HashMap::default(),
        }
    }

    /// The operator as subtask of a parallel job that owns the key groups `range` (Flink's
    /// state backend of that subtask): its timer service keeps those key groups alone.
    pub fn with_key_groups(mut self, range: KeyGroupRange) -> Self {
        self.timers.restrict_to(range);
        self
    }

    fn state(side: Side) -> u16 {
        match side {
            Side::Left => LEFT_BUFFER,
            Side::Right => RIGHT_BUFFER,
        }
    }

    /// Issues `requests` (op and value length) on the map entry of `side`, `key` and `ts`, in
    /// order, all with one map key.
    fn entry(
        &mut self,
        requests: &[(Op, u32)],
        side: Side,
        key: &Key,
        ts: i64,
        out: &mut dyn AccessSink,
    ) {
        let map_key = self.layout.map_key(key, Namespace::Void, ts);
        out.access_all(Self::state(side), map_key, requests);
    }

    /// Iterates the whole map of `side` for `key`, as `RocksDBMapState.entries()` does.
    fn scan(&mut self, side: Side, key: &Key, out: &mut dyn AccessSink) {
        let entries = self
            .buffers
            .get(&(key.clone(), side))
            .map_or(0, |b| b.len() as u64);
        let state = Self::state(side);
        let mut remaining = entries;
        let mut first = true;
        loop {
            out.access(Access {
                op: Op::Seek,
                state,
                key: self.layout.state_key(key, Namespace::Void),
                value_len: 0,
            });
            if !first {
                // a reloaded batch skips the entry the previous batch ended on
                out.access(Access {
                    op: Op::Next,
                    state,
                    key: &[],
                    value_len: 0,
                });
            }
            first = false;
            let batch = remaining.min(MAP_ITERATOR_CACHE);
            for _ in 0..batch {
                out.access(Access {
                    op: Op::Next,
                    state,
                    key: &[],
                    value_len: 0,
                });
            }
            remaining -= batch;
            if remaining == 0 {
                break;
            }
        }
    }
}

impl Operator for IntervalJoin {
    fn states(&self) -> Vec<String> {
        let mut states = vec!["LEFT_BUFFER".to_string(), "RIGHT_BUFFER".to_string()];
        states.extend(TimerQueue::<Side>::states(
            self.timer_service,
            "CLEANUP_TIMER",
        ));
        states
    }

    fn on_start(&mut self, out: &mut dyn AccessSink) {
        self.timers.start_up(out);
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let ts = event.timestamp;
        if ts < self.watermark {
            return; // late: dropped before touching state
        }
        let (ours, other, relative_upper) = if event.input == 2 {
            (Side::Right, Side::Left, self.lower.wrapping_neg())
        } else {
            (Side::Left, Side::Right, self.upper)
        };
        let key = &event.key;
        // the timestamp's list is read and written back grown by one element
        let bucket = self.buffers.entry((key.clone(), ours)).or_default();
        let n = bucket.entry(ts).or_insert(0);
        *n += 1;
        let value_len = 4 + *n * (self.element_size + 1);
        self.entry(&[(Op::Get, 0), (Op::Put, value_len)], ours, key, ts, out);
        self.scan(other, key, out);
        // Java's long arithmetic, which wraps around near the end of time
        let cleanup = if relative_upper > 0 {
            ts.wrapping_add(relative_upper)
        } else {
            ts
        };
        self.timers.add(
            Timer {
                timestamp: cleanup,
                key: key.clone(),
                namespace: ours,
            },
            out,
        );
    }

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        self.timers.close(out);
    }

    fn on_watermark(&mut self, watermark: i64, out: &mut dyn AccessSink) {
        self.watermark = watermark;
        while let Some(timer) = self.timers.poll_due(watermark, out) {
            let t = timer.timestamp;
            let ts = match timer.namespace {
                Side::Left if self.upper <= 0 => t,
                Side::Left => t.wrapping_sub(self.upper),
                Side::Right if self.lower <= 0 => t.wrapping_add(self.lower),
                Side::Right => t,
            };
            let side = timer.namespace;
            let map_key = (timer.key, side);
            if let Some(b) = self.buffers.get_mut(&map_key) {
                b.remove(&ts);
                if b.is_empty() {
                    self.buffers.remove(&map_key);
                }
            }
            self.entry(&[(Op::Delete, 0)], side, &map_key.0, ts, out);
        }
    }
}
