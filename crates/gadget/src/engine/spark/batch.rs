//! The micro-batch clock every Spark query shares: which batch an event falls in, the
//! watermark each batch runs with, and the commit that ends a batch.
//!
//! With two inputs (a join), the watermark is the lowest of the two inputs'.
//!
//! A batch holds `trigger_events` input events, or the events of `trigger_ms` of event time
//! (a file of the file source, `maxFilesPerTrigger = 1`): such a batch covers the interval of
//! `trigger_ms` (aligned to its multiples) that holds its first event and ends before the
//! first event, in input order, at or past the interval's end. The watermark a batch runs with (its watermark for eviction)
//! is the largest event time before it less the delay, 0 for the first batch and never lower
//! than the last; its watermark for late events is the previous batch's. When the watermark
//! would move, a batch without data runs (`spark.sql.streaming.noDataMicroBatches.enabled`,
//! unless turned off): after the last batch if the input is all there from the start
//! (`Trigger.AvailableNow`), after every batch of data if it arrives batch by batch
//! ([`BatchArrival::ProcessingTime`]).

use std::cmp::Ordering;

use crate::access::{AccessSink, Op, StateId};
use crate::source::element::Event;

use super::held::Held;
use super::partition::key_partition;
use super::subtask::OwnPartitions;
use super::{key_row, BatchArrival, SparkSpec, Trigger};

/// Where the micro-batches stand.
#[derive(Debug, Clone)]
pub(crate) struct MicroBatches {
    trigger: Trigger,
    /// With a trigger by event time, the end of the current batch's interval (ms).
    batch_end: i64,
    delay: i64,
    events_in_batch: u64,
    /// The watermark the current batch runs with (ms).
    watermark: i64,
    /// The watermark the previous batch ran with: the current one's for late events (ms).
    late: i64,
    /// The largest event time seen per input with a watermark (ms).
    max_event_time: [i64; 2],
    /// How the input arrives.
    arrival: BatchArrival,
    /// Whether batches without data run.
    no_data_batches: bool,
    /// The shuffle partitions this operator processes (all, unless it is a subtask).
    pub(crate) own: OwnPartitions,
}

impl MicroBatches {
    /// Batches cut by `trigger`, a watermark `delay` ms behind the events, the input all
    /// there from the start, batches without data on.
    pub(crate) fn new(trigger: Trigger, delay: i64) -> MicroBatches {
        MicroBatches {
            trigger,
            batch_end: i64::MAX,
            delay,
            events_in_batch: 0,
            watermark: 0,
            late: 0,
            max_event_time: [i64::MIN; 2],
            arrival: BatchArrival::AvailableNow,
            no_data_batches: true,
            own: OwnPartitions::of(&SparkSpec::default()),
        }
    }

    /// The batches of `spec`'s query.
    pub(crate) fn of(spec: &SparkSpec) -> MicroBatches {
        MicroBatches {
            arrival: spec.arrival,
            no_data_batches: spec.no_data_batches,
            own: OwnPartitions::of(spec),
            ..MicroBatches::new(spec.trigger, spec.delay)
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

    /// Whether an event at `time` (ms) starts a new batch, the current one ending before it
    /// (a trigger by event time, the event past the current batch's interval).
    pub(crate) fn starts_batch(&self, time: i64) -> bool {
        self.has_events() && time >= self.batch_end
    }

    /// Counts an event at `time` (ms) of watermarked input `input` (0 or 1; `None`: an event
    /// no watermark sees, such as a row a join's sides both filter out) into the current
    /// batch: true when the batch is full (a trigger by events).
    pub(crate) fn add_event(&mut self, time: i64, input: Option<usize>) -> bool {
        if let Some(max) = input.and_then(|i| self.max_event_time.get_mut(i)) {
            *max = (*max).max(time);
        }
        self.events_in_batch += 1;
        match self.trigger {
            Trigger::Events(n) => self.events_in_batch >= n,
            Trigger::EventTime(ms) => {
                if self.events_in_batch == 1 {
                    self.batch_end = time.div_euclid(ms).saturating_mul(ms).saturating_add(ms);
                }
                false
            }
        }
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

    /// Whether a batch without data runs now, the batch before it just ended: the watermark
    /// moved, batches without data are on, and either the input is at its end (`at_end`) or it
    /// arrives batch by batch.
    pub(crate) fn no_data_batch_due(&self, at_end: bool) -> bool {
        self.no_data_batches
            && self.watermark_moved()
            && !self.has_events()
            && (at_end || self.arrival == BatchArrival::ProcessingTime)
    }

    /// The commit of a partition's state store at the end of a batch: `flush`, `checkpoint`.
    pub(crate) fn commit(state: StateId, out: &mut dyn AccessSink) {
        out.access_all(state, b"", &[(Op::Flush, 0), (Op::Checkpoint, 0)]);
    }

    /// Ends the current batch (its partitions committed) and starts the next.
    pub(crate) fn advance(&mut self) {
        self.events_in_batch = 0;
        self.late = self.watermark;
        self.watermark = self.next_watermark();
    }

    /// The next batch's watermark: the lowest of the inputs' (each its largest event time
    /// less the delay; an input without data does not count), never lower than the last.
    fn next_watermark(&self) -> i64 {
        let lowest = self
            .max_event_time
            .iter()
            .filter(|&&max| max != i64::MIN)
            .map(|max| max.saturating_sub(self.delay))
            .min();
        lowest.map_or(self.watermark, |w| self.watermark.max(w))
    }
}

/// The rows of a micro-batch a partition buffers until the batch runs: each row's key (an
/// `UnsafeRow`, in one flat buffer that keeps its capacity from batch to batch) and a value.
#[derive(Debug)]
pub(crate) struct BatchRows<T> {
    bytes: Vec<u8>,
    rows: Vec<(usize, usize, T)>,
}

impl<T> Default for BatchRows<T> {
    fn default() -> Self {
        BatchRows {
            bytes: Vec::new(),
            rows: Vec::new(),
        }
    }
}

impl<T: Copy> BatchRows<T> {
    /// Adds a row.
    pub(crate) fn push(&mut self, key: &[u8], value: T) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        self.rows.push((start, self.bytes.len(), value));
    }

    /// The rows.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Row `i`: its key and value.
    pub(crate) fn get(&self, i: usize) -> (&[u8], T) {
        let (start, end, value) = self.rows[i];
        (&self.bytes[start..end], value)
    }

    /// The rows in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], T)> + '_ {
        self.rows
            .iter()
            .map(|&(start, end, value)| (&self.bytes[start..end], value))
    }

    /// Sorts the rows by their keys with `order` (not stable).
    pub(crate) fn sort_by_key(&mut self, mut order: impl FnMut(&[u8], &[u8]) -> Ordering) {
        let bytes = &self.bytes;
        self.rows
            .sort_unstable_by(|a, b| order(&bytes[a.0..a.1], &bytes[b.0..b.1]));
    }

    /// Sorts the rows by their keys with `order`, rows of equal keys kept in the order they
    /// came (as Spark's sort keeps them).
    pub(crate) fn stable_sort_by_key(&mut self, mut order: impl FnMut(&[u8], &[u8]) -> Ordering) {
        let bytes = &self.bytes;
        self.rows
            .sort_by(|a, b| order(&bytes[a.0..a.1], &bytes[b.0..b.1]));
    }

    /// Sorts the rows with `order` over (key, value) (not stable).
    pub(crate) fn sort_by(&mut self, mut order: impl FnMut((&[u8], T), (&[u8], T)) -> Ordering) {
        let bytes = &self.bytes;
        self.rows
            .sort_unstable_by(|a, b| order((&bytes[a.0..a.1], a.2), (&bytes[b.0..b.1], b.2)));
    }

    /// Empties the buffer for the next batch.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.rows.clear();
    }
}

/// A shuffle partition of an operator keyed by the record key alone (the deduplication,
/// `flatMapGroupsWithState`): its records of the current batch (key row, time in ms) and
/// what its state store holds (with a `V` per key).
#[derive(Debug, Default)]
pub(crate) struct KeyedPartition<V> {
    /// The batch's records.
    pub(crate) records: BatchRows<i64>,
    /// The keys RocksDB holds.
    pub(crate) held: Held<V>,
}

/// Buffers `event` in its key's partition (its key row written to `key`), unless it is late
/// against `batches`: a late record is dropped before the operator, no request.
pub(crate) fn buffer_keyed<V>(
    batches: &MicroBatches,
    partitions: &mut [KeyedPartition<V>],
    key: &mut Vec<u8>,
    event: &Event,
) -> Option<usize> {
    if !batches.is_late(event.timestamp) {
        key_row(key, &event.key);
        let p = key_partition(&event.key, partitions.len());
        partitions[p].records.push(key, event.timestamp);
    }
    Some(0)
}

/// An operator that runs in micro-batches.
pub(crate) trait MicroBatched {
    /// Where its batches stand.
    fn batches(&self) -> &MicroBatches;

    /// Where its batches stand, to count events into them.
    fn batches_mut(&mut self) -> &mut MicroBatches;

    /// The names of its states (its RocksDB instances), in state order.
    fn state_names(&self) -> Vec<String>;

    /// Keeps `event` for the current batch; returns which watermarked input it came from
    /// ([`MicroBatched::input_of`]).
    fn buffer(&mut self, event: &Event) -> Option<usize>;

    /// Which watermarked input `event` comes from (`None`: none, a row that only counts into
    /// the batch); the one input by default.
    fn input_of(&self, _event: &Event) -> Option<usize> {
        Some(0)
    }

    /// The shuffle partition of `event`'s row: by its key by default.
    fn partition_of(&self, event: &Event) -> usize {
        key_partition(&event.key, self.batches().own.partitions())
    }

    /// Takes `event`: the current batch runs first if the event starts the next one
    /// (a trigger by event time), [`MicroBatched::buffer`] keeps it if it is this operator's
    /// (`own`; another subtask's only counts into the batch), and the batch runs once full (a
    /// trigger by events).
    fn take_event(&mut self, event: &Event, own: bool, out: &mut dyn AccessSink) {
        if self.batches().starts_batch(event.timestamp) {
            self.run_data_batch(out);
        }
        let input = if own {
            self.buffer(event)
        } else {
            self.input_of(event)
        };
        if self.batches_mut().add_event(event.timestamp, input) {
            self.run_data_batch(out);
        }
    }

    /// Runs the current batch of data, then a batch without data if one is due before more
    /// input arrives ([`MicroBatches::no_data_batch_due`]).
    fn run_data_batch(&mut self, out: &mut dyn AccessSink) {
        self.run_batch(out);
        if self.batches().no_data_batch_due(false) {
            self.run_batch(out);
        }
    }

    /// Runs the current batch (its buffered events, or none) and starts the next.
    fn run_batch(&mut self, out: &mut dyn AccessSink);

    /// At the end of the input: the last batch of data, then, if the watermark moved, a
    /// batch without data.
    fn finish(&mut self, out: &mut dyn AccessSink) {
        if self.batches().has_events() {
            self.run_data_batch(out);
        }
        if self.batches().no_data_batch_due(true) {
            self.run_batch(out);
        }
    }
}

/// Writes [`MicroBatched`]'s accessors of an operator whose batches are its field `batches`;
/// with `one_store_per_partition`, also its state names: one store per element of its field
/// `partitions`.
macro_rules! batches_in_fields {
    () => {
        fn batches(&self) -> &$crate::engine::spark::batch::MicroBatches {
            &self.batches
        }

        fn batches_mut(&mut self) -> &mut $crate::engine::spark::batch::MicroBatches {
            &mut self.batches
        }
    };
    (one_store_per_partition) => {
        $crate::engine::spark::batch::batches_in_fields!();

        fn state_names(&self) -> Vec<String> {
            $crate::engine::spark::state_names(self.partitions.len() as u32)
        }
    };
}
pub(crate) use batches_in_fields;

/// Implements [`crate::operator::Operator`] for micro-batched operators: their states (a
/// subtask's own partitions'), each event through [`MicroBatched::take_event`], no reaction to
/// the source's watermarks (each batch computes its own), and the end through
/// [`MicroBatched::finish`].
macro_rules! micro_batched_operator {
    ($($operator:ty),+ $(,)?) => {$(
        impl crate::operator::Operator for $operator {
            fn states(&self) -> Vec<String> {
                self.batches().own.states(MicroBatched::state_names(self))
            }

            fn owns(&self, event: &crate::source::element::Event) -> bool {
                let own = self.batches().own;
                own.is_all() || own.holds(self.partition_of(event))
            }

            fn on_event(
                &mut self,
                event: &crate::source::element::Event,
                out: &mut dyn crate::access::AccessSink,
            ) {
                let own = self.batches().own;
                own.through(out, |out| self.take_event(event, true, out));
            }

            fn on_others_event(
                &mut self,
                event: &crate::source::element::Event,
                out: &mut dyn crate::access::AccessSink,
            ) {
                let own = self.batches().own;
                own.through(out, |out| self.take_event(event, false, out));
            }

            fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn crate::access::AccessSink) {}

            fn on_end(&mut self, out: &mut dyn crate::access::AccessSink) {
                let own = self.batches().own;
                own.through(out, |out| self.finish(out));
            }
        }
    )+};
}
pub(crate) use micro_batched_operator;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::VecSink;

    #[test]
    fn a_batch_runs_with_the_watermark_of_the_events_before_it() {
        let mut batches = MicroBatches::new(Trigger::Events(2), 1000);
        let mut sink = VecSink::default();
        assert!(!batches.add_event(5000, Some(0)));
        assert!(batches.add_event(3000, Some(0)));
        assert_eq!(batches.watermark(), 0);
        MicroBatches::commit(0, &mut sink);
        batches.advance();
        assert_eq!(batches.watermark(), 4000);
        assert!(batches.watermark_moved() && batches.is_late(0) && !batches.is_late(1));
        assert!(!batches.has_events());
        batches.add_event(2000, Some(0));
        MicroBatches::commit(0, &mut sink);
        batches.advance();
        // never lower than the last
        assert_eq!(batches.watermark(), 4000);
        assert!(batches.is_late(4000) && !batches.is_late(4001));
        assert!(!batches.watermark_moved());
        assert_eq!(sink.records.len(), 4, "a flush and a checkpoint per commit");
    }

    #[test]
    fn a_trigger_by_event_time_ends_a_batch_before_the_first_event_past_its_interval() {
        let mut batches = MicroBatches::new(Trigger::EventTime(1000), 0);
        assert!(!batches.starts_batch(1500));
        assert!(!batches.add_event(1500, Some(0)));
        // [1000, 2000): an earlier event stays in the batch, 2000 starts the next
        assert!(!batches.starts_batch(900) && !batches.starts_batch(1999));
        batches.add_event(900, Some(0));
        assert!(batches.starts_batch(2000));
        batches.advance();
        assert!(!batches.starts_batch(2000));
        batches.add_event(3700, Some(0));
        assert!(batches.starts_batch(4000) && !batches.starts_batch(3999));
    }
}
