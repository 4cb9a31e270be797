//! Fuzzing of the reader of `gadget run`/`replay` results (what `analyze` and `compare` read
//! back) and of what is made from them: the text summary, the plots and the HTML report. Mutated results must
//! give a value or an error, never a panic, within a memory bound; see
//! `crates/gadget/tests/fuzz/mod.rs` for the budget and how to replay a case.

#[path = "../../gadget/tests/fuzz/mod.rs"]
mod fuzz;

use gadget_analyze::results::RunResults;

/// A latency row of `op` as `gadget run` writes it.
fn row(op: &str, ops: u64, scale: u64) -> String {
    format!(
        "{{\"op\":\"{op}\",\"ops\":{ops},\"min_ns\":{},\"mean_ns\":{}.5,\"p50_ns\":{},\
         \"p99_ns\":{},\"p999_ns\":{},\"p9999_ns\":{},\"max_ns\":{}}}",
        scale,
        3 * scale,
        2 * scale,
        40 * scale,
        90 * scale,
        400 * scale,
        1000 * scale
    )
}

/// A results file with `intervals` points of time series.
fn results(intervals: usize, partial: bool) -> Vec<u8> {
    let rows = [
        row("get", 700, 900),
        row("put", 300, 1500),
        row("all", 1000, 900),
    ]
    .join(",");
    let series: Vec<String> = (0..intervals)
        .map(|i| {
            format!(
                "{{\"start_s\":{i}.0,\"all\":{{\"ops_per_s\":{}.25,\"p50_ns\":{},\"p99_ns\":{}}}}}",
                1000 + i * 7,
                900 + i,
                40_000 + 13 * i
            )
        })
        .collect();
    format!(
        "{{\"store\":\"rocksdb\",\"arrival\":\"poisson at 1000/s\",\"requests\":1000,\
         \"throughput\":998.5,\"partial\":{partial},\"sustained\":true,\"latency\":[{rows}],\
         \"service\":[{rows}],\"time_series\":[{}]}}",
        series.join(",")
    )
    .into_bytes()
}

#[test]
fn results_files_read_and_render_from_any_bytes_without_panic_in_bounded_memory() {
    // extremes: zero latencies and throughput, the largest integers and floats
    let extreme = String::from_utf8(results(3, false))
        .unwrap()
        .replace("\"min_ns\":900", "\"min_ns\":0")
        .replace("\"max_ns\":900000", "\"max_ns\":18446744073709551615")
        .replace("\"mean_ns\":2700.5", "\"mean_ns\":1e308")
        .replace("\"throughput\":998.5", "\"throughput\":0")
        .replace("\"ops_per_s\":1000.25", "\"ops_per_s\":0");
    assert!(RunResults::from_json(&extreme).is_ok(), "{extreme}");
    let seeds = vec![
        results(0, false),
        results(3, true),
        results(60, false),
        extreme.into_bytes(),
    ];
    // the parsed results, their summary and their plots: a few hundred bytes per input byte
    let bound = |len: usize| (8 << 20) + 400 * len;
    let render = |bytes: &[u8]| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        if let Ok(r) = RunResults::from_json(text) {
            let summary = r.to_text("fuzzed");
            let figures = r.figures("fuzzed", true);
            let _ = gadget_analyze::html::page("fuzzed", &[("fuzzed".into(), summary)], &figures);
        }
    };
    // every seed renders as it is, extremes too
    for seed in &seeds {
        render(seed);
    }
    fuzz::fuzz("results json", &seeds, bound, render);
}
