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

use super::properties::{Properties, Property};
use super::ycsb_generators::{Exponential, Hotspot, ScrambledZipfian, Sequential, Zipfian};
use crate::access::{Access, AccessSink, Op};
use crate::config::ConfigError;
use crate::key::Key;
use crate::operator::Operator;
use crate::source::element::Event;
use crate::source::random::Rng;
use crate::source::{SourceError, StreamElement};
use crate::trace::MAX_VALUE_LEN;

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

/// YCSB properties that shape the stream (and Gadget's `phase`).
pub const PROPERTIES: &[&str] = &[
    "workload",
    "table",
    "recordcount",
    "operationcount",
    "insertstart",
    "insertcount",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "requestdistribution",
    "insertorder",
    "zeropadding",
    "fieldcount",
    "fieldlength",
    "minfieldlength",
    "fieldlengthdistribution",
    "readallfields",
    "writeallfields",
    "minscanlength",
    "maxscanlength",
    "scanlengthdistribution",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "exponential.percentile",
    "exponential.frac",
    "target",
    "phase",
];

/// YCSB properties that do not change the state accesses (measurement, threads, retries,
/// value contents, DB choice): accepted and listed in a warning.
pub const IGNORED_PROPERTIES: &[&str] = &[
    "threadcount",
    "db",
    "measurementtype",
    "measurement.interval",
    "measurement.trackjvm",
    "histogram.buckets",
    "hdrhistogram.percentiles",
    "hdrhistogram.fileoutput",
    "hdrhistogram.output.path",
    "timeseries.granularity",
    "exporter",
    "exportfile",
    "status.interval",
    "maxexecutiontime",
    "dataintegrity",
    "fieldnameprefix",
    "fieldlengthhistogram",
    "readallfieldsbyname",
    "maxscanrate",
    "scanoptimelimit",
    "discardscannedrecord",
    "core_workload_insertion_retry_limit",
    "core_workload_insertion_retry_interval",
    "core_workload_insertion_keep_going_on_error",
];

/// Largest record count: YCSB keeps record numbers in a Java `int`.
const MAX_RECORDS: u64 = i32::MAX as u64;

/// Typed access to properties, with YCSB's defaults.
struct Reader<'a> {
    props: &'a Properties,
}

impl Reader<'_> {
    fn get(&self, key: &str) -> Option<&Property> {
        self.props.get(key)
    }

    fn int(&self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
        let Some(p) = self.get(key) else {
            return Ok(default);
        };
        let n: u64 = p.value.parse().map_err(|_| {
            p.error(format!(
                "`{}` is not a whole number; allowed: [{min}, {max}]",
                p.value
            ))
        })?;
        if n < min || n > max {
            return Err(p.error(format!("{n} is out of range; allowed: [{min}, {max}]")));
        }
        Ok(n)
    }

    fn float(&self, key: &str, default: f64, min: f64, max: f64) -> Result<f64, ConfigError> {
        let Some(p) = self.get(key) else {
            return Ok(default);
        };
        let x: f64 = p.value.parse().map_err(|_| {
            p.error(format!(
                "`{}` is not a number; allowed: [{min}, {max}]",
                p.value
            ))
        })?;
        if !(x >= min && x <= max) {
            return Err(p.error(format!("{x} is out of range; allowed: [{min}, {max}]")));
        }
        Ok(x)
    }

    fn bool(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        let Some(p) = self.get(key) else {
            return Ok(default);
        };
        match p.value.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            v => Err(p.error(format!("`{v}` is not allowed; use true or false"))),
        }
    }

    fn choice(
        &self,
        key: &str,
        default: &'static str,
        allowed: &[&'static str],
    ) -> Result<&'static str, ConfigError> {
        let Some(p) = self.get(key) else {
            return Ok(default);
        };
        allowed
            .iter()
            .find(|a| **a == p.value)
            .copied()
            .ok_or_else(|| {
                p.error(format!(
                    "`{}` is not allowed; use one of: {}",
                    p.value,
                    allowed.join(", ")
                ))
            })
    }
}

impl YcsbSpec {
    /// Validates YCSB properties; also returns warnings about ignored properties.
    ///
    /// Defaults are YCSB's (`CoreWorkload` and `Client`), except `recordcount` and
    /// `operationcount`, which YCSB's own workload files always set: 1000 here.
    pub fn from_properties(props: &Properties) -> Result<(YcsbSpec, Vec<String>), ConfigError> {
        let mut warnings = Vec::new();
        for p in props.iter() {
            if PROPERTIES.contains(&p.key.as_str()) {
                continue;
            }
            if IGNORED_PROPERTIES.contains(&p.key.as_str()) {
                warnings.push(format!(
                    "YCSB property `{}` does not change the state accesses; ignored",
                    p.key
                ));
                continue;
            }
            return Err(p.error(format!(
                "unknown YCSB property (DB-binding properties have no meaning here); known: {}",
                PROPERTIES.join(", ")
            )));
        }
        let r = Reader { props };
        if let Some(p) = r.get("workload") {
            if !p.value.ends_with("workloads.CoreWorkload") {
                return Err(p.error(format!(
                    "`{}` is not supported; Gadget implements site.ycsb.workloads.CoreWorkload",
                    p.value
                )));
            }
        }
        let table = match r.get("table") {
            Some(p) if p.value.is_empty() => return Err(p.error("the table name is empty")),
            Some(p) => p.value.clone(),
            None => "usertable".to_string(),
        };
        let record_count = r.int("recordcount", 1000, 1, MAX_RECORDS)?;
        let operation_count = r.int("operationcount", 1000, 0, 1 << 40)?;
        let insert_start = r.int("insertstart", 0, 0, record_count - 1)?;
        let insert_count = r.int(
            "insertcount",
            record_count - insert_start,
            1,
            record_count - insert_start,
        )?;
        let mut proportions = [0.0; 5];
        for (i, (key, default)) in [
            ("readproportion", 0.95),
            ("updateproportion", 0.05),
            ("insertproportion", 0.0),
            ("scanproportion", 0.0),
            ("readmodifywriteproportion", 0.0),
        ]
        .into_iter()
        .enumerate()
        {
            proportions[i] = r.float(key, default, 0.0, 1e9)?;
        }
        if proportions.iter().sum::<f64>() <= 0.0 && operation_count > 0 {
            // readproportion defaults to 0.95, so it was set to 0 for the sum to be 0
            let p = r.get("readproportion").expect("set to 0");
            return Err(p.error("every operation proportion is 0; give at least one of readproportion, updateproportion, insertproportion, scanproportion, readmodifywriteproportion a positive value"));
        }
        let request_distribution = match r.choice(
            "requestdistribution",
            "uniform",
            &[
                "uniform",
                "zipfian",
                "latest",
                "hotspot",
                "sequential",
                "exponential",
            ],
        )? {
            "zipfian" => RequestDistribution::Zipfian,
            "latest" => {
                if record_count < 2 {
                    let p = r.get("requestdistribution").expect("chosen, so set");
                    return Err(p.error("latest needs recordcount of at least 2"));
                }
                RequestDistribution::Latest
            }
            "hotspot" => RequestDistribution::Hotspot {
                data_fraction: r.float("hotspotdatafraction", 0.2, 0.0, 1.0)?,
                operation_fraction: r.float("hotspotopnfraction", 0.8, 0.0, 1.0)?,
            },
            "sequential" => RequestDistribution::Sequential,
            "exponential" => RequestDistribution::Exponential {
                percentile: r.float("exponential.percentile", 95.0, 1e-9, 100.0 - 1e-9)?,
                fraction: r.float("exponential.frac", 0.857_142_857_1, 1e-12, 1e6)?,
            },
            _ => RequestDistribution::Uniform,
        };
        let ordered_inserts =
            r.choice("insertorder", "hashed", &["hashed", "ordered"])? == "ordered";
        let zero_padding = r.int("zeropadding", 1, 1, 32)? as usize;
        let field_count = r.int("fieldcount", 10, 1, 100_000)?;
        let field_length = r.int("fieldlength", 100, 1, u64::from(MAX_VALUE_LEN))?;
        let field_length_distribution = match r.choice(
            "fieldlengthdistribution",
            "constant",
            &["constant", "uniform", "zipfian"],
        )? {
            "uniform" => LengthDistribution::Uniform,
            "zipfian" => LengthDistribution::Zipfian,
            _ => LengthDistribution::Constant,
        };
        let min_field_length = r.int("minfieldlength", 1, 1, field_length)?;
        if field_count * field_length > u64::from(MAX_VALUE_LEN) {
            let p = r
                .get("fieldlength")
                .or_else(|| r.get("fieldcount"))
                .expect("a default record is 1000 bytes, so one of them is set");
            return Err(p.error(format!(
                "a record of fieldcount × fieldlength = {} bytes is above the {MAX_VALUE_LEN} \
                 bytes (64 MiB) a value may have",
                field_count * field_length
            )));
        }
        r.bool("readallfields", true)?;
        r.bool("writeallfields", false)?;
        let max_scan_length = r.int("maxscanlength", 1000, 1, 1 << 24)?;
        let min_scan_length = r.int("minscanlength", 1, 1, max_scan_length)?;
        let scan_length_distribution =
            match r.choice("scanlengthdistribution", "uniform", &["uniform", "zipfian"])? {
                "zipfian" => LengthDistribution::Zipfian,
                _ => LengthDistribution::Uniform,
            };
        let phase = match r.choice("phase", "both", &["load", "run", "both"])? {
            "load" => Phase::Load,
            "run" => Phase::Run,
            _ => Phase::Both,
        };
        let target = r.float("target", 0.0, 0.0, 1e12)?;
        Ok((
            YcsbSpec {
                table,
                record_count,
                operation_count,
                insert_start,
                insert_count,
                proportions,
                request_distribution,
                ordered_inserts,
                zero_padding,
                field_count,
                field_length,
                min_field_length,
                field_length_distribution,
                min_scan_length,
                max_scan_length,
                scan_length_distribution,
                phase,
                target: (target > 0.0).then_some(target),
            },
            warnings,
        ))
    }

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
        };
        self.next += 1;
        self.since_watermark += 1;
        self.last_time = time;
        Some(Ok(StreamElement::Event(event)))
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
        let spec = YcsbSpec::from_properties(&Properties::new()).unwrap().0;
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
