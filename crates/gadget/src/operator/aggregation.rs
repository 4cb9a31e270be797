//! A `KeyedProcessFunction` keeping a running aggregate in a `ValueState<Long>`.

use crate::access::{AccessSink, Op};
use crate::key::{KeyGroupRange, KeyLayout, Namespace};
use crate::source::element::Event;
use crate::timer::{self, TimerQueue, TimerService};

use super::{Operator, ACCUMULATOR_BYTES};

/// Continuous aggregation: `get` then `put` of the key's value per event, never deleted.
#[derive(Debug)]
pub struct ContinuousAggregation {
    state_name: String,
    layout: KeyLayout,
    /// The timer service the operator makes (`user-timers`), which no timer ever enters.
    timers: TimerService,
    /// The subtask's key groups, which the timer service's start-up loads.
    groups: KeyGroupRange,
}

impl ContinuousAggregation {
    /// The operator with the program's state name (Flink's reference job calls it `running-sum`).
    pub fn new(state_name: impl Into<String>, timers: TimerService, max_parallelism: u32) -> Self {
        ContinuousAggregation {
            state_name: state_name.into(),
            layout: KeyLayout::new(max_parallelism),
            timers,
            groups: KeyGroupRange::all(max_parallelism),
        }
    }

    /// The operator of the subtask that owns `range` (its timer service's key groups).
    pub fn with_key_groups(mut self, range: KeyGroupRange) -> Self {
        self.groups = range;
        self
    }
}

impl Operator for ContinuousAggregation {
    fn states(&self) -> Vec<String> {
        let mut states = vec![self.state_name.clone()];
        states.extend(TimerQueue::<u8>::states(self.timers, "user-timers"));
        states
    }

    fn on_start(&mut self, out: &mut dyn AccessSink) {
        // `KeyedProcessOperator.open` makes its `user-timers` service, unused here
        timer::unused_service_start_up(self.timers, self.groups, 1, out);
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        // ValueState read, then written back: one key for both
        let key = self.layout.state_key(&event.key, Namespace::Void);
        out.access_all(0, key, &[(Op::Get, 0), (Op::Put, ACCUMULATOR_BYTES)]);
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}
}
