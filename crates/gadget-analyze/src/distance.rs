//! How far apart two traces' key popularity distributions are.
//!
//! As in the paper (§4), each trace's keys are ranked by popularity (most requested first) and
//! both rank distributions are mapped onto one domain `[0, D]`, `D` the larger number of
//! distinct keys: rank `i` of a trace with `d` keys sits at `i · D / d`. On that domain the
//! Kolmogorov–Smirnov statistic is the largest gap between the two request CDFs and the
//! Wasserstein-1 distance the area between them.

use serde::Serialize;

/// The distance between two key popularity distributions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PopularityDistance {
    /// The common domain's size (the larger distinct-key count).
    pub domain: u64,
    /// Kolmogorov–Smirnov statistic: the largest CDF gap, in [0, 1].
    pub ks_statistic: f64,
    /// Asymptotic p-value of the two-sample KS test (Kolmogorov distribution).
    pub ks_p_value: f64,
    /// Wasserstein-1 distance, in units of the domain (ranks).
    pub wasserstein: f64,
}

/// Compares two popularity distributions, each given as per-key request counts (any order).
pub fn popularity_distance(a: &[u64], b: &[u64]) -> PopularityDistance {
    let sorted = |c: &[u64]| {
        let mut v: Vec<u64> = c.iter().copied().filter(|&n| n > 0).collect();
        v.sort_unstable_by(|x, y| y.cmp(x));
        v
    };
    let (a, b) = (sorted(a), sorted(b));
    let domain = a.len().max(b.len()) as u64;
    let (na, nb) = (a.iter().sum::<u64>(), b.iter().sum::<u64>());
    if na == 0 || nb == 0 {
        return PopularityDistance {
            domain,
            ks_statistic: 0.0,
            ks_p_value: 1.0,
            wasserstein: 0.0,
        };
    }
    // walk both step functions over their merged breakpoints
    let at = |len: usize, i: usize| i as f64 * domain as f64 / len as f64;
    let (mut i, mut j) = (0usize, 0usize);
    let (mut fa, mut fb) = (0.0f64, 0.0f64);
    let (mut ks, mut w) = (0.0f64, 0.0f64);
    let mut x = 0.0f64;
    while i < a.len() || j < b.len() {
        let xa = if i < a.len() {
            at(a.len(), i)
        } else {
            f64::INFINITY
        };
        let xb = if j < b.len() {
            at(b.len(), j)
        } else {
            f64::INFINITY
        };
        let next = xa.min(xb);
        w += (fa - fb).abs() * (next - x);
        x = next;
        while i < a.len() && at(a.len(), i) <= x {
            fa += a[i] as f64 / na as f64;
            i += 1;
        }
        while j < b.len() && at(b.len(), j) <= x {
            fb += b[j] as f64 / nb as f64;
            j += 1;
        }
        ks = ks.max((fa - fb).abs());
    }
    w += (fa - fb).abs() * (domain as f64 - x).max(0.0);
    let en = ((na as f64 * nb as f64) / (na + nb) as f64).sqrt();
    PopularityDistance {
        domain,
        ks_statistic: ks,
        ks_p_value: kolmogorov_q((en + 0.12 + 0.11 / en) * ks),
        wasserstein: w,
    }
}

/// The Kolmogorov distribution's survival function `Q(λ) = 2 Σ (−1)^(j−1) e^(−2 j² λ²)`.
pub fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 1e-3 {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for j in 1..=100 {
        let term = sign * (-2.0 * (j * j) as f64 * lambda * lambda).exp();
        sum += term;
        if term.abs() < 1e-12 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_distributions_are_at_distance_zero() {
        let d = popularity_distance(&[5, 3, 1], &[1, 5, 3]);
        assert_eq!(d.ks_statistic, 0.0);
        assert_eq!(d.wasserstein, 0.0);
        assert_eq!(d.ks_p_value, 1.0);
    }

    #[test]
    fn hand_made_distance() {
        // A: one key with all requests; B: two equally popular keys. Domain 2.
        // F_A = 1 on [0, 2); F_B = 0.5 on [0, 1), 1 on [1, 2).
        let d = popularity_distance(&[4], &[2, 2]);
        assert_eq!(d.domain, 2);
        assert_eq!(d.ks_statistic, 0.5);
        assert_eq!(d.wasserstein, 0.5);
    }

    #[test]
    fn kolmogorov_tail_matches_known_values() {
        // Q(1.36) ≈ 0.049, Q(1.63) ≈ 0.0098 (the 5% and 1% critical values)
        assert!((kolmogorov_q(1.36) - 0.0494).abs() < 1e-3);
        assert!((kolmogorov_q(1.63) - 0.0098).abs() < 1e-3);
    }
}
