//! Markdown, for people and for pasting: an experiment's table of cells (mean and 95%
//! interval) with its rate sweeps, and a comparison's table of changes with verdicts.

use std::io::{self, Write};

use super::{ns_in_interval, Exporter};
use crate::experiment::compare::Comparison;
use crate::experiment::summary::{ExperimentSummary, PERCENTILES};
use gadget::units::latency as time;

/// GitHub-flavoured Markdown tables.
pub struct Markdown;

/// `summary.md`: mean and 95% interval per cell, then each rate sweep.
impl Exporter<ExperimentSummary> for Markdown {
    fn export(&self, s: &ExperimentSummary, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "# {}\n", s.experiment)?;
        if let Some(ran) = &s.ran {
            writeln!(w, "{}.\n", ran.describe())?;
        }
        if let Some(reason) = &s.partial_reason {
            writeln!(
                w,
                "**Partial:** {reason}; `gadget bench --resume` runs what is missing.\n"
            )?;
        }
        if !s.overrides.is_empty() {
            writeln!(
                w,
                "**Quick try:** the experiment as overridden by `{}`, not as its file says.\n",
                s.overrides.join(" ")
            )?;
        }
        if !s.failed.is_empty() {
            writeln!(w, "Runs that failed:\n")?;
            for f in &s.failed {
                writeln!(w, "- `{}`: {} (log: `{}`)", f.id, f.reason, f.log)?;
            }
            writeln!(w)?;
        }
        writeln!(
            w,
            "Geometric mean [95% confidence interval] over each cell's runs (Student's t on \
             the log scale: never negative, wider above than below under a heavy tail); \
             latency of all requests, from the intended start in an open loop.\n"
        )?;
        writeln!(
            w,
            "| workload | store | arrival | runs | requests/s | p50 | p99 | p99.9 | max |"
        )?;
        writeln!(w, "|---|---|---|---:|---:|---:|---:|---:|---:|")?;
        for c in &s.cells {
            let throughput = c.throughput.as_ref().map_or("–".into(), |s| {
                format!(
                    "{} [{}, {}]",
                    si(s.ci95_center),
                    si(s.ci95_low),
                    si(s.ci95_high)
                )
            });
            write!(
                w,
                "| {} | {} | {} | {}/{} | {throughput} |",
                c.workload, c.store, c.arrival, c.completed, c.planned
            )?;
            for p in PERCENTILES {
                match c.latency_ns.get(p) {
                    Some(s) => write!(
                        w,
                        " {} |",
                        ns_in_interval(s.ci95_center, s.ci95_low, s.ci95_high)
                    )?,
                    None => write!(w, " – |")?,
                }
            }
            writeln!(w)?;
        }
        if let Some(b) = &s.baseline {
            writeln!(
                w,
                "\n## Against the baseline `{b}`\n\nEach cell over the cell that differs by the baseline \
                 alone, ratios paired within blocks: the geometric mean, its 95% bootstrap interval, \
                 Holm-corrected over every cell; within ±{}% is no difference.\n",
                s.noise_threshold * 100.0
            )?;
            writeln!(w, "| cell | against | throughput | p99 |")?;
            writeln!(w, "|---|---|---|---|")?;
            for c in &s.cells {
                let Some(a) = &c.against_baseline else {
                    continue;
                };
                let p99 = a.latency.get("p99").map_or("–", |v| v.verdict.as_str());
                writeln!(
                    w,
                    "| {} | {} | {} | {p99} |",
                    c.id,
                    a.baseline_cell,
                    c.verdict.as_deref().unwrap_or("–")
                )?;
            }
        }
        if !s.warnings.is_empty() {
            writeln!(w, "\n**Warnings:**\n")?;
            for warning in &s.warnings {
                writeln!(w, "- {warning}")?;
            }
        }
        for c in &s.capacity {
            let bound = c.bound_ns.map_or(String::new(), |b| {
                format!(" with {} ≤ {}", c.percentile, time(b as f64))
            });
            let verdict = c.highest_sustained_rate.map_or_else(
                || "no rate tried was sustained".to_string(),
                |r| format!("sustains {} requests/s{bound}", si(r)),
            );
            writeln!(
                w,
                "\n## {} on {}, {} arrivals: {verdict}\n",
                c.workload, c.store, c.process
            )?;
            writeln!(
                w,
                "| target rate | achieved | {} | sustained |",
                c.percentile
            )?;
            writeln!(w, "|---:|---:|---:|---|")?;
            for p in &c.points {
                let yes = if p.sustained { "yes" } else { "no" };
                writeln!(
                    w,
                    "| {} | {} | {} | {yes} |",
                    si(p.rate),
                    si(p.throughput),
                    time(p.latency_ns)
                )?;
            }
        }
        Ok(())
    }
}

/// The changes from the baseline experiment, each with its verdict.
impl Exporter<Comparison> for Markdown {
    fn export(&self, c: &Comparison, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "{} against {}: geometric means over each cell's runs, the ratio with Welch's 95% \
             interval, Holm-corrected over the cells; within ±{}% is no difference.\n",
            c.other,
            c.baseline,
            c.noise_threshold * 100.0
        )?;
        writeln!(
            w,
            "| cell | measure | {} | {} | verdict |",
            c.baseline, c.other
        )?;
        writeln!(w, "|---|---|---:|---:|---|")?;
        for ch in &c.changes {
            writeln!(
                w,
                "| {} | {} | {} | {} | {} |",
                ch.cell,
                ch.measure,
                value(&ch.measure, ch.baseline_mean),
                value(&ch.measure, ch.other_mean),
                ch.verdict.verdict
            )?;
        }
        Ok(())
    }
}

/// A measure's value in its unit: `1.23M req/s`, `412 ns`, `1.19 ms`.
pub(crate) fn value(measure: &str, v: f64) -> String {
    if measure == "throughput" {
        format!("{} req/s", si(v))
    } else {
        time(v)
    }
}

/// `1234567.0` as `1.23M`.
fn si(x: f64) -> String {
    match x.abs() {
        a if a >= 1e6 => format!("{:.2}M", x / 1e6),
        a if a >= 1e3 => format!("{:.1}K", x / 1e3),
        _ => format!("{x:.1}"),
    }
}
