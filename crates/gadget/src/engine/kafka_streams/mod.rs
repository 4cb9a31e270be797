//! Kafka Streams 4.4 with its persistent (RocksDB) stores, as `TopologyTestDriver` runs a
//! topology: one task (`0_0`), a commit after every input record.
//!
//! What a store sends RocksDB, checked against recordings of Kafka Streams 4.4.0 with the
//! recorder (docs/engines.md):
//!
//! - **One RocksDB instance per store**, at `<application.id>/<task>/rocksdb/<store>` under the
//!   state directory; the trace names each column family `<that path>/<column family>`. A
//!   timestamped key-value store has three: `default` (the pre-timestamp format, checked
//!   empty once at open with a seek to the first key), `keyValueWithTimestamp` (the data) and
//!   `offsets` (the committed changelog offsets and the store's position, KIP-1035).
//! - **Opening** reads and writes the store's `status`, reads its `position` and the
//!   changelog partition's offset, then writes both (the position empty: 40 bytes).
//! - **The record cache** ([`cache`], `statestore.cache.max.bytes`, 10 MiB by default) takes
//!   every read and write first: a read that misses it reads RocksDB, and a found value is
//!   cached clean; a write is cached dirty and reaches RocksDB when the cache is flushed (on
//!   commit) or evicts it.
//! - **A commit** flushes the cache's dirty entries in the order they were last written, each
//!   a put, then writes the changelog offset (8 bytes) and the position.
//! - **Closing** commits once more and writes `status`.
//! - Keys are the serde's bytes (a long: 8 bytes big-endian; a string: its UTF-8 bytes), with
//!   no key group; a timestamped value is the 8-byte timestamp and the value's bytes.

pub mod cache;
pub(crate) mod config;
pub mod count;
mod found;
mod held;
pub mod join;
mod segments;
pub mod session;
pub mod window;

use crate::access::{AccessSink, Op, StateId};

pub use count::{AggregateBytes, Count};
pub use join::{JoinWindows, StreamJoin};
pub use session::{SessionCount, SessionWindows};
pub use window::{TimeWindows, WindowedCount};

/// The operator types of Kafka Streams.
pub const OPERATORS: &[&str] = &[
    "count",
    "aggregate",
    "tumbling-count",
    "hopping-count",
    "session-count",
    "stream-join",
];

/// What runs the topology, which decides when it commits and what opening a store writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Runner {
    /// `TopologyTestDriver`: no broker, a commit after every record.
    #[default]
    TestDriver,
    /// A `KafkaStreams` application against a broker: commits every `commit.interval.ms` of
    /// wall-clock time (in Gadget, every `commit_every` records; by default only when it
    /// closes), and after restoring a key-value store its state updater writes the store's
    /// offsets once more (a checkpoint before the first record).
    Application,
}

/// The application and the store a Kafka Streams operator uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaStreamsSpec {
    /// `application.id` (the first part of each store's path and of its changelog topic).
    pub application_id: String,
    /// The store's name (`Materialized.as(...)`).
    pub store: String,
    /// The input topic's name (it sizes the store's position).
    pub topic: String,
    /// `statestore.cache.max.bytes`: the record cache's size; 0 turns caching off in effect.
    pub cache_bytes: u64,
    /// Input records between commits (`TopologyTestDriver`: 1; an application: `u64::MAX`
    /// unless set, its commits on wall-clock time falling after the records of a short run).
    pub commit_every: u64,
    /// What runs the topology.
    pub runner: Runner,
    /// The aggregate of `groupByKey().aggregate(...)` (its serialized size); `None` for a
    /// count.
    pub aggregate: Option<AggregateBytes>,
    /// The windows of a windowed count (`windowedBy(TimeWindows...)`); `None` otherwise.
    pub windows: Option<TimeWindows>,
    /// The sessions of a session-windowed count (`windowedBy(SessionWindows...)`); `None`
    /// otherwise.
    pub sessions: Option<SessionWindows>,
    /// The window of a KStream–KStream join (`join(other, joiner, JoinWindows...)`); `None`
    /// otherwise.
    pub join: Option<JoinWindows>,
    /// The join's right (other) input topic; `topic` is the left one.
    pub right_topic: String,
    /// `suppress(Suppressed.untilWindowCloses(...))` after a windowed count. Its buffer is in
    /// memory, but it makes the count send old values: each window the cache flushes is read
    /// from RocksDB before it is written (with a cache of more than 0 bytes; 0 strips the
    /// caching layer, and nothing changes).
    pub suppress: bool,
}

impl Default for KafkaStreamsSpec {
    fn default() -> Self {
        KafkaStreamsSpec {
            application_id: "gadget".into(),
            store: "counts".into(),
            topic: "events".into(),
            cache_bytes: 10 * 1024 * 1024,
            commit_every: 1,
            runner: Runner::TestDriver,
            aggregate: None,
            windows: None,
            sessions: None,
            join: None,
            right_topic: "finishes".into(),
            suppress: false,
        }
    }
}

impl KafkaStreamsSpec {
    /// The topology's stateful operator: a windowed, session-windowed or plain count (or
    /// aggregate), or a join, as the spec's windows say.
    pub fn operator(&self) -> Box<dyn crate::operator::Operator> {
        match (self.windows, self.sessions, self.join) {
            (Some(windows), _, _) => Box::new(WindowedCount::new(self, windows)),
            (None, Some(sessions), _) => Box::new(SessionCount::new(self, sessions)),
            (None, None, Some(join)) => Box::new(StreamJoin::new(self, join, &self.right_topic)),
            (None, None, None) => Box::new(Count::new(self)),
        }
    }
}

/// The task every store of a one-partition topology belongs to.
pub(crate) const TASK: &str = "0_0";
/// A committed changelog offset, a `long`.
pub(crate) const OFFSET_BYTES: u32 = 8;
/// The store's `status` value, a `long`.
pub(crate) const STATUS_BYTES: u32 = 8;

/// A store's `offsets` column family: what opening, committing and closing write there.
#[derive(Debug, Clone)]
pub(crate) struct Offsets {
    state: StateId,
    changelog_key: Vec<u8>,
    /// The position's size once a record of the input topic was processed.
    position_bytes: u32,
    /// True once the position holds the input topic.
    positioned: bool,
}

impl Offsets {
    /// The offsets of `spec`'s store, in state `state`.
    pub(crate) fn new(spec: &KafkaStreamsSpec, state: StateId) -> Offsets {
        let changelog = format!("{}-{}-changelog-0", spec.application_id, spec.store);
        Offsets {
            state,
            changelog_key: changelog.into_bytes(),
            position_bytes: position_bytes(&[(&spec.topic, 1)]),
            positioned: false,
        }
    }

    /// Opening the store: its status, then the offset and position it restores from.
    pub(crate) fn open(&self, out: &mut dyn AccessSink) {
        out.access_all(
            self.state,
            b"status",
            &[(Op::Get, 0), (Op::Put, STATUS_BYTES)],
        );
        out.access_all(self.state, b"position", &[(Op::Get, 0)]);
        out.access_all(
            self.state,
            &self.changelog_key,
            &[(Op::Get, 0), (Op::Put, OFFSET_BYTES)],
        );
        out.access_all(self.state, b"position", &[(Op::Put, position_bytes(&[]))]);
    }

    /// A record of the input topic was processed: the position holds it from now on.
    pub(crate) fn record_processed(&mut self) {
        self.positioned = true;
    }

    /// A commit's writes after the cache's: the changelog offset and the position.
    pub(crate) fn commit(&self, out: &mut dyn AccessSink) {
        out.access_all(self.state, &self.changelog_key, &[(Op::Put, OFFSET_BYTES)]);
        let position = if self.positioned {
            self.position_bytes
        } else {
            position_bytes(&[])
        };
        out.access_all(self.state, b"position", &[(Op::Put, position)]);
    }

    /// An application's checkpoint after restoring the store (its state updater thread,
    /// before the first record): the changelog offset and the still empty position, as a
    /// commit writes them; nothing under the test driver.
    pub(crate) fn restored(&self, runner: Runner, out: &mut dyn AccessSink) {
        if runner == Runner::Application {
            self.commit(out);
        }
    }

    /// Closing the store: its status.
    pub(crate) fn close(&self, out: &mut dyn AccessSink) {
        out.access_all(self.state, b"status", &[(Op::Put, STATUS_BYTES)]);
    }
}

/// The bytes Kafka Streams 4.4 writes for a position over `topics` (name, partitions): its
/// serializer sizes the buffer in bits rather than bytes (8 for the version byte, 32 per
/// count, 96 per partition's offset) and writes the whole buffer, so the value is larger
/// than its content (206 bytes for one topic `events` of one partition).
pub(crate) fn position_bytes(topics: &[(&str, u32)]) -> u32 {
    let mut bits = 8 + 32;
    for (name, partitions) in topics {
        bits += 32 + name.len() as u32 + 32 + 96 * partitions;
    }
    bits
}

/// The path of `spec`'s store, as the trace names its column families.
pub(crate) fn store_path(spec: &KafkaStreamsSpec) -> String {
    format!("{}/{TASK}/rocksdb/{}", spec.application_id, spec.store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_sized_as_kafka_streams_sizes_it() {
        assert_eq!(position_bytes(&[]), 40);
        assert_eq!(position_bytes(&[("events", 1)]), 206);
    }
}
