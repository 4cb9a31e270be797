//! YCSB's core workload (`site.ycsb.workloads.CoreWorkload`) as a state-access stream.
//!
//! A YCSB record is one key of one state (YCSB's `table`, `usertable` by default): the key is
//! YCSB's `user` + the record number (FNV-hashed unless `insertorder=ordered`), zero-padded
//! to `zeropadding` digits; the value is all of the record's fields. The operations map onto
//! the stream as:
//!
//! | YCSB | accesses |
//! |---|---|
//! | insert (load phase and run phase) | `put` of the whole record |
//! | read | `get` |
//! | update | `put` of the whole record |
//! | scan of `n` records | `seek` to the start key, then `n − 1` × `next` |
//! | read-modify-write | `get`, then `put` of the whole record |
//!
//! A record is one value, so an update rewrites all of it whichever fields YCSB changes
//! (`writeallfields` and `readallfields` do not change the stream); this is what YCSB's
//! key-value bindings write. (Its RocksDB binding also reads the record before an update;
//! that read is the binding's, not the workload's, and is left out.)
//!
//! YCSB has no deletes, so neither has this stream. Every operation is announced as an input
//! event (its key is the operation's sequence number), so `gadget` counts operations as
//! events; event time advances by `1000 / target` ms per operation (1 ms without `target`)
//! and a watermark follows every [`WATERMARK_EVERY`] operations, so `--arrival event-time`
//! paces the operations at YCSB's `target` rate.

use super::ycsb_generators::{Exponential, Hotspot, ScrambledZipfian, Sequential, Zipfian};
use crate::access::{Access, AccessSink, Op};
use crate::key::Key;
use crate::operator::Operator;
use crate::source::element::Event;
use crate::source::random::Rng;
use crate::source::{SourceError, StreamElement};

/// Operations between two watermarks of the operation clock.
pub const WATERMARK_EVERY: u64 = 100;

/// Sub-stream of the config seed that the YCSB client draws from.
const CLIENT_STREAM: u64 = 0x0079_c5b0;

/// Which of YCSB's two phases the workload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `ycsb load`: insert the records.
    Load,
    /// `ycsb run`: the operations, against records assumed loaded.
    Run,
    /// Load, then run: what a store that starts empty needs.
    Both,
}

/// How YCSB chooses the record an operation targets (`requestdistribution`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RequestDistribution {
    /// Every loaded record equally likely.
    Uniform,
    /// Scrambled Zipfian (θ = 0.99, FNV-hashed ranks).
    Zipfian,
    /// Skewed towards the most recently inserted records.
    Latest,
    /// A hot set of records receiving most operations.
    Hotspot {
        /// `hotspotdatafraction`: share of records that are hot.
        data_fraction: f64,
        /// `hotspotopnfraction`: share of operations on hot records.
        operation_fraction: f64,
    },
    /// Records in order, wrapping around.
    Sequential,
    /// Exponentially decaying with age from the newest record.
    Exponential {
        /// `exponential.percentile`: percent of operations within the range.
        percentile: f64,
        /// `exponential.frac`: the range as a fraction of `recordcount`.
        fraction: f64,
    },
}

/// A length distribution for scans and fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthDistribution {
    /// Always the maximum.
    Constant,
    /// Uniform over `[min, max]`.
    Uniform,
    /// YCSB's (unscrambled) Zipfian over `[min, max]`, short lengths most likely.
    Zipfian,
}

/// A validated YCSB core workload.
#[derive(Debug, Clone, PartialEq)]
pub struct YcsbSpec {
    /// `table`: the state's name.
    pub table: String,
    /// `recordcount`: records in the table after the load.
    pub record_count: u64,
    /// `operationcount`: operations of the run phase.
    pub operation_count: u64,
    /// `insertstart`: the first record this client loads.
    pub insert_start: u64,
    /// `insertcount`: the records this client loads (and chooses among).
    pub insert_count: u64,
    /// `readproportion`, `updateproportion`, `insertproportion`, `scanproportion`,
    /// `readmodifywriteproportion`, in that order (not normalized).
    pub proportions: [f64; 5],
    /// `requestdistribution`.
    pub request_distribution: RequestDistribution,
    /// `insertorder=ordered` (else hashed).
    pub ordered_inserts: bool,
    /// `zeropadding`: digits the record number is padded to.
    pub zero_padding: usize,
    /// `fieldcount`.
    pub field_count: u64,
    /// `fieldlength`: the (maximum) field length in bytes.
    pub field_length: u64,
    /// `minfieldlength`.
    pub min_field_length: u64,
    /// `fieldlengthdistribution`.
    pub field_length_distribution: LengthDistribution,
    /// `minscanlength`.
    pub min_scan_length: u64,
    /// `maxscanlength`.
    pub max_scan_length: u64,
    /// `scanlengthdistribution` (uniform or zipfian).
    pub scan_length_distribution: LengthDistribution,
    /// `phase`: Gadget's choice between `ycsb load` and `ycsb run`.
    pub phase: Phase,
    /// `target`: operations per second of event time (YCSB's throttle).
    pub target: Option<f64>,
}

impl YcsbSpec {
    /// Operations of the load phase (0 when only the run phase runs).
    pub fn load_operations(&self) -> u64 {
        match self.phase {
            Phase::Run => 0,
            _ => self.insert_count,
        }
    }

    /// Operations of the run phase (0 when only the load phase runs).
    pub fn run_operations(&self) -> u64 {
        match self.phase {
            Phase::Load => 0,
            _ => self.operation_count,
        }
    }

    /// The clock that drives the client: one event per operation, with watermarks.
    pub fn clock(&self) -> OperationClock {
        OperationClock::new(
            self.load_operations() + self.run_operations(),
            1000.0 / self.target.unwrap_or(1000.0),
        )
    }
}

/// One YCSB operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum YcsbOperation {
    /// Read one record.
    Read = 0,
    /// Update one record.
    Update = 1,
    /// Insert a new record.
    Insert = 2,
    /// Scan records from a start key.
    Scan = 3,
    /// Read a record, then update it.
    ReadModifyWrite = 4,
}

impl YcsbOperation {
    /// In the order of [`YcsbSpec::proportions`].
    pub const ALL: [YcsbOperation; 5] = [
        YcsbOperation::Read,
        YcsbOperation::Update,
        YcsbOperation::Insert,
        YcsbOperation::Scan,
        YcsbOperation::ReadModifyWrite,
    ];

    /// YCSB's name of the operation.
    pub fn name(self) -> &'static str {
        match self {
            YcsbOperation::Read => "READ",
            YcsbOperation::Update => "UPDATE",
            YcsbOperation::Insert => "INSERT",
            YcsbOperation::Scan => "SCAN",
            YcsbOperation::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }
}

/// How record numbers are chosen.
#[derive(Debug, Clone)]
enum KeyChooser {
    Uniform { low: i64, high: i64 },
    Zipfian(ScrambledZipfian),
    Latest(Zipfian),
    Hotspot(Hotspot),
    Sequential(Sequential),
    Exponential(Exponential),
}

/// How a length is chosen.
#[derive(Debug, Clone)]
enum Length {
    Constant(u64),
    Uniform { min: u64, max: u64 },
    Zipfian(Zipfian),
}

impl Length {
    fn new(distribution: LengthDistribution, min: u64, max: u64) -> Self {
        match distribution {
            LengthDistribution::Constant => Length::Constant(max),
            LengthDistribution::Uniform => Length::Uniform { min, max },
            LengthDistribution::Zipfian => Length::Zipfian(Zipfian::new(min as i64, max as i64)),
        }
    }

    #[inline]
    fn next(&mut self, rng: &mut Rng) -> u64 {
        match self {
            Length::Constant(n) => *n,
            Length::Uniform { min, max } => rng.range_u64(*min, *max),
            Length::Zipfian(z) => z.next(rng) as u64,
        }
    }
}

/// Operations performed, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperationCounts {
    /// Inserts of the load phase.
    pub loaded: u64,
    /// Run-phase operations, indexed by [`YcsbOperation`] as a number.
    pub run: [u64; 5],
}

/// A YCSB client running the core workload: every input event is its next operation, which it
/// issues to the state as the accesses listed in the [module docs](self).
#[derive(Debug, Clone)]
pub struct YcsbClient {
    table: String,
    rng: Rng,
    /// Normalized operation weights, YCSB's order, zero weights left out.
    operations: Vec<(f64, YcsbOperation)>,
    keys: KeyChooser,
    scan_length: Length,
    field_length: Length,
    field_count: u64,
    ordered_inserts: bool,
    zero_padding: usize,
    /// The next record number of the load phase.
    load_next: i64,
    load_remaining: u64,
    /// The last record number inserted (YCSB's acknowledged insert counter).
    insert_last: i64,
    key: Vec<u8>,
    counts: OperationCounts,
}

impl YcsbClient {
    /// A client for `spec`, drawing from `seed`.
    pub fn new(spec: &YcsbSpec, seed: u64) -> Self {
        let total: f64 = spec.proportions.iter().sum();
        let operations = YcsbOperation::ALL
            .iter()
            .zip(spec.proportions)
            .filter(|(_, p)| *p > 0.0)
            .map(|(op, p)| (p / total, *op))
            .collect();
        let start = spec.insert_start as i64;
        let end = start + spec.insert_count as i64 - 1;
        let keys = match spec.request_distribution {
            RequestDistribution::Uniform => KeyChooser::Uniform {
                low: start,
                high: end,
            },
            RequestDistribution::Zipfian => {
                // YCSB sizes the key space for the inserts it expects (with a fudge factor of
                // 2), so the popular keys stay put while records are added.
                let expected_new = (spec.operation_count as f64 * spec.proportions[2] * 2.0) as i64;
                KeyChooser::Zipfian(ScrambledZipfian::new(
                    start,
                    start + spec.insert_count as i64 + expected_new,
                ))
            }
            RequestDistribution::Latest => {
                KeyChooser::Latest(Zipfian::new(0, spec.record_count as i64 - 2))
            }
            RequestDistribution::Hotspot {
                data_fraction,
                operation_fraction,
            } => KeyChooser::Hotspot(Hotspot::new(start, end, data_fraction, operation_fraction)),
            RequestDistribution::Sequential => KeyChooser::Sequential(Sequential::new(start, end)),
            RequestDistribution::Exponential {
                percentile,
                fraction,
            } => KeyChooser::Exponential(Exponential::new(
                percentile,
                spec.record_count as f64 * fraction,
            )),
        };
        YcsbClient {
            table: spec.table.clone(),
            rng: Rng::substream(seed, CLIENT_STREAM),
            operations,
            keys,
            scan_length: Length::new(
                spec.scan_length_distribution,
                spec.min_scan_length,
                spec.max_scan_length,
            ),
            field_length: Length::new(
                spec.field_length_distribution,
                spec.min_field_length,
                spec.field_length,
            ),
            field_count: spec.field_count,
            ordered_inserts: spec.ordered_inserts,
            zero_padding: spec.zero_padding,
            load_next: start,
            load_remaining: spec.load_operations(),
            insert_last: spec.record_count as i64 - 1,
            key: Vec::with_capacity(32),
            counts: OperationCounts::default(),
        }
    }

    /// The operations performed so far.
    pub fn counts(&self) -> OperationCounts {
        self.counts
    }

    /// YCSB's key of record `number` (`CoreWorkload.buildKeyName`).
    pub fn key_name(&self, number: i64) -> String {
        let mut out = Vec::new();
        write_key(&mut out, number, self.ordered_inserts, self.zero_padding);
        String::from_utf8(out).expect("ASCII")
    }

    /// Performs the next operation (a load insert while the load phase lasts).
    pub fn next_operation(&mut self, out: &mut dyn AccessSink) {
        if self.load_remaining > 0 {
            self.load_remaining -= 1;
            let number = self.load_next;
            self.load_next += 1;
            self.counts.loaded += 1;
            self.insert(number, out);
            return;
        }
        let operation = self.choose_operation();
        self.counts.run[operation as usize] += 1;
        match operation {
            YcsbOperation::Read => {
                let number = self.choose_record();
                self.emit(Op::Get, number, 0, out);
            }
            YcsbOperation::Update => {
                let number = self.choose_record();
                let len = self.record_len();
                self.emit(Op::Put, number, len, out);
            }
            YcsbOperation::Insert => {
                // Single-threaded, every insert is acknowledged at once: the next number is
                // one past the last, and it becomes the last.
                let number = self.insert_last + 1;
                self.insert(number, out);
                self.insert_last = number;
            }
            YcsbOperation::Scan => {
                let number = self.choose_record();
                let len = self.scan_length.next(&mut self.rng);
                self.emit(Op::Seek, number, 0, out);
                for _ in 1..len {
                    out.access(Access {
                        op: Op::Next,
                        state: 0,
                        key: &[],
                        value_len: 0,
                    });
                }
            }
            YcsbOperation::ReadModifyWrite => {
                let number = self.choose_record();
                let len = self.record_len();
                self.emit(Op::Get, number, 0, out);
                self.emit(Op::Put, number, len, out);
            }
        }
    }

    fn insert(&mut self, number: i64, out: &mut dyn AccessSink) {
        let len = self.record_len();
        self.emit(Op::Put, number, len, out);
    }

    #[inline]
    fn emit(&mut self, op: Op, number: i64, value_len: u32, out: &mut dyn AccessSink) {
        self.key.clear();
        write_key(
            &mut self.key,
            number,
            self.ordered_inserts,
            self.zero_padding,
        );
        out.access(Access {
            op,
            state: 0,
            key: &self.key,
            value_len,
        });
    }

    /// YCSB's `DiscreteGenerator.nextString`.
    #[inline]
    fn choose_operation(&mut self) -> YcsbOperation {
        let mut u = self.rng.next_f64();
        for &(weight, op) in &self.operations {
            if u < weight {
                return op;
            }
            u -= weight;
        }
        self.operations
            .last()
            .expect("validated: a positive proportion")
            .1
    }

    /// YCSB's `CoreWorkload.nextKeynum`: a record that has been inserted.
    #[inline]
    fn choose_record(&mut self) -> i64 {
        let last = self.insert_last;
        loop {
            let number = match &mut self.keys {
                KeyChooser::Exponential(e) => last - e.next(&mut self.rng) as i64,
                KeyChooser::Uniform { low, high } => self.rng.range_i64(*low, *high),
                KeyChooser::Zipfian(z) => z.next(&mut self.rng),
                KeyChooser::Latest(z) => last - z.next_over(&mut self.rng, last as u64),
                KeyChooser::Hotspot(h) => h.next(&mut self.rng),
                KeyChooser::Sequential(s) => s.next_item(),
            };
            if (0..=last).contains(&number) {
                return number;
            }
        }
    }

    /// Bytes of a whole record: every field.
    #[inline]
    fn record_len(&mut self) -> u32 {
        match self.field_length {
            Length::Constant(n) => (n * self.field_count) as u32,
            _ => (0..self.field_count)
                .map(|_| self.field_length.next(&mut self.rng))
                .sum::<u64>() as u32,
        }
    }
}

/// Appends `user` + the (hashed) record number, zero-padded, without allocating.
#[inline]
fn write_key(out: &mut Vec<u8>, number: i64, ordered: bool, zero_padding: usize) {
    let n = if ordered {
        number
    } else {
        super::ycsb_generators::fnv_hash64(number)
    };
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let negative = n < 0;
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(b"user");
    // Java's Long.toString puts the sign before the digits and the padding before both.
    let width = digits.len() - i + usize::from(negative);
    out.extend(std::iter::repeat_n(
        b'0',
        zero_padding.saturating_sub(width),
    ));
    if negative {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

impl Operator for YcsbClient {
    fn states(&self) -> Vec<String> {
        vec![self.table.clone()]
    }

    fn on_event(&mut self, _event: &Event, out: &mut dyn AccessSink) {
        self.next_operation(out);
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}
}

/// The client's clock: one input event per operation, event time advancing by `1000 / target`
/// ms per operation, a watermark every [`WATERMARK_EVERY`] operations and a final one.
#[derive(Debug, Clone)]
pub struct OperationClock {
    next: u64,
    total: u64,
    ms_per_operation: f64,
    since_watermark: u64,
    last_time: i64,
    finished: bool,
}

impl OperationClock {
    /// A clock of `total` operations, `ms_per_operation` apart in event time (shared by the
    /// baseline clients: YCSB and KVBench).
    pub fn new(total: u64, ms_per_operation: f64) -> Self {
        OperationClock {
            next: 0,
            total,
            ms_per_operation,
            since_watermark: 0,
            last_time: i64::MIN,
            finished: false,
        }
    }
}

impl Iterator for OperationClock {
    type Item = Result<StreamElement, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.since_watermark == WATERMARK_EVERY {
            self.since_watermark = 0;
            return Some(Ok(StreamElement::Watermark(self.last_time)));
        }
        if self.next == self.total {
            if self.finished {
                return None;
            }
            self.finished = true;
            return Some(Ok(StreamElement::Watermark(i64::MAX)));
        }
        let time = (self.next as f64 * self.ms_per_operation) as i64;
        let event = Event {
            key: Key::Long(self.next as i64),
            timestamp: time,
            input: 0,
            closes: false,
            payload: 0,
        };
        self.next += 1;
        self.since_watermark += 1;
        self.last_time = time;
        Some(Ok(StreamElement::Event(event)))
    }
}

/// A client issuing its operations: one, with nothing to split among subtasks.
impl crate::parallel::split::JobSplit for YcsbSpec {
    fn refusal(&self, _parallelism: u32, _max_parallelism: u32) -> Option<String> {
        Some(crate::parallel::split::CLIENT_REFUSAL.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_are_ycsbs() {
        let mut k = Vec::new();
        write_key(&mut k, 42, true, 1);
        assert_eq!(k, b"user42");
        k.clear();
        write_key(&mut k, 42, true, 5);
        assert_eq!(k, b"user00042");
        k.clear();
        write_key(&mut k, 7, false, 1);
        let hashed = super::super::ycsb_generators::fnv_hash64(7);
        assert_eq!(k, format!("user{hashed}").into_bytes());
    }

    #[test]
    fn clock_marks_operations_and_watermarks() {
        let spec = YcsbSpec::from_properties(&crate::config::properties::Properties::new())
            .unwrap()
            .0;
        let elements: Vec<_> = spec.clock().map(Result::unwrap).collect();
        let events = elements
            .iter()
            .filter(|e| matches!(e, StreamElement::Event(_)))
            .count();
        // 1000 loads + 1000 operations, a watermark per 100 and the final one
        assert_eq!(events, 2000);
        assert_eq!(elements.len(), 2000 + 20 + 1);
        assert_eq!(elements.last(), Some(&StreamElement::Watermark(i64::MAX)));
    }
}
