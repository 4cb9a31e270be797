//! Statistics of a rate series (events or arrivals per time bin): autocorrelation and the
//! Hurst exponent by two estimators, aggregate variance and rescaled range (R/S).

use serde::Serialize;

/// What a rate series looks like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesSummary {
    /// Bins in the series.
    pub bins: usize,
    /// Mean count per bin.
    pub mean: f64,
    /// Coefficient of variation of the counts.
    pub cv: f64,
    /// Autocorrelation at lags 0, 1, 2, … (up to a quarter of the series, at most 200).
    pub autocorrelation: Vec<f64>,
    /// Hurst exponent by aggregate variance (0.5: no long-range dependence).
    pub hurst_aggregate_variance: Option<f64>,
    /// Hurst exponent by rescaled range.
    pub hurst_rescaled_range: Option<f64>,
}

impl SeriesSummary {
    /// Summarizes `series`.
    pub fn of(series: &[f64]) -> SeriesSummary {
        let n = series.len();
        let mean = if n == 0 {
            0.0
        } else {
            series.iter().sum::<f64>() / n as f64
        };
        let var = if n == 0 {
            0.0
        } else {
            series.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64
        };
        SeriesSummary {
            bins: n,
            mean,
            cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
            autocorrelation: (0..=(n / 4).min(200))
                .map(|lag| autocorrelation(series, lag))
                .collect(),
            hurst_aggregate_variance: hurst_aggregate_variance(series),
            hurst_rescaled_range: hurst_rescaled_range(series),
        }
    }
}

/// The sample autocorrelation of `xs` at `lag` (1 at lag 0; 0 for a constant series).
pub fn autocorrelation(xs: &[f64], lag: usize) -> f64 {
    if xs.len() <= lag {
        return 0.0;
    }
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let var: f64 = xs.iter().map(|x| (x - m).powi(2)).sum();
    if var == 0.0 {
        return if lag == 0 { 1.0 } else { 0.0 };
    }
    let cov: f64 = xs.windows(lag + 1).map(|w| (w[0] - m) * (w[lag] - m)).sum();
    cov / var
}

/// Least-squares slope of `ys` over `xs`.
fn slope(xs: &[f64], ys: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    Some(
        xs.iter()
            .zip(ys)
            .map(|(x, y)| (x - mx) * (y - my))
            .sum::<f64>()
            / sxx,
    )
}

/// Hurst exponent by the aggregate-variance method: the variance of the series averaged over
/// blocks of `m` falls as `m^(2H−2)`; blocks of 1, 2, 4, … while at least 16 remain. `None`
/// for a series too short (under 64 bins) or without variance.
pub fn hurst_aggregate_variance(series: &[f64]) -> Option<f64> {
    if series.len() < 64 {
        return None;
    }
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let mut m = 1;
    while series.len() / m >= 16 {
        let agg: Vec<f64> = series
            .chunks_exact(m)
            .map(|c| c.iter().sum::<f64>() / m as f64)
            .collect();
        let mean = agg.iter().sum::<f64>() / agg.len() as f64;
        let var = agg.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / agg.len() as f64;
        if var <= 0.0 {
            break;
        }
        xs.push((m as f64).ln());
        ys.push(var.ln());
        m *= 2;
    }
    slope(&xs, &ys).map(|s| 1.0 + s / 2.0)
}

/// Hurst exponent by rescaled range: the mean over blocks of `m` of (range of cumulative
/// deviations / standard deviation) grows as `m^H`; blocks of 8, 16, … while at least 4
/// remain. `None` for a series too short (under 64 bins) or without variance.
pub fn hurst_rescaled_range(series: &[f64]) -> Option<f64> {
    if series.len() < 64 {
        return None;
    }
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let mut m = 8;
    while series.len() / m >= 4 {
        let mut sum = 0.0;
        let mut blocks = 0;
        for block in series.chunks_exact(m) {
            let mean = block.iter().sum::<f64>() / m as f64;
            let sd = (block.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / m as f64).sqrt();
            if sd == 0.0 {
                continue;
            }
            let (mut cum, mut lo, mut hi) = (0.0f64, 0.0f64, 0.0f64);
            for x in block {
                cum += x - mean;
                lo = lo.min(cum);
                hi = hi.max(cum);
            }
            sum += (hi - lo) / sd;
            blocks += 1;
        }
        if blocks > 0 {
            xs.push((m as f64).ln());
            ys.push((sum / blocks as f64).ln());
        }
        m *= 2;
    }
    slope(&xs, &ys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget::source::random::Rng;

    #[test]
    fn white_noise_has_hurst_near_one_half_and_no_autocorrelation() {
        let mut rng = Rng::new(7);
        let xs: Vec<f64> = (0..1 << 14).map(|_| rng.next_f64()).collect();
        let s = SeriesSummary::of(&xs);
        let h = s.hurst_aggregate_variance.unwrap();
        assert!((h - 0.5).abs() < 0.08, "aggregate variance {h}");
        // R/S is biased upwards on short blocks (Anis–Lloyd); about 0.55 for white noise
        let h = s.hurst_rescaled_range.unwrap();
        assert!((0.45..0.65).contains(&h), "rescaled range {h}");
        assert_eq!(s.autocorrelation[0], 1.0);
        assert!(s.autocorrelation[1].abs() < 0.05);
    }

    #[test]
    fn a_persistent_random_walk_has_hurst_near_one() {
        let mut rng = Rng::new(9);
        let mut level = 0.0;
        let xs: Vec<f64> = (0..1 << 14)
            .map(|_| {
                level += rng.next_f64() - 0.5;
                level
            })
            .collect();
        let h = hurst_rescaled_range(&xs).unwrap();
        assert!(h > 0.9, "rescaled range {h}");
        assert!(autocorrelation(&xs, 10) > 0.5);
    }

    #[test]
    fn a_periodic_series_shows_its_period() {
        let xs: Vec<f64> = (0..400)
            .map(|i| (i as f64 * std::f64::consts::TAU / 50.0).sin())
            .collect();
        assert!(autocorrelation(&xs, 50) > 0.8);
        assert!(autocorrelation(&xs, 25) < -0.8);
    }
}
