//! Every store replays the same traces and answers every read as the in-memory store does:
//! the same value length for each get, seek and next (so merges agree too), on Gadget's trace
//! of every Flink reference workload, whose every `get` finds what Flink's RocksDB found in
//! the recording (the same length, or nothing); the same number of entries for each range query of a KVBench
//! workload with range deletes and range queries; and the same answers on a trace of window
//! segments opened and dropped, as Kafka Streams opens and drops its segment stores.

#[path = "../../gadget/tests/common.rs"]
mod common;
mod support;

use std::path::Path;

use gadget::access::{Access, Op, ReadLen, StateId};
use gadget::config::Config;
use gadget_eval::store::{issue, open_store, Store, StoreKind, StoreSettings};
use gadget_eval::value::{ValueBytes, DEFAULT_COMPRESSION_RATIO};
use gadget_eval::workload::{RequestBlock, RequestStream, WorkloadSource};

/// KVBench with every operation kind, range deletes and range queries among them.
const KVBENCH_WITH_RANGES: &str = r#"
seed = 7
[kvbench]
inserts = 4000
updates = 1000
point_deletes = 300
range_deletes = 60
range_delete_selectivity = 0.01
point_queries = 1500
empty_query_fraction = 0.2
range_queries = 150
range_query_selectivity = 0.02
"#;

/// Set in the process [`lethe_answers_as_the_memory_store_does_in_a_process_of_its_own`]
/// starts: its tests compare Lethe alone with the memory store.
const LETHE_ONLY: &str = "GADGET_CONFORMANCE_LETHE_ONLY";

/// Every store of this build, the Redis ones only when their servers run; memory first.
/// Lethe, a second RocksDB library that a process running one cannot load, runs in a process
/// of its own, where it is the only store beside memory.
fn kinds_here(redis: bool, cluster: bool) -> Vec<StoreKind> {
    let lethe_only = std::env::var_os(LETHE_ONLY).is_some();
    StoreKind::all()
        .iter()
        .copied()
        .filter(|k| k.name() != "redis" || redis)
        .filter(|k| k.name() != "redis-cluster" || cluster)
        .filter(|k| match k.name() {
            "memory" => true,
            "lethe" => lethe_only,
            _ => !lethe_only,
        })
        .collect()
}

/// The Redis server, and a Redis Cluster beside it when asked for, for the Redis stores'
/// part of a test (kept while the test runs); none in Lethe's process.
struct Redis {
    server: Option<support::RedisServer>,
    cluster: Option<support::RedisCluster>,
}

impl Redis {
    /// Starts what `test` needs (a cluster only with `cluster`) and points `settings` at the
    /// server.
    fn start(test: &str, cluster: bool, settings: &mut StoreSettings) -> Redis {
        let server = if std::env::var_os(LETHE_ONLY).is_some() {
            None
        } else {
            support::RedisServer::start(test)
        };
        let cluster = server
            .as_ref()
            .filter(|_| cluster)
            .and_then(|_| support::RedisCluster::start(test));
        if let Some(r) = &server {
            settings.redis_url = r.url.clone();
        }
        Redis { server, cluster }
    }

    /// The stores to compare: every one this process can run, the Redis ones with a server.
    fn kinds(&self) -> Vec<StoreKind> {
        kinds_here(self.server.is_some(), self.cluster.is_some())
    }

    /// The cluster's address, when there is one.
    fn cluster_url(&self) -> Option<String> {
        self.cluster.as_ref().map(support::RedisCluster::url)
    }
}

/// Every test of this file again with Lethe beside the memory store, in a test process of
/// its own. Without Lethe's library it fails under `CI=true` and elsewhere skips, saying how to
/// build it.
#[cfg(feature = "lethe")]
#[test]
fn lethe_answers_as_the_memory_store_does_in_a_process_of_its_own() {
    if std::env::var_os(LETHE_ONLY).is_some() {
        return;
    }
    let Some(text) = gadget_eval::store::lethe::rerun_in_own_process(
        LETHE_ONLY,
        &["--test-threads=1", "--skip", "in_a_process_of_its_own"],
    ) else {
        return;
    };
    assert!(text.contains("4 passed"), "{text}");
}

/// Opens each of `kinds` with `states` in a directory of its own (kept while the stores live).
fn open_every(
    kinds: &[StoreKind],
    states: &[String],
    settings: &StoreSettings,
    cluster_url: Option<&str>,
) -> (Vec<tempfile::TempDir>, Vec<Box<dyn Store>>) {
    let dirs: Vec<tempfile::TempDir> = kinds.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    let stores = kinds
        .iter()
        .zip(&dirs)
        .map(|(k, d)| {
            let s = support::settings_for(*k, settings, cluster_url);
            open_store(*k, d.path(), states, &s).unwrap()
        })
        .collect();
    (dirs, stores)
}

/// Issues `req` to the memory store (`stores[0]`) and then to every other store, requiring
/// each to answer as the memory store did (`what` names the request); the memory store's
/// answer.
fn issue_everywhere(
    stores: &mut [Box<dyn Store>],
    block: &RequestBlock,
    req: &gadget_eval::workload::Request,
    value: &mut ValueBytes,
    what: &dyn Fn() -> String,
) -> Option<Option<usize>> {
    let expected = issue(stores[0].as_mut(), block, req, value)
        .unwrap_or_else(|e| panic!("{}: memory: {e}", what()));
    for s in stores.iter_mut().skip(1) {
        let got = issue(s.as_mut(), block, req, value)
            .unwrap_or_else(|e| panic!("{}: {}: {e}", what(), s.name()));
        assert_eq!(
            got,
            expected,
            "{}: {} answered {got:?}, memory {expected:?}",
            what(),
            s.name()
        );
    }
    expected
}

#[test]
fn every_store_answers_every_range_query_of_a_kvbench_workload_as_the_memory_store_does() {
    let mut settings = StoreSettings {
        write_buffer_size: 4 << 20,
        block_cache: 8 << 20,
        ..StoreSettings::default()
    };
    let redis = Redis::start("store conformance with range ops", true, &mut settings);
    let config = Config::parse(KVBENCH_WITH_RANGES, Path::new("kvbench-ranges.toml")).unwrap();
    let mut stream = RequestStream::start(WorkloadSource::Generate {
        config: Box::new(config),
        limit: None,
    })
    .unwrap();
    let states = stream.state_names.clone();
    let kinds = redis.kinds();
    let cluster_url = redis.cluster_url();
    let (_dirs, mut stores) = open_every(&kinds, &states, &settings, cluster_url.as_deref());
    let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
    let (mut range_queries, mut range_deletes, mut entries) = (0, 0, 0);
    while let Some(block) = stream.next_block() {
        for req in &block.requests {
            let expected = issue_everywhere(&mut stores, &block, req, &mut value, &|| {
                format!("a {}", req.op)
            });
            match req.op {
                Op::RangeQuery => {
                    range_queries += 1;
                    entries += expected.flatten().unwrap_or(0);
                }
                Op::RangeDelete => range_deletes += 1,
                _ => {}
            }
        }
        stream.recycle(block);
    }
    stream.finish().unwrap();
    assert_eq!((range_queries, range_deletes), (150, 60));
    assert!(entries > 150, "range queries found only {entries} entries");
}

/// A trace of window segments that come and go: four slots of a segment table, each opened
/// under a new name, written and read with every op for a while, then dropped (now and then
/// under an open iterator, or with batched writes pending) and later opened again, empty;
/// and a fifth state that lives throughout.
fn segments_opened_and_dropped() -> RequestBlock {
    const SLOTS: StateId = 4;
    const LIVE: StateId = 3;
    const CACHE: StateId = SLOTS;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut block = RequestBlock::default();
    let mut push = |op: Op, state: StateId, key: &[u8], value_len: u32| {
        block.push(&Access {
            op,
            state,
            key,
            value_len,
        });
    };
    for slot in 0..LIVE {
        push(
            Op::Open,
            slot,
            format!("counts.{}", u32::from(slot) * 60_000).as_bytes(),
            0,
        );
    }
    for segment in 0..40u32 {
        // the live slots: `segment`'s and the two after it
        let live = |i: u64| (segment as StateId + i as StateId) % SLOTS;
        for _ in 0..400 {
            let state = match next(4) {
                3 => CACHE,
                i => live(i),
            };
            let key = [b'k', b'a' + next(6) as u8, b'a' + next(4) as u8];
            let key = &key[..1 + next(3) as usize];
            let value_len = next(12) as u32;
            match next(16) {
                0..=2 => push(Op::Put, state, key, value_len),
                3 | 4 => push(Op::Merge, state, key, value_len),
                5 | 6 => push(Op::Get, state, key, 0),
                7 => push(Op::Delete, state, key, 0),
                // a scan: the nexts follow their seek at once, as in Flink's and Kafka
                // Streams' traces (RocksDB's iterators do not see later writes)
                8..=10 => {
                    push(Op::Seek, state, key, 0);
                    for _ in 0..next(5) {
                        push(Op::Next, state, &[], 0);
                    }
                }
                11 => push(Op::BatchPut, state, key, value_len),
                12 => push(Op::BatchDelete, state, key, 0),
                13 => push(Op::BatchCommit, 0, &[], 0),
                op => {
                    let end = [b'k', b'a' + next(7) as u8];
                    let bounds = [key, &end[..]].concat();
                    let op = if op == 14 {
                        Op::RangeQuery
                    } else {
                        Op::RangeDelete
                    };
                    push(op, state, &bounds, key.len() as u32);
                }
            }
        }
        // the oldest segment expires: dropped, at times under an open iterator
        let oldest = live(0);
        if segment % 3 == 0 {
            push(Op::Seek, oldest, b"k", 0);
        }
        push(Op::Drop, oldest, &[], 0);
        push(Op::Next, oldest, &[], 0);
        push(Op::Seek, oldest, b"", 0);
        // its slot holds the next segment but one
        let name = format!("counts.{}", (segment + LIVE as u32) * 60_000);
        push(Op::Open, live(LIVE as u64), name.as_bytes(), 0);
    }
    push(Op::BatchCommit, 0, &[], 0);
    block
}

#[test]
fn every_store_answers_a_trace_of_segments_opened_and_dropped_as_the_memory_store_does() {
    let mut settings = StoreSettings {
        write_buffer_size: 1 << 20,
        block_cache: 1 << 20,
        lmdb_map_size: 256 << 20,
        ..StoreSettings::default()
    };
    let redis = Redis::start("store conformance with drops", true, &mut settings);
    let states: Vec<String> = (0..4)
        .map(|slot| format!("counts.slot-{slot}"))
        .chain(["offsets".to_string()])
        .collect();
    let kinds = redis.kinds();
    let cluster_url = redis.cluster_url();
    let (_dirs, mut stores) = open_every(&kinds, &states, &settings, cluster_url.as_deref());
    assert_eq!(stores[0].name(), "memory");
    let block = segments_opened_and_dropped();
    let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
    let (mut drops, mut opens, mut found) = (0, 0, 0);
    for (index, req) in block.requests.iter().enumerate() {
        let expected = issue_everywhere(&mut stores, &block, req, &mut value, &|| {
            format!("request #{index} ({} on state {})", req.op, req.state)
        });
        match req.op {
            Op::Drop => drops += 1,
            Op::Open => opens += 1,
            _ => found += usize::from(matches!(expected, Some(Some(n)) if n > 0)),
        }
    }
    for s in &mut stores {
        s.flush().unwrap();
    }
    assert_eq!((drops, opens), (40, 43));
    assert!(found > 1000, "only {found} reads found something");
}

#[test]
fn every_store_answers_every_read_of_every_reference_trace_as_the_memory_store_does() {
    let Some(shared) = common::shared_dir("store conformance") else {
        return;
    };
    // a small write buffer, so that reads find entries in flushed files as well as in the
    // memtable within the requests replayed
    let mut settings = StoreSettings {
        write_buffer_size: 256 << 10,
        block_cache: 8 << 20,
        ..StoreSettings::default()
    };
    let redis = Redis::start("store conformance", true, &mut settings);
    let kinds = redis.kinds();
    let cluster_url = redis.cluster_url();
    // one thread per trace: Redis answers over loopback, so the traces overlap their waits
    std::thread::scope(|scope| {
        for name in common::REFERENCE_TRACES {
            let (shared, settings, kinds) = (&shared, &settings, &kinds);
            let cluster_url = cluster_url.as_deref();
            scope.spawn(move || replay_everywhere(name, shared, settings, kinds, cluster_url));
        }
    });
}

/// The requests of each reference workload replayed: every op kind of every trace appears
/// within its first 1,200 requests (the RocksDB-timer trace's first event comes after its
/// 512 start-up requests), so 40,000 cover each op many times over and dozens of watermarks'
/// deletes; 120,000 of each (in 12 stores) took CI three minutes here.
const REQUESTS_PER_TRACE: u64 = 40_000;

/// What each `get` of a Flink recording found, in order, as the trace reader reads it.
fn recorded_gets(path: &Path) -> Vec<ReadLen> {
    let mut reader = gadget::trace::open_trace(path).unwrap();
    let mut found = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if let gadget::trace::RecordRef::Access(a) = record {
            if a.op == Op::Get {
                found.push(ReadLen::from_value_len(a.value_len));
            }
        }
    }
    assert!(
        !found.contains(&ReadLen::Unknown),
        "a Flink recording says what every get found"
    );
    found
}

/// Replays Gadget's trace of one reference workload (`examples/flink-reference/NAME.toml`,
/// its first [`REQUESTS_PER_TRACE`] requests) into every store, comparing each read with the
/// memory store's, and each `get` with what Flink's RocksDB found for it in the recording:
/// the reproduced trace's every read finds a value of the recorded length, or none.
fn replay_everywhere(
    name: &str,
    shared: &Path,
    settings: &StoreSettings,
    kinds: &[StoreKind],
    cluster_url: Option<&str>,
) {
    let recording = shared.join(format!("reference-traces/flink-1.20/{name}.tsv.gz"));
    let recorded = recorded_gets(&recording);
    let example = common::project_root().join(format!("examples/flink-reference/{name}.toml"));
    let config = Config::load(&example).unwrap();
    let mut stream = RequestStream::start(WorkloadSource::Generate {
        config: Box::new(config),
        limit: Some(REQUESTS_PER_TRACE),
    })
    .unwrap();
    let states = stream.state_names.clone();
    let (_dirs, mut stores) = open_every(kinds, &states, settings, cluster_url);
    assert_eq!(stores[0].name(), "memory");
    let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
    let (mut index, mut gets, mut found) = (0u64, 0usize, 0u64);
    while let Some(block) = stream.next_block() {
        for req in &block.requests {
            let expected = issue_everywhere(&mut stores, &block, req, &mut value, &|| {
                format!(
                    "{name}: request #{index} ({} on state {})",
                    req.op, states[req.state as usize]
                )
            });
            if req.op == Op::Get {
                let read = ReadLen::of(expected.expect("a get reads"));
                assert_eq!(
                    Some(&read),
                    recorded.get(gets),
                    "{name}: get #{gets} (request #{index}, state {}) found {read:?}; Flink \
                     found {:?}",
                    states[req.state as usize],
                    recorded.get(gets)
                );
                gets += 1;
                found += u64::from(matches!(read, ReadLen::Found(_)));
            }
            index += 1;
        }
        stream.recycle(block);
    }
    stream.finish().unwrap();
    let names: Vec<&str> = stores.iter().map(|s| s.name()).collect();
    eprintln!(
        "{name}: {index} requests, {gets} gets ({found} found) as Flink's, agreeing across {}",
        names.join(", ")
    );
    assert!(index > 10_000, "{name}: only {index} requests");
    assert!(gets > 1_000, "{name}: only {gets} gets");
}

/// Requests of each Kafka Streams and Spark reference workload replayed: their ops (segment
/// stores opened and dropped, Spark's versioned commits, scans) recur every few hundred.
const REQUESTS_PER_ENGINE_WORKLOAD: u64 = 10_000;

/// Every store answers every read of every Kafka Streams and Spark reference workload as the
/// memory store does, whose answers `gadget gen --reads` writes into their traces and which
/// the recorder tests hold to the engines' own (`trace diff --reads` against recordings): so
/// every get finds, in every store, what Kafka Streams' or Spark's RocksDB found.
#[test]
fn every_store_answers_every_read_of_the_kafka_streams_and_spark_workloads_as_the_memory_store_does(
) {
    // their configs read the Borg job events beside the project
    if common::shared_dir("store conformance, other engines").is_none() {
        return;
    }
    let mut settings = StoreSettings {
        write_buffer_size: 256 << 10,
        block_cache: 8 << 20,
        ..StoreSettings::default()
    };
    let redis = Redis::start("store conformance, other engines", false, &mut settings);
    let kinds = redis.kinds();
    let root = common::project_root();
    let mut workloads = Vec::new();
    for engine in ["kafka-streams-reference", "spark-reference"] {
        for entry in std::fs::read_dir(root.join("examples").join(engine)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                workloads.push(path);
            }
        }
    }
    workloads.sort();
    assert!(workloads.len() >= 10, "{workloads:?}");
    std::thread::scope(|scope| {
        for path in &workloads {
            let (settings, kinds) = (&settings, &kinds);
            scope.spawn(move || {
                let config = Config::load(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
                replay_engine_workload(path, config, settings, kinds)
            });
        }
    });
}

/// Replays the first [`REQUESTS_PER_ENGINE_WORKLOAD`] requests of `config` into every store,
/// comparing each read with the memory store's.
fn replay_engine_workload(
    path: &Path,
    config: Config,
    settings: &StoreSettings,
    kinds: &[StoreKind],
) {
    let name = path.file_name().unwrap().to_string_lossy();
    let mut stream = RequestStream::start(WorkloadSource::Generate {
        config: Box::new(config),
        limit: Some(REQUESTS_PER_ENGINE_WORKLOAD),
    })
    .unwrap();
    let states = stream.state_names.clone();
    let (_dirs, mut stores) = open_every(kinds, &states, settings, None);
    let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
    let (mut index, mut gets) = (0u64, 0u64);
    while let Some(block) = stream.next_block() {
        for req in &block.requests {
            issue_everywhere(&mut stores, &block, req, &mut value, &|| {
                format!(
                    "{name}: request #{index} ({} on state {})",
                    req.op, states[req.state as usize]
                )
            });
            gets += u64::from(req.op == Op::Get);
            index += 1;
        }
        stream.recycle(block);
    }
    stream.finish().unwrap();
    eprintln!("{name}: {index} requests, {gets} gets, agreeing across every store");
    assert!(index > 1_000, "{name}: only {index} requests");
    assert!(gets > 0, "{name}: no gets");
}
