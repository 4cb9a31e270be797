//! Operators: each turns events and watermarks into the state accesses Flink 1.20 issues.
//!
//! # Writing your own operator
//!
//! The paper (§5.4) splits an operator into three parts; here they are the three methods of
//! [`Operator`]:
//! 1. **assign** an event to state objects and **run the state machine** for it:
//!    [`Operator::on_event`] reads the event's key and time, decides which state keys it touches
//!    (windows, buffers, counters) and emits the accesses through the [`AccessSink`];
//! 2. **terminate** state objects on progress of event time: [`Operator::on_watermark`] fires the
//!    timers the watermark passes and emits what a firing reads and deletes;
//! 3. [`Operator::states`] names the states (column families) the accesses refer to.
//!
//! Requests go to the [`AccessSink`] one by one ([`AccessSink::access`]), or, when several
//! are issued on one state key (a read-modify-write's get and put), together
//! ([`AccessSink::access_all`]): the same requests, with the key's work done once downstream.
//!
//! [`KeyLayout`](crate::key::KeyLayout) builds Flink's key bytes and
//! [`HeapTimerQueue`](crate::timer::HeapTimerQueue) gives Flink's timer order. See
//! `examples/custom_operator.rs` for a complete operator in a few dozen lines.

mod aggregation;
mod continuous_join;
mod interval_join;
mod java_hash;
mod lookup_join;
mod session;
mod window;

pub use aggregation::ContinuousAggregation;
pub use continuous_join::ContinuousJoin;
pub use interval_join::{IntervalJoin, Side};
pub use lookup_join::{LookupJoin, LookupJoinSpec};
pub use session::SessionWindowOperator;
pub use window::{WindowAssigner, WindowOperator};

use crate::access::{AccessSink, Op};
use crate::source::element::Event;

/// A simulated stream operator.
pub trait Operator {
    /// Names of the states the operator accesses; a [`StateId`](crate::StateId) indexes this list.
    fn states(&self) -> Vec<String>;

    /// Before the first input: issues what the job does before it reads any (the lookup-join
    /// loads its external table). Nothing by default.
    fn on_start(&mut self, _out: &mut dyn AccessSink) {}

    /// Processes one input event (already announced to the sink as an event marker).
    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink);

    /// Whether `event` is this operator's to process, as a subtask of a job whose every
    /// subtask sees every event (Spark's shuffle partitions, which all count every event into
    /// the micro-batches); true by default. An event that is not goes to
    /// [`Operator::on_others_event`] instead of [`Operator::on_event`], with no event marker.
    fn owns(&self, _event: &Event) -> bool {
        true
    }

    /// Takes note of an event another subtask of the job processes ([`Operator::owns`]):
    /// what the operator's progress depends on (a micro-batch's size and watermark). Nothing
    /// by default.
    fn on_others_event(&mut self, _event: &Event, _out: &mut dyn AccessSink) {}

    /// Advances event time to `watermark` (strictly increasing; `i64::MAX` at end of input).
    fn on_watermark(&mut self, watermark: i64, out: &mut dyn AccessSink);

    /// End of input, after the final watermark: flush what the engine flushes on close.
    fn on_end(&mut self, _out: &mut dyn AccessSink) {}
}

/// What a window keeps per element: Flink's `aggregate`/`reduce` or `process` functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowFunction {
    /// Incremental aggregation: one 8-byte accumulator, read and written per element.
    Incremental,
    /// Holistic: every element is appended (RocksDB merge) and read back at firing.
    Holistic {
        /// Serialized size of one element in bytes.
        element_size: u32,
    },
}

/// Serialized size of a `long` accumulator.
pub(crate) const ACCUMULATOR_BYTES: u32 = 8;

/// What a window's event-time timer issues on the window's contents: the trigger's read when
/// it fires (`fires`), the purge when it cleans up (`cleans`); without allowed lateness one
/// timer does both.
pub(crate) fn window_timer_requests(fires: bool, cleans: bool) -> &'static [(Op, u32)] {
    const BOTH: [(Op, u32); 2] = [(Op::Get, 0), (Op::Delete, 0)];
    match (fires, cleans) {
        (true, true) => &BOTH,
        (true, false) => &BOTH[..1],
        (false, true) => &BOTH[1..],
        (false, false) => &[],
    }
}

/// Flink's `TimeWindow.maxTimestamp()`.
#[inline]
pub(crate) fn max_timestamp(end: i64) -> i64 {
    end.wrapping_sub(1)
}

/// `WindowOperator.cleanupTime` for event-time windows.
#[inline]
pub(crate) fn cleanup_time(end: i64, allowed_lateness: i64) -> i64 {
    let max_ts = max_timestamp(end);
    let t = max_ts.wrapping_add(allowed_lateness);
    if t >= max_ts {
        t
    } else {
        i64::MAX
    }
}
