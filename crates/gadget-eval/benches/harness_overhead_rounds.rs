//! The harness overhead as a ratio, on a host whose speed drifts: the three paths of the
//! `harness_overhead` bench and the tight loop timed (the clock read once per request, as the
//! driver reads it, and nothing else measured) run in alternation, round after round, so that
//! each round's ratio compares runs made within a second of each other. Prints each path's median
//! throughput with the median of the rounds' ratios to the tight loop, and each path's best
//! throughput with its ratio to the tight loop's best (noise here only ever slows a run down,
//! so the best run is the closest to each path's own cost).
//!
//! `cargo bench -p gadget-eval --bench harness_overhead_rounds` (`GADGET_BENCH_ROUNDS`, default
//! 15, sets the rounds). `GADGET_BENCH_PATH=tight|tight-timed|stream|driver|shard-stream|shard|none` runs
//! one path once instead, for a profiler (`shard-stream`: the stream of the only shard of one,
//! whose producer asks of every request whether it is the shard's, nothing measured; `shard`:
//! the driver of that stream): instruction counts (`valgrind --tool=cachegrind`) do not drift
//! with the host's speed; `none` counts what every path shares, the workload's generation.
//! There the driver's time-series intervals are an hour long, not a second: a run 50 times
//! slower under valgrind would close 50 times as many intervals as a run at full speed, and
//! how many depends on the host's speed that second, so the count would drift with it.

mod common;

use std::time::Instant;

use common::{Workload, SECOND};
use gadget_eval::experiment::verdict::{Ratio, MIN_BLOCKS, RESAMPLES};
use gadget_eval::run::Warmup;
use gadget_eval::shard::Shard;

/// An interval no profiled run reaches the end of.
const HOUR: u64 = 3_600 * SECOND;

/// The only shard of one: every request issued, each asked whether it is the shard's.
const WHOLE: Shard = Shard { index: 0, count: 1 };

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("GADGET_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15)
        .max(1);
    // the clock's calibration (tens of milliseconds, once per process) before any path, as
    // `gadget run` does it before its start line: else the first path that reads the clock
    // would pay for it in its first run
    gadget_eval::clock::calibrate_clock();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let workload = Workload::generate(&dir.path().join("bench.gtrace"));
    let requests = workload.requests() as f64;
    let rate = |f: &dyn Fn()| {
        let started = Instant::now();
        f();
        requests / started.elapsed().as_secs_f64()
    };
    if let Ok(path) = std::env::var("GADGET_BENCH_PATH") {
        // one path, once, for a profiler (`none`: only the workload's generation, the part
        // every path shares)
        let r = match path.as_str() {
            "tight" => rate(&|| {
                std::hint::black_box(workload.tight_loop());
            }),
            "tight-timed" => rate(&|| {
                std::hint::black_box(workload.tight_loop_timed());
            }),
            "stream" => rate(&|| {
                std::hint::black_box(workload.stream_unmeasured(None));
            }),
            "shard-stream" => rate(&|| {
                std::hint::black_box(workload.stream_unmeasured(Some(WHOLE)));
            }),
            "driver" => rate(&|| {
                std::hint::black_box(workload.driver(HOUR));
            }),
            "shard" => rate(&|| {
                std::hint::black_box(workload.drive_closed_loop(Warmup::None, HOUR, Some(WHOLE)));
            }),
            "none" => 0.0,
            other => {
                panic!(
                    "GADGET_BENCH_PATH={other}: expected tight, tight-timed, stream, driver, \
                     shard-stream, shard or none"
                )
            }
        };
        println!("{path}: {:.2} M requests/s", r / 1e6);
        return;
    }
    let paths: [(&str, &dyn Fn()); 5] = [
        ("tight loop", &|| {
            std::hint::black_box(workload.tight_loop());
        }),
        ("tight loop again (A/A)", &|| {
            std::hint::black_box(workload.tight_loop());
        }),
        ("tight loop, timed", &|| {
            std::hint::black_box(workload.tight_loop_timed());
        }),
        ("stream, unmeasured", &|| {
            std::hint::black_box(workload.stream_unmeasured(None));
        }),
        ("driver", &|| {
            std::hint::black_box(workload.driver(SECOND));
        }),
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); paths.len()];
    for round in 0..rounds {
        for path in order(round, paths.len()) {
            rates[path].push(rate(paths[path].1));
        }
        let line: Vec<String> = paths
            .iter()
            .zip(&rates)
            .map(|((name, _), r)| format!("{name} {:.2}", r[round] / 1e6))
            .collect();
        eprintln!("round {}/{rounds} (M/s): {}", round + 1, line.join(", "));
    }
    println!("harness overhead, {rounds} rounds of {requests} requests into the memory store:");
    println!(
        "  path                      median     best       ÷ tight loop, paired by round [95% interval]"
    );
    for (i, ((name, _), r)) in paths.iter().zip(&rates).enumerate() {
        // the first path is the tight loop, the others' baseline
        let ratio = if i == 0 {
            String::new()
        } else {
            paired(r, &rates[0])
        };
        println!(
            "  {name:<24}  {:>6.2} M/s  {:>6.2} M/s  {ratio}",
            median(&mut r.clone()) / 1e6,
            r.iter().copied().fold(0.0, f64::max) / 1e6,
        );
    }
    println!(
        "  driver ÷ tight loop, timed (what the harness costs beyond reading the clock): {}",
        paired(&rates[4], &rates[2])
    );
}

/// The order the paths run in, in round `round`: rotated by one each round and reversed every
/// other round, so that each path runs at every position and after every other path alike, and
/// neither the host's drift within a round nor what the path before left behind (a freed
/// store, a warm cache) favours one path.
fn order(round: usize, paths: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..paths).map(|i| (i + round) % paths).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// `rates` over `baseline`'s, paired by round as Gadget's verdicts pair cells within a block:
/// the geometric mean of the rounds' ratios with its bootstrap interval.
fn paired(rates: &[f64], baseline: &[f64]) -> String {
    let pairs: Vec<(f64, f64)> = rates
        .iter()
        .copied()
        .zip(baseline.iter().copied())
        .collect();
    match Ratio::of_pairs(&pairs, RESAMPLES, 1) {
        Some(r) => format!(
            "{:.1}% [{:.1}%, {:.1}%]",
            100.0 * r.ratio,
            100.0 * r.low,
            100.0 * r.high
        ),
        None => format!("(fewer than {MIN_BLOCKS} rounds)"),
    }
}
