//! One subtask's share of a job's stream: Flink's keyed exchange in front of a keyed operator
//! of parallelism p.
//!
//! The reference job has one source task and a `keyBy` to the keyed operator: every event goes
//! to the one subtask whose key groups hold its key (key group × p / max parallelism,
//! [`operator_index_for_key_group`]), and every watermark goes to every subtask (a source task
//! broadcasts its watermarks on all its output channels). [`SubtaskFilter`] is that exchange as
//! subtask i sees it; [`SubtaskRouter`] says where each event goes, for one pass that feeds all
//! subtasks (`crate::parallel`).
//!
//! A Kafka Streams application splits the same way by its stream threads: a record goes to
//! the task of its key's partition and so to the thread that runs the task
//! ([`SubtaskRouter::by_partition`]), and the stream's time marks reach every thread. A Spark
//! query's shuffle partitions receive every event ([`SubtaskRouter::to_every`]): each counts
//! every event into the micro-batches and processes its own.

use crate::key::{key_group_for_hash, operator_index_for_key_group, Key};

use super::{ElementStream, SourceError, StreamElement};

/// Which subtask of a job each key goes to.
#[derive(Debug, Clone)]
pub struct SubtaskRouter {
    parallelism: u32,
    exchange: Exchange,
}

/// How a job's keyed exchange chooses a key's subtask.
#[derive(Debug, Clone)]
enum Exchange {
    /// Flink's: the key group of the key's hash, and the subtask that owns it.
    KeyGroups {
        max_parallelism: u32,
        /// The subtask of every key group (a lookup instead of a division per event).
        owner: Box<[u32]>,
    },
    /// Kafka Streams': the key's partition of the input topic (its task), and the stream
    /// thread that runs the task: `thread_of(key, partitions, threads)`.
    Partitions {
        partitions: u32,
        thread_of: fn(&Key, u32, u32) -> u32,
    },
    /// Every event to every subtask, each subtask's operator choosing its own
    /// ([`crate::operator::Operator::owns`]): Spark's shuffle partitions, which all count
    /// every event into the micro-batches.
    Every,
}

impl SubtaskRouter {
    /// Flink's exchange to `parallelism` subtasks over `max_parallelism` key groups.
    pub fn new(parallelism: u32, max_parallelism: u32) -> Self {
        let parallelism = parallelism.max(1);
        let max_parallelism = max_parallelism.max(1);
        SubtaskRouter {
            parallelism,
            exchange: Exchange::KeyGroups {
                max_parallelism,
                owner: (0..max_parallelism)
                    .map(|g| operator_index_for_key_group(max_parallelism, parallelism, g))
                    .collect(),
            },
        }
    }

    /// An exchange by partitions: a key goes to the subtask `thread_of(key, partitions,
    /// parallelism)`, the one that runs its partition's task (Kafka Streams' tasks on its
    /// stream threads).
    pub fn by_partition(
        parallelism: u32,
        partitions: u32,
        thread_of: fn(&Key, u32, u32) -> u32,
    ) -> Self {
        SubtaskRouter {
            parallelism: parallelism.max(1),
            exchange: Exchange::Partitions {
                partitions: partitions.max(1),
                thread_of,
            },
        }
    }

    /// Every event to every subtask of `parallelism` ([`Exchange::Every`]).
    pub fn to_every(parallelism: u32) -> Self {
        SubtaskRouter {
            parallelism: parallelism.max(1),
            exchange: Exchange::Every,
        }
    }

    /// Number of subtasks.
    pub fn parallelism(&self) -> u32 {
        self.parallelism
    }

    /// The subtask that receives events of `key`: Flink's
    /// `KeyGroupRangeAssignment.assignKeyToParallelOperator`, or the thread of the key's task;
    /// `None` when every subtask receives every event.
    #[inline]
    pub fn subtask_of(&self, key: &Key) -> Option<u32> {
        match &self.exchange {
            Exchange::KeyGroups {
                max_parallelism,
                owner,
            } => {
                let group = key_group_for_hash(key.java_hash(), *max_parallelism);
                // a key group is below max_parallelism, the table's length
                Some(owner.get(group as usize).copied().unwrap_or(0))
            }
            Exchange::Partitions {
                partitions,
                thread_of,
            } => Some(thread_of(key, *partitions, self.parallelism)),
            Exchange::Every => None,
        }
    }
}

/// The stream subtask `subtask` receives: the events of its key groups and every watermark.
///
/// For a two-input operator it filters the inputs before they are interleaved (each input is
/// keyed by the join key), as each subtask's two-input processor reads its own channels.
/// Nothing is allocated per element.
pub struct SubtaskFilter {
    inner: ElementStream,
    router: SubtaskRouter,
    subtask: u32,
}

impl SubtaskFilter {
    /// Subtask `subtask`'s share of `inner`, as `router` splits it.
    pub fn new(inner: ElementStream, router: SubtaskRouter, subtask: u32) -> Self {
        SubtaskFilter {
            inner,
            router,
            subtask,
        }
    }
}

impl std::fmt::Debug for SubtaskFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubtaskFilter")
            .field("subtask", &self.subtask)
            .field("parallelism", &self.router.parallelism)
            .finish()
    }
}

impl Iterator for SubtaskFilter {
    type Item = Result<StreamElement, SourceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.inner.next()? {
                Ok(StreamElement::Event(e))
                    if self
                        .router
                        .subtask_of(&e.key)
                        .is_some_and(|s| s != self.subtask) => {}
                element => return Some(element),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::KeyGroupRange;
    use crate::source::Event;

    /// 1,000 events of keys 0..250 (longs, and strings every third), a watermark after every
    /// tenth.
    fn job() -> Vec<StreamElement> {
        let mut v = Vec::new();
        for t in 0..1000i64 {
            let key = if t % 3 == 0 {
                Key::Str(format!("job-{}", t % 250).into())
            } else {
                Key::Long(t % 250)
            };
            v.push(StreamElement::Event(Event {
                key,
                timestamp: t,
                input: 0,
                closes: false,
                payload: 0,
            }));
            if t % 10 == 9 {
                v.push(StreamElement::Watermark(t));
            }
        }
        v
    }

    fn subtask_stream(p: u32, max: u32, i: u32) -> Vec<StreamElement> {
        let inner: ElementStream = Box::new(job().into_iter().map(Ok));
        SubtaskFilter::new(inner, SubtaskRouter::new(p, max), i)
            .map(|e| e.unwrap())
            .collect()
    }

    #[test]
    fn every_event_goes_to_exactly_one_subtask_and_every_watermark_to_all() {
        let whole = job();
        let watermarks: Vec<&StreamElement> = whole
            .iter()
            .filter(|e| matches!(e, StreamElement::Watermark(_)))
            .collect();
        for (p, max) in [(1, 128), (2, 128), (3, 128), (4, 128), (7, 10), (5, 5)] {
            let router = SubtaskRouter::new(p, max);
            let parts: Vec<Vec<StreamElement>> =
                (0..p).map(|i| subtask_stream(p, max, i)).collect();
            // each event is in the stream of the subtask its key group belongs to, only there
            for e in &whole {
                let StreamElement::Event(ev) = e else {
                    continue;
                };
                let owner = router.subtask_of(&ev.key).unwrap();
                let group = key_group_for_hash(ev.key.java_hash(), max);
                assert!(KeyGroupRange::of_subtask(max, p, owner).contains(group));
                for (i, part) in parts.iter().enumerate() {
                    let n = part.iter().filter(|x| *x == e).count();
                    assert_eq!(n, usize::from(i as u32 == owner), "p {p}: {e:?} in {i}");
                }
            }
            // events keep their order, and the watermarks are every subtask's
            let mut events = 0;
            for part in &parts {
                let mut it = whole.iter();
                for x in part {
                    assert!(it.any(|w| w == x), "p {p}: out of order");
                }
                let wms: Vec<&StreamElement> = part
                    .iter()
                    .filter(|e| matches!(e, StreamElement::Watermark(_)))
                    .collect();
                assert_eq!(wms, watermarks, "p {p}");
                events += part.len() - wms.len();
            }
            assert_eq!(events, whole.len() - watermarks.len(), "p {p}");
            if p > 1 {
                assert!(parts.iter().all(|s| s.len() > watermarks.len()), "p {p}");
            }
        }
    }

    #[test]
    fn parallelism_one_is_the_whole_stream() {
        assert_eq!(subtask_stream(1, 128, 0), job());
    }
}
