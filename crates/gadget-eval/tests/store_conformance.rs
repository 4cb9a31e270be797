//! Every store replays the same traces and answers every read as the in-memory store does:
//! the same value length for each get, seek and next (so merges agree too), on every Flink
//! reference recording; and the same number of entries for each range query of a KVBench
//! workload with range deletes and range queries.

#[path = "../../gadget/tests/common.rs"]
mod common;
mod support;

use std::path::Path;

use gadget::access::Op;
use gadget::config::Config;
use gadget::trace::{open_trace, RecordRef};
use gadget_eval::run::issue;
use gadget_eval::store::{open_store, StoreKind, StoreSettings};
use gadget_eval::value::{ValueBytes, DEFAULT_COMPRESSION_RATIO};
use gadget_eval::workload::{trace_state_names, RequestBlock, RequestStream, WorkloadSource};

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

#[test]
fn every_store_answers_every_range_query_of_a_kvbench_workload_as_the_memory_store_does() {
    let redis = support::RedisServer::start("store conformance with range ops");
    let cluster = redis
        .as_ref()
        .and_then(|_| support::RedisCluster::start("store conformance with range ops"));
    let mut settings = StoreSettings {
        write_buffer_size: 4 << 20,
        block_cache: 8 << 20,
        ..StoreSettings::default()
    };
    if let Some(r) = &redis {
        settings.redis_url = r.url.clone();
    }
    let config = Config::parse(KVBENCH_WITH_RANGES, Path::new("kvbench-ranges.toml")).unwrap();
    let mut stream = RequestStream::start(WorkloadSource::Generate {
        config: Box::new(config),
        limit: None,
    })
    .unwrap();
    let states = stream.state_names.clone();
    let kinds: Vec<StoreKind> = StoreKind::all()
        .iter()
        .copied()
        .filter(|k| k.name() != "redis" || redis.is_some())
        .filter(|k| k.name() != "redis-cluster" || cluster.is_some())
        .collect();
    let dirs: Vec<tempfile::TempDir> = kinds.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    let cluster_url = cluster.as_ref().map(support::RedisCluster::url);
    let mut stores: Vec<_> = kinds
        .iter()
        .zip(&dirs)
        .map(|(k, d)| {
            let s = support::settings_for(*k, &settings, cluster_url.as_deref());
            open_store(*k, d.path(), &states, &s).unwrap()
        })
        .collect();
    let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
    let (mut range_queries, mut range_deletes, mut entries) = (0, 0, 0);
    while let Some(block) = stream.next_block() {
        for req in &block.requests {
            let expected = issue(stores[0].as_mut(), &block, req, &mut value).unwrap();
            for s in stores.iter_mut().skip(1) {
                let got = issue(s.as_mut(), &block, req, &mut value).unwrap();
                assert_eq!(
                    got,
                    expected,
                    "{} answered a {} differently",
                    s.name(),
                    req.op
                );
            }
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

#[test]
fn every_store_answers_every_read_of_every_reference_trace_as_the_memory_store_does() {
    let Some(shared) = common::shared_dir("store conformance") else {
        return;
    };
    let redis = support::RedisServer::start("store conformance");
    let cluster = redis
        .as_ref()
        .and_then(|_| support::RedisCluster::start("store conformance"));
    let mut settings = StoreSettings {
        write_buffer_size: 4 << 20,
        block_cache: 8 << 20,
        ..StoreSettings::default()
    };
    if let Some(r) = &redis {
        settings.redis_url = r.url.clone();
    }
    let kinds: Vec<StoreKind> = StoreKind::all()
        .iter()
        .copied()
        .filter(|k| k.name() != "redis" || redis.is_some())
        .filter(|k| k.name() != "redis-cluster" || cluster.is_some())
        .collect();
    let cluster_url = cluster.as_ref().map(support::RedisCluster::url);
    // one thread per trace: Redis answers over loopback, so the traces overlap their waits
    std::thread::scope(|scope| {
        for name in common::REFERENCE_TRACES {
            let (shared, settings, kinds) = (&shared, &settings, &kinds);
            let cluster_url = cluster_url.as_deref();
            scope.spawn(move || replay_everywhere(name, shared, settings, kinds, cluster_url));
        }
    });
}

/// Replays one reference trace into every store, comparing each read with the memory store's.
fn replay_everywhere(
    name: &str,
    shared: &Path,
    settings: &StoreSettings,
    kinds: &[StoreKind],
    cluster_url: Option<&str>,
) {
    let path = shared.join(format!("reference-traces/flink-1.20/{name}.tsv.gz"));
    let states = trace_state_names(&path).unwrap();
    let mut reader = open_trace(&path).unwrap();
    let dirs: Vec<tempfile::TempDir> = kinds.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    let mut stores: Vec<_> = kinds
        .iter()
        .zip(&dirs)
        .map(|(k, d)| {
            let s = support::settings_for(*k, settings, cluster_url);
            open_store(*k, d.path(), &states, &s).unwrap()
        })
        .collect();
    assert_eq!(stores[0].name(), "memory");
    let mut value = ValueBytes::new(1, DEFAULT_COMPRESSION_RATIO);
    let mut block = RequestBlock::default();
    let (mut reads, mut found) = (0u64, 0u64);
    let mut index = 0u64;
    while let Some(r) = reader.next_record().unwrap() {
        let RecordRef::Access(a) = r else { continue };
        block.requests.clear();
        block.keys.clear();
        block.push(&a);
        let req = block.requests[0];
        let expected = issue(stores[0].as_mut(), &block, &req, &mut value).unwrap();
        for s in stores.iter_mut().skip(1) {
            let got = issue(s.as_mut(), &block, &req, &mut value).unwrap();
            assert_eq!(
                got, expected,
                "{name}: request #{index} ({} on state {}): {} answered {got:?}, memory {expected:?}",
                a.op, states[a.state as usize], s.name()
            );
        }
        if let Some(len) = expected {
            reads += 1;
            found += len.is_some() as u64;
        }
        index += 1;
    }
    let names: Vec<&str> = stores.iter().map(|s| s.name()).collect();
    eprintln!(
        "{name}: {index} requests, {reads} reads ({found} found) agree across {}",
        names.join(", ")
    );
    assert!(index > 10_000, "{name}: only {index} requests");
}
