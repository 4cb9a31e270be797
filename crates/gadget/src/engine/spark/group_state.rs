//! `withWatermark("time", delay).groupByKey(key).flatMapGroupsWithState(f, mode, ...,
//! GroupStateTimeout.EventTimeTimeout())` with `f` a session count: the state of a key is
//! (count, latest event time), its timeout the latest time plus the gap (or the watermark, if
//! later: Spark refuses a timeout before it); a key whose timeout the watermark passed emits
//! its count and removes its state (`FlatMapGroupsWithStateExec`, state format 2: one state
//! store keyed by the grouping key, its value the state struct and the timeout).
//!
//! Per micro-batch, in each shuffle partition's task in turn ([`super::partition`]), with
//! the partition's records of the batch that are not late (their time after the previous
//! batch's watermark) sorted by key (the operator's required ordering; a long key in signed
//! order, a string key by its bytes):
//!
//! 1. per key, a `get` (the state), then a `get` (row counting) and a `put` of the new state
//!    and timeout;
//! 2. an iterator over the whole store calls `f` on every key whose timeout is before the
//!    batch's watermark, which removes it (a `get`, row counting, then a `delete`);
//! 3. `flush` and `checkpoint` commit the store.
//!
//! A batch without data follows the last one when the watermark moved ([`super::batch`]).

use crate::access::{AccessSink, Op};
use crate::source::element::Event;

use super::batch::{batches_in_fields, buffer_keyed, KeyedPartition, MicroBatched, MicroBatches};
use super::{key_order, SparkSpec};

/// The value row: the version byte, the row's null bitset, its two field words (the state
/// struct's offset and size, the timeout), and the state struct (a null bitset, the count
/// and the latest time).
const STATE_VALUE_BYTES: u32 = 1 + 8 + 8 + 8 + 8 + 8 + 8;

/// A session count per key by `flatMapGroupsWithState` with an event-time timeout.
#[derive(Debug)]
pub struct FlatMapGroupsWithState {
    gap: i64,
    batches: MicroBatches,
    /// Per shuffle partition: its records, and its keys, each held until the watermark
    /// passes its timeout, with the latest event time of its state (ms).
    partitions: Vec<KeyedPartition<i64>>,
    key: Vec<u8>,
}

impl FlatMapGroupsWithState {
    /// The session count of `spec` (its gap in `size`, `delay`, `trigger`, `partitions`).
    pub fn new(spec: &SparkSpec) -> FlatMapGroupsWithState {
        FlatMapGroupsWithState {
            gap: spec.size,
            batches: MicroBatches::of(spec),
            partitions: spec.per_partition(),
            key: Vec::with_capacity(32),
        }
    }
}

impl MicroBatched for FlatMapGroupsWithState {
    batches_in_fields!(one_store_per_partition);

    fn buffer(&mut self, event: &Event) -> Option<usize> {
        buffer_keyed(&self.batches, &mut self.partitions, &mut self.key, event)
    }

    /// A micro-batch: each partition's task in turn calls `f` on its keys with data, in key
    /// order, then on the keys that timed out, and commits.
    fn run_batch(&mut self, out: &mut dyn AccessSink) {
        let watermark = self.batches.watermark();
        for (state, partition) in (0u16..).zip(&mut self.partitions) {
            let KeyedPartition { records, held } = partition;
            records.sort_by_key(key_order);
            let mut group = 0;
            while group < records.len() {
                let (key, _) = records.get(group);
                let mut end = group;
                let mut latest = held.value(key).copied().unwrap_or(i64::MIN);
                while end < records.len() && records.get(end).0 == key {
                    latest = latest.max(records.get(end).1);
                    end += 1;
                }
                group = end;
                out.access_all(
                    state,
                    key,
                    &[(Op::Get, 0), (Op::Get, 0), (Op::Put, STATE_VALUE_BYTES)],
                );
                let timeout = latest.saturating_add(self.gap).max(watermark);
                // timed out when before the watermark: reached by a watermark one ms later
                held.set(key, timeout.saturating_add(1).saturating_mul(1000), latest);
            }
            records.clear();
            held.evict(state, watermark, out);
            MicroBatches::commit(state, out);
        }
        self.batches.advance();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The requests of `events` (key, time in s) through a session count with a `gap` s
    /// gap, a watermark `delay` s behind and micro-batches of `trigger` events.
    fn requests(events: &[(i64, i64)], trigger: u64, gap: i64, delay: i64) -> Vec<String> {
        let spec = SparkSpec {
            query: super::super::SparkQuery::FlatMapGroupsWithState,
            trigger: super::super::Trigger::Events(trigger),
            size: gap * 1000,
            delay: delay * 1000,
            ..SparkSpec::default()
        };
        let mut op = FlatMapGroupsWithState::new(&spec);
        super::super::requests_of(&mut op, events, |key| {
            i64::from_le_bytes(key[9..17].try_into().unwrap()).to_string()
        })
    }

    #[test]
    fn keys_are_updated_in_key_order_and_removed_once_the_watermark_passes_their_timeout() {
        let got = requests(&[(2, 10), (1, 11), (2, 20), (3, 21)], 2, 5, 0);
        assert_eq!(
            got,
            [
                // batch 1 (watermark 0): keys in order; timeouts 16 s and 15 s
                "get 1", "get 1", "put 1", "get 2", "get 2", "put 2", "seek -", "next 2", "next -",
                "|",
                // batch 2 (watermark 11 s): key 2 times out at 25 s now, key 3 at 26 s
                "get 2", "get 2", "put 2", "get 3", "get 3", "put 3", "seek -", "next 2", "next 3",
                "next -", "|",
                // no data left, watermark 21 s: key 1 (16 s) timed out
                "seek -", "next 2", "get 1", "delete 1", "next 3", "next -", "|",
            ]
        );
    }

    #[test]
    fn a_timeout_at_the_watermark_has_not_passed_and_none_is_set_before_it() {
        // key 1 times out at 15 s, the last batch's watermark: it stays
        let got = requests(&[(1, 10), (2, 15), (3, 15)], 1, 5, 0);
        assert!(!got.contains(&"delete 1".to_string()), "{got:?}");
        // key 2's record at 50 s, behind batch 2's watermark (100 s) but not late: its
        // timeout is the watermark, not 55 s, so batch 3 (watermark 100 s) keeps it
        let got = requests(&[(1, 100), (2, 50), (3, 200)], 1, 5, 0);
        let batch_3 = got.split(|r| r == "|").nth(2).unwrap();
        assert!(!batch_3.contains(&"delete 2".to_string()), "{got:?}");
        assert!(got.contains(&"delete 2".to_string()), "{got:?}");
    }

    #[test]
    fn a_late_record_sends_nothing() {
        let got = requests(&[(1, 20), (2, 30), (3, 12), (4, 31)], 1, 5, 0);
        assert!(!got.iter().any(|r| r.ends_with(" 3")), "{got:?}");
        assert!(got.contains(&"put 4".to_string()), "{got:?}");
    }

    #[test]
    fn keys_sort_as_spark_sorts_them() {
        use std::cmp::Ordering;
        let row = |key: crate::key::Key| {
            let mut row = Vec::new();
            super::super::key_row(&mut row, &key);
            row
        };
        use crate::key::Key;
        assert_eq!(
            key_order(&row(Key::Long(-1)), &row(Key::Long(1))),
            Ordering::Less
        );
        assert_eq!(
            key_order(
                &row(Key::Str("b".into())),
                &row(Key::Str("abcdefghij".into()))
            ),
            Ordering::Greater
        );
        assert_eq!(
            key_order(&row(Key::Str("ab".into())), &row(Key::Str("ab".into()))),
            Ordering::Equal
        );
    }
}
