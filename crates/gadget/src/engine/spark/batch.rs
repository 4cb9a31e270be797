//! The micro-batch clock every Spark query shares: which batch an event falls in, the
//! watermark each batch runs with, and the commit that ends a batch.
//!
//! A batch holds `trigger_events` input events (a file of the file source,
//! `maxFilesPerTrigger = 1`). The watermark a batch runs with (its watermark for eviction)
//! is the largest event time before it less the delay, 0 for the first batch and never lower
//! than the last; its watermark for late events is the previous batch's. After the last
//! batch, if the watermark would move, a batch without data runs once more
//! (`Trigger.AvailableNow`).

use crate::access::{AccessSink, Op};

/// Where the micro-batches stand.
#[derive(Debug, Clone)]
pub(crate) struct MicroBatches {
    trigger_events: u64,
    delay: i64,
    events_in_batch: u64,
    /// The watermark the current batch runs with (ms).
    watermark: i64,
    /// The watermark the previous batch ran with: the current one's for late events (ms).
    late: i64,
    /// The largest event time seen (ms).
    max_event_time: i64,
}

impl MicroBatches {
    /// Batches of `trigger_events` events, a watermark `delay` ms behind the events.
    pub(crate) fn new(trigger_events: u64, delay: i64) -> MicroBatches {
        MicroBatches {
            trigger_events,
            delay,
            events_in_batch: 0,
            watermark: 0,
            late: 0,
            max_event_time: i64::MIN,
        }
    }

    /// The current batch's watermark for eviction, in ms.
    pub(crate) fn watermark(&self) -> i64 {
        self.watermark
    }

    /// Whether an event at `time` (ms) is late in the current batch: at or behind the
    /// previous batch's watermark.
    pub(crate) fn is_late(&self, time: i64) -> bool {
        time <= self.late
    }

    /// Counts an event at `time` (ms) into the current batch: true when the batch is full.
    pub(crate) fn add(&mut self, time: i64) -> bool {
        self.max_event_time = self.max_event_time.max(time);
        self.events_in_batch += 1;
        self.events_in_batch >= self.trigger_events
    }

    /// Whether the current batch has events.
    pub(crate) fn has_events(&self) -> bool {
        self.events_in_batch > 0
    }

    /// Whether the current batch runs with a higher watermark than the previous one: after
    /// the last batch of data, whether a batch without data is due.
    pub(crate) fn watermark_moved(&self) -> bool {
        self.watermark > self.late
    }

    /// Ends the current batch with its commit (`flush`, `checkpoint`) and starts the next.
    pub(crate) fn commit(&mut self, out: &mut dyn AccessSink) {
        out.access_all(0, b"", &[(Op::Flush, 0), (Op::Checkpoint, 0)]);
        self.events_in_batch = 0;
        self.late = self.watermark;
        self.watermark = self.next_watermark();
    }

    fn next_watermark(&self) -> i64 {
        if self.max_event_time == i64::MIN {
            return self.watermark;
        }
        self.watermark
            .max(self.max_event_time.saturating_sub(self.delay))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::VecSink;

    #[test]
    fn a_batch_runs_with_the_watermark_of_the_events_before_it() {
        let mut batches = MicroBatches::new(2, 1000);
        let mut sink = VecSink::default();
        assert!(!batches.add(5000));
        assert!(batches.add(3000));
        assert_eq!(batches.watermark(), 0);
        batches.commit(&mut sink);
        assert_eq!(batches.watermark(), 4000);
        assert!(batches.watermark_moved() && batches.is_late(0) && !batches.is_late(1));
        assert!(!batches.has_events());
        batches.add(2000);
        batches.commit(&mut sink);
        // never lower than the last
        assert_eq!(batches.watermark(), 4000);
        assert!(batches.is_late(4000) && !batches.is_late(4001));
        assert!(!batches.watermark_moved());
        assert_eq!(sink.records.len(), 4, "a flush and a checkpoint per commit");
    }
}
