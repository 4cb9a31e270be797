//! A Spark query's shuffle partitions as the subtasks of a parallel job (`parallelism`):
//! subtask i of p holds partitions i, i + p, i + 2p, … (each with its state stores), as
//! `local[p]` runs p of a stage's tasks at once.
//!
//! Every subtask receives every event. Each counts it into the micro-batches, whose size and
//! watermark the whole input decides, and processes only the rows of its own partitions
//! ([`crate::operator::Operator::owns`]). So a subtask's partitions receive exactly the requests
//! the query sends them in one trace. The other partitions' stores, empty in this subtask, still
//! commit and scan in each batch; those requests are left out of its trace.

use crate::access::{AccessSink, Renumbered, StateId};
use crate::operator::Operator;
use crate::parallel::split::{JobSplit, SubtaskPart};
use crate::source::subtask::SubtaskRouter;

use super::SparkSpec;

impl SparkSpec {
    /// The query's operator, or subtask `Some((i, parallelism))`'s alone: its shuffle
    /// partitions' ([`SparkSpec::subtask`]).
    pub fn operator_of(&self, subtask: Option<(u32, u32)>) -> Box<dyn Operator> {
        match subtask {
            Some(subtask) => SparkSpec {
                subtask: Some(subtask),
                ..self.clone()
            }
            .operator(),
            None => self.operator(),
        }
    }
}

impl JobSplit for SparkSpec {
    fn refusal(&self, parallelism: u32, _max_parallelism: u32) -> Option<String> {
        (self.partitions < parallelism).then(|| {
            format!(
                "a Spark query runs as {parallelism} subtasks of its shuffle partitions, a \
                 partition's state stores on one subtask, and it has `partitions = {}` \
                 (spark.sql.shuffle.partitions); raise `[operator] partitions` to \
                 {parallelism} or more",
                self.partitions
            )
        })
    }

    fn owns_key_groups(&self) -> bool {
        false
    }

    /// Every event to every subtask: each counts it into the micro-batches.
    fn router(&self, parallelism: u32, _max_parallelism: u32) -> SubtaskRouter {
        SubtaskRouter::to_every(parallelism)
    }

    fn part(&self, subtask: Option<u32>, parallelism: u32, _max_parallelism: u32) -> SubtaskPart {
        let own = OwnPartitions::of_subtask(self, subtask.map(|i| (i, parallelism)));
        SubtaskPart::Partitions(
            (0..self.partitions.max(1))
                .filter(|&p| own.holds(p as usize))
                .collect(),
        )
    }
}

/// Which shuffle partitions a subtask holds, and how its states are numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OwnPartitions {
    index: u32,
    of: u32,
    /// State stores per partition (a join's four, one otherwise): partition p's are states
    /// p × stores to p × stores + stores − 1.
    stores: u32,
    /// The query's shuffle partitions.
    partitions: u32,
}

impl OwnPartitions {
    /// The partitions of `spec`'s subtask ([`SparkSpec::subtask`]; all of them without one).
    pub(crate) fn of(spec: &SparkSpec) -> OwnPartitions {
        OwnPartitions::of_subtask(spec, spec.subtask)
    }

    /// The partitions subtask `(index, parallelism)` of `spec`'s query holds (all of them for
    /// `None`).
    fn of_subtask(spec: &SparkSpec, subtask: Option<(u32, u32)>) -> OwnPartitions {
        let (index, of) = subtask.unwrap_or((0, 1));
        OwnPartitions {
            index,
            of: of.max(1),
            stores: spec.query.stores_per_partition().max(1),
            partitions: spec.partitions.max(1),
        }
    }

    /// The query's shuffle partitions, this subtask's and the others'.
    pub(crate) fn partitions(&self) -> usize {
        self.partitions as usize
    }

    /// Whether this is every partition (no subtask, or a job of one).
    pub(crate) fn is_all(&self) -> bool {
        self.of == 1
    }

    /// Whether this subtask holds `partition`.
    pub(crate) fn holds(&self, partition: usize) -> bool {
        partition as u32 % self.of == self.index
    }

    /// This subtask's number for the query's state `state`, `None` for another subtask's.
    fn state(&self, state: StateId) -> Option<StateId> {
        let state = u32::from(state);
        let partition = state / self.stores;
        let local = (partition / self.of) * self.stores + state % self.stores;
        (partition % self.of == self.index)
            .then(|| StateId::try_from(local).ok())
            .flatten()
    }

    /// This subtask's states of the query's `names` (in state order).
    pub(crate) fn states(&self, names: Vec<String>) -> Vec<String> {
        if self.is_all() {
            return names;
        }
        (0..)
            .zip(names)
            .filter(|(i, _)| self.state(*i).is_some())
            .map(|(_, name)| name)
            .collect()
    }

    /// Runs `f` with `out` seeing only this subtask's states, numbered its way.
    pub(crate) fn through(&self, out: &mut dyn AccessSink, f: impl FnOnce(&mut dyn AccessSink)) {
        if self.is_all() {
            f(out)
        } else {
            let own = *self;
            f(&mut Renumbered {
                out,
                map: move |state| own.state(state),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::spark::SparkQuery;

    #[test]
    fn a_subtask_numbers_its_partitions_states_from_zero() {
        let join = SparkSpec {
            query: SparkQuery::StreamJoin,
            partitions: 5,
            subtask: Some((1, 2)),
            ..SparkSpec::default()
        };
        let own = OwnPartitions::of(&join);
        assert!(own.holds(1) && own.holds(3) && !own.holds(0) && !own.holds(4));
        // partition 1's four stores, then partition 3's
        let mapped: Vec<Option<StateId>> = (0..20).map(|s| own.state(s)).collect();
        assert_eq!(&mapped[4..8], &[Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(&mapped[12..16], &[Some(4), Some(5), Some(6), Some(7)]);
        assert_eq!(mapped.iter().flatten().count(), 8);
        let names: Vec<String> = (0..20).map(|s| s.to_string()).collect();
        assert_eq!(
            own.states(names),
            ["4", "5", "6", "7", "12", "13", "14", "15"]
        );
        let whole = OwnPartitions::of(&SparkSpec::default());
        assert_eq!(whole.state(0), Some(0));
    }
}
