//! `withWatermark("time", delay).dropDuplicatesWithinWatermark("key")`: the first event of
//! each key passes, later ones with that key are dropped until the watermark passes the kept
//! event's time plus the delay (`StreamingDeduplicateWithinWatermarkExec`, one state store
//! keyed by the record key, its value the time the entry expires).
//!
//! Per event of a micro-batch, in input order within each shuffle partition (the key's
//! hash, [`super::partition`]; each partition's task in turn), unless it is late (its time at or before the
//! previous batch's watermark, the watermark for late events: no request):
//!
//! 1. a `get` of the key;
//! 2. when absent, the event passes and its expiry is saved: a `get` (row counting) and a
//!    `put` of time + delay.
//!
//! At the end of each batch an iterator over the whole store removes the entries the batch's
//! watermark reached (expiry ≤ watermark: a `get`, row counting, then a `delete`), then
//! `flush` and `checkpoint` commit it; a batch without data follows the last one when the
//! watermark moved ([`super::batch`]).

use crate::access::{AccessSink, Op};
use crate::source::element::Event;

use super::batch::{batches_in_fields, buffer_keyed, KeyedPartition, MicroBatched, MicroBatches};
use super::SparkSpec;

/// The value row: the version byte, the null bitset and the expiry (a long, µs).
const EXPIRY_VALUE_BYTES: u32 = 1 + 8 + 8;

/// Deduplication within the watermark's delay.
#[derive(Debug)]
pub struct DropDuplicatesWithinWatermark {
    delay: i64,
    batches: MicroBatches,
    /// Per shuffle partition: its records, and its keys, each held until the watermark
    /// reaches its expiry.
    partitions: Vec<KeyedPartition<()>>,
    key: Vec<u8>,
}

impl DropDuplicatesWithinWatermark {
    /// The deduplication of `spec` (its `delay`, `trigger` and `partitions`).
    pub fn new(spec: &SparkSpec) -> DropDuplicatesWithinWatermark {
        DropDuplicatesWithinWatermark {
            delay: spec.delay,
            batches: MicroBatches::of(spec),
            partitions: spec.per_partition(),
            key: Vec::with_capacity(32),
        }
    }
}

impl MicroBatched for DropDuplicatesWithinWatermark {
    batches_in_fields!(one_store_per_partition);

    fn buffer(&mut self, event: &Event) -> Option<usize> {
        buffer_keyed(&self.batches, &mut self.partitions, &mut self.key, event)
    }

    /// A micro-batch: each partition's task in turn runs its events, the eviction scan and
    /// the commit.
    fn run_batch(&mut self, out: &mut dyn AccessSink) {
        for (state, partition) in (0u16..).zip(&mut self.partitions) {
            for (key, time) in partition.records.iter() {
                out.access_all(state, key, &[(Op::Get, 0)]);
                if !partition.held.contains(key) {
                    out.access_all(state, key, &[(Op::Get, 0), (Op::Put, EXPIRY_VALUE_BYTES)]);
                    let expiry = time.saturating_add(self.delay);
                    partition.held.insert(key, expiry.saturating_mul(1000));
                }
            }
            partition.records.clear();
            partition.held.evict(state, self.batches.watermark(), out);
            MicroBatches::commit(state, out);
        }
        self.batches.advance();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The requests of `events` (key, time in s) with a watermark `delay` s behind and
    /// micro-batches of `trigger` events, as `op key` (`next` with the key it lands on, `-`
    /// for none; `|` after each commit).
    fn requests(events: &[(i64, i64)], trigger: u64, delay: i64) -> Vec<String> {
        let spec = SparkSpec {
            query: super::super::SparkQuery::DropDuplicatesWithinWatermark,
            trigger: super::super::Trigger::Events(trigger),
            delay: delay * 1000,
            ..SparkSpec::default()
        };
        let mut dedup = DropDuplicatesWithinWatermark::new(&spec);
        super::super::requests_of(&mut dedup, events, |key| {
            i64::from_le_bytes(key[9..17].try_into().unwrap()).to_string()
        })
    }

    #[test]
    fn a_key_is_saved_once_and_evicted_when_the_watermark_reaches_its_expiry() {
        let got = requests(&[(1, 10), (1, 11), (2, 12), (1, 30)], 2, 5);
        assert_eq!(
            got,
            [
                // batch 1 (watermark 0): key 1 saved (expires at 15 s), then found
                "get 1", "get 1", "put 1", "get 1", "seek -", "next -", "|",
                // batch 2 (watermark 6 s): key 2 saved (expires at 17 s), key 1 found
                "get 2", "get 2", "put 2", "get 1", "seek -", "next 2", "next -", "|",
                // no data left, watermark 25 s: both expire
                "seek -", "next 2", "get 1", "delete 1", "next -", "get 2", "delete 2", "|",
            ]
        );
    }

    #[test]
    fn an_event_behind_the_previous_batchs_watermark_sends_nothing() {
        // batch 3 takes late events against batch 2's watermark (20 s), batch 4 against 30 s
        let got = requests(&[(1, 20), (2, 30), (3, 12), (4, 31)], 1, 0);
        assert!(!got.iter().any(|r| r.ends_with(" 3")), "{got:?}");
        assert!(got.contains(&"put 4".to_string()), "{got:?}");
    }
}
