//! A Kafka Streams application as a parallel job: `parallelism` is `num.stream.threads`, and
//! each stream thread is a subtask holding its tasks ([`tasks`](super::tasks)) and its share of
//! the record cache. A record goes to the thread that runs its partition's task.

use super::tasks::{thread_of_key, thread_of_task, Tasks};
use super::{KafkaStreamsSpec, Runner};
use crate::operator::Operator;
use crate::parallel::split::{JobSplit, SubtaskPart};
use crate::source::subtask::SubtaskRouter;

impl KafkaStreamsSpec {
    /// The application's operator, or stream thread `i`'s tasks alone for `Some((i,
    /// threads))`: a subtask of the application run as a parallel job.
    pub fn operator_of(&self, subtask: Option<(u32, u32)>) -> Box<dyn Operator> {
        match subtask {
            Some((thread, _)) => Box::new(Tasks::of_thread(self, thread)),
            None => self.operator(),
        }
    }

    /// The ids of the tasks stream thread `thread` runs (`0_1`, `0_3`, … of
    /// [`KafkaStreamsSpec::threads`] threads), or of every task (`None`).
    fn thread_tasks(&self, thread: Option<u32>) -> Vec<String> {
        let threads = self.threads.clamp(1, self.partitions.max(1));
        (0..self.partitions.max(1))
            .filter(|&task| thread.is_none_or(|t| thread_of_task(task, threads) == t))
            .map(|task| self.task_id_of(task))
            .collect()
    }
}

impl JobSplit for KafkaStreamsSpec {
    fn refusal(&self, parallelism: u32, _max_parallelism: u32) -> Option<String> {
        if self.runner != Runner::Application {
            return Some(format!(
                "a Kafka Streams application runs as {parallelism} subtasks on as many stream \
                 threads, and TopologyTestDriver has none: set `runner = \"application\"` and \
                 `partitions` (the tasks the threads share) to {parallelism} or more"
            ));
        }
        (self.partitions < parallelism).then(|| {
            format!(
                "{parallelism} stream threads need a task each at least, and the input has \
                 `partitions = {}` (a task each); raise `[operator] partitions` to \
                 {parallelism} or more",
                self.partitions
            )
        })
    }

    fn disagreement(&self, parallelism: u32) -> Option<String> {
        (self.threads != 1 && self.threads != parallelism).then(|| {
            format!(
                "a Kafka Streams application's subtasks are its stream threads, and \
                 `[operator] threads = {}` disagrees with parallelism {parallelism}; leave \
                 `threads` out (or give the same number)",
                self.threads
            )
        })
    }

    fn owns_key_groups(&self) -> bool {
        false
    }

    fn take_parallelism(&mut self, parallelism: u32, json: &mut serde_json::Value) {
        if parallelism > 1 {
            self.threads = parallelism;
            json["operator"]["threads"] = parallelism.into();
        }
    }

    fn router(&self, parallelism: u32, _max_parallelism: u32) -> SubtaskRouter {
        SubtaskRouter::by_partition(parallelism, self.partitions, thread_of_key)
    }

    fn part(&self, subtask: Option<u32>, _parallelism: u32, _max_parallelism: u32) -> SubtaskPart {
        SubtaskPart::Tasks(self.thread_tasks(subtask))
    }
}
