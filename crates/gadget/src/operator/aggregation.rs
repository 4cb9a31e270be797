//! A `KeyedProcessFunction` keeping a running aggregate in a `ValueState<Long>`.

use crate::access::{AccessSink, Op};
use crate::key::{KeyLayout, Namespace};
use crate::source::element::Event;

use super::{Operator, ACCUMULATOR_BYTES};

/// Continuous aggregation: `get` then `put` of the key's value per event, never deleted.
#[derive(Debug)]
pub struct ContinuousAggregation {
    state_name: String,
    layout: KeyLayout,
}

impl ContinuousAggregation {
    /// The operator with the program's state name (Flink's reference job calls it `running-sum`).
    pub fn new(state_name: impl Into<String>, max_parallelism: u32) -> Self {
        ContinuousAggregation {
            state_name: state_name.into(),
            layout: KeyLayout::new(max_parallelism),
        }
    }
}

impl Operator for ContinuousAggregation {
    fn states(&self) -> Vec<String> {
        vec![self.state_name.clone()]
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        // ValueState read, then written back: one key for both
        let key = self.layout.state_key(&event.key, Namespace::Void);
        out.access_all(0, key, &[(Op::Get, 0), (Op::Put, ACCUMULATOR_BYTES)]);
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}
}
