//! `withWatermark("time", delay).groupBy(window("time", size), "key").count()`: a streaming
//! aggregation over tumbling windows with a watermark, in output mode append or update
//! (`StateStoreRestoreExec` and `StateStoreSaveExec` over a state store per shuffle
//! partition; a group's partition hashes its window and key, [`super::partition`]).
//!
//! Per micro-batch of data (the events of one trigger), with `W` the batch's watermark and
//! `W'` the previous batch's, each partition's task in turn (partition 0 first):
//!
//! 1. **Restore**: a `get` per group of the batch (window, key), in the order of each group's
//!    first event (the partial aggregation keeps its groups in insertion order).
//! 2. **Save**: per group in the same order, unless it is late (its window ends at or before
//!    `W'`, the watermark for late events), a `get` (row counting) and a `put` of its count.
//! 3. **Evict**: an iterator over the whole store; each entry read whose window ends at or
//!    before `W` is removed (a `get`, row counting, then a `delete`).
//! 4. **Commit**: `flush`, `checkpoint`.
//!
//! The watermark of a batch is the largest event time before it less the delay (0 for the
//! first batch, never lower than the last). After the last batch, if the watermark would
//! move, a batch without data evicts and commits once more (`Trigger.AvailableNow`).

use rustc_hash::FxHashSet;

use crate::access::{AccessSink, Op};
use crate::source::element::Event;

use super::batch::{batches_in_fields, BatchRows, MicroBatched, MicroBatches};
use super::held::Held;
use super::partition::{hash_key, hash_long, partition_of, SEED};
use super::{window_key_row, SparkSpec};

/// A count's value row: the version byte, the null bitset and the long.
const COUNT_VALUE_BYTES: u32 = 1 + 8 + 8;

/// One shuffle partition: its groups of the current batch and its state store.
#[derive(Debug, Default)]
struct Partition {
    /// The groups of the current batch, in order of their first event, with each one's
    /// window end in ms.
    batch: BatchRows<i64>,
    in_batch: FxHashSet<Vec<u8>>,
    /// The keys RocksDB holds, each until the watermark reaches its window's end.
    held: Held,
}

/// A tumbling-window count.
#[derive(Debug)]
pub struct TumblingCount {
    size: i64,
    batches: MicroBatches,
    partitions: Vec<Partition>,
    key: Vec<u8>,
}

impl TumblingCount {
    /// The count of `spec`.
    pub fn new(spec: &SparkSpec) -> TumblingCount {
        TumblingCount {
            size: spec.size,
            batches: MicroBatches::of(spec),
            partitions: spec.per_partition(),
            key: Vec::with_capacity(64),
        }
    }
}

impl MicroBatched for TumblingCount {
    batches_in_fields!(one_store_per_partition);

    /// Adds `event`'s group (window, key) to the current batch, once per batch.
    fn buffer(&mut self, event: &Event) -> Option<usize> {
        self.buffer_group(event)
    }

    fn partition_of(&self, event: &Event) -> usize {
        self.group_partition(event)
    }

    /// A micro-batch of the buffered events (none: a batch without data): each partition's
    /// task in turn.
    fn run_batch(&mut self, out: &mut dyn AccessSink) {
        for (state, partition) in (0u16..).zip(&mut self.partitions) {
            for (key, _) in partition.batch.iter() {
                out.access_all(state, key, &[(Op::Get, 0)]);
            }
            for (key, end) in partition.batch.iter() {
                if self.batches.is_late(end) {
                    continue;
                }
                out.access_all(state, key, &[(Op::Get, 0), (Op::Put, COUNT_VALUE_BYTES)]);
                partition.held.insert(key, end.saturating_mul(1000));
            }
            partition.held.evict(state, self.batches.watermark(), out);
            MicroBatches::commit(state, out);
            partition.batch.clear();
            partition.in_batch.clear();
        }
        self.batches.advance();
    }
}

impl TumblingCount {
    /// The window of `event` (start and end in ms).
    fn window(&self, event: &Event) -> (i64, i64) {
        let start = event.timestamp.div_euclid(self.size) * self.size;
        (start, start + self.size)
    }

    /// The shuffle partition of the group (window, key): `HashPartitioning` over the window
    /// struct (start and end in µs) and the key.
    fn group_partition(&self, event: &Event) -> usize {
        let (start, end) = self.window(event);
        let (start_us, end_us) = (start.saturating_mul(1000), end.saturating_mul(1000));
        partition_of(self.partitions.len(), || {
            hash_key(&event.key, hash_long(end_us, hash_long(start_us, SEED)))
        })
    }

    /// Adds `event`'s group (window, key) to the current batch, once per batch.
    fn buffer_group(&mut self, event: &Event) -> Option<usize> {
        let (start, end) = self.window(event);
        window_key_row(
            &mut self.key,
            start.saturating_mul(1000),
            end.saturating_mul(1000),
            &event.key,
        );
        let p = self.group_partition(event);
        let partition = &mut self.partitions[p];
        if !partition.in_batch.contains(&self.key) {
            partition.in_batch.insert(self.key.clone());
            partition.batch.push(&self.key, end);
        }
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::spark::BatchArrival;

    /// The requests of `events` (key, time in s) through a 5 s count with micro-batches of
    /// `trigger` events, as `op key@window-start-in-s` (`next` with the key it lands on, `-`
    /// for none; `|` after each commit).
    fn requests(events: &[(i64, i64)], trigger: u64, delay: i64) -> Vec<String> {
        let spec = SparkSpec {
            trigger: super::super::Trigger::Events(trigger),
            delay,
            ..SparkSpec::default()
        };
        requests_of(&spec, events)
    }

    /// The requests of `events` through the count `spec` describes.
    fn requests_of(spec: &SparkSpec, events: &[(i64, i64)]) -> Vec<String> {
        let mut count = TumblingCount::new(spec);
        super::super::requests_of(&mut count, events, |key| {
            let key_value = i64::from_le_bytes(key[17..25].try_into().unwrap());
            let start = i64::from_le_bytes(key[33..41].try_into().unwrap());
            format!("{key_value}@{}", start / 1_000_000)
        })
    }

    #[test]
    fn a_batch_restores_saves_then_scans_and_evicts_what_the_watermark_closed() {
        let got = requests(&[(2, 1), (1, 2), (2, 3), (2, 7)], 3, 0);
        assert_eq!(
            got,
            [
                // batch 1 (watermark 0): groups 2@0 and 1@0 in order of their first event
                "get 2@0",
                "get 1@0",
                "get 2@0",
                "put 2@0",
                "get 1@0",
                "put 1@0",
                // the scan: the seek lands on 1@0 (keys order by the key's bytes, little
                // endian), each entry read moves the iterator on; nothing closed
                "seek -",
                "next 2@0",
                "next -",
                "|",
                // batch 2, watermark 3 s: the window [0, 5) is still open
                "get 2@5",
                "get 2@5",
                "put 2@5",
                "seek -",
                "next 2@0",
                "next 2@5",
                "next -",
                "|",
                // no data left, the watermark moved to 7 s: a batch closes [0, 5)
                "seek -",
                "next 2@0",
                "get 1@0",
                "delete 1@0",
                "next 2@5",
                "get 2@0",
                "delete 2@0",
                "next -",
                "|",
            ]
        );
    }

    #[test]
    fn a_group_behind_the_previous_batchs_watermark_is_restored_but_not_saved() {
        // batch 2 runs with watermark 20 s (late events: the previous batch's, 0); batch 3
        // runs with 30 s and takes late events behind 20 s: 1@10 is read, not written
        let got = requests(&[(1, 20), (1, 30), (1, 12)], 1, 0);
        let third: Vec<&String> = got.iter().skip_while(|r| *r != "get 1@10").collect();
        assert_eq!(third[..2], ["get 1@10", "seek -"], "{got:?}");
    }

    #[test]
    fn input_arriving_batch_by_batch_runs_a_batch_without_data_after_each_that_moved_the_watermark()
    {
        let events = [(2, 1), (1, 2), (2, 3), (2, 7), (1, 8), (1, 12)];
        let spec = |arrival, no_data_batches| SparkSpec {
            trigger: super::super::Trigger::Events(3),
            arrival,
            no_data_batches,
            ..SparkSpec::default()
        };
        let commits = |got: &[String]| got.iter().filter(|r| *r == "|").count();
        let available = requests_of(&spec(BatchArrival::AvailableNow, true), &events);
        let arriving = requests_of(&spec(BatchArrival::ProcessingTime, true), &events);
        // all there: two batches of data and one without; arriving: each batch of data moved
        // the watermark (3 s, then 12 s), so each is followed by one without data
        assert_eq!((commits(&available), commits(&arriving)), (3, 4));
        // the batch without data after the first (watermark 3 s) writes nothing
        let first_commit = arriving.iter().position(|r| r == "|").unwrap();
        let between = &arriving[first_commit + 1..];
        let second_commit = between.iter().position(|r| r == "|").unwrap();
        assert!(
            between[..second_commit]
                .iter()
                .all(|r| !r.starts_with("put")),
            "a batch without data writes nothing: {arriving:?}"
        );
        // the same windows are evicted, in the batches without data
        let deletes = |got: &[String]| got.iter().filter(|r| r.starts_with("delete")).count();
        assert_eq!(deletes(&available), deletes(&arriving));
        // turned off, no batch runs without data, in either arrival
        let off_available = requests_of(&spec(BatchArrival::AvailableNow, false), &events);
        let off_arriving = requests_of(&spec(BatchArrival::ProcessingTime, false), &events);
        assert_eq!(commits(&off_available), 2);
        assert_eq!(off_available, off_arriving);
    }
}
