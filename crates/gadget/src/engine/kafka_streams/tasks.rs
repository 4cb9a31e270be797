//! A topology over input topics of several partitions, as a `KafkaStreams` application runs
//! it: one task per partition (`0_0`, `0_1`, …), each with its own store instances
//! (`<application.id>/0_<i>/…`), its own changelog partition and offsets, and its own stream
//! time; a record reaches the task of the partition Kafka's default partitioner gives its key
//! ([`partition_of_key`]).
//!
//! The tasks run on `num.stream.threads` threads, task i on thread i mod threads (the
//! assignor's round robin over a fresh group's threads), and the stores of one thread's tasks
//! share its record cache of `cache_bytes / threads` ([`ThreadCache`]). A stream thread's
//! tasks alone ([`Tasks::of_thread`]) are a subtask of the application run as a parallel job
//! (`parallelism`: one trace, or one concurrent store client, per thread).
//!
//! Gadget issues each task's requests in the order of the records that reach it, tasks
//! interleaved by the input's order. A real application interleaves them as its consumers'
//! polls and its threads decide, so only each task's own requests are reproducible; they are,
//! request for request, while no store's cache evicts for another task's writes (an eviction
//! depends on the bytes the thread's other tasks hold at that moment). `gadget trace diff
//! --per-instance` compares two traces so.

use crate::access::{AccessSink, Renumbered, StateId};
use crate::key::Key;
use crate::operator::Operator;
use crate::source::element::Event;

use super::cache::ThreadCache;
use super::partitioner::partition_of_key;
use super::KafkaStreamsSpec;

/// The stream thread of `threads` that runs task `task`: the assignor's round robin over a
/// fresh group's threads.
pub fn thread_of_task(task: u32, threads: u32) -> u32 {
    task % threads.max(1)
}

/// The stream thread of `threads` that processes the records of `key`: the thread of its
/// partition's task.
pub fn thread_of_key(key: &Key, partitions: u32, threads: u32) -> u32 {
    thread_of_task(partition_of_key(key, partitions), threads)
}

/// The tasks of a topology over several input partitions, each running the topology's
/// operator on its own stores.
pub struct Tasks {
    tasks: Vec<Box<dyn Operator>>,
    /// Each task's first state in the job's state table (the tasks' tables one after another).
    bases: Vec<StateId>,
    /// The input topic's partitions (one task each, on this or another thread).
    partitions: u32,
    /// Each partition's task among `tasks`, `NOT_HERE` for a task of another thread.
    task_of: Vec<u32>,
}

/// [`Tasks::task_of`] a partition whose task another thread runs.
const NOT_HERE: u32 = u32::MAX;

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("tasks", &self.tasks.len())
            .field("bases", &self.bases)
            .finish()
    }
}

impl Tasks {
    /// The tasks of `spec`: [`KafkaStreamsSpec::partitions`] of them over
    /// [`KafkaStreamsSpec::threads`] threads.
    pub fn new(spec: &KafkaStreamsSpec) -> Tasks {
        Tasks::on_threads(spec, None)
    }

    /// The tasks stream thread `thread` runs (task i on thread i mod threads), with the
    /// thread's own cache: what the thread issues, as a subtask of a parallel job.
    pub fn of_thread(spec: &KafkaStreamsSpec, thread: u32) -> Tasks {
        Tasks::on_threads(spec, Some(thread))
    }

    /// The tasks of every thread (`None`) or of one.
    fn on_threads(spec: &KafkaStreamsSpec, only: Option<u32>) -> Tasks {
        let threads = spec.threads.clamp(1, spec.partitions.max(1));
        let caches: Vec<ThreadCache> = (0..threads)
            .map(|_| ThreadCache::new(spec.thread_cache_bytes()))
            .collect();
        let partitions = spec.partitions.max(1);
        let here = |task: &u32| only.is_none_or(|thread| thread_of_task(*task, threads) == thread);
        let mut task_of = vec![NOT_HERE; partitions as usize];
        for (i, task) in (0..partitions).filter(here).enumerate() {
            task_of[task as usize] = i as u32;
        }
        let tasks: Vec<Box<dyn Operator>> = (0..partitions)
            .filter(here)
            .map(|task| {
                let spec = KafkaStreamsSpec {
                    task,
                    ..spec.clone()
                };
                spec.task_operator(&caches[thread_of_task(task, threads) as usize])
            })
            .collect();
        let mut bases = Vec::with_capacity(tasks.len());
        let mut next: usize = 0;
        for task in &tasks {
            bases.push(StateId::try_from(next).unwrap_or(StateId::MAX));
            next += task.states().len();
        }
        Tasks {
            tasks,
            bases,
            partitions,
            task_of,
        }
    }

    /// Runs `f` on task `i` with its requests' states moved to its place in the job's table.
    fn with_task(
        &mut self,
        i: usize,
        out: &mut dyn AccessSink,
        f: impl FnOnce(&mut dyn Operator, &mut dyn AccessSink),
    ) {
        let base = self.bases[i];
        let mut shifted = Renumbered {
            out,
            map: move |state| Some(state + base),
        };
        f(self.tasks[i].as_mut(), &mut shifted);
    }
}

impl Operator for Tasks {
    fn states(&self) -> Vec<String> {
        self.tasks.iter().flat_map(|t| t.states()).collect()
    }

    fn on_start(&mut self, out: &mut dyn AccessSink) {
        for i in 0..self.tasks.len() {
            self.with_task(i, out, |task, out| task.on_start(out));
        }
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let partition = partition_of_key(&event.key, self.partitions);
        // another thread's record reaches this one only if the job's exchange is wrong
        if let Some(&task) = self
            .task_of
            .get(partition as usize)
            .filter(|&&t| t != NOT_HERE)
        {
            self.with_task(task as usize, out, |t, out| t.on_event(event, out));
        }
    }

    fn on_watermark(&mut self, watermark: i64, out: &mut dyn AccessSink) {
        for i in 0..self.tasks.len() {
            self.with_task(i, out, |task, out| task.on_watermark(watermark, out));
        }
    }

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        for i in 0..self.tasks.len() {
            self.with_task(i, out, |task, out| task.on_end(out));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Op, TraceRecord};
    use crate::engine::kafka_streams::partitioner::partition_for_key;
    use crate::engine::kafka_streams::testing::run_keys;
    use crate::engine::kafka_streams::Runner;

    fn spec(partitions: u32, threads: u32) -> KafkaStreamsSpec {
        KafkaStreamsSpec {
            partitions,
            threads,
            runner: Runner::Application,
            commit_every: u64::MAX,
            ..KafkaStreamsSpec::default()
        }
    }

    /// Each request of `keys` (one event each) through `op`, as `state-name op key-bytes`.
    fn run(op: &mut dyn Operator, keys: &[i64]) -> Vec<(String, Op, Vec<u8>)> {
        let names = op.states();
        run_keys(op, keys)
            .records
            .into_iter()
            .filter_map(|r| match r {
                TraceRecord::Access { op, state, key, .. } => {
                    Some((names[state as usize].clone(), op, key))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_task_issues_what_it_would_alone_over_its_partitions_records() {
        let keys: Vec<i64> = (0..40).map(|i| (i * 7919) % 23).collect();
        let all = run(&mut Tasks::new(&spec(3, 1)), &keys);
        for task in 0..3u32 {
            let mine: Vec<i64> = keys
                .iter()
                .copied()
                .filter(|k| partition_for_key(&k.to_be_bytes(), 3) == task)
                .collect();
            assert!(!mine.is_empty(), "task {task} has records");
            let alone_spec = KafkaStreamsSpec {
                task,
                partitions: 1,
                ..spec(3, 1)
            };
            let alone = run(&mut *alone_spec.operator(), &mine);
            let prefix = format!("gadget/0_{task}/");
            let in_job: Vec<_> = all
                .iter()
                .filter(|(name, _, _)| name.starts_with(&prefix))
                .cloned()
                .collect();
            assert_eq!(in_job, alone, "task {task}");
            assert!(alone
                .iter()
                .any(|(_, _, key)| key == format!("gadget-counts-changelog-{task}").as_bytes()));
        }
        let others = all
            .iter()
            .filter(|(name, _, _)| !(0..3).any(|t| name.starts_with(&format!("gadget/0_{t}/"))))
            .count();
        assert_eq!(others, 0, "every request is some task's");
    }

    #[test]
    fn tasks_of_one_thread_share_its_cache_and_threads_split_the_size() {
        // two keys of each of two partitions, over and over; a thread's cache holds two
        // counts (8-byte key, 45 bytes of entry, 16 of value, 6 of topic)
        let entry = 8 + 45 + 16 + 6;
        let of = |p: u32| {
            (0..1000i64)
                .filter(move |k| partition_for_key(&k.to_be_bytes(), 2) == p)
                .take(2)
        };
        let four: Vec<i64> = of(0).chain(of(1)).collect();
        let keys: Vec<i64> = (0..100).map(|i| four[i % 4]).collect();
        let puts = |threads: u32, cache_bytes: u64| {
            let s = KafkaStreamsSpec {
                cache_bytes,
                ..spec(2, threads)
            };
            run(&mut Tasks::new(&s), &keys)
                .iter()
                .filter(|(name, op, _)| *op == Op::Put && name.ends_with("keyValueWithTimestamp"))
                .count()
        };
        // a task per thread: each holds its two keys, written once when it closes
        assert_eq!(puts(2, 2 * 2 * entry), 4);
        // both tasks on one thread of the same share: four keys in two entries' room
        let shared = puts(1, 2 * entry);
        assert!(
            shared > 50,
            "{shared} writes: the tasks evict each other's keys"
        );
        // one thread with the whole size holds all four
        assert_eq!(puts(1, 4 * entry), 4);
    }

    #[test]
    fn one_task_on_one_of_two_threads_has_half_the_cache() {
        // two keys over and over; the cache holds both only when the task has all of it
        let keys: Vec<i64> = (0..100).map(|i| i % 2).collect();
        let puts = |threads: u32| {
            let s = KafkaStreamsSpec {
                cache_bytes: 2 * (8 + 45 + 16 + 6),
                ..spec(1, threads)
            };
            run(&mut *s.operator(), &keys)
                .iter()
                .filter(|(name, op, _)| *op == Op::Put && name.ends_with("keyValueWithTimestamp"))
                .count()
        };
        assert_eq!(puts(1), 2);
        assert!(puts(2) > 50, "{}", puts(2));
    }
}
