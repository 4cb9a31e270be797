//! Two experiments' summaries side by side: per cell present in both, each measure's ratio
//! (with its propagated error) and Welch's t-test of the difference, as hyperfine reports
//! "1.42 ± 0.05 times faster".

use serde::{Deserialize, Serialize};

use super::stats::{ratio, Stats, Welch};
use super::summary::ExperimentSummary;

/// Below this p-value a difference counts as significant.
pub const SIGNIFICANCE: f64 = 0.05;

/// One measure of one cell, baseline against the other experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The cell.
    pub cell: String,
    /// `throughput` (requests/s) or a latency percentile (`p999_ns`).
    pub measure: String,
    /// The baseline's statistics.
    pub baseline: Stats,
    /// The other's.
    pub other: Stats,
    /// other ÷ baseline.
    pub ratio: f64,
    /// The ratio's standard error.
    pub ratio_error: f64,
    /// Welch's t-test (none with fewer than two runs on a side, or no spread at all).
    pub welch: Option<Welch>,
}

impl Change {
    /// Whether the difference is significant at [`SIGNIFICANCE`].
    pub fn significant(&self) -> bool {
        self.welch.is_some_and(|w| w.p < SIGNIFICANCE)
    }

    /// In words, for the measure's direction (more throughput is better, less latency is).
    pub fn verdict(&self) -> String {
        let Some(w) = self.welch else {
            return "not tested (fewer than two runs, or no spread)".into();
        };
        if w.p >= SIGNIFICANCE {
            return format!("no significant difference (p = {:.2})", w.p);
        }
        let better = if self.measure == "throughput" {
            self.ratio > 1.0
        } else {
            self.ratio < 1.0
        };
        let (factor, error) = if self.ratio >= 1.0 {
            (self.ratio, self.ratio_error)
        } else {
            (1.0 / self.ratio, self.ratio_error / self.ratio.powi(2))
        };
        let word = match (self.measure == "throughput", better) {
            (true, true) => "faster",
            (true, false) => "slower",
            (false, true) => "lower",
            (false, false) => "higher",
        };
        format!("{factor:.2} ± {error:.2} times {word} (p = {:.3})", w.p)
    }
}

/// One experiment against a baseline experiment: what `gadget compare` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's name (its folder).
    pub baseline: String,
    /// The other's name.
    pub other: String,
    /// Each measure of each cell the two have in common.
    pub changes: Vec<Change>,
}

impl Comparison {
    /// `other` against `baseline`, named as given.
    pub fn of(
        baseline_name: &str,
        baseline: &ExperimentSummary,
        other_name: &str,
        other: &ExperimentSummary,
    ) -> Comparison {
        Comparison {
            baseline: baseline_name.to_string(),
            other: other_name.to_string(),
            changes: changes(baseline, other),
        }
    }
}

/// The changes from `baseline` to `other`, cell by cell (cells of both), throughput and p99.9.
pub fn changes(baseline: &ExperimentSummary, other: &ExperimentSummary) -> Vec<Change> {
    let mut out = Vec::new();
    for b in &baseline.cells {
        let Some(o) = other.cells.iter().find(|c| c.id == b.id) else {
            continue;
        };
        let measures = [
            ("throughput", b.throughput.as_ref(), o.throughput.as_ref()),
            (
                "p999_ns",
                b.latency_ns.get("p999"),
                o.latency_ns.get("p999"),
            ),
        ];
        for (measure, bs, os) in measures {
            let (Some(bs), Some(os)) = (bs, os) else {
                continue;
            };
            let (r, e) = ratio(bs, os);
            out.push(Change {
                cell: b.id.clone(),
                measure: measure.into(),
                baseline: bs.clone(),
                other: os.clone(),
                ratio: r,
                ratio_error: e,
                welch: Welch::test(bs, os),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(measure: &str, a: &[f64], b: &[f64]) -> Change {
        let (a, b) = (Stats::of(a).unwrap(), Stats::of(b).unwrap());
        let (ratio, ratio_error) = ratio(&a, &b);
        Change {
            cell: "w.s.closed".into(),
            measure: measure.into(),
            welch: Welch::test(&a, &b),
            baseline: a,
            other: b,
            ratio,
            ratio_error,
        }
    }

    #[test]
    fn verdicts_say_the_factor_and_direction_only_when_significant() {
        let c = change("throughput", &[100.0, 101.0, 99.0], &[150.0, 151.0, 149.0]);
        assert!(c.significant());
        assert!(
            c.verdict().starts_with("1.50 ± 0.02 times faster"),
            "{}",
            c.verdict()
        );
        let c = change("p999_ns", &[100.0, 101.0, 99.0], &[150.0, 151.0, 149.0]);
        assert!(c.verdict().contains("times higher"), "{}", c.verdict());
        let c = change("throughput", &[100.0, 120.0, 80.0], &[105.0, 125.0, 85.0]);
        assert!(!c.significant());
        assert!(
            c.verdict().starts_with("no significant difference"),
            "{}",
            c.verdict()
        );
    }
}
