//! The paper's continuous join: the left stream carries a validity interval per key (a job from
//! its SUBMIT to its FINISH), the right stream's elements join the key's current left element
//! or wait for it.
//!
//! Modelled as the Flink program one would write for it, `left.connect(right).keyBy(..)
//! .process(KeyedCoProcessFunction)` with a `ValueState` `left-state` (the open left element)
//! and a `ListState` `right-buffer` (right elements that arrived before their left one):
//!
//! - left element: `left-state.value()` and `update()` (get, put), then `right-buffer.get()`
//!   (get) and, when it held elements, they are joined and `right-buffer.clear()` (delete);
//! - closing left element: `left-state.clear()` and `right-buffer.clear()` (delete, delete);
//! - right element: `left-state.value()` (get); without an open left element it waits:
//!   `right-buffer.add()` (merge).
//!
//! No timers: state lives until the closing element (the `user-timers` service that
//! `KeyedCoProcessOperator` makes when it opens only starts up).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::access::{AccessSink, Op};
use crate::key::{Key, KeyGroupRange, KeyLayout, Namespace};
use crate::source::element::Event;
use crate::timer::{self, TimerQueue, TimerService};

use super::Operator;

const LEFT_STATE: u16 = 0;
const RIGHT_BUFFER: u16 = 1;

/// A continuous join of a validity-interval stream (input 1) with an event stream (input 2).
#[derive(Debug)]
pub struct ContinuousJoin {
    element_size: u32,
    layout: KeyLayout,
    open: FxHashSet<Key>,
    waiting: FxHashMap<Key, u32>,
    /// The timer service the operator makes (`user-timers`), which no timer ever enters.
    timers: TimerService,
    /// The subtask's key groups, which the timer service's start-up loads.
    groups: KeyGroupRange,
}

impl ContinuousJoin {
    /// A continuous join whose elements serialize to `element_size` bytes.
    pub fn new(element_size: u32, timers: TimerService, max_parallelism: u32) -> Self {
        ContinuousJoin {
            element_size,
            layout: KeyLayout::new(max_parallelism),
            open: FxHashSet::default(),
            waiting: FxHashMap::default(),
            timers,
            groups: KeyGroupRange::all(max_parallelism),
        }
    }

    /// The operator of the subtask that owns `range` (its timer service's key groups).
    pub fn with_key_groups(mut self, range: KeyGroupRange) -> Self {
        self.groups = range;
        self
    }

    /// Issues `requests` (op and value length) on `state` of `key`, in order, all with one
    /// state key.
    fn request(&mut self, requests: &[(Op, u32)], state: u16, key: &Key, out: &mut dyn AccessSink) {
        let state_key = self.layout.state_key(key, Namespace::Void);
        out.access_all(state, state_key, requests);
    }
}

impl Operator for ContinuousJoin {
    fn states(&self) -> Vec<String> {
        let mut states = vec!["left-state".to_string(), "right-buffer".to_string()];
        states.extend(TimerQueue::<u8>::states(self.timers, "user-timers"));
        states
    }

    fn on_start(&mut self, out: &mut dyn AccessSink) {
        // `KeyedCoProcessOperator.open` makes its `user-timers` service, unused here
        timer::unused_service_start_up(self.timers, self.groups, 2, out);
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let key = &event.key;
        if event.input == 2 {
            self.request(&[(Op::Get, 0)], LEFT_STATE, key, out);
            if !self.open.contains(key) {
                self.request(&[(Op::Merge, self.element_size)], RIGHT_BUFFER, key, out);
                *self.waiting.entry(key.clone()).or_insert(0) += 1;
            }
        } else if event.closes {
            self.request(&[(Op::Delete, 0)], LEFT_STATE, key, out);
            self.request(&[(Op::Delete, 0)], RIGHT_BUFFER, key, out);
            self.open.remove(key);
            self.waiting.remove(key);
        } else {
            let read_modify_write = [(Op::Get, 0), (Op::Put, self.element_size)];
            self.request(&read_modify_write, LEFT_STATE, key, out);
            self.open.insert(key.clone());
            // the buffer is read, and deleted when it held waiting elements
            let read_and_delete = [(Op::Get, 0), (Op::Delete, 0)];
            let waited = self.waiting.remove(key).is_some();
            let requests = if waited {
                &read_and_delete[..]
            } else {
                &read_and_delete[..1]
            };
            self.request(requests, RIGHT_BUFFER, key, out);
        }
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}
}
