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
//! No timers: state lives until the closing element.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::access::{Access, AccessSink, Op};
use crate::key::{Key, KeyLayout, Namespace};
use crate::source::element::Event;

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
}

impl ContinuousJoin {
    /// A continuous join whose elements serialize to `element_size` bytes.
    pub fn new(element_size: u32, max_parallelism: u32) -> Self {
        ContinuousJoin {
            element_size,
            layout: KeyLayout::new(max_parallelism),
            open: FxHashSet::default(),
            waiting: FxHashMap::default(),
        }
    }

    fn request(&mut self, op: Op, state: u16, key: &Key, value_len: u32, out: &mut dyn AccessSink) {
        out.access(Access {
            op,
            state,
            key: self.layout.state_key(key, Namespace::Void),
            value_len,
        });
    }
}

impl Operator for ContinuousJoin {
    fn states(&self) -> Vec<String> {
        vec!["left-state".to_string(), "right-buffer".to_string()]
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let key = &event.key;
        if event.input == 2 {
            self.request(Op::Get, LEFT_STATE, key, 0, out);
            if !self.open.contains(key) {
                self.request(Op::Merge, RIGHT_BUFFER, key, self.element_size, out);
                *self.waiting.entry(key.clone()).or_insert(0) += 1;
            }
        } else if event.closes {
            self.request(Op::Delete, LEFT_STATE, key, 0, out);
            self.request(Op::Delete, RIGHT_BUFFER, key, 0, out);
            self.open.remove(key);
            self.waiting.remove(key);
        } else {
            self.request(Op::Get, LEFT_STATE, key, 0, out);
            self.request(Op::Put, LEFT_STATE, key, self.element_size, out);
            self.open.insert(key.clone());
            self.request(Op::Get, RIGHT_BUFFER, key, 0, out);
            if self.waiting.remove(key).is_some() {
                self.request(Op::Delete, RIGHT_BUFFER, key, 0, out);
            }
        }
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}
}
