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
use gadget_eval::workload::{Production, RequestStream, WorkloadSource};
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
    let mut stream = RequestStream::start_with(
        WorkloadSource::Generate {
            config: Box::new(config),
            limit: Some(requests),
        },
        Production {
            event_times: arrival.uses_event_time(),
            shard,
        },
    )
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

/// One request of a stream: its place in the workload's order, op, state, key and event time.
type Placed = (u64, &'static str, u16, Vec<u8>, i64);

/// The requests of `shard`'s stream of `config` (every request without one), each in its place
/// in the workload's order, with the stream's first event time, and the workload's total.
fn placed(config: &Config, requests: u64, shard: Option<Shard>) -> (Vec<Placed>, i64, u64) {
    let mut stream = RequestStream::start_with(
        WorkloadSource::Generate {
            config: Box::new(config.clone()),
            limit: Some(requests),
        },
        Production {
            event_times: true,
            shard,
        },
    )
    .unwrap();
    assert_eq!(stream.shard(), shard);
    let (mut place, mut out) = (0u64, Vec::new());
    while let Some(block) = stream.next_block() {
        for (i, r) in block.requests.iter().enumerate() {
            place += block.others_before(i);
            let time = block.event_times_us[i];
            out.push((place, r.op.name(), r.state, block.key(r).to_vec(), time));
            place += 1;
        }
        stream.recycle(block);
    }
    let first = stream
        .first_event_time_us()
        .expect("event times were given");
    let total = place + stream.others_after_last();
    stream.finish().unwrap();
    (out, first, total)
}

#[test]
fn a_shards_stream_keeps_its_requests_in_their_places_with_the_whole_workloads_event_times() {
    // RocksDB timers: batch writes to the timer state, committed under `default`
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/tumbling-incr-zipf.toml");
    let config = Config::load(&path).unwrap();
    let requests = 30_000;
    let (whole, first, total) = placed(&config, requests, None);
    assert_eq!((whole.len() as u64, total), (requests, requests));
    for count in [2, 3] {
        let mut union: Vec<Placed> = Vec::new();
        for index in 0..count {
            let (own, own_first, own_total) =
                placed(&config, requests, Some(Shard { index, count }));
            assert_eq!(
                own_total, total,
                "shard {index}/{count} counts the whole workload"
            );
            assert_eq!(
                own_first, first,
                "the workload's first event time, whoever issues it"
            );
            assert!(!own.is_empty() && own.len() < whole.len());
            union.extend(own);
        }
        union.sort();
        // a batch is committed by every shard that wrote to it: its commit is each one's
        let mut commits_of_several = 0;
        union.dedup_by(|b, a| {
            let same = a == b;
            if same {
                assert_eq!(
                    a.1, "batch_commit",
                    "only a commit is issued by several shards"
                );
                commits_of_several += 1;
            }
            same
        });
        // and by none when none wrote to it
        let mut kept = union.iter().peekable();
        for w in &whole {
            if kept.peek() == Some(&w) {
                kept.next();
            } else {
                assert_eq!(w.1, "batch_commit", "{count} shards: no shard issued {w:?}");
            }
        }
        assert_eq!(
            kept.next(),
            None,
            "{count} shards: every request is the workload's"
        );
        assert!(commits_of_several > 0, "{count} shards share some batches");
    }
}
