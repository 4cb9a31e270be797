//! `groupByKey().count()` and `groupByKey().aggregate(...)` into a persistent timestamped
//! key-value store, with the record cache and a commit every
//! [`KafkaStreamsSpec::commit_every`] records.
//!
//! Kafka Streams counts with the aggregation's processor (`KStreamAggregate`: the key's value
//! read, then written back), so the two send the same requests; only the value differs: a
//! count is a long, an aggregate what its serde writes, here [`AggregateBytes`] of the
//! key's records so far (a list that grows, or a fixed-size one).

use rustc_hash::FxHashMap as HashMap;

use crate::access::{Access, AccessSink, Op, StateId};
use crate::key::Key;
use crate::operator::Operator;
use crate::source::element::Event;

use super::cache::{Read, RecordCache, ThreadCache};
use super::{store_path, KafkaStreamsSpec, Offsets};

/// A count's value: the 8-byte timestamp and the 8-byte count (`ValueAndTimestamp<Long>`).
const COUNT_VALUE_BYTES: u32 = 16;

/// The timestamp before every value of a timestamped store (`ValueAndTimestamp`).
const TIMESTAMP_BYTES: u64 = 8;

/// The size of an aggregate as its serde writes it: `initial` bytes from the initializer,
/// `per_record` more for each record the aggregator adds (0 for a fixed-size aggregate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggregateBytes {
    /// The initializer's aggregate, in bytes.
    pub initial: u32,
    /// What each record adds, in bytes.
    pub per_record: u32,
}

impl AggregateBytes {
    /// The stored value after `records` records: the timestamp and the aggregate (at most
    /// `u32::MAX` bytes).
    fn value_bytes(self, records: u64) -> u32 {
        let bytes = TIMESTAMP_BYTES
            .saturating_add(u64::from(self.initial))
            .saturating_add(records.saturating_mul(u64::from(self.per_record)));
        u32::try_from(bytes).unwrap_or(u32::MAX)
    }
}

/// The states of a timestamped key-value store, in the order Kafka Streams first uses them.
const DEFAULT: StateId = 0;
const OFFSETS: StateId = 1;
const DATA: StateId = 2;

/// `groupByKey().count()`, or `.aggregate(...)` with [`KafkaStreamsSpec::aggregate`].
#[derive(Debug)]
pub struct Count {
    spec: KafkaStreamsSpec,
    /// Records aggregated per key, for an aggregate whose size grows with them.
    records: HashMap<Vec<u8>, u64>,
    cache: RecordCache,
    offsets: Offsets,
    key: Vec<u8>,
    /// Characters of the input topic's name, in every dirty entry's size.
    topic_len: u64,
    since_commit: u64,
}

impl Count {
    /// The count of `spec`'s store, the only store of its thread's cache.
    pub fn new(spec: &KafkaStreamsSpec) -> Count {
        Count::in_thread(spec, &ThreadCache::new(spec.cache_bytes))
    }

    /// The count of `spec`'s store, its cache in `thread`'s.
    pub fn in_thread(spec: &KafkaStreamsSpec, thread: &ThreadCache) -> Count {
        Count {
            // a read that misses the cache finds a value when the cache once wrote the key
            cache: thread.named_tracking_stored(),
            offsets: Offsets::new(spec, OFFSETS),
            spec: spec.clone(),
            records: HashMap::default(),
            key: Vec::with_capacity(16),
            topic_len: spec.source_topic().chars().count() as u64,
            since_commit: 0,
        }
    }

    /// The value's size before and after the record being processed (a key with `stored`
    /// records in its value).
    fn value_sizes(&mut self) -> (u32, u32) {
        let Some(aggregate) = self.spec.aggregate else {
            return (COUNT_VALUE_BYTES, COUNT_VALUE_BYTES);
        };
        if aggregate.per_record == 0 {
            let bytes = aggregate.value_bytes(0);
            return (bytes, bytes);
        }
        if !self.records.contains_key(self.key.as_slice()) {
            self.records.insert(self.key.clone(), 0);
        }
        let records = self
            .records
            .get_mut(self.key.as_slice())
            .expect("inserted above");
        let before = aggregate.value_bytes(*records);
        *records += 1;
        (before, aggregate.value_bytes(*records))
    }

    fn commit(&mut self, out: &mut dyn AccessSink) {
        self.cache
            .flush(&mut |key, value_len| write(out, key, value_len));
        self.offsets.commit(out);
        self.since_commit = 0;
    }
}

/// A put of what the cache flushed, to the data column family.
fn write(out: &mut dyn AccessSink, key: &[u8], value_len: u32) {
    out.access(Access {
        op: Op::Put,
        state: DATA,
        key,
        value_len,
    });
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
        self.offsets.restored(self.spec.runner, out);
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        serde_key(&event.key, &mut self.key);
        let (stored_bytes, new_bytes) = self.value_sizes();
        let Count {
            cache,
            key,
            topic_len,
            ..
        } = self;
        let read = cache.read(key);
        if read != Read::Cached {
            out.access_all(DATA, key, &[(Op::Get, 0)]);
        }
        if read == Read::Stored {
            cache.put_clean(key, stored_bytes, &mut |k, v| write(out, k, v));
        }
        cache.put_dirty(key, new_bytes, *topic_len, &mut |k, v| write(out, k, v));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::TraceRecord;
    use crate::engine::kafka_streams::testing::run_keys;

    /// The requests of `keys` (one event each, in order) through a count with `cache_bytes`,
    /// as `op state key-byte value-len` with the state's short name; the open's seven and the
    /// close's three requests included.
    fn requests(keys: &[i64], cache_bytes: u64) -> Vec<String> {
        requests_of(keys, cache_bytes, None)
    }

    /// [`requests`] of an aggregate of `aggregate`'s size (a count with `None`).
    fn requests_of(
        keys: &[i64],
        cache_bytes: u64,
        aggregate: Option<AggregateBytes>,
    ) -> Vec<String> {
        let spec = KafkaStreamsSpec {
            cache_bytes,
            aggregate,
            ..KafkaStreamsSpec::default()
        };
        let sink = run_keys(&mut Count::new(&spec), keys);
        let short = ["default", "offsets", "data"];
        sink.records
            .iter()
            .filter_map(|r| match r {
                TraceRecord::Access {
                    op,
                    state,
                    key,
                    value_len,
                } => {
                    let key = match *state {
                        DATA => key.last().map_or(String::new(), |b| b.to_string()),
                        _ => String::from_utf8_lossy(key)
                            .replace("gadget-counts-changelog-0", "changelog"),
                    };
                    Some(format!(
                        "{} {} {key} {value_len}",
                        op.name(),
                        short[*state as usize]
                    ))
                }
                _ => None,
            })
            .collect()
    }

    const OPEN: [&str; 7] = [
        "seek default  0",
        "get offsets status 0",
        "put offsets status 8",
        "get offsets position 0",
        "get offsets changelog 0",
        "put offsets changelog 8",
        "put offsets position 40",
    ];
    const COMMIT: [&str; 2] = ["put offsets changelog 8", "put offsets position 206"];
    const CLOSE: &str = "put offsets status 8";

    fn expected(per_record: &[&[&str]]) -> Vec<String> {
        let mut all: Vec<String> = OPEN.iter().map(|s| s.to_string()).collect();
        for requests in per_record {
            all.extend(requests.iter().map(|s| s.to_string()));
            all.extend(COMMIT.iter().map(|s| s.to_string()));
        }
        all.extend(COMMIT.iter().map(|s| s.to_string()));
        all.push(CLOSE.to_string());
        all
    }

    #[test]
    fn with_the_default_cache_a_key_is_read_once_and_written_at_every_commit() {
        assert_eq!(
            requests(&[1, 2, 1], 10 << 20),
            expected(&[
                &["get data 1 0", "put data 1 16"],
                &["get data 2 0", "put data 2 16"],
                &["put data 1 16"],
            ])
        );
    }

    #[test]
    fn without_a_cache_every_record_reads_the_store_and_the_write_goes_at_once() {
        // the read finds the key the first write stored; caching it evicts it again, clean
        assert_eq!(
            requests(&[1, 1], 0),
            expected(&[
                &["get data 1 0", "put data 1 16"],
                &["get data 1 0", "put data 1 16"],
            ])
        );
    }

    #[test]
    fn a_cache_of_one_entry_evicts_the_older_key_which_is_read_again() {
        // one dirty count takes 75 bytes: 100 bytes hold one
        assert_eq!(
            requests(&[1, 2, 1], 100),
            expected(&[
                &["get data 1 0", "put data 1 16"],
                &["get data 2 0", "put data 2 16"],
                &["get data 1 0", "put data 1 16"],
            ])
        );
    }

    #[test]
    fn an_aggregate_sends_the_counts_requests_with_values_of_its_size() {
        let list = Some(AggregateBytes {
            initial: 0,
            per_record: 8,
        });
        // a key's value: the timestamp, then 8 bytes per record so far
        assert_eq!(
            requests_of(&[1, 2, 1], 10 << 20, list),
            expected(&[
                &["get data 1 0", "put data 1 16"],
                &["get data 2 0", "put data 2 16"],
                &["put data 1 24"],
            ])
        );
        let fixed = Some(AggregateBytes {
            initial: 32,
            per_record: 0,
        });
        assert_eq!(
            requests_of(&[1, 1], 0, fixed),
            expected(&[
                &["get data 1 0", "put data 1 40"],
                &["get data 1 0", "put data 1 40"],
            ])
        );
    }

    #[test]
    fn a_growing_aggregate_fills_the_cache_sooner() {
        // in 100 bytes a count's entry (75 bytes) stays; an aggregate growing by 30 bytes
        // a record outgrows the cache at its second record, so its third reads RocksDB again
        let reads = |got: Vec<String>| got.iter().filter(|r| r.starts_with("get data")).count();
        assert_eq!(reads(requests(&[1, 1, 1], 100)), 1);
        let grows = Some(AggregateBytes {
            initial: 0,
            per_record: 30,
        });
        assert_eq!(reads(requests_of(&[1, 1, 1], 100, grows)), 2);
        assert_eq!(
            AggregateBytes {
                initial: 0,
                per_record: 8
            }
            .value_bytes(3),
            32
        );
        assert_eq!(
            AggregateBytes {
                initial: 1 << 20,
                per_record: 1 << 16
            }
            .value_bytes(u64::MAX),
            u32::MAX
        );
    }

    #[test]
    fn an_application_checkpoints_after_restoring_and_commits_when_it_closes() {
        let spec = KafkaStreamsSpec {
            runner: super::super::Runner::Application,
            commit_every: u64::MAX,
            ..KafkaStreamsSpec::default()
        };
        let sink = run_keys(&mut Count::new(&spec), &[1, 2, 1]);
        let ops: Vec<(Op, StateId, u32)> = sink
            .records
            .iter()
            .filter_map(|r| match r {
                TraceRecord::Access {
                    op,
                    state,
                    value_len,
                    ..
                } => Some((*op, *state, *value_len)),
                _ => None,
            })
            .collect();
        // the open's seven, then the state updater's offset and empty position
        assert_eq!(ops[7..9], [(Op::Put, OFFSETS, 8), (Op::Put, OFFSETS, 40)]);
        // each key read once, both written at the closing commit only
        let data: Vec<Op> = ops
            .iter()
            .filter(|(_, s, _)| *s == DATA)
            .map(|(op, ..)| *op)
            .collect();
        assert_eq!(data, [Op::Get, Op::Get, Op::Put, Op::Put]);
        assert_eq!(ops.len(), 7 + 2 + 2 + 2 + 2 + 1);
    }
}
