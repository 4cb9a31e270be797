//! Every store replays the same traces and answers every read as the in-memory store does:
//! the same value length for each get, seek and next (so merges agree too), on every Flink
//! reference recording.

#[path = "../../gadget/tests/common.rs"]
mod common;
mod support;

use std::path::Path;

use gadget::trace::{open_trace, RecordRef};
use gadget_eval::run::issue;
use gadget_eval::store::{open_store, StoreKind, StoreSettings};
use gadget_eval::workload::{trace_state_names, RequestBlock};

#[test]
fn every_store_answers_every_read_of_every_reference_trace_as_the_memory_store_does() {
    let Some(shared) = common::shared_dir("store conformance") else {
        return;
    };
    let redis = support::RedisServer::start("store conformance");
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
        .collect();
    // one thread per trace: Redis answers over loopback, so the traces overlap their waits
    std::thread::scope(|scope| {
        for name in common::REFERENCE_TRACES {
            let (shared, settings, kinds) = (&shared, &settings, &kinds);
            scope.spawn(move || replay_everywhere(name, shared, settings, kinds));
        }
    });
}

/// Replays one reference trace into every store, comparing each read with the memory store's.
fn replay_everywhere(name: &str, shared: &Path, settings: &StoreSettings, kinds: &[StoreKind]) {
    let path = shared.join(format!("reference-traces/flink-1.20/{name}.tsv.gz"));
    let states = trace_state_names(&path).unwrap();
    let mut reader = open_trace(&path).unwrap();
    let dirs: Vec<tempfile::TempDir> = kinds.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    let mut stores: Vec<_> = kinds
        .iter()
        .zip(&dirs)
        .map(|(k, d)| open_store(*k, d.path(), &states, settings).unwrap())
        .collect();
    assert_eq!(stores[0].name(), "memory");
    let mut value = Vec::new();
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
