//! Spark Structured Streaming 4.1 with the RocksDB state store provider
//! (`RocksDBStateStoreProvider`), as a query runs in `local[1]` with one shuffle partition:
//! one state store (one RocksDB instance) per stateful operator, micro-batches of a fixed
//! number of input events.
//!
//! What the state store sends RocksDB, checked against recordings of Spark 4.1.1 with the
//! recorder (docs/engines.md):
//!
//! - **Plain `RocksDB` calls** on the instance's default column family: `get`, `put` and
//!   `delete` with the write-ahead log off, and iterators from the first key (`seek` to the
//!   empty key, then a `next` per entry read: the iterator steps before it hands an entry
//!   over).
//! - **Row counting** (`trackTotalNumberOfRows`, on by default): every `put` and every
//!   `delete` reads the key first.
//! - **A commit per micro-batch**: the instance is flushed (`flush`: its memtables, the WAL
//!   being off), then checkpointed (`checkpoint`: `Checkpoint.createCheckpoint`, which Spark
//!   uploads).
//! - **Batches without data** when the watermark moved (`noDataMicroBatches`): after the last
//!   batch under `Trigger.AvailableNow`, after every batch of data when the input arrives
//!   batch by batch ([`BatchArrival`]).
//! - Keys and values are `UnsafeRow`s after a version byte (0): a null bitset word, one word
//!   per field (a long in place; a struct or string as offset and size into the variable part
//!   that follows, padded to words).

use std::cmp::Ordering;

pub mod aggregate;
mod batch;
pub(crate) mod config;
pub mod dedup;
pub mod group_state;
mod held;
pub mod join;
mod partition;
pub mod session;
mod subtask;
pub mod transform;

pub use aggregate::TumblingCount;
pub use dedup::DropDuplicatesWithinWatermark;
pub use group_state::FlatMapGroupsWithState;
pub use join::StreamJoin;
pub use session::SessionCount;
pub use transform::{StateVariable, TransformWithState, STATE_VARIABLES};

use batch::{micro_batched_operator, MicroBatched};

micro_batched_operator!(
    TumblingCount,
    DropDuplicatesWithinWatermark,
    StreamJoin,
    FlatMapGroupsWithState,
    SessionCount,
    TransformWithState,
);

/// The operator types of Spark.
pub const OPERATORS: &[&str] = &[
    "tumbling-count",
    "drop-duplicates-within-watermark",
    "stream-join",
    "flat-map-groups-with-state",
    "session-count",
    "transform-with-state",
];

/// A Spark query's stateful operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SparkQuery {
    /// `groupBy(window("time", size), "key").count()` ([`TumblingCount`]).
    TumblingCount,
    /// `dropDuplicatesWithinWatermark("key")` ([`DropDuplicatesWithinWatermark`]).
    DropDuplicatesWithinWatermark,
    /// A stream–stream inner join within `size` ms ([`StreamJoin`]).
    StreamJoin,
    /// A session count per key with a gap of `size` ms by `flatMapGroupsWithState` and an
    /// event-time timeout ([`FlatMapGroupsWithState`]).
    FlatMapGroupsWithState,
    /// `groupBy(session_window("time", size), "key").count()` ([`SessionCount`]).
    SessionCount,
    /// A session count per key with a gap of `size` ms by `transformWithState`, its
    /// session in a state variable, its end an event-time timer ([`TransformWithState`]).
    TransformWithState(StateVariable),
}

impl SparkQuery {
    /// The state stores of each shuffle partition: a join's four, one otherwise.
    pub fn stores_per_partition(self) -> u32 {
        match self {
            SparkQuery::StreamJoin => join::STORES.len() as u32,
            _ => 1,
        }
    }
}

/// The most state stores a query may have (`partitions` × [`SparkQuery::stores_per_partition`]):
/// 200 partitions (Spark's default `spark.sql.shuffle.partitions`) of a one-store query, 50
/// of a join. Spark keeps each store in a RocksDB instance of its own; Gadget's RocksDB store
/// keeps each in a column family of one database, and the default library (frocksdb 6.20.3,
/// Flink 1.20's) writes its whole OPTIONS file again after creating each column family, so
/// opening n of them takes time in n²: 200 open in about 12 s there (and under a second with
/// `--rocksdb-lib current`), 1,000 would take minutes.
pub const MAX_STATE_STORES: u32 = 200;

/// When the query emits its rows, which decides nothing here but the name: both modes send
/// the same requests (docs/engines.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// A window's final count, once the watermark passes its end.
    Append,
    /// Every changed count, per micro-batch.
    Update,
}

/// The join type of a stream–stream join (`left.join(right, condition, type)`). All four
/// send the state stores the same requests (recorded from Spark 4.1.1: an outer join emits
/// the unmatched rows its eviction reads anyway); they differ in what the query outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JoinType {
    /// `inner`.
    #[default]
    Inner,
    /// `left_outer`.
    LeftOuter,
    /// `right_outer`.
    RightOuter,
    /// `full_outer`.
    FullOuter,
}

/// A Spark query: its operator and settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparkSpec {
    /// The stateful operator.
    pub query: SparkQuery,
    /// Window length in ms (the tumbling count's; the join's range, `window`; the session
    /// gap of `flatMapGroupsWithState` and of the session count, `gap`).
    pub size: i64,
    /// The watermark's delay in ms (`withWatermark`).
    pub delay: i64,
    /// The output mode.
    pub mode: OutputMode,
    /// How the input is cut into micro-batches (a file of the file source each,
    /// `maxFilesPerTrigger = 1`).
    pub trigger: Trigger,
    /// `spark.sql.shuffle.partitions`: the state store instances, one per partition, each
    /// partition's task run in turn per batch.
    pub partitions: u32,
    /// A stream–stream join's type.
    pub join_type: JoinType,
    /// How the input reaches the query, which decides when batches without data run.
    pub arrival: BatchArrival,
    /// `spark.sql.streaming.noDataMicroBatches.enabled`: whether Spark runs a batch without
    /// data when the watermark moved (true, Spark's default).
    pub no_data_batches: bool,
    /// The subtask generated, as (index, parallelism), of the query run as a parallel job of
    /// its shuffle partitions (subtask i holding partitions i, i + parallelism, …); `None`:
    /// every partition.
    pub subtask: Option<(u32, u32)>,
}

/// How the input reaches the query (`trigger` in a config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BatchArrival {
    /// All of it is there when the query starts, read under `Trigger.AvailableNow`: batch
    /// after batch of data, and one batch without data after the last (`available-now`).
    #[default]
    AvailableNow,
    /// Each batch's input arrives after the previous batch is done (a query under its default,
    /// processing-time trigger whose input comes slower than it is processed): every batch of
    /// data that moved the watermark is followed by a batch without data, which evicts with the
    /// new watermark before the next batch's data arrives (`processing-time`).
    ProcessingTime,
}

/// How the input is cut into micro-batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A number of input events per batch (`trigger_events`).
    Events(u64),
    /// The events of an interval of event time, in ms (`trigger_ms`): a batch covers the
    /// interval (aligned to its multiples) that holds its first event and ends before the first
    /// event, in input order, at or past the interval's end.
    EventTime(i64),
}

impl Default for SparkSpec {
    fn default() -> Self {
        SparkSpec {
            query: SparkQuery::TumblingCount,
            size: 5000,
            delay: 0,
            mode: OutputMode::Append,
            trigger: Trigger::Events(1000),
            partitions: 1,
            join_type: JoinType::Inner,
            arrival: BatchArrival::AvailableNow,
            no_data_batches: true,
            subtask: None,
        }
    }
}

impl SparkSpec {
    /// The query's operator.
    pub fn operator(&self) -> Box<dyn crate::operator::Operator> {
        match self.query {
            SparkQuery::TumblingCount => Box::new(TumblingCount::new(self)),
            SparkQuery::DropDuplicatesWithinWatermark => {
                Box::new(DropDuplicatesWithinWatermark::new(self))
            }
            SparkQuery::StreamJoin => Box::new(StreamJoin::new(self)),
            SparkQuery::FlatMapGroupsWithState => Box::new(FlatMapGroupsWithState::new(self)),
            SparkQuery::SessionCount => Box::new(SessionCount::new(self)),
            SparkQuery::TransformWithState(variable) => {
                Box::new(TransformWithState::new(self, variable))
            }
        }
    }
}

impl SparkSpec {
    /// A `T` per shuffle partition (at least one).
    pub(crate) fn per_partition<T: Default>(&self) -> Vec<T> {
        (0..self.partitions.max(1)).map(|_| T::default()).collect()
    }
}

/// The state names of `spec`'s partitions, in partition order.
pub(crate) fn state_names(spec_partitions: u32) -> Vec<String> {
    (0..spec_partitions).map(|p| state_name(0, p)).collect()
}

/// The state store's RocksDB instance as the recorder names it: below the job's work
/// directory, Spark's local directory `local`, then `spark-<id>/StateStoreId(...)-<id>/
/// workingDir-<id>` with the random ids left out, and the column family.
pub(crate) fn state_name(operator: u32, partition: u32) -> String {
    store_name(operator, partition, "default")
}

/// The RocksDB instance of the state store named `store` (`default` for one store per
/// operator; a join's `left-keyToNumValues`, ...).
pub(crate) fn store_name(operator: u32, partition: u32, store: &str) -> String {
    format!(
        "local/spark/StateStoreId(opId={operator},partId={partition},name={store})/workingDir/default"
    )
}

/// The version byte before every key and value row.
const ENCODING_VERSION: u8 = 0;

/// Writes the `UnsafeRow` key of a windowed aggregation, grouped by (window, key), after the
/// version byte: the window struct (start and end in µs) and the record key (a long in
/// place, a string in the variable part).
pub(crate) fn window_key_row(out: &mut Vec<u8>, start_us: i64, end_us: i64, key: &crate::key::Key) {
    out.clear();
    out.push(ENCODING_VERSION);
    out.extend_from_slice(&0u64.to_le_bytes());
    // the window struct: 24 bytes at offset 24 (after the bitset and the two field words)
    out.extend_from_slice(&pointer(24, 24).to_le_bytes());
    let string = key_field(out, key, 48);
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&start_us.to_le_bytes());
    out.extend_from_slice(&end_us.to_le_bytes());
    variable_part(out, string);
}

/// Writes the `UnsafeRow` key of a row grouped by the record key alone, after the version
/// byte: the null bitset and the key (a long in place, a string in the variable part).
pub(crate) fn key_row(out: &mut Vec<u8>, key: &crate::key::Key) {
    out.clear();
    out.push(ENCODING_VERSION);
    out.extend_from_slice(&0u64.to_le_bytes());
    let string = key_field(out, key, 16);
    variable_part(out, string);
}

/// Writes the key of a join's `keyWithIndexToValue` store from the count store's key row
/// `key` (a row of the key): the row of (key, index), the key's field word moved past the
/// index word when it points into the variable part.
pub(crate) fn key_index_row(out: &mut Vec<u8>, key: &[u8], index: i64) {
    out.clear();
    let Some(word) = key.get(9..17) else {
        out.extend_from_slice(key);
        return;
    };
    out.extend_from_slice(&key[..9]);
    let mut word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
    if key.len() > 17 {
        word = pointer(24, word & 0xffff_ffff);
    }
    out.extend_from_slice(&word.to_le_bytes());
    out.extend_from_slice(&index.to_le_bytes());
    out.extend_from_slice(&key[17..]);
}

/// Writes the record key's field word: a long in place, or a string's offset (`at`, in the
/// row) and size, returning the string's bytes for the variable part.
fn key_field<'k>(out: &mut Vec<u8>, key: &'k crate::key::Key, at: u64) -> Option<&'k [u8]> {
    match key {
        crate::key::Key::Long(v) => {
            out.extend_from_slice(&v.to_le_bytes());
            None
        }
        crate::key::Key::Str(s) => {
            out.extend_from_slice(&pointer(at, s.len() as u64).to_le_bytes());
            Some(s.as_bytes())
        }
        crate::key::Key::NullByte => {
            out.extend_from_slice(&0i64.to_le_bytes());
            None
        }
    }
}

/// Appends a string to the variable part, padded to words.
fn variable_part(out: &mut Vec<u8>, string: Option<&[u8]>) {
    if let Some(bytes) = string {
        out.extend_from_slice(bytes);
        out.resize(out.len() + (8 - bytes.len() % 8) % 8, 0);
    }
}

/// The order of two key rows of [`key_row`] as Spark sorts their keys (a stateful operator
/// that needs its input sorted): a long (the row's
/// field word) signed, a string (the variable part after it) by its bytes.
pub(crate) fn key_order(a: &[u8], b: &[u8]) -> Ordering {
    let long = |row: &[u8]| {
        row.get(9..17)
            .map(|w| i64::from_le_bytes(w.try_into().expect("8 bytes")))
    };
    if a.len() == 17 && b.len() == 17 {
        return long(a).cmp(&long(b));
    }
    string_of(a).cmp(string_of(b))
}

/// The string of a key row of a string key (its field word's size of the variable part).
fn string_of(row: &[u8]) -> &[u8] {
    let size = row.get(9..13).map_or(0, |w| {
        u32::from_le_bytes(w.try_into().expect("4 bytes")) as usize
    });
    row.get(17..17 + size).unwrap_or_default()
}

/// An `UnsafeRow` field word pointing into the variable part.
fn pointer(offset: u64, size: u64) -> u64 {
    offset << 32 | size
}

/// Runs `events` (key, time in s) through `operator` and writes its requests as `op detail`
/// (`detail` of the key, `-` for the empty key; `next` shows the key it landed on), a `|` per
/// commit (`flush` left out): what the operators' tests compare.
#[cfg(test)]
pub(crate) fn requests_of(
    operator: &mut dyn crate::operator::Operator,
    events: &[(i64, i64)],
    detail: impl Fn(&[u8]) -> String,
) -> Vec<String> {
    use crate::access::{Op, TraceRecord, VecSink};
    let mut sink = VecSink::default();
    for &(key, seconds) in events {
        let event = crate::source::element::Event {
            key: crate::key::Key::Long(key),
            timestamp: seconds * 1000,
            input: 0,
            closes: false,
            payload: 0,
        };
        operator.on_event(&event, &mut sink);
    }
    operator.on_end(&mut sink);
    let mut out = Vec::new();
    for r in &sink.records {
        let TraceRecord::Access { op, key, .. } = r else {
            continue;
        };
        let shown = if key.is_empty() {
            "-".to_string()
        } else {
            detail(key)
        };
        match op {
            Op::Flush => {}
            Op::Checkpoint => out.push("|".to_string()),
            _ => out.push(format!("{} {shown}", op.name())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;

    #[test]
    fn a_window_key_row_is_laid_out_as_spark_writes_it() {
        let mut row = Vec::new();
        window_key_row(
            &mut row,
            150_935_000_000,
            150_940_000_000,
            &Key::Long(6_270_505_101),
        );
        // the first key a recording of Spark 4.1.1 wrote for the Borg events
        let recorded = "00000000000000000018000000180000008d50c0750100000000000000000000\
                        00c0536d2423000000009fb92423000000";
        let hex: String = row.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, recorded);
        window_key_row(&mut row, 0, 5, &Key::Str("abc".into()));
        assert_eq!(row.len(), 49 + 8);
        assert_eq!(&row[17..25], &[3, 0, 0, 0, 48, 0, 0, 0]);
    }

    #[test]
    fn a_key_row_is_laid_out_as_spark_writes_it() {
        let mut row = Vec::new();
        key_row(&mut row, &Key::Long(6_270_505_101));
        // the first key a recording of dropDuplicatesWithinWatermark wrote for the Borg events
        let hex: String = row.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "0000000000000000008d50c07501000000");
        key_row(&mut row, &Key::Str("abcdefghi".into()));
        assert_eq!(row.len(), 1 + 16 + 16);
        assert_eq!(&row[9..17], &[9, 0, 0, 0, 16, 0, 0, 0]);
    }
}
