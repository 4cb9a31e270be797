//! Two experiments side by side (`gadget compare A B` of `gadget bench` folders): per cell of
//! both and per measure, B's runs over A's as the ratio of their geometric means with Welch's
//! interval, Holm-corrected over the cells and judged against the noise threshold: the
//! verdicts of [`super::verdict`], for runs that shared no blocks.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::summary::{measure, ExperimentSummary, MEASURES};
use super::verdict::{holm, Measure, Ratio, Verdict};
use gadget_results::RunReport;

/// One measure of one cell, the other experiment against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The cell.
    pub cell: String,
    /// `throughput` (requests/s) or a latency percentile of all requests (`p99`, ns).
    pub measure: String,
    /// The baseline's geometric mean over its runs.
    pub baseline_mean: f64,
    /// The other's.
    pub other_mean: f64,
    /// The ratio, its interval and the verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// One experiment against a baseline experiment: what `gadget compare` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's name (its folder).
    pub baseline: String,
    /// The other's name.
    pub other: String,
    /// A ratio within this of 1 is no difference (the baseline experiment's).
    pub noise_threshold: f64,
    /// Each measure of each cell the two have in common, with runs enough to judge.
    pub changes: Vec<Change>,
}

/// A `gadget bench` folder: its summary and each cell's complete runs.
#[derive(Debug, Clone)]
pub struct BenchFolder {
    /// `summary.json`.
    pub summary: ExperimentSummary,
    /// Each cell's complete runs (each run's value of every measure of [`MEASURES`]), by
    /// cell name, in the summary's cell order.
    pub runs: Vec<(String, Vec<[Option<f64>; MEASURES.len()]>)>,
}

impl BenchFolder {
    /// Reads `DIR/summary.json` and the results of the runs it lists; what is wrong.
    pub fn read(dir: &Path) -> Result<BenchFolder, String> {
        let path = dir.join("summary.json");
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let summary: ExperimentSummary = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{} is not a gadget bench summary: {e}", path.display()))?;
        let mut runs: Vec<(String, Vec<[Option<f64>; MEASURES.len()]>)> = summary
            .cells
            .iter()
            .map(|c| (c.id.clone(), Vec::new()))
            .collect();
        for id in &summary.order {
            let Some((cell, _)) = id.rsplit_once('.') else {
                continue;
            };
            let file = dir.join("runs").join(format!("{id}.json"));
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            let report: RunReport = serde_json::from_slice(&bytes)
                .map_err(|e| format!("{} is not a run's results: {e}", file.display()))?;
            if let Some((_, list)) = runs.iter_mut().find(|(c, _)| c == cell) {
                if !report.partial {
                    list.push(MEASURES.map(|m| measure(&report, m)));
                }
            }
        }
        Ok(BenchFolder { summary, runs })
    }
}

impl Comparison {
    /// `other` against `baseline`, named as given.
    pub fn of(
        baseline_name: &str,
        baseline: &BenchFolder,
        other_name: &str,
        other: &BenchFolder,
    ) -> Comparison {
        let threshold = baseline.summary.noise_threshold;
        let mut changes = Vec::new();
        for (m, name) in MEASURES.into_iter().enumerate() {
            let mut found: Vec<(String, f64, f64, Ratio)> = Vec::new();
            for (cell, ours) in &baseline.runs {
                let Some((_, theirs)) = other.runs.iter().find(|(c, _)| c == cell) else {
                    continue;
                };
                let values = |runs: &[[Option<f64>; MEASURES.len()]]| -> Vec<f64> {
                    runs.iter().filter_map(|r| r[m]).collect()
                };
                let (a, b) = (values(ours), values(theirs));
                if let Some(ratio) = Ratio::of_groups(&a, &b) {
                    found.push((cell.clone(), geometric_mean(&a), geometric_mean(&b), ratio));
                }
            }
            let corrected = holm(&found.iter().map(|f| f.3.p).collect::<Vec<_>>());
            for ((cell, a, b, ratio), p) in found.into_iter().zip(corrected) {
                let kind = if name == "throughput" {
                    Measure::Throughput
                } else {
                    Measure::Latency(name)
                };
                changes.push(Change {
                    cell,
                    measure: name.to_string(),
                    baseline_mean: a,
                    other_mean: b,
                    verdict: Verdict::judge(ratio, p, threshold, kind),
                });
            }
        }
        Comparison {
            baseline: baseline_name.to_string(),
            other: other_name.to_string(),
            noise_threshold: threshold,
            changes,
        }
    }
}

/// The geometric mean of the positive values of `xs`.
fn geometric_mean(xs: &[f64]) -> f64 {
    let logs: Vec<f64> = xs.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
    (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::verdict::Outcome;

    fn folder(cells: &[(&str, &[f64])]) -> BenchFolder {
        let summary: ExperimentSummary = serde_json::from_value(serde_json::json!({
            "gadget_version": "0", "experiment": "e.toml", "seed": 0, "repetitions": 5,
            "order": [], "partial": false, "cells": []
        }))
        .unwrap();
        BenchFolder {
            summary,
            runs: cells
                .iter()
                .map(|(c, t)| {
                    let runs = t
                        .iter()
                        .map(|&x| [Some(x), None, None, None, None])
                        .collect();
                    (c.to_string(), runs)
                })
                .collect(),
        }
    }

    #[test]
    fn cells_of_both_are_judged_with_the_verdicts_of_one_experiment() {
        let a = folder(&[
            ("w.s.closed", &[100.0, 102.0, 98.0, 101.0, 99.0]),
            ("only.a", &[1.0, 1.0, 1.0]),
        ]);
        let b = folder(&[("w.s.closed", &[150.0, 151.0, 149.0, 152.0, 148.0])]);
        let c = Comparison::of("a", &a, "b", &b);
        assert_eq!(c.noise_threshold, 0.02, "an old summary's default");
        let t = c
            .changes
            .iter()
            .find(|c| c.measure == "throughput")
            .unwrap();
        assert_eq!(t.cell, "w.s.closed");
        assert_eq!(t.verdict.outcome, Outcome::Better);
        assert!(
            t.verdict.verdict.starts_with("1.50× faster ["),
            "{}",
            t.verdict.verdict
        );
        assert!(c.changes.iter().all(|c| c.cell == "w.s.closed"));
    }
}
