//! Some subtasks of a parallel job as a run's instances: `gadget run` of a Flink job (or of a
//! Kafka Streams application, a subtask per stream thread, or of a Spark query, subtasks of
//! its shuffle partitions) with `--parallelism P` (every subtask) or `--parallelism P --shard
//! i/N` (a range of them).
//!
//! Each subtask is an instance with its own store, as each subtask of a Flink job has its own
//! RocksDB (and each Kafka Streams thread's tasks, or each Spark partition, their own stores).
//! They keep one schedule, the job's: an open loop draws an intended start for every request
//! of the job in the job's order ([`gadget::parallel::in_job`]), and each subtask keeps its
//! own requests' starts. So shards of a job on several clients, each driving its range
//! of subtasks, together follow the schedule one client driving the whole job would have.

use std::fmt;
use std::ops::Range;

use crate::shard::Shard;

/// The instances of a run are subtasks `first..first + n` of one job of `parallelism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSubtasks {
    /// The job's subtasks.
    pub parallelism: u32,
    /// The first subtask run (instance i is subtask `first + i`).
    pub first: u32,
}

/// A shard that would get no subtask.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--shard {shard}: a job of parallelism {parallelism} splits into at most {parallelism} \
     shards (each runs whole subtasks); give fewer shards, or raise --parallelism"
)]
pub struct TooManyShards {
    shard: Shard,
    parallelism: u32,
}

impl JobSubtasks {
    /// The subtasks shard `shard` of a job of `parallelism` runs (`None`: every one): ranges
    /// as even as whole subtasks allow, in order, as Flink gives key groups to subtasks.
    pub fn of_shard(shard: Option<Shard>, parallelism: u32) -> Result<Range<u32>, TooManyShards> {
        let Some(shard) = shard else {
            return Ok(0..parallelism);
        };
        if shard.count > parallelism {
            return Err(TooManyShards { shard, parallelism });
        }
        let at = |i: u32| (u64::from(i) * u64::from(parallelism) / u64::from(shard.count)) as u32;
        Ok(at(shard.index)..at(shard.index + 1))
    }

    /// Subtask of instance `i`.
    pub fn subtask(&self, instance: usize) -> u32 {
        self.first + instance as u32
    }
}

impl fmt::Display for JobSubtasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "subtasks of a job of parallelism {}", self.parallelism)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_subtasks_into_even_ranges_in_order() {
        let ranges = |count, p| -> Vec<Range<u32>> {
            (0..count)
                .map(|index| JobSubtasks::of_shard(Some(Shard { index, count }), p).unwrap())
                .collect()
        };
        assert_eq!(ranges(2, 4), [0..2, 2..4]);
        assert_eq!(ranges(3, 4), [0..1, 1..2, 2..4]);
        assert_eq!(ranges(3, 3), [0..1, 1..2, 2..3]);
        assert_eq!(JobSubtasks::of_shard(None, 5).unwrap(), 0..5);
        for p in 1..20 {
            for count in 1..=p {
                let all: Vec<u32> = ranges(count, p).into_iter().flatten().collect();
                assert_eq!(all, (0..p).collect::<Vec<u32>>(), "{count} of {p}");
            }
        }
        let e = JobSubtasks::of_shard(Some(Shard { index: 0, count: 5 }), 4).unwrap_err();
        assert!(e.to_string().contains("at most 4 shards"), "{e}");
    }
}
