//! The summaries a results document gives of its histograms: each op's row of the paper's
//! table, its percentile spectrum and its time series, with the histograms' bounds that every
//! run, merge and decoder shares.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest value a histogram tracks: one hour in nanoseconds (longer values saturate).
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// The most intervals a run keeps in its time series and HDR log: a day of 1 s intervals, 100 s
/// of the shortest (1 ms). Later intervals still count in the totals.
pub const MAX_INTERVALS: usize = 100_000;

/// An empty histogram of the bounds every run records with.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS).expect("valid histogram bounds")
}

/// A latency percentile spectrum, as HdrHistogram prints it: the latency at percentiles that
/// close in on 100% five steps per halving of the distance to it (50%, 75%, 87.5%, ...), so
/// the tail is drawn as finely as the middle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spectrum {
    /// Op name or `all`.
    pub op: String,
    /// `(percentile, ns)`, percentiles from 0 to 100 ascending.
    pub points: Vec<(f64, u64)>,
}

impl Spectrum {
    /// The spectrum of `h` (no points when it is empty).
    pub fn of(op: &str, h: &Histogram<u64>) -> Spectrum {
        let mut points: Vec<(f64, u64)> = Vec::new();
        if !h.is_empty() {
            for v in h.iter_quantiles(5) {
                let p = v.quantile_iterated_to() * 100.0;
                let ns = h.highest_equivalent(v.value_iterated_to());
                if points.last().is_none_or(|&(lp, _)| p > lp) {
                    points.push((p, ns));
                }
            }
        }
        Spectrum {
            op: op.to_string(),
            points,
        }
    }
}

/// One row of the paper's summary table; times in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    /// Op name or `all`.
    pub op: String,
    /// Requests measured.
    pub ops: u64,
    /// Requests per second over the measured time.
    pub ops_per_s: f64,
    /// Smallest.
    pub min_ns: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// 99.99th percentile.
    pub p9999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

/// Quantile of a histogram, 0 when it is empty.
fn quantile(h: &Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

/// Operations per second: `count` over `seconds`, 0 for an empty time.
fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

impl OpSummary {
    /// The row of `op` from its histogram `h` over `seconds` of measuring.
    pub fn from_histogram(op: &str, h: &Histogram<u64>, seconds: f64) -> Self {
        let empty = h.is_empty();
        OpSummary {
            op: op.to_string(),
            ops: h.len(),
            ops_per_s: per_second(h.len(), seconds),
            min_ns: if empty { 0 } else { h.min() },
            mean_ns: if empty { 0.0 } else { h.mean() },
            p50_ns: quantile(h, 0.5),
            p99_ns: quantile(h, 0.99),
            p999_ns: quantile(h, 0.999),
            p9999_ns: quantile(h, 0.9999),
            max_ns: if empty { 0 } else { h.max() },
        }
    }
}

/// Throughput and latency percentiles of one op in one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalOp {
    /// Op name or `all`.
    pub op: String,
    /// Requests completed in the interval.
    pub ops: u64,
    /// Requests per second.
    pub ops_per_s: f64,
    /// Median latency, ns.
    pub p50_ns: u64,
    /// 99th percentile latency, ns.
    pub p99_ns: u64,
    /// 99.9th percentile latency, ns.
    pub p999_ns: u64,
}

impl IntervalOp {
    /// An interval's row from its request count and its median, p99 and p99.9 over `seconds`.
    pub fn new(op: &str, ops: u64, [p50_ns, p99_ns, p999_ns]: [u64; 3], seconds: f64) -> Self {
        IntervalOp {
            op: op.to_string(),
            ops,
            ops_per_s: per_second(ops, seconds),
            p50_ns,
            p99_ns,
            p999_ns,
        }
    }
}

/// One interval of the time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalStats {
    /// Start, seconds since the start of the run.
    pub start_s: f64,
    /// End, seconds since the start of the run.
    pub end_s: f64,
    /// All ops together.
    pub all: IntervalOp,
    /// Each op that occurred.
    pub ops: Vec<IntervalOp>,
}

impl IntervalStats {
    /// Adds another instance's interval ending at the same time. Counts and rates add up;
    /// percentiles of the combined interval are the larger of the two (an upper bound, since
    /// only the instances' own histograms are kept per interval).
    pub fn absorb(&mut self, other: &IntervalStats) {
        self.start_s = self.start_s.min(other.start_s);
        self.all.absorb(&other.all);
        for o in &other.ops {
            match self.ops.iter_mut().find(|m| m.op == o.op) {
                Some(m) => m.absorb(o),
                None => self.ops.push(o.clone()),
            }
        }
    }
}

impl IntervalOp {
    fn absorb(&mut self, other: &IntervalOp) {
        self.ops += other.ops;
        self.ops_per_s += other.ops_per_s;
        self.p50_ns = self.p50_ns.max(other.p50_ns);
        self.p99_ns = self.p99_ns.max(other.p99_ns);
        self.p999_ns = self.p999_ns.max(other.p999_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spectrum_reaches_the_maximum_closing_in_on_the_tail() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v * 1000).unwrap();
        }
        let s = Spectrum::of("get", &h);
        let (first, last) = (s.points[0], *s.points.last().unwrap());
        assert_eq!(last, (100.0, h.highest_equivalent(10_000_000)));
        assert!(first.0 < 1.0 && first.1 <= 2_000, "{first:?}");
        assert!(s
            .points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        // the tail is drawn finely: points between 99% and 99.99%
        let tail = s
            .points
            .iter()
            .filter(|p| (99.0..99.99).contains(&p.0))
            .count();
        assert!(
            tail >= 10,
            "{tail} points in the tail of {}",
            s.points.len()
        );
        let median = s.points.iter().find(|p| p.0 >= 50.0).unwrap();
        assert!((4_900_000..=5_100_000).contains(&median.1), "{median:?}");
        assert!(Spectrum::of("get", &Histogram::<u64>::new(3).unwrap())
            .points
            .is_empty());
    }
}
