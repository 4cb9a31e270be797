//! Approximate analysis for traces whose exact analysis does not fit in memory: SHARDS
//! (spatially hashed sampling, Waldspurger et al., FAST'15) at a fixed rate of `2^-shift`.
//!
//! A key is in the sample when the top `shift` bits of its fingerprint are zero, so every
//! access to a sampled key is kept and none of the others: the sample is a trace of its own
//! whose stack distances, scaled by `2^shift`, estimate the whole's (each sampled key stands
//! for `2^shift` keys between two accesses). The same key is sampled in every trace, so two
//! sampled traces compare key for key. Counts by op, sizes and events stay exact (every
//! request is read); distinct keys, the working set and key lifetimes are estimated from the
//! sampled keys; unique key sequences need every request in order and are not computed.
//!
//! How good the estimates are: each result carries two numbers for its hit-ratio curve. The
//! sampling noise is measured on the trace itself: the sample is split in two by a hash of the
//! key, each half's curve computed, and half their mean absolute difference reported (two
//! independent samples at half the rate differ by about twice the noise of their union). The
//! whole error, noise and bias, is measured against the exact analysis on the Flink reference
//! recordings ([`MEASURED_HIT_RATIO_ERROR`], `tests/sampled_analysis.rs`): a curve with sharp
//! steps, as window state has (every key reused after the same number of others), is smeared
//! by the sample, which the split halves share and so do not see.

use serde::Serialize;

use crate::locality::StackDistances;

/// Bytes of memory the exact analysis takes per keyed request at its peak, measured: 3.37 GiB
/// for a trace of 100 M requests, 94.2 M of them keyed (the ids, their shuffled copy, and the
/// two sequence counts' candidates when they overlap).
pub const EXACT_BYTES_PER_REQUEST: u64 = 38;

/// Bytes of memory a sampled analysis takes per sampled keyed request, measured: 239 MB for a
/// billion requests at 1/64 (the ids, their shuffled copy; no sequences are counted).
pub const SAMPLED_BYTES_PER_REQUEST: u64 = 19;

/// The largest mean absolute error of a hit-ratio curve sampled at 1/8 against the exact one,
/// over the Flink reference recordings (trace and shuffled; measured 0.0007 to 0.0232, the
/// tumbling window's trace the largest), rounded up: `tests/sampled_analysis.rs` holds every
/// recording within it.
pub const MEASURED_HIT_RATIO_ERROR: f64 = 0.025;

/// The highest sampling shift (a rate of 1 key in 2^20).
pub const MAX_SHIFT: u32 = 20;

/// How a trace's keys are analysed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sampling {
    /// Every key: exact results.
    #[default]
    Exact,
    /// SHARDS at a rate of 1 key in `2^shift`.
    Shards {
        /// The rate's exponent, 1 to [`MAX_SHIFT`].
        shift: u32,
    },
}

/// A `--sample` value that is neither `exact` nor `1/N` with `N` a power of two.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a sampling rate: use exact, or 1/N with N a power of two from 2 to 2^20 (1/64 keeps one key in 64)")]
pub struct BadRate(pub String);

impl Sampling {
    /// Parses `exact` or `1/N` (`N` a power of two, 2 to 2^20).
    pub fn parse(text: &str) -> Result<Sampling, BadRate> {
        if text == "exact" || text == "1/1" {
            return Ok(Sampling::Exact);
        }
        let n: u64 = text
            .strip_prefix("1/")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| BadRate(text.to_string()))?;
        if !n.is_power_of_two() || !(2..=1 << MAX_SHIFT).contains(&n) {
            return Err(BadRate(text.to_string()));
        }
        Ok(Sampling::Shards {
            shift: n.trailing_zeros(),
        })
    }

    /// The exponent of the rate: 0 when exact.
    pub fn shift(self) -> u32 {
        match self {
            Sampling::Exact => 0,
            Sampling::Shards { shift } => shift,
        }
    }

    /// The share of keys kept.
    pub fn rate(self) -> f64 {
        1.0 / (1u64 << self.shift()) as f64
    }

    /// True when the key with `fingerprint` is in the sample.
    #[inline]
    pub fn keeps(self, fingerprint: &[u64; 2]) -> bool {
        let shift = self.shift();
        shift == 0 || fingerprint[0] >> (64 - shift) == 0
    }

    /// The rate as written: `exact` or `1/N`.
    pub fn label(self) -> String {
        match self {
            Sampling::Exact => "exact".to_string(),
            Sampling::Shards { shift } => format!("1/{}", 1u64 << shift),
        }
    }

    /// Exact when a trace of about `requests` keyed requests fits in `available` bytes of
    /// memory with room to spare (its analysis in at most 3/4 of them); otherwise the highest
    /// rate whose sample takes at most half of them.
    pub fn fitting(requests: u64, available: u64) -> Sampling {
        if requests.saturating_mul(EXACT_BYTES_PER_REQUEST) <= available / 4 * 3 {
            return Sampling::Exact;
        }
        let sampled = requests.saturating_mul(SAMPLED_BYTES_PER_REQUEST);
        let shift = (1..=MAX_SHIFT)
            .find(|s| sampled >> s <= available / 2)
            .unwrap_or(MAX_SHIFT);
        Sampling::Shards { shift }
    }
}

/// Keyed requests a trace file of `bytes` may hold at most, by its kind (from its first
/// bytes): a binary trace takes about 10 bytes a request, a gzipped text or recording about
/// 3.5, a plain text one about 30. Assumed lower, so that the estimate errs towards sampling.
pub fn requests_at_most(bytes: u64, first: &[u8]) -> u64 {
    let per_request = if gadget::trace::is_gzip(first) {
        2
    } else if first.starts_with(&gadget::trace::BINARY_MAGIC) {
        8
    } else {
        20
    };
    bytes / per_request
}

/// The memory this machine has available (`MemAvailable` in `/proc/meminfo`), `None` where it
/// does not say.
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The sampling `auto` chooses for traces of at most `requests` keyed requests each: exact
/// when it fits in the memory available (or that is not known), and why otherwise.
pub fn auto(requests: u64) -> (Sampling, Option<String>) {
    let Some(available) = available_memory() else {
        return (Sampling::Exact, None);
    };
    let chosen = Sampling::fitting(requests, available);
    let why = (chosen != Sampling::Exact).then(|| {
        format!(
            "analyzing a sample of the keys (SHARDS, {}): the exact analysis of up to {}              requests would take about {:.1} GiB, and {:.1} GiB are available; --sample exact              forces it",
            chosen.label(),
            requests,
            (requests * EXACT_BYTES_PER_REQUEST) as f64 / (1u64 << 30) as f64,
            available as f64 / (1u64 << 30) as f64
        )
    });
    (chosen, why)
}

/// What a sampled analysis says of its sample and of its accuracy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingSummary {
    /// How the keys were sampled.
    pub method: String,
    /// The sampling rate, `1/N`.
    pub rate: String,
    /// Distinct keys in the sample.
    pub sampled_keys: u64,
    /// Keyed requests in the sample.
    pub sampled_requests: u64,
    /// Keyed requests in the trace.
    pub keyed_requests: u64,
    /// The distinct-key estimate's relative standard error (binomial: the sampled keys are
    /// a Bernoulli sample of the trace's).
    pub distinct_keys_relative_error: f64,
    /// The sampling noise of the trace's LRU hit-ratio curve (a mean absolute error, as a
    /// fraction of all accesses), measured by splitting the sample in two; `None` when a half
    /// is empty.
    pub hit_ratio_noise: Option<f64>,
    /// The largest mean absolute error of a sampled hit-ratio curve measured against the
    /// exact one on the reference recordings, noise and bias together (at 1/8).
    pub hit_ratio_error_measured: f64,
    /// What is estimated from the sample.
    pub estimated: Vec<String>,
    /// What a sampled analysis leaves out, and why.
    pub not_computed: String,
}

impl SamplingSummary {
    /// The summary of a sample at `sampling` of `sampled_keys` keys and `sampled_requests`
    /// requests out of `keyed_requests`.
    pub fn new(
        sampling: Sampling,
        sampled_keys: u64,
        sampled_requests: u64,
        keyed_requests: u64,
        hit_ratio_noise: Option<f64>,
    ) -> SamplingSummary {
        let rate = sampling.rate();
        SamplingSummary {
            method: "SHARDS: spatially hashed key sampling at a fixed rate (Waldspurger et al., \
                     FAST'15), with its adjustment of the first distance's count"
                .to_string(),
            rate: sampling.label(),
            sampled_keys,
            sampled_requests,
            keyed_requests,
            distinct_keys_relative_error: ((1.0 - rate) / sampled_keys.max(1) as f64).sqrt(),
            hit_ratio_noise,
            hit_ratio_error_measured: MEASURED_HIT_RATIO_ERROR,
            estimated: [
                "distinct state keys",
                "stack distances and the LRU hit-ratio curve (trace and shuffled)",
                "working set",
                "key TTL in requests",
            ]
            .map(String::from)
            .to_vec(),
            not_computed: "unique key sequences: they need every request in order; analyze \
                           with --sample exact (or a prefix: gadget trace convert --limit)"
                .to_string(),
        }
    }
}

/// The stack distances of a sample scaled to stand for the whole, with SHARDS' adjustment:
/// the difference between the accesses a sample at this rate should hold and those it holds
/// goes to the count of distance 0, so that the curve's total is the trace's.
pub fn scaled(mut sample: StackDistances, sampling: Sampling, keyed: u64) -> StackDistances {
    let shift = sampling.shift();
    if shift == 0 {
        return sample;
    }
    let expected = keyed >> shift;
    let held = sample.counts.iter().sum::<u64>() + sample.cold;
    if sample.counts.is_empty() {
        sample.counts.push(0);
    }
    if expected >= held {
        sample.counts[0] += expected - held;
    } else {
        sample.counts[0] = sample.counts[0].saturating_sub(held - expected);
    }
    sample.scale_shift = shift;
    sample
}

/// Mean absolute difference between two hit-ratio curves at the sizes of the first (the
/// second's ratio at a size is that of its largest size at or below it).
pub fn curve_difference(a: &[(u64, f64)], b: &[(u64, f64)]) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    let at = |curve: &[(u64, f64)], size: u64| {
        let i = curve.partition_point(|&(s, _)| s <= size);
        if i == 0 {
            0.0
        } else {
            curve[i - 1].1
        }
    };
    a.iter()
        .map(|&(size, r)| (r - at(b, size)).abs())
        .sum::<f64>()
        / a.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_exact_or_one_in_a_power_of_two() {
        assert_eq!(Sampling::parse("exact").unwrap(), Sampling::Exact);
        assert_eq!(
            Sampling::parse("1/64").unwrap(),
            Sampling::Shards { shift: 6 }
        );
        for bad in ["1/3", "0.1", "1/0", "1/2097152", "half"] {
            let e = Sampling::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("power of two"), "{e}");
        }
        assert_eq!(Sampling::parse("1/64").unwrap().label(), "1/64");
    }

    #[test]
    fn a_trace_that_fits_is_analysed_exactly_and_a_larger_one_sampled_to_fit() {
        let gib = 1u64 << 30;
        assert_eq!(Sampling::fitting(100_000_000, 16 * gib), Sampling::Exact);
        let s = Sampling::fitting(1_000_000_000, 16 * gib);
        assert_eq!(s, Sampling::Shards { shift: 2 });
        assert!((1_000_000_000u64 * SAMPLED_BYTES_PER_REQUEST) >> s.shift() <= 8 * gib);
    }

    #[test]
    fn a_files_requests_are_bounded_by_its_kind() {
        assert_eq!(requests_at_most(800, &gadget::trace::BINARY_MAGIC), 100);
        assert_eq!(requests_at_most(800, &[0x1f, 0x8b, 8]), 400);
        assert_eq!(requests_at_most(800, b"get\ts"), 40);
    }

    #[test]
    fn a_sample_keeps_about_its_rate_of_keys() {
        let s = Sampling::Shards { shift: 4 };
        let kept = (0..160_000u64)
            .filter(|&k| s.keeps(&crate::fingerprint(0, &k.to_le_bytes())))
            .count();
        assert!((9_000..11_000).contains(&kept), "{kept} of 160,000");
    }

    #[test]
    fn scaling_stands_each_sampled_access_and_distance_for_the_rate() {
        // a sample of 4 accesses (2 cold, reuses at 0 and 1) of a trace of 40 at 1/8
        let sample = StackDistances {
            counts: vec![1, 1],
            cold: 2,
            scale_shift: 0,
        };
        let s = scaled(sample, Sampling::Shards { shift: 3 }, 40);
        // 5 expected, 4 held: one more at distance 0
        assert_eq!(s.counts, vec![2, 1]);
        let summary = s.summary();
        assert_eq!(summary.accesses, 40);
        assert_eq!(summary.cold, 16);
        assert_eq!(summary.max, 8);
        assert_eq!(summary.buckets, vec![(0, 16), (8, 8)]);
        // an LRU cache of 8 keys hits the distance-0 accesses only; of 9, both
        assert_eq!(s.hit_ratio(8), 2.0 / 5.0);
        assert_eq!(s.hit_ratio(9), 3.0 / 5.0);
    }

    #[test]
    fn curves_differ_by_their_mean_absolute_gap() {
        let a = [(1, 0.1), (2, 0.5), (4, 0.9)];
        let b = [(1, 0.2), (4, 0.8)];
        // at 2, b's ratio is its ratio at 1
        assert!((curve_difference(&a, &b) - (0.1 + 0.3 + 0.1) / 3.0).abs() < 1e-12);
    }
}
