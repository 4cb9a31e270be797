//! Statistics across repetitions: mean, standard deviation, extremes and a 95% confidence
//! interval (Student's t, on the log scale for the positive measures Gadget reports, so never
//! negative); Student's t distribution for the verdicts' tests.

use serde::{Deserialize, Serialize};

/// Summary statistics of one measure over a cell's repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// How many repetitions.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one sample.
    pub stddev: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// Lower end of the 95% confidence interval (the mean for one sample). For samples that
    /// are all positive (throughputs, latencies), the interval of their geometric mean, taken
    /// on the log scale where their noise is symmetric: never negative, and as asymmetric as a
    /// heavy tail makes it; otherwise the interval of the arithmetic mean.
    pub ci95_low: f64,
    /// Upper end of the 95% confidence interval.
    pub ci95_high: f64,
    /// The value the interval is centred on, which tables and plots show with it: the
    /// geometric mean for samples that are all positive (the interval is on the log scale, and
    /// a heavy tail can put the arithmetic mean above it), else the mean.
    #[serde(default)]
    pub ci95_center: f64,
}

impl Stats {
    /// The statistics of `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Stats> {
        let n = samples.len();
        if n == 0 {
            return None;
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            let squares: f64 = samples.iter().map(|x| (x - mean).powi(2)).sum();
            (squares / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let (ci95_low, ci95_center, ci95_high) = if n == 1 {
            (mean, mean, mean)
        } else if samples.iter().all(|&x| x > 0.0) {
            let logs: Vec<f64> = samples.iter().map(|x| x.ln()).collect();
            let (centre, spread) = mean_and_stddev(&logs);
            let half = t_975(n - 1) * spread / (n as f64).sqrt();
            ((centre - half).exp(), centre.exp(), (centre + half).exp())
        } else {
            let half = t_975(n - 1) * stddev / (n as f64).sqrt();
            (mean - half, mean, mean + half)
        };
        Some(Stats {
            n,
            mean,
            stddev,
            min: samples.iter().copied().fold(f64::INFINITY, f64::min),
            max: samples.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ci95_low,
            ci95_high,
            ci95_center,
        })
    }
}

/// The mean and sample standard deviation of at least two values.
fn mean_and_stddev(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let squares: f64 = values.iter().map(|x| (x - mean).powi(2)).sum();
    (mean, (squares / (n - 1.0)).sqrt())
}

/// Student's t distribution's 97.5th percentile (a two-sided 95% interval) for `df` degrees
/// of freedom: exact to three decimals from a table up to 30, then the Cornish–Fisher
/// expansion around the normal quantile (error below 10⁻³).
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        _ => {
            let z: f64 = 1.959_963_984_540_054;
            let v = df as f64;
            z + (z.powi(3) + z) / (4.0 * v)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
        }
    }
}

/// The two-sided p-value of Student's t statistic `t` at `df` degrees of freedom.
pub(crate) fn student_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { 1.0 } else { 0.0 };
    }
    incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (modified
/// Lentz), flipped to the side where it converges fast.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        for numerator in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + numerator * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + numerator / c;
            c = if c.abs() < TINY { TINY } else { c };
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms: 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let t = x + 7.5;
    let sum: f64 = G[0] + (1..9).map(|i| G[i] / (x + i as f64)).sum::<f64>();
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_incomplete_beta_meets_known_values() {
        // I_0.5(a, a) = 0.5; I_x(1, 1) = x; I_x(a, 1) = x^a
        assert!((incomplete_beta(3.0, 3.0, 0.5) - 0.5).abs() < 1e-12);
        assert!((incomplete_beta(1.0, 1.0, 0.3) - 0.3).abs() < 1e-12);
        assert!((incomplete_beta(2.5, 1.0, 0.4) - 0.4f64.powf(2.5)).abs() < 1e-12);
        // a t of 2.776 at 4 degrees of freedom is the 97.5th percentile: p = 0.05
        let p = incomplete_beta(2.0, 0.5, 4.0 / (4.0 + 2.776f64.powi(2)));
        assert!((p - 0.05).abs() < 1e-4, "{p}");
    }

    #[test]
    fn a_confidence_interval_computed_by_hand() {
        // 10, 12, 14: mean 12, s = 2; on the log scale: ln values 2.302585, 2.484907,
        // 2.639057, mean 2.475516, s 0.168433, t(0.975, 2) = 4.303, half width
        // 4.303 × 0.168433 / √3 = 0.418443: e^2.057073 = 7.8230, e^2.893960 = 18.0647
        let s = Stats::of(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(
            (s.n, s.mean, s.stddev, s.min, s.max),
            (3, 12.0, 2.0, 10.0, 14.0)
        );
        assert!((s.ci95_low - 7.8230).abs() < 1e-3, "{s:?}");
        // centred on the geometric mean, (10 · 12 · 14)^(1/3) = 11.8878
        assert!((s.ci95_center - 11.8878).abs() < 1e-3, "{s:?}");
        assert!((s.ci95_high - 18.0647).abs() < 1e-3, "{s:?}");
        // a zero among them: the arithmetic interval, 12 ± 4.303 × 7.2111 / √3
        let s = Stats::of(&[0.0, 12.0, 14.0]).unwrap();
        assert!((s.ci95_high - s.mean - 4.303 * s.stddev / 3f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn a_heavy_tail_widens_the_interval_upwards_and_never_below_zero() {
        // the reported case: a max latency of 1 ms in most runs and 500 ms in one
        let s = Stats::of(&[1e6, 1.2e6, 0.9e6, 5e8, 1.1e6]).unwrap();
        assert!(s.ci95_low > 0.0 && s.ci95_low < s.min, "{s:?}");
        // the interval holds what tables show with it, its centre, not always the mean
        assert!(
            s.ci95_low <= s.ci95_center && s.ci95_center <= s.ci95_high,
            "{s:?}"
        );
        // symmetric about the geometric mean on the log scale, so longer above it than below
        let geometric = s.ci95_center;
        assert!(((s.ci95_low * s.ci95_high).sqrt() / geometric - 1.0).abs() < 1e-9);
        assert!(
            s.ci95_high - geometric > 10.0 * (geometric - s.ci95_low),
            "{s:?}"
        );
    }

    #[test]
    fn one_sample_has_no_spread_and_none_has_no_stats() {
        let s = Stats::of(&[5.0]).unwrap();
        assert_eq!(
            (s.stddev, s.ci95_low, s.ci95_center, s.ci95_high),
            (0.0, 5.0, 5.0, 5.0)
        );
        assert_eq!(Stats::of(&[]), None);
    }

    #[test]
    fn t_quantiles_match_the_tables_beyond_thirty() {
        // published values: t(0.975, 40) = 2.021, 60: 2.000, 120: 1.980
        for (df, t) in [(40, 2.021), (60, 2.000), (120, 1.980), (1_000_000, 1.960)] {
            assert!((t_975(df) - t).abs() < 1.5e-3, "df {df}: {}", t_975(df));
        }
        assert_eq!(t_975(2), 4.303);
    }
}
