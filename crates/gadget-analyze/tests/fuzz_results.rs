//! Fuzzing of the reader of `gadget run`/`replay` results (what `analyze` and `compare` read
//! back) and of what is made from them: the text summary, the plots and the HTML report. Mutated results must
//! give a value or an error, never a panic, within a memory bound; see
//! `crates/gadget/tests/fuzz/mod.rs` for the budget and how to replay a case.

#[path = "../../gadget/tests/fuzz/mod.rs"]
mod fuzz;

use gadget_analyze::results::{figures, from_json, to_text};
use gadget_results::summary::{IntervalOp, IntervalStats, OpSummary};
use gadget_results::RunReport;

/// A latency row of `op` as `gadget run` writes it.
fn row(op: &str, ops: u64, scale: u64) -> OpSummary {
    OpSummary {
        op: op.into(),
        ops,
        ops_per_s: ops as f64,
        min_ns: scale,
        mean_ns: 3.0 * scale as f64 + 0.5,
        p50_ns: 2 * scale,
        p99_ns: 40 * scale,
        p999_ns: 90 * scale,
        p9999_ns: 400 * scale,
        max_ns: 1000 * scale,
    }
}

/// Results with `intervals` points of time series.
fn results(intervals: u64, partial: bool) -> RunReport {
    let rows = vec![
        row("get", 700, 900),
        row("put", 300, 1500),
        row("all", 1000, 900),
    ];
    let series = (0..intervals)
        .map(|i| IntervalStats {
            start_s: i as f64,
            end_s: (i + 1) as f64,
            all: IntervalOp::new("all", 1000 + i * 7, [900 + i, 40_000 + 13 * i, 0], 1.0),
            ops: Vec::new(),
        })
        .collect();
    RunReport {
        store: "rocksdb".into(),
        arrival: "poisson at 1000/s".into(),
        requests: 1000,
        throughput: 998.5,
        partial,
        sustained: Some(true),
        latency: rows.clone(),
        service: rows,
        time_series: series,
        ..RunReport::default()
    }
}

/// `r` as its JSON file's bytes.
fn file(r: &RunReport) -> Vec<u8> {
    serde_json::to_vec(r).unwrap()
}

#[test]
fn results_files_read_and_render_from_any_bytes_without_panic_in_bounded_memory() {
    // extremes: zero latencies and throughput, the largest integers and floats
    let mut extreme = results(3, false);
    extreme.throughput = 0.0;
    extreme.latency[2].min_ns = 0;
    extreme.latency[2].max_ns = u64::MAX;
    extreme.latency[2].mean_ns = 1e308;
    extreme.time_series[0].all.ops_per_s = 0.0;
    let extreme = file(&extreme);
    assert!(from_json(std::str::from_utf8(&extreme).unwrap()).is_ok());
    let seeds = vec![
        file(&results(0, false)),
        file(&results(3, true)),
        file(&results(60, false)),
        extreme,
    ];
    // the parsed results, their summary and their plots: a few hundred bytes per input byte
    let bound = |len: usize| (8 << 20) + 400 * len;
    let render = |bytes: &[u8]| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        if let Ok(r) = from_json(text) {
            let summary = to_text(&r, "fuzzed");
            let figures = figures(&r, "fuzzed", true);
            let _ = gadget_analyze::html::page("fuzzed", &[("fuzzed".into(), summary)], &figures);
        }
    };
    // every seed renders as it is, extremes too
    for seed in &seeds {
        render(seed);
    }
    fuzz::fuzz("results json", &seeds, bound, render);
}
