//! `gadget run` and `gadget replay` results (the results type of `gadget-results`, whose JSON
//! docs/results.schema.json describes) as input to `analyze` and `compare`: a summary, latency
//! percentile plots and throughput over time.

use std::fmt::Write as _;

use gadget_results::summary::{IntervalStats, OpSummary};
use gadget_results::RunReport;

use crate::plot::{Figure, FigureKind, Series, Unit};
use crate::report::thousands;
use gadget::nines::nines;

/// One latency curve of a figure: its op, `(percentile, ns)` points, drawn thin (baseline).
type Curve = (String, Vec<(f64, u64)>, bool);

/// Where a curve's `(percentile, ns)` points go on a figure.
type Placement = dyn Fn(&[(f64, u64)]) -> Vec<(f64, f64)>;

/// A results file's JSON as the results type (docs/results.schema.json).
pub fn from_json(text: &str) -> Result<RunReport, serde_json::Error> {
    serde_json::from_str(text)
}

/// The overall latency row of `r`.
fn all(r: &RunReport) -> Option<&OpSummary> {
    r.latency.iter().find(|r| r.op == "all")
}

/// A short summary of `run`, called `name`.
pub fn to_text(run: &RunReport, name: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{name}: store {}, {}: {} requests, {:.0} requests/s{}{}",
        run.store,
        run.arrival,
        thousands(run.requests),
        run.throughput,
        if run.partial { " (partial)" } else { "" },
        match run.sustained {
            Some(false) => " (target rate NOT sustained)",
            _ => "",
        }
    );
    let _ = writeln!(
        s,
        "  {:<14}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
        "op", "ops", "p50", "p99", "p99.9", "p99.99", "max"
    );
    for r in &run.latency {
        let _ = writeln!(
            s,
            "  {:<14}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}",
            r.op,
            r.ops,
            ns(r.p50_ns),
            ns(r.p99_ns),
            ns(r.p999_ns),
            ns(r.p9999_ns),
            ns(r.max_ns)
        );
    }
    s
}

/// Latency plots of `run` (the percentile spectrum on a "nines" axis, the distribution with log
/// bins, latency over time on a log axis) and throughput over time. With `every_op` the
/// latency plots draw each op and the service time; without, only all requests together,
/// one line per results file, as a comparison of several files needs to stay readable.
pub fn figures(run: &RunReport, label: &str, every_op: bool) -> Vec<Figure> {
    // the six stored percentiles, for results without a spectrum and for service time
    let six = |r: &OpSummary| {
        vec![
            (0.0, r.min_ns),
            (50.0, r.p50_ns),
            (99.0, r.p99_ns),
            (99.9, r.p999_ns),
            (99.99, r.p9999_ns),
            (100.0, r.max_ns),
        ]
    };
    let mut curves: Vec<Curve> = if run.latency_spectrum.is_empty() {
        run.latency
            .iter()
            .map(|r| (r.op.clone(), six(r), false))
            .collect()
    } else {
        let spectra = run.latency_spectrum.iter();
        spectra
            .map(|s| (s.op.clone(), s.points.clone(), false))
            .collect()
    };
    if let Some(all) = run.service.iter().find(|r| r.op == "all") {
        curves.push(("all, service time".into(), six(all), true));
    }
    if !every_op {
        curves.retain(|c| c.0 == "all");
    }
    // one colour per op in every plot; the service time takes the colour of all requests
    let colour_of = |op: &str| {
        let op = op.strip_suffix(", service time").unwrap_or(op);
        curves.iter().position(|c| c.0 == op).unwrap_or(0)
    };
    let all = colour_of("all");
    // every curve's 100% at the same place: half a nine past the highest other percentile
    let last = curves
        .iter()
        .flat_map(|c| c.1.iter())
        .filter(|p| p.0 < 100.0)
        .map(|p| nines(p.0, 0.0))
        .fold(0.0, f64::max);
    let spectrum = move |points: &[(f64, u64)]| -> Vec<(f64, f64)> {
        points
            .iter()
            .map(|&(p, ns)| (nines(p, last), ns.max(1) as f64))
            .collect()
    };
    let series = |f: &Placement| -> Vec<Series> {
        curves
            .iter()
            .map(|(op, points, baseline)| Series {
                label: if every_op {
                    format!("{label} {op}")
                } else {
                    label.to_string()
                },
                points: f(points),
                baseline: *baseline,
                colour: colour_of(op),
            })
            .collect()
    };
    let cumulative = |points: &[(f64, u64)]| -> Vec<(f64, f64)> {
        points
            .iter()
            .map(|&(p, ns)| (ns.max(1) as f64, p / 100.0))
            .collect()
    };
    let over_time = |f: &dyn Fn(&IntervalStats) -> f64| -> Vec<(f64, f64)> {
        run.time_series.iter().map(|i| (i.start_s, f(i))).collect()
    };
    vec![
            Figure {
                name: "latency-spectrum".into(),
                title: "Latency by percentile (spectrum)".into(),
                how_to_read: "The latency (log axis) of each line's requests at every percentile, spaced by their nines so 90%, 99% and 99.9% get equal room; the rightmost point is the maximum, and a line that rises early has a heavy tail.".into(),
                x_label: "percentile".into(),
                y_label: "latency (log)".into(),
                x_unit: Unit::Number,
                y_unit: Unit::Nanoseconds,
                log_x: false,
                log_y: true,
                x_nines: true,
                kind: FigureKind::Lines,
                categories: Vec::new(),
                series: series(&spectrum),
            },
            Figure {
                name: "latency-distribution".into(),
                title: "Latency distribution (cumulative, log bins)".into(),
                how_to_read: "The share of requests (cumulative) that finished within each latency, over logarithmic bins; a curve far to the left is fast, and a long flat approach to 1 is a tail.".into(),
                x_label: "latency (log)".into(),
                y_label: "fraction of requests at or below".into(),
                x_unit: Unit::Nanoseconds,
                y_unit: Unit::Number,
                log_x: true,
                log_y: false,
                x_nines: false,
                kind: FigureKind::Lines,
                categories: Vec::new(),
                series: series(&cumulative),
            },
            Figure {
                name: "throughput".into(),
                title: "Throughput over time".into(),
                how_to_read: "Requests completed per second in each interval; dips are stalls (flushes, compactions, a slow server), and a single-interval run is one dot.".into(),
                x_label: "time (s)".into(),
                y_label: "requests/s".into(),
                x_unit: Unit::Number,
                y_unit: Unit::Number,
                log_x: false,
                log_y: false,
                x_nines: false,
                kind: FigureKind::Lines,
                categories: Vec::new(),
                series: vec![Series {
                    label: label.into(),
                    points: over_time(&|i| i.all.ops_per_s),
                    baseline: false,
                    colour: all,
                }],
            },
            Figure {
                name: "latency-over-time".into(),
                title: "p50 and p99 latency over time".into(),
                how_to_read: "The median and 99th-percentile latency (log axis) in each interval; a p99 that jumps while the p50 stays is a stall hitting a few requests.".into(),
                x_label: "time (s)".into(),
                y_label: "latency (log)".into(),
                x_unit: Unit::Number,
                y_unit: Unit::Nanoseconds,
                log_x: false,
                log_y: true,
                x_nines: false,
                kind: FigureKind::Lines,
                categories: Vec::new(),
                series: vec![
                    Series {
                        label: format!("{label} p99"),
                        points: over_time(&|i| i.all.p99_ns as f64),
                        baseline: false,
                        colour: all,
                    },
                    Series {
                        label: format!("{label} p50"),
                        points: over_time(&|i| i.all.p50_ns as f64),
                        baseline: true,
                        colour: all,
                    },
                ],
            },
        ]
}

/// The side-by-side table of several results.
pub fn results_table(results: &[(String, RunReport)]) -> String {
    let mut s = String::new();
    // columns as wide as their longest entry, so long names keep the table aligned
    let name_width = results
        .iter()
        .map(|r| r.0.chars().count() + 2)
        .fold(28, usize::max);
    let store_width = results
        .iter()
        .map(|r| r.1.store.chars().count() + 2)
        .fold(10, usize::max);
    let _ = writeln!(
        s,
        "{:<name_width$}{:>store_width$}{:>14}{:>12}{:>12}{:>12}{:>12}",
        "results", "store", "requests/s", "p50", "p99", "p99.9", "max"
    );
    for (name, r) in results {
        let all = all(r);
        let at = |pick: fn(&OpSummary) -> u64| all.map_or_else(|| "–".to_string(), |a| ns(pick(a)));
        let _ = writeln!(
            s,
            "{:<name_width$}{:>store_width$}{:>14.0}{:>12}{:>12}{:>12}{:>12}",
            name,
            r.store,
            r.throughput,
            at(|a| a.p50_ns),
            at(|a| a.p99_ns),
            at(|a| a.p999_ns),
            at(|a| a.max_ns)
        );
    }
    s
}

/// A latency in a table: in the unit its size needs, with that unit's decimals.
fn ns(ns: u64) -> String {
    gadget::units::latency_column(ns as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{overlay, to_svg};
    use gadget_results::summary::IntervalOp;

    /// Results whose latencies run from 900 ns (p50) to 1.8 ms (max), `scale` times.
    fn results(store: &str, scale: u64) -> RunReport {
        let row = |op: &str| OpSummary {
            op: op.into(),
            ops: 1000,
            ops_per_s: 998.5,
            min_ns: 300 * scale,
            mean_ns: 2_000.0 * scale as f64,
            p50_ns: 900 * scale,
            p99_ns: 45_000 * scale,
            p999_ns: 230_000 * scale,
            p9999_ns: 1_000_000 * scale,
            max_ns: 1_800_000 * scale,
        };
        let rows = vec![row("get"), row("put"), row("all")];
        let interval = |i: u32| {
            let all = IntervalOp::new("all", 1000, [900 * scale, 45_000 * scale, 0], 1.0);
            IntervalStats {
                start_s: f64::from(i),
                end_s: f64::from(i + 1),
                all,
                ops: Vec::new(),
            }
        };
        RunReport {
            store: store.into(),
            arrival: "closed".into(),
            requests: 1000,
            throughput: 998.5,
            latency: rows.clone(),
            service: rows,
            time_series: (0..4).map(interval).collect(),
            ..RunReport::default()
        }
    }

    #[test]
    fn tables_give_latencies_in_the_unit_they_need() {
        let r = results("rocksdb", 1);
        let text = to_text(&r, "r");
        assert!(
            text.contains("900 ns") && text.contains("45.0 µs"),
            "{text}"
        );
        assert!(text.contains("1.80 ms"), "{text}");
        assert!(!text.lines().nth(1).unwrap().contains("ns"), "{text}");
        let table = results_table(&[("a".into(), r), ("b".into(), results("lmdb", 2))]);
        assert!(
            table.contains("230 µs") && table.contains("3.60 ms"),
            "{table}"
        );
        // no raw nanoseconds anywhere: a number of four digits or more is a throughput
        for line in table.lines().skip(1) {
            let big: Vec<&str> = line
                .split_whitespace()
                .filter(|w| w.len() >= 4 && w.chars().all(|c| c.is_ascii_digit()))
                .collect();
            assert!(big.len() <= 1, "raw numbers {big:?} in {line}");
        }
    }

    #[test]
    fn latency_axes_are_labelled_in_the_unit_each_tick_needs() {
        ensure_tick_texts(&figures(&results("rocksdb", 1), "r", true));
    }

    /// Every latency axis of `figures` has ticks such as `1 µs` or `1 ms`, none `1K` or `10M`.
    fn ensure_tick_texts(figures: &[Figure]) {
        for f in figures.iter().filter(|f| f.name.starts_with("latency")) {
            let svg = to_svg(f).unwrap();
            let texts: Vec<&str> = svg
                .split("<text")
                .skip(1)
                .map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].trim())
                .collect();
            assert!(
                texts
                    .iter()
                    .any(|t| t.ends_with(" µs") || t.ends_with(" ms")),
                "{}: {texts:?}",
                f.name
            );
            assert!(
                !texts.iter().any(|t| t.ends_with('K') || t.ends_with('M')),
                "{}: {texts:?}",
                f.name
            );
            assert!(!f.y_label.contains("ns") && !f.x_label.contains("ns"));
        }
    }

    #[test]
    fn each_run_keeps_one_colour_in_every_plot_of_a_comparison() {
        let runs = [("flink", 1), ("kafka-streams", 2), ("spark", 3)];
        let figures = overlay(
            runs.iter()
                .map(|(name, scale)| figures(&results(name, *scale), name, false))
                .collect(),
        );
        ensure_tick_texts(&figures);
        for (k, (name, _)) in runs.iter().enumerate() {
            for f in &figures {
                crate::plot::assert_one_colour(f, name, k);
                let svg = to_svg(f).unwrap();
                assert!(svg.contains(gadget::palette::hex(k)), "{}", f.name);
            }
        }
    }
}
