//! `withWatermark("time", delay).dropDuplicatesWithinWatermark("key")`: the first event of
//! each key passes, later ones with that key are dropped until the watermark passes the kept
//! event's time plus the delay (`StreamingDeduplicateWithinWatermarkExec`, one state store
//! keyed by the record key, its value the time the entry expires).
//!
//! Per event of a micro-batch, in input order, unless it is late (its time at or before the
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
use crate::operator::Operator;
use crate::source::element::Event;

use super::batch::MicroBatches;
use super::held::Held;
use super::{key_row, state_name, SparkSpec};

/// The value row: the version byte, the null bitset and the expiry (a long, µs).
const EXPIRY_VALUE_BYTES: u32 = 1 + 8 + 8;

/// Deduplication within the watermark's delay.
#[derive(Debug)]
pub struct DropDuplicatesWithinWatermark {
    delay: i64,
    batches: MicroBatches,
    /// The keys RocksDB holds, each until the watermark reaches its expiry.
    held: Held,
    key: Vec<u8>,
}

impl DropDuplicatesWithinWatermark {
    /// The deduplication of `spec` (its `delay` and `trigger`).
    pub fn new(spec: &SparkSpec) -> DropDuplicatesWithinWatermark {
        DropDuplicatesWithinWatermark {
            delay: spec.delay,
            batches: MicroBatches::new(spec.trigger, spec.delay),
            held: Held::default(),
            key: Vec::with_capacity(32),
        }
    }

    /// The end of a micro-batch: the eviction scan and the commit.
    fn end_batch(&mut self, out: &mut dyn AccessSink) {
        self.held.evict(self.batches.watermark(), out);
        self.batches.commit(out);
    }
}

impl Operator for DropDuplicatesWithinWatermark {
    fn states(&self) -> Vec<String> {
        vec![state_name(0, 0)]
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        if self.batches.starts_batch(event.timestamp) {
            self.end_batch(out);
        }
        if !self.batches.is_late(event.timestamp) {
            key_row(&mut self.key, &event.key);
            out.access_all(0, &self.key, &[(Op::Get, 0)]);
            if !self.held.contains(&self.key) {
                out.access_all(0, &self.key, &[(Op::Get, 0), (Op::Put, EXPIRY_VALUE_BYTES)]);
                let expiry = event.timestamp.saturating_add(self.delay);
                self.held.insert(&self.key, expiry.saturating_mul(1000));
            }
        }
        if self.batches.add(event.timestamp) {
            self.end_batch(out);
        }
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        if self.batches.has_events() {
            self.end_batch(out);
        }
        // no data left: one more batch if the watermark moved, to expire what it reached
        if self.batches.watermark_moved() {
            self.end_batch(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};
    use crate::key::Key;

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
        let mut sink = VecSink::default();
        for &(key, seconds) in events {
            let event = Event {
                key: Key::Long(key),
                timestamp: seconds * 1000,
                input: 0,
                closes: false,
            };
            dedup.on_event(&event, &mut sink);
        }
        dedup.on_end(&mut sink);
        let mut out = Vec::new();
        for r in &sink.records {
            let TraceRecord::Access { op, key, .. } = r else {
                continue;
            };
            let detail = if key.is_empty() {
                "-".to_string()
            } else {
                i64::from_le_bytes(key[9..17].try_into().unwrap()).to_string()
            };
            match op {
                Op::Flush => {}
                Op::Checkpoint => out.push("|".to_string()),
                _ => out.push(format!("{} {detail}", op.name())),
            }
        }
        out
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
