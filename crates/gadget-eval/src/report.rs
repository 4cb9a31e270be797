//! Writing results: the human summary, JSON, the CSV time series and HDR interval logs, each
//! file written atomically (a temporary file beside it, renamed into place when complete).

use std::io::{self, Write};

use crate::measure::{human_ns, render_table};
use crate::run::RunReport;

pub use gadget::atomic::write_atomically;

/// The one-screen summary printed after a run.
pub fn render_summary(r: &RunReport) -> String {
    let mut out = String::new();
    for w in r.warnings() {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str(&format!(
        "store {}, {}: {} requests in {:.2} s = {:.0} requests/s{}\n",
        r.store,
        r.arrival,
        r.requests,
        r.seconds,
        r.throughput,
        if r.warmup_requests > 0 {
            format!(" (after {} warm-up requests)", r.warmup_requests)
        } else {
            String::new()
        }
    ));
    if !r.emulated_ops.is_empty() {
        out.push_str(&format!(
            "emulated by the store: {}\n",
            r.emulated_ops.join(", ")
        ));
    }
    out.push_str(&format!(
        "reads: {} found ({} bytes), {} empty; longest start lag {}\n\n",
        r.reads_found,
        r.bytes_read,
        r.reads_empty,
        human_ns(r.max_start_lag_ns as f64)
    ));
    let open_loop = r.open_loop;
    out.push_str(if open_loop {
        "latency (completion - intended start)\n"
    } else {
        "latency (closed loop: completion - start)\n"
    });
    out.push_str(&render_table(&r.latency));
    if open_loop {
        out.push_str("\nservice time (completion - actual start)\n");
        out.push_str(&render_table(&r.service));
    }
    if !r.store_counters.is_empty() {
        let issued = (r.requests + r.warmup_requests).max(1) as f64;
        out.push_str("\nstore counters (whole run, warm-up included)\n");
        for (name, value) in &r.store_counters {
            out.push_str(&format!(
                "  {name:<40}{value:>14}  {:>10.2} per request\n",
                *value as f64 / issued
            ));
        }
    }
    out
}

/// Writes the time series as CSV: one row per interval and op (and `all`). A partial run's
/// file starts with a comment line saying so (`# PARTIAL: reason`).
pub fn write_time_series_csv(r: &RunReport, out: &mut dyn Write) -> io::Result<()> {
    if r.partial {
        writeln!(
            out,
            "# PARTIAL: {}; the rows cover what ran before",
            r.partial_reason.as_deref().unwrap_or("stopped early")
        )?;
    }
    writeln!(out, "start_s,end_s,op,ops,ops_per_s,p50_ns,p99_ns,p999_ns")?;
    for i in &r.time_series {
        for op in std::iter::once(&i.all).chain(&i.ops) {
            writeln!(
                out,
                "{:.6},{:.6},{},{},{:.1},{},{},{}",
                i.start_s, i.end_s, op.op, op.ops, op.ops_per_s, op.p50_ns, op.p99_ns, op.p999_ns
            )?;
        }
    }
    Ok(())
}
