//! Apache Flink 1.20 with the RocksDB state backend: its operators' list, their
//! `[operator]` sections ([`config`]) and their building into the simulated operators of
//! [`crate::operator`]. Adding a Flink operator is its room under `operator/`, a row in
//! [`OPERATORS`], a variant here and an arm in each of the two matches below.

pub(crate) mod config;
mod split;

use crate::key::KeyGroupRange;
use crate::operator::{
    ContinuousAggregation, ContinuousJoin, IntervalJoin, LookupJoin, LookupJoinSpec, Operator,
    SessionWindowOperator, WindowAssigner, WindowFunction, WindowOperator,
};
use crate::source::interleave::Interleaving;
use crate::source::ysb::YsbIds;
use crate::timer::TimerService;

/// The `[operator] type`s of Flink, in the order the documentation lists them.
pub const OPERATORS: &[&str] = &[
    "tumbling",
    "sliding",
    "session",
    "aggregation",
    "interval-join",
    "tumbling-join",
    "sliding-join",
    "continuous-join",
    "lookup-join",
];

/// A Flink operator, as its `[operator]` section configures it.
#[derive(Debug, Clone, PartialEq)]
pub enum FlinkOperator {
    /// Tumbling or sliding windows (`keyed = false`: `windowAll`).
    Window {
        /// Window assignment.
        assigner: WindowAssigner,
        /// Incremental or holistic.
        function: WindowFunction,
        /// Allowed lateness, ms.
        allowed_lateness: i64,
        /// Keyed (`keyBy().window()`) or not (`windowAll`).
        keyed: bool,
    },
    /// Event-time session windows.
    Session {
        /// Session gap, ms.
        gap: i64,
        /// Incremental or holistic.
        function: WindowFunction,
        /// Allowed lateness, ms.
        allowed_lateness: i64,
    },
    /// A running aggregate per key in a `ValueState`.
    Aggregation {
        /// The state's name.
        state_name: String,
    },
    /// A window join (`join().where().equalTo().window()`): Flink runs it as a coGroup, a
    /// holistic window over the tagged union of both inputs.
    WindowJoin {
        /// Tumbling or sliding windows.
        assigner: WindowAssigner,
        /// Serialized size of one element (the union adds a one-byte tag).
        element_size: u32,
        /// Allowed lateness, ms.
        allowed_lateness: i64,
        /// How the two inputs are interleaved.
        interleaving: Interleaving,
    },
    /// The paper's continuous join (see `operator::ContinuousJoin`).
    ContinuousJoin {
        /// Serialized size of one element.
        element_size: u32,
        /// How the two inputs are interleaved.
        interleaving: Interleaving,
    },
    /// `intervalJoin(...).between(lower, upper)`.
    IntervalJoin {
        /// Lower bound, ms.
        lower: i64,
        /// Upper bound, ms.
        upper: i64,
        /// Serialized size of one buffered element.
        element_size: u32,
        /// How the two inputs are interleaved.
        interleaving: Interleaving,
    },
    /// YSB's lookup-join: a table lookup per event, a tumbling count window per campaign, a
    /// sink write per window (see [`LookupJoin`]).
    LookupJoin(LookupJoinSpec),
}

impl FlinkOperator {
    /// How a two-input operator's inputs are interleaved; `None` for one input.
    pub fn interleaving(&self) -> Option<Interleaving> {
        match self {
            FlinkOperator::IntervalJoin { interleaving, .. }
            | FlinkOperator::WindowJoin { interleaving, .. }
            | FlinkOperator::ContinuousJoin { interleaving, .. } => Some(*interleaving),
            _ => None,
        }
    }

    /// Builds the operator of one subtask, which owns the key groups `groups` of
    /// `max_parallelism`; `ysb` gives the lookup-join its table's ids (it reads a ysb source).
    pub fn build(
        &self,
        timers: TimerService,
        max_parallelism: u32,
        groups: KeyGroupRange,
        ysb: impl FnOnce() -> YsbIds,
    ) -> Box<dyn Operator> {
        let p = max_parallelism;
        match self {
            FlinkOperator::Window {
                assigner,
                function,
                allowed_lateness,
                keyed,
            } => Box::new(
                WindowOperator::new(*assigner, *function, *allowed_lateness, *keyed, timers, p)
                    .with_key_groups(groups),
            ),
            FlinkOperator::Session {
                gap,
                function,
                allowed_lateness,
            } => Box::new(
                SessionWindowOperator::new(*gap, *function, *allowed_lateness, timers, p)
                    .with_key_groups(groups),
            ),
            FlinkOperator::WindowJoin {
                assigner,
                element_size,
                allowed_lateness,
                ..
            } => Box::new(
                WindowOperator::new(
                    *assigner,
                    WindowFunction::Holistic {
                        element_size: element_size + 1,
                    },
                    *allowed_lateness,
                    true,
                    timers,
                    p,
                )
                .with_key_groups(groups),
            ),
            FlinkOperator::ContinuousJoin { element_size, .. } => {
                Box::new(ContinuousJoin::new(*element_size, timers, p).with_key_groups(groups))
            }
            FlinkOperator::Aggregation { state_name } => Box::new(
                ContinuousAggregation::new(state_name.clone(), timers, p).with_key_groups(groups),
            ),
            FlinkOperator::IntervalJoin {
                lower,
                upper,
                element_size,
                ..
            } => Box::new(
                IntervalJoin::new(*lower, *upper, *element_size, timers, p).with_key_groups(groups),
            ),
            FlinkOperator::LookupJoin(join) => Box::new(LookupJoin::new(join, ysb(), timers, p)),
        }
    }
}
