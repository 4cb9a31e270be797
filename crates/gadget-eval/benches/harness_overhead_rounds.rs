//! The harness overhead as a ratio, on a host whose speed drifts: the three paths of the
//! `harness_overhead` bench run in alternation, round after round, so that each round's
//! ratio compares runs made within a second of each other. Prints each path's median
//! throughput with the median of the rounds' ratios to the tight loop, and each path's best
//! throughput with its ratio to the tight loop's best (noise here only ever slows a run down,
//! so the best run is the closest to each path's own cost).
//!
//! `cargo bench -p gadget-eval --bench harness_overhead_rounds` (`GADGET_BENCH_ROUNDS`, default
//! 15, sets the rounds). `GADGET_BENCH_PATH=tight|stream|driver|shard-stream|shard|none` runs
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
                    "GADGET_BENCH_PATH={other}: expected tight, stream, driver, shard-stream, \
                     shard or none"
                )
            }
        };
        println!("{path}: {:.2} M requests/s", r / 1e6);
        return;
    }
    let (mut tight, mut stream, mut driver) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        tight.push(rate(&|| {
            std::hint::black_box(workload.tight_loop());
        }));
        stream.push(rate(&|| {
            std::hint::black_box(workload.stream_unmeasured(None));
        }));
        driver.push(rate(&|| {
            std::hint::black_box(workload.driver(SECOND));
        }));
        eprintln!(
            "round {round}/{rounds}: tight loop {:.2} M/s, stream {:.2} M/s, driver {:.2} M/s",
            tight[round - 1] / 1e6,
            stream[round - 1] / 1e6,
            driver[round - 1] / 1e6
        );
    }
    let stream_ratio: Vec<f64> = stream.iter().zip(&tight).map(|(s, t)| s / t).collect();
    let driver_ratio: Vec<f64> = driver.iter().zip(&tight).map(|(d, t)| d / t).collect();
    let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let (best_tight, best_stream, best_driver) = (best(&tight), best(&stream), best(&driver));
    println!("harness overhead, {rounds} rounds of {requests} requests into the memory store:");
    println!("  path                median        (ratio)   best         (ratio)");
    println!(
        "  tight loop          {:>6.2} M/s              {:>6.2} M/s",
        median(&mut tight) / 1e6,
        best_tight / 1e6
    );
    for (path, mut rates, mut ratios, best_rate) in [
        ("stream, unmeasured", stream, stream_ratio, best_stream),
        ("driver", driver, driver_ratio, best_driver),
    ] {
        println!(
            "  {path:<18}  {:>6.2} M/s   ({:>5.1}%)   {:>6.2} M/s   ({:>5.1}%)",
            median(&mut rates) / 1e6,
            100.0 * median(&mut ratios),
            best_rate / 1e6,
            100.0 * best_rate / best_tight
        );
    }
}
