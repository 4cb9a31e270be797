//! `groupByKey().count()` into a persistent timestamped key-value store, with the record
//! cache and a commit every [`KafkaStreamsSpec::commit_every`] records.

use rustc_hash::FxHashSet as HashSet;

use crate::access::{Access, AccessSink, Op, StateId};
use crate::key::Key;
use crate::operator::Operator;
use crate::source::element::Event;

use super::cache::RecordCache;
use super::{store_path, KafkaStreamsSpec, Offsets};

/// A count's value: the 8-byte timestamp and the 8-byte count (`ValueAndTimestamp<Long>`).
const COUNT_VALUE_BYTES: u32 = 16;

/// The states of a timestamped key-value store, in the order Kafka Streams first uses them.
const DEFAULT: StateId = 0;
const OFFSETS: StateId = 1;
const DATA: StateId = 2;

/// `groupByKey().count()`.
#[derive(Debug)]
pub struct Count {
    spec: KafkaStreamsSpec,
    cache: RecordCache,
    offsets: Offsets,
    /// The keys the store holds a value for (a read that misses the cache finds one).
    stored: HashSet<Vec<u8>>,
    key: Vec<u8>,
    since_commit: u64,
}

impl Count {
    /// The count of `spec`'s store.
    pub fn new(spec: &KafkaStreamsSpec) -> Count {
        Count {
            cache: RecordCache::new(spec.cache_bytes),
            offsets: Offsets::new(spec, OFFSETS),
            spec: spec.clone(),
            stored: HashSet::default(),
            key: Vec::with_capacity(16),
            since_commit: 0,
        }
    }

    fn commit(&mut self, out: &mut dyn AccessSink) {
        let stored = &mut self.stored;
        self.cache
            .flush(&mut |key, value_len| write(out, stored, key, value_len));
        self.offsets.commit(out);
        self.since_commit = 0;
    }
}

/// A put of what the cache flushed, to the data column family.
fn write(out: &mut dyn AccessSink, stored: &mut HashSet<Vec<u8>>, key: &[u8], value_len: u32) {
    out.access(Access {
        op: Op::Put,
        state: DATA,
        key,
        value_len,
    });
    if !stored.contains(key) {
        stored.insert(key.to_vec());
    }
}

/// A key as its serde writes it: a long's 8 bytes big-endian, a string's UTF-8 bytes.
pub(crate) fn serde_key(key: &Key, out: &mut Vec<u8>) {
    out.clear();
    match key {
        Key::Str(s) => out.extend_from_slice(s.as_bytes()),
        other => other.serialize_into(out),
    }
}

impl Operator for Count {
    fn states(&self) -> Vec<String> {
        let path = store_path(&self.spec);
        ["default", "offsets", "keyValueWithTimestamp"]
            .iter()
            .map(|cf| format!("{path}/{cf}"))
            .collect()
    }

    fn on_start(&mut self, out: &mut dyn AccessSink) {
        // the store checks its pre-timestamp column family is empty, then restores
        out.access_all(DEFAULT, b"", &[(Op::Seek, 0)]);
        self.offsets.open(out);
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        serde_key(&event.key, &mut self.key);
        let Count {
            cache,
            stored,
            key,
            spec,
            ..
        } = self;
        if !cache.get(key) {
            out.access_all(DATA, key, &[(Op::Get, 0)]);
            if stored.contains(key.as_slice()) {
                cache.put_clean(key, COUNT_VALUE_BYTES, &mut |k, v| write(out, stored, k, v));
            }
        }
        let topic_len = spec.topic.chars().count() as u64;
        cache.put_dirty(key, COUNT_VALUE_BYTES, topic_len, &mut |k, v| {
            write(out, stored, k, v)
        });
        self.offsets.record_processed();
        self.since_commit += 1;
        if self.since_commit >= self.spec.commit_every {
            self.commit(out);
        }
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        // closing commits, then the store writes its status
        self.commit(out);
        self.offsets.close(out);
    }
}
