//! Kafka Streams 4.4 with its persistent (RocksDB) stores, as `TopologyTestDriver` runs a
//! topology (one task, `0_0`, a commit after every input record) or as a `KafkaStreams`
//! application runs it over input topics of several partitions: a task per partition
//! ([`tasks`]), its records chosen by Kafka's default partitioner ([`partitioner`]), the tasks
//! spread over stream threads that each have a share of the record cache.
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
pub mod partitioner;
mod segments;
pub mod session;
pub mod tasks;
mod threads;
pub mod window;

use crate::access::{AccessSink, Op, StateId};
use cache::ThreadCache;

pub use count::{AggregateBytes, Count};
pub use join::{JoinWindows, StreamJoin};
pub use session::{SessionCount, SessionWindows};
pub use tasks::Tasks;
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
    /// Partitions of each input topic, and so tasks (`0_0` to `0_<partitions − 1>`), each
    /// with its own stores; more than 1 only for an application.
    pub partitions: u32,
    /// `num.stream.threads`: the tasks are spread over them (task i on thread i mod
    /// `threads`), and each has `cache_bytes / threads` of record cache for its tasks' stores.
    pub threads: u32,
    /// The task this operator is, by its partition: the `<i>` of its id `0_<i>` and of its
    /// changelog partition (0 but in a task of [`Tasks`]).
    pub task: u32,
    /// The records are re-keyed before the count (`groupBy` on another field than the input
    /// topic's key; the `[source]` key is that field) and reach it through the repartition
    /// topic `<application_id>-<store>-repartition`: the count runs in sub-topology 1 (tasks
    /// `1_<i>`), which reads that topic, of as many partitions as the input.
    pub repartition: bool,
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
            partitions: 1,
            threads: 1,
            task: 0,
            repartition: false,
        }
    }
}

impl KafkaStreamsSpec {
    /// The topology's stateful operator: a windowed, session-windowed or plain count (or
    /// aggregate), or a join, as the spec's windows say; over several partitions, one in
    /// each task.
    pub fn operator(&self) -> Box<dyn crate::operator::Operator> {
        if self.partitions > 1 {
            return Box::new(Tasks::new(self));
        }
        self.task_operator(&ThreadCache::new(self.thread_cache_bytes()))
    }

    /// Each stream thread's record cache: `statestore.cache.max.bytes` over the threads.
    pub(crate) fn thread_cache_bytes(&self) -> u64 {
        self.cache_bytes / u64::from(self.threads.max(1))
    }

    /// The operator of the task [`KafkaStreamsSpec::task`], its stores' caches in `thread`'s.
    pub(crate) fn task_operator(&self, thread: &ThreadCache) -> Box<dyn crate::operator::Operator> {
        match (self.windows, self.sessions, self.join) {
            (Some(windows), _, _) => Box::new(WindowedCount::in_thread(self, windows, thread)),
            (None, Some(sessions), _) => Box::new(SessionCount::in_thread(self, sessions, thread)),
            (None, None, Some(join)) => Box::new(StreamJoin::new(self, join, &self.right_topic)),
            (None, None, None) => Box::new(Count::in_thread(self, thread)),
        }
    }

    /// The task's id (`<sub-topology>_<task>`: 0, or 1 behind a repartition topic; then its
    /// partition), the directory of its stores.
    pub(crate) fn task_id(&self) -> String {
        self.task_id_of(self.task)
    }

    /// The id of the application's task `task` ([`KafkaStreamsSpec::task_id`]).
    pub(crate) fn task_id_of(&self, task: u32) -> String {
        format!("{}_{task}", u8::from(self.repartition))
    }

    /// The topic the stateful operator reads: the input topic, or the repartition topic
    /// before it. Its name sizes the store's position and every cached entry's record context.
    pub(crate) fn source_topic(&self) -> String {
        if self.repartition {
            format!("{}-{}-repartition", self.application_id, self.store)
        } else {
            self.topic.clone()
        }
    }

    /// The changelog topic partition of the task's store `store`, as its offsets name it.
    pub(crate) fn changelog(&self, store: &str) -> String {
        format!("{}-{store}-changelog-{}", self.application_id, self.task)
    }
}
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
        let changelog = spec.changelog(&spec.store);
        Offsets {
            state,
            changelog_key: changelog.into_bytes(),
            position_bytes: position_bytes(&[(&spec.source_topic(), 1)]),
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
    format!(
        "{}/{}/rocksdb/{}",
        spec.application_id,
        spec.task_id(),
        spec.store
    )
}

/// What the operators' tests share.
#[cfg(test)]
pub(crate) mod testing {
    use crate::access::VecSink;
    use crate::key::Key;
    use crate::operator::Operator;
    use crate::source::element::Event;

    /// What `op` issues from its start to its end over one event per key of `keys` (a long,
    /// its time the event's index).
    pub(crate) fn run_keys(op: &mut dyn Operator, keys: &[i64]) -> VecSink {
        let mut sink = VecSink::default();
        op.on_start(&mut sink);
        for (t, &key) in keys.iter().enumerate() {
            let event = Event {
                key: Key::Long(key),
                timestamp: t as i64,
                input: 0,
                closes: false,
                payload: 0,
            };
            op.on_event(&event, &mut sink);
        }
        op.on_end(&mut sink);
        sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_sized_as_kafka_streams_sizes_it() {
        assert_eq!(position_bytes(&[]), 40);
        assert_eq!(position_bytes(&[("events", 1)]), 206);
    }

    #[test]
    fn a_regrouped_count_runs_in_sub_topology_1_behind_its_repartition_topic() {
        let spec = KafkaStreamsSpec {
            repartition: true,
            task: 3,
            ..KafkaStreamsSpec::default()
        };
        assert_eq!(store_path(&spec), "gadget/1_3/rocksdb/counts");
        assert_eq!(spec.source_topic(), "gadget-counts-repartition");
        assert_eq!(spec.changelog("counts"), "gadget-counts-changelog-3");
        let plain = KafkaStreamsSpec::default();
        assert_eq!(
            (store_path(&plain), plain.source_topic()),
            (
                "gadget/0_0/rocksdb/counts".to_string(),
                "events".to_string()
            )
        );
    }
}
