//! CSV: a run's time series (one row per interval and op) and an experiment's cells (one row
//! per cell with each measure's statistics).

use std::io::{self, Write};

use super::Exporter;
use crate::experiment::summary::{ExperimentSummary, PERCENTILES};
use gadget_results::RunReport;

/// Comma-separated values, a header row first.
pub struct Csv;

/// A run's time series: one row per interval and op (and `all`). A partial run's file starts
/// with a comment line saying so (`# PARTIAL: reason`).
impl Exporter<RunReport> for Csv {
    fn export(&self, r: &RunReport, out: &mut dyn Write) -> io::Result<()> {
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
                    i.start_s,
                    i.end_s,
                    op.op,
                    op.ops,
                    op.ops_per_s,
                    op.p50_ns,
                    op.p99_ns,
                    op.p999_ns
                )?;
            }
        }
        Ok(())
    }
}

/// One row per cell: throughput and each percentile's mean, standard deviation, 95% interval,
/// min and max (`summary.csv`).
impl Exporter<ExperimentSummary> for Csv {
    fn export(&self, s: &ExperimentSummary, w: &mut dyn Write) -> io::Result<()> {
        write!(w, "cell,workload,store,arrival,completed,planned")?;
        let measures: Vec<String> = std::iter::once("throughput".to_string())
            .chain(PERCENTILES.iter().map(|p| format!("{p}_ns")))
            .collect();
        for m in &measures {
            write!(
                w,
                ",{m}_mean,{m}_stddev,{m}_ci95_low,{m}_ci95_high,{m}_min,{m}_max"
            )?;
        }
        writeln!(w)?;
        for c in &s.cells {
            write!(
                w,
                "{},{},{},{},{},{}",
                c.id, c.workload, c.store, c.arrival, c.completed, c.planned
            )?;
            let stats = std::iter::once(c.throughput.as_ref())
                .chain(PERCENTILES.iter().map(|p| c.latency_ns.get(*p)));
            for s in stats {
                match s {
                    Some(s) => write!(
                        w,
                        ",{},{},{},{},{},{}",
                        s.mean, s.stddev, s.ci95_low, s.ci95_high, s.min, s.max
                    )?,
                    None => write!(w, ",,,,,,")?,
                }
            }
            writeln!(w)?;
        }
        Ok(())
    }
}
