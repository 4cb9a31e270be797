//! Plain text for a terminal: the one-screen summary printed after a run.

use std::io::{self, Write};

use super::Exporter;
use gadget::units::{latency, latency_column};
use gadget_results::summary::OpSummary;
use gadget_results::PartSummary;
use gadget_results::RunReport;

/// The human summary.
pub struct Text;

impl Exporter<RunReport> for Text {
    fn export(&self, r: &RunReport, out: &mut dyn Write) -> io::Result<()> {
        for w in r.warnings() {
            writeln!(out, "warning: {w}")?;
        }
        let warmup = if r.warmup_requests > 0 {
            format!(" (after {} warm-up requests)", r.warmup_requests)
        } else {
            String::new()
        };
        writeln!(
            out,
            "store {}, {}: {} requests in {:.2} s = {:.0} requests/s{warmup}",
            r.store, r.arrival, r.requests, r.seconds, r.throughput,
        )?;
        if !r.emulated_ops.is_empty() {
            writeln!(out, "emulated by the store: {}", r.emulated_ops.join(", "))?;
        }
        writeln!(
            out,
            "reads: {} found ({} bytes), {} empty; longest start lag {}\n",
            r.reads_found,
            r.bytes_read,
            r.reads_empty,
            latency(r.max_start_lag_ns as f64)
        )?;
        if r.open_loop {
            writeln!(out, "latency (completion - intended start)")?;
        } else {
            writeln!(out, "latency (closed loop: completion - start)")?;
        }
        write!(out, "{}", render_table(&r.latency))?;
        if r.open_loop {
            writeln!(out, "\nservice time (completion - actual start)")?;
            write!(out, "{}", render_table(&r.service))?;
        }
        for (title, parts) in [("store", &r.per_store), ("state", &r.per_state)] {
            if parts.len() > 1 {
                parts_table(out, title, parts)?;
            }
        }
        if let Some(line) = locality(r) {
            writeln!(out, "\n{line}")?;
        }
        if !r.shards.is_empty() {
            shards_table(out, r)?;
        }
        if !r.store_counters.is_empty() {
            let issued = r.requests.saturating_add(r.warmup_requests).max(1) as f64;
            writeln!(out, "\nstore counters (whole run, warm-up included)")?;
            for (name, value) in &r.store_counters {
                if name.contains(crate::store::HELD) {
                    writeln!(out, "  {name:<40}{value:>14}  held at the end")?;
                } else {
                    writeln!(
                        out,
                        "  {name:<40}{value:>14}  {:>10.2} per request",
                        *value as f64 / issued
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// How many requests stayed on each instance's own node of a cluster, from its counters
/// (`reads_local`, `reads_remote`, `writes_local`, `writes_remote`).
fn locality(r: &RunReport) -> Option<String> {
    let count = |name: &str| r.store_counters.get(name).copied();
    let share = |local: Option<u64>, remote: Option<u64>| -> Option<String> {
        let (l, m) = (local?, remote?);
        let all = l.saturating_add(m);
        (all > 0).then(|| format!("{:.1}% of {all}", 100.0 * l as f64 / all as f64))
    };
    let reads = share(count("reads_local"), count("reads_remote"));
    let writes = share(count("writes_local"), count("writes_remote"));
    if reads.is_none() && writes.is_none() {
        return None;
    }
    Some(format!(
        "stayed on the instance's own node: reads {}, writes {} (warm-up included)",
        reads.unwrap_or_else(|| "none".into()),
        writes.unwrap_or_else(|| "none".into())
    ))
}

/// Latency per store or per state: one row each.
fn parts_table(out: &mut dyn Write, title: &str, parts: &[PartSummary]) -> io::Result<()> {
    writeln!(
        out,
        "\nby {title}\n{:<34} {:<14} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9}",
        title, "store", "requests", "req/s", "p50", "p99", "p99.9", "max"
    )?;
    for p in parts {
        let l = &p.latency;
        writeln!(
            out,
            "{:<34} {:<14} {:>11} {:>11.0} {:>9} {:>9} {:>9} {:>9}",
            p.name,
            p.store,
            l.ops,
            l.ops_per_s,
            latency(l.p50_ns as f64),
            latency(l.p99_ns as f64),
            latency(l.p999_ns as f64),
            latency(l.max_ns as f64)
        )?;
    }
    Ok(())
}

/// The shards of merged results, one row each, and what their merge is made of.
fn shards_table(out: &mut dyn Write, r: &RunReport) -> io::Result<()> {
    let n = r.shards.len();
    writeln!(
        out,
        "\nmerged from {n} shard{} (histograms added bucket by bucket; the time series' \
         interval percentiles are the largest shard's)",
        if n == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "{:<34} {:>8} {:>11} {:>11} {:>9} {:>9} {:>9}",
        "shard", "seed", "requests", "req/s", "p50", "p99", "max"
    )?;
    for s in &r.shards {
        let all = s.results.latency.iter().find(|l| l.op == "all");
        let ns = |f: fn(&OpSummary) -> u64| all.map_or(0, f) as f64;
        writeln!(
            out,
            "{:<34} {:>8} {:>11} {:>11.0} {:>9} {:>9} {:>9}{}",
            s.file,
            s.results.seed,
            s.results.requests,
            s.results.throughput,
            latency(ns(|l| l.p50_ns)),
            latency(ns(|l| l.p99_ns)),
            latency(ns(|l| l.max_ns)),
            if s.results.partial { "  PARTIAL" } else { "" }
        )?;
    }
    Ok(())
}

/// The paper's table: Ops, Ops/s, Min, Avg, P50, P99, P99.9, P99.99, Max per op type.
fn render_table(rows: &[OpSummary]) -> String {
    let mut out = format!(
        "{:<13} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "op", "ops", "ops/s", "min", "avg", "p50", "p99", "p99.9", "p99.99", "max"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<13} {:>11} {:>11.0} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            r.op,
            r.ops,
            r.ops_per_s,
            latency_column(r.min_ns as f64),
            latency_column(r.mean_ns),
            latency_column(r.p50_ns as f64),
            latency_column(r.p99_ns as f64),
            latency_column(r.p999_ns as f64),
            latency_column(r.p9999_ns as f64),
            latency_column(r.max_ns as f64),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Recorder;
    use gadget::access::Op;

    #[test]
    fn table_has_the_papers_columns() {
        let mut r = Recorder::new(1_000_000_000, false, false);
        r.record(Op::Merge, 1_500, 1_000, 10);
        let (latency, _) = r.summary(1.0);
        let t = render_table(&latency);
        assert!(t.starts_with("op"));
        assert!(t.contains("p99.99"));
        assert!(t.contains("merge"));
        assert!(t.contains("1.50 µs"));
    }
}
