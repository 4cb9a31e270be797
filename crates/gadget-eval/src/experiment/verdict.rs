//! Verdicts that survive a noisy machine. A cell is compared with its baseline through the
//! ratio of their measures **within each block** (a block runs every cell once, in a seeded
//! random order, so a drift of the machine over the experiment hits both sides of a ratio
//! alike), summarized on the log scale: the geometric mean of the ratios, an (expanded
//! percentile) bootstrap interval of it (never negative, and as asymmetric as ratios are), a
//! paired t-test of the log ratios whose p-values are corrected for the number of comparisons
//! (Holm), and a noise threshold within which no difference is claimed (as criterion.rs does).

use serde::{Deserialize, Serialize};

use super::random::SplitMix;
use super::stats::student_p;

/// Below this corrected p-value a difference may count.
pub const SIGNIFICANCE: f64 = 0.05;
/// The default noise threshold: a ratio within ±2% is no difference worth a sentence.
pub const DEFAULT_NOISE_THRESHOLD: f64 = 0.02;
/// Bootstrap resamples behind each interval.
pub const RESAMPLES: usize = 2000;
/// The fewest blocks a comparison is tested on.
pub const MIN_BLOCKS: usize = 3;

/// A cell's measure over its baseline's, paired within blocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// Blocks in which both ran.
    pub blocks: usize,
    /// The geometric mean of the per-block ratios.
    pub ratio: f64,
    /// The lower end of its 95% interval (a bootstrap on the log scale).
    pub low: f64,
    /// The upper end.
    pub high: f64,
    /// The two-sided p-value of the paired t-test of the log ratios, uncorrected.
    pub p: f64,
}

impl Ratio {
    /// The ratio of `(cell, baseline)` measures, one pair per block; `None` with fewer than
    /// [`MIN_BLOCKS`] pairs of positive, finite measures.
    pub fn of_pairs(pairs: &[(f64, f64)], resamples: usize, seed: u64) -> Option<Ratio> {
        let logs: Vec<f64> = pairs
            .iter()
            .filter(|(c, b)| c.is_finite() && b.is_finite() && *c > 0.0 && *b > 0.0)
            .map(|(c, b)| (c / b).ln())
            .collect();
        Ratio::of_logs(&logs, resamples, seed)
    }

    /// The ratio from per-block log ratios.
    pub fn of_logs(logs: &[f64], resamples: usize, seed: u64) -> Option<Ratio> {
        let n = logs.len();
        if n < MIN_BLOCKS {
            return None;
        }
        let (mean, sd) = mean_sd(logs);
        let se = sd / (n as f64).sqrt();
        if se <= f64::EPSILON * mean.abs().max(1.0) {
            let r = mean.exp();
            return Some(Ratio {
                blocks: n,
                ratio: r,
                low: r,
                high: r,
                p: if mean == 0.0 { 1.0 } else { 0.0 },
            });
        }
        let p = student_p(mean / se, (n - 1) as f64);
        let (low, high) = expanded_percentile(logs, resamples, seed);
        Some(Ratio {
            blocks: n,
            ratio: mean.exp(),
            low: low.exp().min(mean.exp()),
            high: high.exp().max(mean.exp()),
            p,
        })
    }
}

impl Ratio {
    /// The ratio of `other`'s measures over `baseline`'s when they were not run in common
    /// blocks (two experiments): the ratio of geometric means, with Welch's interval and
    /// t-test of the log means; `None` with fewer than [`MIN_BLOCKS`] positive, finite
    /// measures on a side. `blocks` is the smaller side.
    pub fn of_groups(baseline: &[f64], other: &[f64]) -> Option<Ratio> {
        let logs = |xs: &[f64]| -> Vec<f64> {
            xs.iter()
                .filter(|x| x.is_finite() && **x > 0.0)
                .map(|x| x.ln())
                .collect()
        };
        let (a, b) = (logs(baseline), logs(other));
        if a.len() < MIN_BLOCKS || b.len() < MIN_BLOCKS {
            return None;
        }
        let ((ma, sa), (mb, sb)) = (mean_sd(&a), mean_sd(&b));
        let (va, vb) = (sa * sa / a.len() as f64, sb * sb / b.len() as f64);
        let d = mb - ma;
        let se = (va + vb).sqrt();
        let n = a.len().min(b.len());
        if se <= f64::EPSILON * d.abs().max(1.0) {
            let r = d.exp();
            return Some(Ratio {
                blocks: n,
                ratio: r,
                low: r,
                high: r,
                p: if d == 0.0 { 1.0 } else { 0.0 },
            });
        }
        let df =
            (va + vb).powi(2) / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
        let p = student_p(d / se, df);
        // Welch's interval: the bootstrap of two small groups of heavy-tailed runs covers
        // less than it claims (91% for a 95% interval in the simulation below)
        let q = super::stats::t_975(df.floor().max(1.0) as usize);
        let (q_low, q_high) = (-q, q);
        Some(Ratio {
            blocks: n,
            ratio: d.exp(),
            low: (d - q_high * se).exp(),
            high: (d - q_low * se).exp(),
            p,
        })
    }
}

/// Mean and sample standard deviation.
fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// The 95% interval of the mean of `logs` by the expanded percentile bootstrap (Hesterberg,
/// "What teachers should know about the bootstrap", 2015): the percentiles of the resampled
/// means, taken at the tail share whose normal quantile is √(n/(n−1)) times Student's, which
/// widens the plain percentile interval as much as small samples need. It stays within the
/// range of the data's means, so a few outliers among near-equal ratios cannot blow it up as
/// the studentized bootstrap's tiny resampled deviations do.
fn expanded_percentile(logs: &[f64], resamples: usize, seed: u64) -> (f64, f64) {
    let n = logs.len();
    let mut rng = SplitMix(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| logs[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let z = ((n as f64) / (n as f64 - 1.0)).sqrt() * super::stats::t_975(n - 1);
    let tail = 1.0 - normal_cdf(z);
    (quantile(&means, tail), quantile(&means, 1.0 - tail))
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26 for erfc: error
/// below 1.5 × 10⁻⁷).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-z * z).exp();
    if x >= 0.0 {
        1.0 - erfc / 2.0
    } else {
        erfc / 2.0
    }
}

/// The `q` quantile of sorted `xs`, interpolated.
fn quantile(xs: &[f64], q: f64) -> f64 {
    let at = q * (xs.len() - 1) as f64;
    let (i, f) = (at.floor() as usize, at.fract());
    if i + 1 < xs.len() {
        xs[i] * (1.0 - f) + xs[i + 1] * f
    } else {
        xs[i]
    }
}

/// Holm's step-down correction: each p-value as it stands against the family of `p`, in the
/// same order (the family-wise error rate held at the level, whatever the dependence).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// What a comparison concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Better than the baseline beyond the noise threshold, significantly.
    Better,
    /// Worse beyond the noise threshold, significantly.
    Worse,
    /// The whole interval within the noise threshold.
    NoDifference,
    /// Neither: more repetitions would tell.
    Inconclusive,
}

/// A cell's verdict on one measure against its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The ratio and its interval.
    #[serde(flatten)]
    pub ratio: Ratio,
    /// Its p-value corrected for every comparison of the measure (Holm).
    pub p_corrected: f64,
    /// What it concludes.
    pub outcome: Outcome,
    /// In words: `1.42× faster [1.35, 1.49]`.
    pub verdict: String,
}

/// How a measure reads: `throughput` (higher is better) or a latency (`p99`, lower is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure<'a> {
    /// Requests per second.
    Throughput,
    /// A latency percentile, by name.
    Latency(&'a str),
}

impl Verdict {
    /// The verdict on `ratio` with its corrected p-value, under `threshold` (0.02: ±2%).
    pub fn judge(ratio: Ratio, p_corrected: f64, threshold: f64, measure: Measure<'_>) -> Verdict {
        let up = 1.0 + threshold;
        let down = 1.0 / up;
        let significant = p_corrected < SIGNIFICANCE;
        let outcome = if significant && ratio.low > up {
            Some(true)
        } else if significant && ratio.high < down {
            Some(false)
        } else {
            None
        };
        let (outcome, verdict) = match outcome {
            Some(higher) => {
                let better = higher == (measure == Measure::Throughput);
                let (f, lo, hi) = if higher {
                    (ratio.ratio, ratio.low, ratio.high)
                } else {
                    (1.0 / ratio.ratio, 1.0 / ratio.high, 1.0 / ratio.low)
                };
                let words = match (measure, higher) {
                    (Measure::Throughput, true) => "faster".to_string(),
                    (Measure::Throughput, false) => "slower".to_string(),
                    (Measure::Latency(p), true) => format!("higher {p}"),
                    (Measure::Latency(p), false) => format!("lower {p}"),
                };
                (
                    if better {
                        Outcome::Better
                    } else {
                        Outcome::Worse
                    },
                    format!("{f:.2}× {words} [{lo:.2}, {hi:.2}]"),
                )
            }
            None if ratio.low >= down && ratio.high <= up => (
                Outcome::NoDifference,
                format!(
                    "no difference beyond noise (±{}%): {:.3}× [{:.3}, {:.3}]",
                    threshold * 100.0,
                    ratio.ratio,
                    ratio.low,
                    ratio.high
                ),
            ),
            None => (
                Outcome::Inconclusive,
                format!(
                    "inconclusive: add repetitions ({:.2}× [{:.2}, {:.2}], corrected p = {:.2})",
                    ratio.ratio, ratio.low, ratio.high, p_corrected
                ),
            ),
        };
        Verdict {
            ratio,
            p_corrected,
            outcome,
            verdict,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standard normal deviate (Box–Muller).
    fn normal(rng: &mut SplitMix) -> f64 {
        (-2.0 * rng.unit().ln()).sqrt() * (2.0 * std::f64::consts::PI * rng.unit()).cos()
    }

    /// Student's t with 3 degrees of freedom: heavy tails, as a shared machine's runs have.
    fn t3(rng: &mut SplitMix) -> f64 {
        let chi2: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
        normal(rng) / (chi2 / 3.0).sqrt()
    }

    /// The repetitions the docs recommend for a verdict among a few cells; for two dozen
    /// comparisons at once (whose correction asks more of each), twice as many.
    const BLOCKS: usize = 10;
    const BLOCKS_FOR_24: usize = 20;

    /// One simulated experiment of a baseline and `effects.len()` cells on a drifting,
    /// noisy machine: each block's speed drifts by ±25% (log-normal), each run's by a
    /// heavy-tailed 3% (t, 3 degrees of freedom). The verdicts on throughput.
    fn experiment(rng: &mut SplitMix, effects: &[f64], resamples: usize) -> Vec<Verdict> {
        let mut baseline = Vec::new();
        let mut cells = vec![Vec::new(); effects.len()];
        for _ in 0..BLOCKS_FOR_24 {
            let drift = (0.25 * normal(rng)).exp();
            let run = |rng: &mut SplitMix| 100_000.0 * drift * (0.03 * t3(rng)).exp();
            baseline.push(run(rng));
            for (c, e) in effects.iter().enumerate() {
                cells[c].push(e * run(rng));
            }
        }
        let seed = rng.next();
        let ratios: Vec<Ratio> = cells
            .iter()
            .map(|c| {
                let pairs: Vec<(f64, f64)> =
                    c.iter().copied().zip(baseline.iter().copied()).collect();
                Ratio::of_pairs(&pairs, resamples, seed).unwrap()
            })
            .collect();
        let corrected = holm(&ratios.iter().map(|r| r.p).collect::<Vec<_>>());
        ratios
            .into_iter()
            .zip(corrected)
            .map(|(r, p)| Verdict::judge(r, p, DEFAULT_NOISE_THRESHOLD, Measure::Throughput))
            .collect()
    }

    #[test]
    fn a_thousand_a_a_experiments_of_24_cells_rarely_find_any_difference() {
        let mut rng = SplitMix(42);
        let mut any = 0;
        for _ in 0..1000 {
            let v = experiment(&mut rng, &[1.0; 24], 200);
            if v.iter()
                .any(|v| matches!(v.outcome, Outcome::Better | Outcome::Worse))
            {
                any += 1;
            }
        }
        assert!(
            any <= 50,
            "{any} of 1000 A/A experiments found a difference"
        );
    }

    #[test]
    fn a_true_ten_percent_difference_is_found_in_most_experiments() {
        let mut rng = SplitMix(7);
        let mut effects = [1.0; 24];
        effects[0] = 1.10;
        let mut found = 0;
        for _ in 0..200 {
            let v = experiment(&mut rng, &effects, 400);
            if v[0].outcome == Outcome::Better {
                found += 1;
                assert!(v[0].verdict.contains("× faster ["), "{}", v[0].verdict);
            }
        }
        assert!(found >= 160, "found in {found} of 200");
    }

    /// The share of `trials` intervals (from `estimate`, given the RNG and the trial's
    /// number) that hold `truth`; each must be ordered and positive.
    fn coverage(
        truth: f64,
        trials: u64,
        mut estimate: impl FnMut(&mut SplitMix, u64) -> Ratio,
    ) -> f64 {
        let mut rng = SplitMix(truth.to_bits());
        let mut covered = 0;
        for i in 0..trials {
            let r = estimate(&mut rng, i);
            assert!(
                r.low > 0.0 && r.low <= r.ratio && r.ratio <= r.high,
                "{r:?}"
            );
            if r.low <= truth && truth <= r.high {
                covered += 1;
            }
        }
        covered as f64 / trials as f64
    }

    #[test]
    fn the_interval_covers_the_true_ratio_95_times_in_100() {
        let truth: f64 = 1.10;
        let share = coverage(truth, 2000, |rng, i| {
            let logs: Vec<f64> = (0..BLOCKS)
                .map(|_| truth.ln() + 0.03 * (t3(rng) - t3(rng)))
                .collect();
            Ratio::of_logs(&logs, 1000, i).unwrap()
        });
        assert!((0.93..=0.97).contains(&share), "coverage {share}");
    }

    #[test]
    fn holm_corrects_step_down_and_keeps_the_order() {
        // sorted 0.01, 0.02, 0.04 of 3: 0.03, max(0.03, 0.04), max(0.04, 0.04)
        let a = holm(&[0.04, 0.01, 0.02]);
        let want = [0.04, 0.03, 0.04];
        for (x, w) in a.iter().zip(want) {
            assert!((x - w).abs() < 1e-12, "{a:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), [1.0, 1.0]);
    }

    #[test]
    fn verdicts_read_in_the_direction_of_the_measure() {
        let r = |ratio: f64, low: f64, high: f64| Ratio {
            blocks: 10,
            ratio,
            low,
            high,
            p: 0.001,
        };
        let t = Verdict::judge(r(1.42, 1.35, 1.49), 0.001, 0.02, Measure::Throughput);
        assert_eq!(
            (t.outcome, t.verdict.as_str()),
            (Outcome::Better, "1.42× faster [1.35, 1.49]")
        );
        let t = Verdict::judge(r(0.8, 0.75, 0.85), 0.001, 0.02, Measure::Throughput);
        assert_eq!(
            (t.outcome, t.verdict.as_str()),
            (Outcome::Worse, "1.25× slower [1.18, 1.33]")
        );
        let l = Verdict::judge(r(0.8, 0.75, 0.85), 0.001, 0.02, Measure::Latency("p99"));
        assert_eq!(
            (l.outcome, l.verdict.as_str()),
            (Outcome::Better, "1.25× lower p99 [1.18, 1.33]")
        );
        let n = Verdict::judge(r(1.005, 0.995, 1.015), 0.001, 0.02, Measure::Throughput);
        assert_eq!(n.outcome, Outcome::NoDifference, "{}", n.verdict);
        let i = Verdict::judge(r(1.05, 0.97, 1.14), 0.2, 0.02, Measure::Throughput);
        assert_eq!(i.outcome, Outcome::Inconclusive);
        assert!(
            i.verdict.starts_with("inconclusive: add repetitions"),
            "{}",
            i.verdict
        );
        // significant, but the interval reaches into the noise band
        let s = Verdict::judge(r(1.03, 1.01, 1.05), 0.001, 0.02, Measure::Throughput);
        assert_eq!(s.outcome, Outcome::Inconclusive, "{}", s.verdict);
    }

    #[test]
    fn two_experiments_compare_by_their_geometric_means_with_an_interval_that_covers() {
        let truth: f64 = 0.8;
        let share = coverage(truth, 1000, |rng, _| {
            let a: Vec<f64> = (0..BLOCKS).map(|_| (0.03 * t3(rng)).exp()).collect();
            let b: Vec<f64> = (0..BLOCKS)
                .map(|_| truth * (0.03 * t3(rng)).exp())
                .collect();
            Ratio::of_groups(&a, &b).unwrap()
        });
        assert!((0.92..=0.98).contains(&share), "coverage {share}");
        assert_eq!(Ratio::of_groups(&[1.0, 2.0], &[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn near_equal_ratios_with_outliers_keep_an_interval_within_the_data() {
        // an open loop at half the rate: every block 0.5 but for two settling runs; the
        // studentized bootstrap gave [0.50, 2.05] here (a tiny resampled deviation)
        let mut pairs: Vec<(f64, f64)> = (0..10)
            .map(|i| (20_000.0, 40_000.0 + f64::from(i)))
            .collect();
        pairs[3].1 = 39_000.0;
        pairs[7].0 = 19_990.0;
        let r = Ratio::of_pairs(&pairs, RESAMPLES, 5).unwrap();
        assert!(
            r.low >= 0.49 && r.high <= 0.52 && r.low <= r.ratio && r.ratio <= r.high,
            "{r:?}"
        );
        let v = Verdict::judge(r, r.p, DEFAULT_NOISE_THRESHOLD, Measure::Throughput);
        assert!(v.verdict.starts_with("2.0"), "{}", v.verdict);
        assert!(v.verdict.contains("× slower ["), "{}", v.verdict);
    }

    #[test]
    fn the_normal_distribution_function_meets_its_table() {
        for (x, p) in [
            (0.0, 0.5),
            (1.959_964, 0.975),
            (-1.0, 0.158_655),
            (2.384, 0.991_437),
        ] {
            assert!((normal_cdf(x) - p).abs() < 1e-6, "{x}: {}", normal_cdf(x));
        }
    }

    #[test]
    fn too_few_blocks_give_no_ratio_and_equal_ones_an_exact_one() {
        assert_eq!(Ratio::of_pairs(&[(1.0, 1.0), (2.0, 2.0)], 100, 1), None);
        let r = Ratio::of_pairs(&[(2.0, 1.0), (4.0, 2.0), (6.0, 3.0)], 100, 1).unwrap();
        assert_eq!((r.ratio, r.low, r.high, r.p), (2.0, 2.0, 2.0, 0.0));
    }
}
