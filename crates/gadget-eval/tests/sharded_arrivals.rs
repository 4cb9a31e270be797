//! `--shard i/N`: shards of one workload issue every request exactly once between them, each
//! on the schedule of the whole workload (its requests keep their global intended starts),
//! and the same shard twice issues the same requests.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use gadget::config::Config;
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::run::{drive, RunOptions, Warmup};
use gadget_eval::shard::Shard;
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::workload::{RequestStream, WorkloadSource};
use gadget_results::RunReport;

#[path = "support/workload.rs"]
mod workload;

const REQUESTS: u64 = 4_000;
const RATE: f64 = 20_000.0;

/// Drives [`REQUESTS`] requests of the workload, or `shard`'s part of them, at a constant
/// [`RATE`] into a memory store.
fn run(shard: Option<Shard>) -> RunReport {
    let config = Config::parse(workload::ENDLESS_TUMBLING, Path::new("w.toml")).unwrap();
    run_config(
        config,
        REQUESTS,
        ArrivalProcess::Constant { rate: RATE },
        shard,
    )
}

/// Drives `requests` requests of `config`, or `shard`'s part of them, on `arrival` into a
/// memory store.
fn run_config(
    config: Config,
    requests: u64,
    arrival: ArrivalProcess,
    shard: Option<Shard>,
) -> RunReport {
    let mut stream = RequestStream::start(WorkloadSource::Generate {
        config: Box::new(config),
        limit: Some(requests),
    })
    .unwrap();
    let mut store = MemoryStore::new(stream.state_names.len());
    let options = RunOptions {
        arrival,
        seed: 1,
        warmup: Warmup::None,
        interval_ns: 100_000_000,
        keep_intervals: false,
        stop: Arc::new(AtomicBool::new(false)),
        value_compression_ratio: gadget_eval::value::DEFAULT_COMPRESSION_RATIO,
        duration_ns: None,
        shard,
        start_at: None,
        job: None,
    };
    let mut measured = drive(
        &mut store,
        &mut stream,
        &options,
        std::time::Instant::now(),
        &mut |_| {},
    );
    assert!(measured.take_failure().is_none());
    stream.finish().unwrap();
    measured.report("memory", &[], &options)
}

#[test]
fn shards_issue_every_request_once_on_the_whole_workloads_schedule() {
    let whole = run(None);
    assert_eq!(whole.requests, REQUESTS);
    let shards: Vec<RunReport> = (0..2)
        .map(|index| run(Some(Shard { index, count: 2 })))
        .collect();
    let issued: Vec<u64> = shards.iter().map(|r| r.requests).collect();
    assert_eq!(issued.iter().sum::<u64>(), REQUESTS, "{issued:?}");
    // each shard's target is its share of the rate; the shares add up to the whole
    let targets: f64 = shards.iter().map(|r| r.target_rate.unwrap()).sum();
    assert!((targets - RATE).abs() < 1e-6, "{targets}");
    for (i, r) in shards.iter().enumerate() {
        assert!(
            r.requests > REQUESTS / 4,
            "shard {i} has {} requests",
            r.requests
        );
        // its last request was due near the end of the whole schedule (0.2 s), not at the
        // end of a schedule of its own requests alone (about 0.1 s): the open loop waits
        // for every intended start, so this is a bound, not a timing
        assert!(
            r.seconds >= 0.15,
            "shard {i} ended after {} s: its requests kept their own schedule",
            r.seconds
        );
    }
    let again = run(Some(Shard { index: 0, count: 2 }));
    assert_eq!(
        again.requests, shards[0].requests,
        "a shard is deterministic"
    );
}

#[test]
fn every_shard_that_writes_to_a_batch_commits_it_whatever_state_the_commit_names() {
    // Flink's RocksDB timers: batch writes to the timer state, committed under `default`
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/tumbling-incr-zipf.toml");
    let commits = |shard: Option<Shard>| {
        let config = Config::load(&path).unwrap();
        let report = run_config(config, 200_000, ArrivalProcess::ClosedLoop, shard);
        report
            .latency
            .iter()
            .find(|row| row.op == "batch_commit")
            .map_or(0, |row| row.ops)
    };
    let whole = commits(None);
    assert!(whole > 10, "the workload commits batches: {whole}");
    let own: Vec<u64> = (0..2)
        .map(|index| commits(Some(Shard { index, count: 2 })))
        .collect();
    // each shard commits the batches it wrote to (a commit of an empty batch, which no shard
    // wrote to, is no shard's)
    assert!(
        own.iter().all(|&n| n > 0 && n <= whole),
        "the shards' commits {own:?} of the whole workload's {whole}"
    );
}
