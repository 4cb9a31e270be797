//! Shards of a parallel Flink job (`run --parallelism P --shard i/N`): each subtask's stream
//! holds exactly its own requests, knows their places in the job's order, and the shards'
//! requests with their intended starts are together the whole job's, for every arrival
//! process and any number of shards.

use std::path::Path;

use gadget::config::Config;
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::job::JobSubtasks;
use gadget_eval::shard::Shard;
use gadget_eval::workload::{RequestStream, WorkloadSource};

#[path = "support/workload.rs"]
mod workload;

const P: u32 = 7;

/// The tumbling window job of parallelism [`P`]: endless and cut at `limit` requests, or of
/// 20,000 events.
fn job(limit: Option<u64>) -> Config {
    let text = match limit {
        Some(_) => workload::ENDLESS_TUMBLING.to_string(),
        None => workload::ENDLESS_TUMBLING.replace(
            "type = \"synthetic\"",
            "type = \"synthetic\"\nevents = 20000",
        ),
    };
    let mut config = Config::parse(&text, Path::new("w.toml")).unwrap();
    config.set_parallelism(P).unwrap();
    config.limit = limit;
    config
}

/// One request of a subtask: its place in the job's order, op, state and key.
type Placed = (u64, String, u16, Vec<u8>);

/// Subtask `s`'s requests with their places in the job's order, and the job's total.
fn subtask(config: &Config, s: u32) -> (Vec<Placed>, u64) {
    let mut stream = RequestStream::start(WorkloadSource::JobSubtask {
        config: Box::new(config.for_subtask(s).unwrap()),
        limit: None,
    })
    .unwrap();
    let mut place = 0u64;
    let mut out = Vec::new();
    while let Some(block) = stream.next_block() {
        for (i, r) in block.requests.iter().enumerate() {
            place += block.others_before(i);
            out.push((
                place,
                r.op.name().to_string(),
                r.state,
                block.key(r).to_vec(),
            ));
            place += 1;
        }
        stream.recycle(block);
    }
    let total = place + stream.others_after_last();
    stream.finish().unwrap();
    (out, total)
}

/// The requests of `config` generated alone, as `gadget gen --subtask` does.
fn alone(config: &Config) -> Vec<(String, u16, Vec<u8>)> {
    let mut stream = RequestStream::start(WorkloadSource::Generate {
        config: Box::new(config.clone()),
        limit: None,
    })
    .unwrap();
    let mut out = Vec::new();
    while let Some(block) = stream.next_block() {
        for r in &block.requests {
            out.push((r.op.name().to_string(), r.state, block.key(r).to_vec()));
        }
        stream.recycle(block);
    }
    stream.finish().unwrap();
    out
}

#[test]
fn each_subtask_issues_what_it_issues_alone_and_together_they_fill_the_job() {
    // without a limit, so that every subtask runs to the end as it does alone
    let config = job(None);
    let mut places = Vec::new();
    let mut totals = Vec::new();
    for s in 0..P {
        let (requests, total) = subtask(&config, s);
        let own: Vec<(String, u16, Vec<u8>)> = requests
            .iter()
            .map(|(_, op, state, key)| (op.clone(), *state, key.clone()))
            .collect();
        assert_eq!(own, alone(&config.for_subtask(s).unwrap()), "subtask {s}");
        places.extend(requests.into_iter().map(|r| r.0));
        totals.push(total);
    }
    assert!(totals.iter().all(|t| *t == totals[0]), "{totals:?}");
    places.sort_unstable();
    assert_eq!(places, (0..totals[0]).collect::<Vec<u64>>());
}

#[test]
fn the_shards_starts_together_are_the_jobs_schedule_for_every_arrival_process() {
    let config = job(Some(20_000));
    let streams: Vec<Vec<Placed>> = (0..P).map(|s| subtask(&config, s).0).collect();
    let total: usize = streams.iter().map(Vec::len).sum();
    assert_eq!(total, 20_000, "the limit is the job's");
    let arrivals = [
        ArrivalProcess::Constant { rate: 50_000.0 },
        ArrivalProcess::Poisson { rate: 50_000.0 },
        ArrivalProcess::BModel {
            rate: 50_000.0,
            bias: 0.7,
            bin_ns: 1_000_000,
            levels: 6,
        },
        ArrivalProcess::Diurnal {
            rate: 50_000.0,
            period_ns: 100_000_000,
            modulation: 0.5,
            alpha: 2.5,
        },
    ];
    for arrival in arrivals {
        // one client driving the whole job: a start for each of its requests in order
        let mut whole = arrival.schedule(11);
        let expected: Vec<(u64, u64)> = (0..total as u64)
            .map(|place| (place, whole.next_start()))
            .collect();
        for count in [1, 2, 3, 7] {
            let mut union = Vec::new();
            for index in 0..count {
                let range = JobSubtasks::of_shard(Some(Shard { index, count }), P).unwrap();
                for s in range {
                    // each subtask as the driver keeps it: the others' starts drawn, its own kept
                    let mut schedule = arrival.schedule(11);
                    let mut at = 0;
                    for (place, ..) in &streams[s as usize] {
                        schedule.skip(place - at);
                        union.push((*place, schedule.next_start()));
                        at = place + 1;
                    }
                }
            }
            union.sort_unstable();
            assert_eq!(union, expected, "{arrival:?}, {count} shards");
        }
    }
}
