//! Distributions of synthetic workloads: which key an event has ([`KeyDistribution`]) and how
//! far apart in event time consecutive events are ([`GapDistribution`]).
//!
//! Every sampler draws from a caller-supplied [`Rng`], is deterministic for a seed and does
//! not allocate per sample.
//!
//! **Keys are indices in `[0, N)`** where `N` is the key space; Zipf-like distributions map
//! rank `r` (1 = most popular) to key `r − 1`, so key 0 is the most popular one.
//!
//! One concept, the samplers of synthetic workloads, each with the exactness notes it needs,
//! which is why the file is long.

use std::f64::consts::PI;
use std::path::{Path, PathBuf};

use super::random::Rng;

/// A distribution parameter is out of range or an empirical CDF file is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistributionError {
    /// A parameter is outside its allowed range.
    #[error("{parameter} must be {allowed}, got {got}")]
    Parameter {
        /// The parameter, like `zipf exponent s`.
        parameter: &'static str,
        /// The allowed range, like `> 0`.
        allowed: String,
        /// The value given.
        got: String,
    },
    /// The empirical CDF file could not be read.
    #[error("cannot read empirical CDF {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line of the empirical CDF file is malformed or breaks monotonicity.
    #[error("{path}:{line}: {message}")]
    Cdf {
        /// The file.
        path: PathBuf,
        /// 1-based line number (of the last line when the file as a whole is wrong).
        line: usize,
        /// What is wrong and what is expected.
        message: String,
    },
}

fn bad(
    parameter: &'static str,
    allowed: impl Into<String>,
    got: impl ToString,
) -> DistributionError {
    DistributionError::Parameter {
        parameter,
        allowed: allowed.into(),
        got: got.to_string(),
    }
}

fn require(
    ok: bool,
    parameter: &'static str,
    allowed: &str,
    got: impl ToString,
) -> Result<(), DistributionError> {
    if ok {
        Ok(())
    } else {
        Err(bad(parameter, allowed, got))
    }
}

fn require_probability(parameter: &'static str, p: f64) -> Result<(), DistributionError> {
    require((0.0..=1.0).contains(&p), parameter, "in [0, 1]", p)
}

fn require_finite(parameter: &'static str, x: f64) -> Result<(), DistributionError> {
    require(x.is_finite(), parameter, "a finite number", x)
}

// ---------------------------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------------------------

/// Standard normal deviates by the Box–Muller transform; the second deviate of each pair is
/// kept for the next call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StandardNormal {
    spare: Option<f64>,
}

impl StandardNormal {
    /// A sampler with no cached deviate.
    pub fn new() -> Self {
        StandardNormal { spare: None }
    }

    /// One N(0, 1) deviate.
    pub fn sample(&mut self, rng: &mut Rng) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // 1 − u lies in (0, 1], so the logarithm is finite.
        let radius = (-2.0 * (1.0 - rng.next_f64()).ln()).sqrt();
        let angle = 2.0 * PI * rng.next_f64();
        self.spare = Some(radius * angle.sin());
        radius * angle.cos()
    }
}

/// Standard exponential deviates (rate 1) by Marsaglia and Tsang's ziggurat ("The ziggurat
/// method for generating random variables", 2000): 256 layers of equal area under `e^(−x)`,
/// one random number and one table entry for 98.9% of deviates, a logarithm or an
/// exponential only for the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StandardExponential;

/// Where the ziggurat's base layer gives way to the tail (the rightmost layer boundary).
const ZIGGURAT_TAIL: f64 = 7.697_117_470_131_05;

/// The ziggurat's layer boundaries and the tests derived from them.
#[derive(Debug)]
struct Ziggurat {
    /// Layer `i`'s width over 2^53: a 53-bit draw times it is a point of the layer.
    scaled_width: [f64; 256],
    /// Draws below this are left of the next layer's boundary, so under the curve.
    inner: [u64; 256],
    /// `e^(−x)` at each boundary (the layer's lower and upper heights).
    height: [f64; 257],
}

impl Ziggurat {
    /// The table, built on first use.
    fn get() -> &'static Ziggurat {
        static TABLE: std::sync::OnceLock<Ziggurat> = std::sync::OnceLock::new();
        TABLE.get_or_init(Ziggurat::build)
    }

    /// Boundaries `x[0] > x[1] = r > … > x[256] = 0`: layer `i` (a rectangle `x[i]` wide)
    /// spans the heights from `e^(−x[i])` to `e^(−x[i + 1])`, every layer with the area of
    /// the base one (the rectangle under `e^(−r)` and the tail beyond `r`), whose `x[0]` is
    /// that area over its height.
    fn build() -> Ziggurat {
        let r = ZIGGURAT_TAIL;
        let area = (r + 1.0) * (-r).exp();
        let mut x = [0.0f64; 257];
        x[0] = area / (-r).exp();
        x[1] = r;
        for i in 1..255 {
            x[i + 1] = -((-x[i]).exp() + area / x[i]).ln();
        }
        let unit = (1u64 << 53) as f64;
        Ziggurat {
            scaled_width: std::array::from_fn(|i| x[i] / unit),
            inner: std::array::from_fn(|i| (x[i + 1] / x[i] * unit) as u64),
            height: std::array::from_fn(|i| (-x[i]).exp()),
        }
    }
}

impl StandardExponential {
    /// One deviate, `>= 0`.
    #[inline]
    pub fn sample(self, rng: &mut Rng) -> f64 {
        let zig = Ziggurat::get();
        loop {
            let bits = rng.next_u64();
            // the low 8 bits pick a layer, the high 53 a point across it
            let layer = (bits & 0xff) as usize;
            let across = bits >> 11;
            let x = across as f64 * zig.scaled_width[layer];
            if across < zig.inner[layer] {
                return x;
            }
            if layer == 0 {
                // the tail beyond r is r plus an exponential deviate (1 − u lies in (0, 1])
                return ZIGGURAT_TAIL - (1.0 - rng.next_f64()).ln();
            }
            let y =
                zig.height[layer] + rng.next_f64() * (zig.height[layer + 1] - zig.height[layer]);
            if y < (-x).exp() {
                return x;
            }
        }
    }
}

/// Zipf ranks in `[first, n]` with `P(r) ∝ r^(−s)`, by rejection-inversion (Hörmann &
/// Derflinger, "Rejection-inversion to generate variates from monotone discrete
/// distributions", 1996): O(1) memory and expected O(1) time for any `n` and any exponent
/// `s > 0`, including 1. [`ZipfTable`] draws the most popular ranks faster.
#[derive(Debug, Clone, PartialEq)]
pub struct Zipf {
    count: u64,
    first: f64,
    /// `1 / first`: the functions below scale by it (a multiplication, not a division).
    per_first: f64,
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    threshold: f64,
}

impl Zipf {
    /// Ranks `1..=n` with exponent `s`.
    pub fn new(n: u64, s: f64) -> Result<Self, DistributionError> {
        Zipf::ranks(1, n, s)
    }

    /// Ranks `first..=n` with exponent `s` (the Zipf distribution over `1..=n`, conditioned
    /// on a rank of at least `first`).
    pub fn ranks(first: u64, n: u64, s: f64) -> Result<Self, DistributionError> {
        require(n >= 1, "zipf number of elements", ">= 1", n)?;
        if !(1..=n).contains(&first) {
            return Err(bad("zipf first rank", format!("in [1, {n}]"), first));
        }
        require(s.is_finite() && s > 0.0, "zipf exponent s", "> 0", s)?;
        let first_rank = first as f64;
        let mut z = Zipf {
            count: n,
            first: first_rank,
            per_first: 1.0 / first_rank,
            n: n as f64,
            s,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            threshold: 0.0,
        };
        // The hat starts so that rank `first` is always accepted; the squeeze (accept at
        // once when `k − x <= threshold`) is tight at the rank after it and looser beyond.
        z.h_integral_x1 = z.h_integral(first_rank + 0.5) - z.h(first_rank);
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.threshold = (first_rank + 1.0)
            - z.h_integral_inverse(z.h_integral(first_rank + 1.5) - z.h(first_rank + 1.0));
        Ok(z)
    }

    /// The number of ranks.
    pub fn n(&self) -> u64 {
        self.count
    }

    /// The exponent.
    pub fn exponent(&self) -> f64 {
        self.s
    }

    /// One rank in `[first, n]`; `first` is the most likely.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = nearest_rank(x, self.first, self.n);
            if k - x <= self.threshold || u >= self.h_integral(k + 0.5) - self.h(k) {
                // `n as f64` may round up for n > 2^53.
                return (k as u64).min(self.count);
            }
        }
    }

    /// `h(x) = (x / first)^(−s)`: the rank probabilities up to a constant factor, scaled so
    /// that the functions below stay well-conditioned near `first` however far out it is.
    fn h(&self, x: f64) -> f64 {
        (-self.s * (x * self.per_first).ln()).exp()
    }

    /// `H(x) = first · ((x / first)^(1−s) − 1) / (1 − s)`, or `first · ln(x / first)` for
    /// `s = 1`: the antiderivative of `h` that is 0 at `first`.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = (x * self.per_first).ln();
        helper2((1.0 - self.s) * log_x) * log_x * self.first
    }

    /// The inverse of `H`.
    fn h_integral_inverse(&self, x: f64) -> f64 {
        let x = x * self.per_first;
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp() * self.first
    }
}

/// `Σ r^(−s)` over the ranks `a..=b` (`1 <= a <= b`): summed term by term when there are few,
/// else by the Euler–Maclaurin formula up to its fifth derivatives (the tests check it
/// against the sum from `a` = 100 on).
fn power_sum(a: u64, b: u64, s: f64) -> f64 {
    const TERMS_SUMMED: u64 = 1 << 16;
    let power = |r: f64| (-s * r.ln()).exp();
    if b - a < TERMS_SUMMED {
        return (a..=b).rev().map(|r| power(r as f64)).sum();
    }
    let (x, y) = (a as f64, b as f64);
    // ∫ r^(−s) dr from x to y, in terms of y / x so that nothing cancels
    let log_ratio = (y / x).ln();
    let integral = x * power(x) * helper2((1.0 - s) * log_ratio) * log_ratio;
    // the k-th derivative of r^(−s)
    let derivative = |r: f64, k: i32| -> f64 {
        (0..k).map(|i| -(s + f64::from(i)) / r).product::<f64>() * power(r)
    };
    integral + (power(x) + power(y)) / 2.0 + (derivative(y, 1) - derivative(x, 1)) / 12.0
        - (derivative(y, 3) - derivative(x, 3)) / 720.0
        + (derivative(y, 5) - derivative(x, 5)) / 30_240.0
}

/// `floor(x + 1/2)` clamped into `[first, n]` (`first >= 1`), without a libm call: truncation
/// equals the floor wherever the clamp keeps it (below `first` both clamp to it; from 2^53 on
/// every float is an integer, and the conversion saturates above `n`).
#[inline]
fn nearest_rank(x: f64, first: f64, n: f64) -> f64 {
    ((x + 0.5) as u64 as f64).clamp(first, n)
}

/// Zipf ranks in `[1, n]` as [`Zipf`], the [`ZipfTable::HEAD_RANKS`] most popular ones
/// (about 70% of draws for `s = 0.99` over 100,000 ranks) from a Walker alias table: one
/// random number and one 8-byte entry of a 32 KiB table instead of a logarithm and an
/// exponential. The rarer ranks behind them, together one outcome of the table, are drawn by
/// [`Zipf`]'s rejection-inversion over those ranks alone.
#[derive(Debug, Clone, PartialEq)]
pub struct ZipfTable {
    /// One entry per outcome: ranks `1..=head`, then (when `n > head`) every later rank.
    entries: Box<[AliasEntry]>,
    /// Ranks in the table.
    head: u64,
    /// The ranks after the head; `None` when the table holds them all.
    tail: Option<Zipf>,
}

/// An outcome of a Walker alias table: a draw of it keeps it when its 32-bit coin is below
/// `keep`, and takes `alias` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AliasEntry {
    keep: u32,
    alias: u32,
}

impl ZipfTable {
    /// Ranks drawn from the table: 4,096 entries of 8 bytes.
    pub const HEAD_RANKS: u64 = 4096;

    /// Ranks `1..=n` with exponent `s`.
    pub fn new(n: u64, s: f64) -> Result<Self, DistributionError> {
        let zipf = Zipf::new(n, s)?;
        let head = n.min(Self::HEAD_RANKS);
        let tail = (n > head)
            .then(|| Zipf::ranks(head + 1, n, s))
            .transpose()?;
        let mut weights: Vec<f64> = (1..=head).map(|r| zipf.h(r as f64)).collect();
        if tail.is_some() {
            weights.push(power_sum(head + 1, n, s));
        }
        Ok(ZipfTable {
            entries: alias_table(&weights),
            head,
            tail,
        })
    }

    /// One rank in `[1, n]`; rank 1 is the most likely.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        // the high half of `r · outcomes` picks an outcome uniformly; the low half, uniform
        // within it, is the coin
        let wide = u128::from(rng.next_u64()) * self.entries.len() as u128;
        let drawn = (wide >> 64) as usize;
        let coin = ((wide as u64) >> 32) as u32;
        let entry = self.entries[drawn];
        let outcome = if coin < entry.keep {
            drawn as u64
        } else {
            u64::from(entry.alias)
        };
        match &self.tail {
            Some(tail) if outcome == self.head => tail.sample(rng),
            _ => outcome + 1,
        }
    }
}

/// Vose's construction of a Walker alias table for outcomes of the given weights (at most
/// 2^32, each finite and non-negative, not all 0).
fn alias_table(weights: &[f64]) -> Box<[AliasEntry]> {
    let outcomes = weights.len();
    let total: f64 = weights.iter().sum();
    // each outcome's weight in units of one entry's share
    let mut scaled: Vec<f64> = weights
        .iter()
        .map(|w| w * outcomes as f64 / total)
        .collect();
    let mut entries: Vec<AliasEntry> = (0..outcomes as u32)
        .map(|i| AliasEntry {
            keep: u32::MAX,
            alias: i,
        })
        .collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) =
        (0..outcomes).partition(|&i| scaled[i] < 1.0);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        // outcome `s` keeps its share of the entry; `l` fills the rest
        entries[s] = AliasEntry {
            keep: (scaled[s] * 4_294_967_296.0) as u32,
            alias: l as u32,
        };
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // what is left holds a whole entry (up to rounding): it always keeps itself
    entries.into_boxed_slice()
}

/// `ln(1 + x) / x`, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x − 1) / x`, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// A discrete distribution read from a cumulative distribution table.
///
/// The text format is one `value,cumulative_probability` pair per line, values strictly
/// ascending, probabilities non-decreasing in `[0, 1]` and the last one equal to 1 (within
/// 1e-9). Empty lines and lines starting with `#` are ignored. `value` has probability
/// `p(value) − p(previous value)`.
#[derive(Debug, Clone, PartialEq)]
pub struct EmpiricalCdf {
    values: Vec<u64>,
    cumulative: Vec<f64>,
}

impl EmpiricalCdf {
    /// Reads and validates a CDF file.
    pub fn load(path: &Path) -> Result<Self, DistributionError> {
        let text = std::fs::read_to_string(path).map_err(|e| DistributionError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        EmpiricalCdf::parse(&text, path)
    }

    /// Validates CDF text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, DistributionError> {
        let err = |line: usize, message: String| DistributionError::Cdf {
            path: origin.to_path_buf(),
            line,
            message,
        };
        let mut values: Vec<u64> = Vec::new();
        let mut cumulative: Vec<f64> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            last_line = line_no;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (v, p) = line.split_once(',').ok_or_else(|| {
                err(
                    line_no,
                    format!("expected `value,cumulative_probability`, got {line:?}"),
                )
            })?;
            let value: u64 = v.trim().parse().map_err(|_| {
                err(
                    line_no,
                    format!("value {:?} is not a non-negative integer", v.trim()),
                )
            })?;
            let prob: f64 = p.trim().parse().map_err(|_| {
                err(
                    line_no,
                    format!("cumulative probability {:?} is not a number", p.trim()),
                )
            })?;
            if !(0.0..=1.0 + 1e-9).contains(&prob) {
                return Err(err(
                    line_no,
                    format!("cumulative probability {prob} is outside [0, 1]"),
                ));
            }
            if let (Some(&pv), Some(&pp)) = (values.last(), cumulative.last()) {
                if value <= pv {
                    return Err(err(
                        line_no,
                        format!("value {value} is not greater than the previous value {pv}; sort the values ascending"),
                    ));
                }
                if prob < pp {
                    return Err(err(
                        line_no,
                        format!("cumulative probability {prob} is less than the previous {pp}; the CDF must not decrease"),
                    ));
                }
            }
            values.push(value);
            cumulative.push(prob);
        }
        match cumulative.last() {
            None => Err(err(
                last_line.max(1),
                "no `value,cumulative_probability` lines".to_string(),
            )),
            Some(&p) if (p - 1.0).abs() > 1e-9 => Err(err(
                last_line,
                format!("the last cumulative probability is {p}; it must be 1"),
            )),
            Some(_) => Ok(EmpiricalCdf { values, cumulative }),
        }
    }

    /// The largest value of the table.
    pub fn max_value(&self) -> u64 {
        *self.values.last().expect("validated: at least one line")
    }

    /// The table's `(value, cumulative probability)` pairs.
    pub fn entries(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.values
            .iter()
            .copied()
            .zip(self.cumulative.iter().copied())
    }

    /// One value: the first whose cumulative probability exceeds a uniform `u` in `[0, 1)`.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        let i = self.cumulative.partition_point(|&p| p <= u);
        // Rounding may leave the last probability a hair below 1.
        self.values[i.min(self.values.len() - 1)]
    }
}

// ---------------------------------------------------------------------------------------------
// Key popularity
// ---------------------------------------------------------------------------------------------

/// Which keys events have, over a key space of `N` keys `0..N`.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyDistributionSpec {
    /// Always this key (must be `< N`).
    Constant(u64),
    /// Every key equally likely.
    Uniform,
    /// Zipf with exponent `s > 0` over ranks `1..=N`; rank `r` is key `r − 1`.
    Zipf {
        /// The exponent (1 = classic Zipf; larger = more skewed).
        s: f64,
    },
    /// A hot set of keys `0..H`, `H = round(hot_key_fraction · N)`, receives
    /// `hot_operation_fraction` of the events (uniform within it); the other keys share the rest
    /// uniformly. When one of the two sets is empty the other gets every event.
    Hotspot {
        /// Fraction of the key space that is hot, in `[0, 1]`.
        hot_key_fraction: f64,
        /// Fraction of events on hot keys, in `[0, 1]`.
        hot_operation_fraction: f64,
    },
    /// `0, 1, 2, …, N − 1, 0, 1, …`.
    Sequential,
    /// YCSB's "latest": popularity skewed towards the most recently inserted key.
    ///
    /// Keys are inserted sequentially: key 0 exists at the start, and each sample is, with
    /// probability `insert_fraction`, the insertion of the next key (and returns it).
    /// Otherwise it returns `max_inserted − r + 1`, clamped at 0, where `r` is a Zipf(`s`) rank
    /// in `1..=N` — rank 1 is the latest key. Insertion never stops: once `N` keys are inserted
    /// the identifiers wrap (the key is taken modulo `N`), so the popular window keeps sliding
    /// through the key space.
    Latest {
        /// Zipf exponent of the recency ranks, `> 0`.
        s: f64,
        /// Probability that a sample inserts a new key, in `(0, 1]`.
        insert_fraction: f64,
    },
    /// A normal distribution, rounded to the nearest key and clamped into `[0, N − 1]`.
    Normal {
        /// Mean (a key index; need not lie inside the key space).
        mean: f64,
        /// Standard deviation, `>= 0`.
        stddev: f64,
    },
    /// Values from an empirical CDF file (see [`EmpiricalCdf`]); every value must be `< N`.
    Empirical {
        /// The CDF file.
        path: PathBuf,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum KeyKind {
    Constant(u64),
    Uniform,
    Zipf(ZipfTable),
    Hotspot {
        hot_keys: u64,
        hot_operation_fraction: f64,
    },
    Sequential {
        next: u64,
    },
    Latest {
        zipf: ZipfTable,
        insert_fraction: f64,
        max_inserted: u64,
    },
    Normal {
        mean: f64,
        stddev: f64,
        normal: StandardNormal,
    },
    Empirical(EmpiricalCdf),
}

/// A key sampler over the key space `0..N` (see [`KeyDistributionSpec`] for each shape).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyDistribution {
    key_space: u64,
    kind: KeyKind,
}

fn check_key_space(n: u64) -> Result<(), DistributionError> {
    require(n >= 1, "key space", ">= 1", n)
}

impl KeyDistribution {
    /// Builds the sampler a spec describes (reads the CDF file of `Empirical`).
    pub fn new(spec: &KeyDistributionSpec, key_space: u64) -> Result<Self, DistributionError> {
        match spec {
            KeyDistributionSpec::Constant(k) => KeyDistribution::constant(*k, key_space),
            KeyDistributionSpec::Uniform => KeyDistribution::uniform(key_space),
            KeyDistributionSpec::Zipf { s } => KeyDistribution::zipf(*s, key_space),
            KeyDistributionSpec::Hotspot {
                hot_key_fraction,
                hot_operation_fraction,
            } => KeyDistribution::hotspot(*hot_key_fraction, *hot_operation_fraction, key_space),
            KeyDistributionSpec::Sequential => KeyDistribution::sequential(key_space),
            KeyDistributionSpec::Latest { s, insert_fraction } => {
                KeyDistribution::latest(*s, *insert_fraction, key_space)
            }
            KeyDistributionSpec::Normal { mean, stddev } => {
                KeyDistribution::normal(*mean, *stddev, key_space)
            }
            KeyDistributionSpec::Empirical { path } => {
                KeyDistribution::empirical(EmpiricalCdf::load(path)?, key_space)
            }
        }
    }

    fn make(key_space: u64, kind: KeyKind) -> Result<Self, DistributionError> {
        check_key_space(key_space)?;
        Ok(KeyDistribution { key_space, kind })
    }

    /// Always key `k`.
    pub fn constant(k: u64, key_space: u64) -> Result<Self, DistributionError> {
        check_key_space(key_space)?;
        require(
            k < key_space,
            "constant key",
            &format!("in [0, {key_space})"),
            k,
        )?;
        KeyDistribution::make(key_space, KeyKind::Constant(k))
    }

    /// Every key equally likely.
    pub fn uniform(key_space: u64) -> Result<Self, DistributionError> {
        KeyDistribution::make(key_space, KeyKind::Uniform)
    }

    /// Zipf with exponent `s`; key 0 is rank 1.
    pub fn zipf(s: f64, key_space: u64) -> Result<Self, DistributionError> {
        check_key_space(key_space)?;
        KeyDistribution::make(key_space, KeyKind::Zipf(ZipfTable::new(key_space, s)?))
    }

    /// A hot set of `round(hot_key_fraction · N)` keys receiving `hot_operation_fraction` of
    /// the events.
    pub fn hotspot(
        hot_key_fraction: f64,
        hot_operation_fraction: f64,
        key_space: u64,
    ) -> Result<Self, DistributionError> {
        require_probability("hotspot hot_key_fraction", hot_key_fraction)?;
        require_probability("hotspot hot_operation_fraction", hot_operation_fraction)?;
        check_key_space(key_space)?;
        let hot_keys = ((hot_key_fraction * key_space as f64).round() as u64).min(key_space);
        KeyDistribution::make(
            key_space,
            KeyKind::Hotspot {
                hot_keys,
                hot_operation_fraction,
            },
        )
    }

    /// `0, 1, …, N − 1, 0, …`.
    pub fn sequential(key_space: u64) -> Result<Self, DistributionError> {
        KeyDistribution::make(key_space, KeyKind::Sequential { next: 0 })
    }

    /// YCSB-style "latest" (see [`KeyDistributionSpec::Latest`]).
    pub fn latest(s: f64, insert_fraction: f64, key_space: u64) -> Result<Self, DistributionError> {
        require(
            insert_fraction > 0.0 && insert_fraction <= 1.0,
            "latest insert_fraction",
            "in (0, 1]",
            insert_fraction,
        )?;
        check_key_space(key_space)?;
        KeyDistribution::make(
            key_space,
            KeyKind::Latest {
                zipf: ZipfTable::new(key_space, s)?,
                insert_fraction,
                max_inserted: 0,
            },
        )
    }

    /// Normal, rounded and clamped into the key space.
    pub fn normal(mean: f64, stddev: f64, key_space: u64) -> Result<Self, DistributionError> {
        require_finite("normal key mean", mean)?;
        require(
            stddev.is_finite() && stddev >= 0.0,
            "normal key stddev",
            ">= 0",
            stddev,
        )?;
        KeyDistribution::make(
            key_space,
            KeyKind::Normal {
                mean,
                stddev,
                normal: StandardNormal::new(),
            },
        )
    }

    /// Values of an empirical CDF; each must lie in the key space.
    pub fn empirical(cdf: EmpiricalCdf, key_space: u64) -> Result<Self, DistributionError> {
        check_key_space(key_space)?;
        require(
            cdf.max_value() < key_space,
            "empirical CDF values",
            format!("in the key space [0, {key_space})").as_str(),
            cdf.max_value(),
        )?;
        KeyDistribution::make(key_space, KeyKind::Empirical(cdf))
    }

    /// The number of keys `N`.
    pub fn key_space(&self) -> u64 {
        self.key_space
    }

    /// Fills `keys` with keys in `[0, N)`, the ones [`KeyDistribution::sample`] would draw
    /// one after another (in one loop per shape, for the common ones).
    pub fn sample_into(&mut self, rng: &mut Rng, keys: &mut [u64]) {
        match &self.kind {
            KeyKind::Zipf(z) => keys.iter_mut().for_each(|k| *k = z.sample(rng) - 1),
            KeyKind::Uniform => {
                let n = self.key_space;
                keys.iter_mut().for_each(|k| *k = rng.below(n));
            }
            _ => keys.iter_mut().for_each(|k| *k = self.sample(rng)),
        }
    }

    /// One key in `[0, N)`.
    #[inline]
    pub fn sample(&mut self, rng: &mut Rng) -> u64 {
        let n = self.key_space;
        match &mut self.kind {
            KeyKind::Constant(k) => *k,
            KeyKind::Uniform => rng.below(n),
            KeyKind::Zipf(z) => z.sample(rng) - 1,
            KeyKind::Hotspot {
                hot_keys,
                hot_operation_fraction,
            } => {
                let hot = *hot_keys;
                let cold = n - hot;
                let pick_hot = rng.chance(*hot_operation_fraction);
                if hot > 0 && (pick_hot || cold == 0) {
                    rng.below(hot)
                } else {
                    hot + rng.below(cold)
                }
            }
            KeyKind::Sequential { next } => {
                let k = *next;
                *next = if k + 1 == n { 0 } else { k + 1 };
                k
            }
            KeyKind::Latest {
                zipf,
                insert_fraction,
                max_inserted,
            } => {
                if rng.chance(*insert_fraction) {
                    *max_inserted = max_inserted.wrapping_add(1);
                    *max_inserted % n
                } else {
                    let rank = zipf.sample(rng);
                    max_inserted.saturating_sub(rank - 1) % n
                }
            }
            KeyKind::Normal {
                mean,
                stddev,
                normal,
            } => {
                let x = (*mean + *stddev * normal.sample(rng)).round();
                // `as` saturates; the clamp keeps the key inside [0, N − 1].
                x.clamp(0.0, (n - 1) as f64) as u64
            }
            KeyKind::Empirical(cdf) => cdf.sample(rng),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Event-time gaps
// ---------------------------------------------------------------------------------------------

/// The event-time gap between consecutive events, in ms (non-negative, possibly fractional).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GapDistributionSpec {
    /// Always `c >= 0` ms.
    Constant(f64),
    /// Uniform in `[min, max)`, `0 <= min <= max`.
    Uniform {
        /// Smallest gap, ms.
        min: f64,
        /// Largest gap (exclusive unless equal to `min`), ms.
        max: f64,
    },
    /// Exponential with rate `λ > 0` per ms (mean `1/λ`): a Poisson arrival process.
    Exponential {
        /// Events per ms.
        rate: f64,
    },
    /// Normal, clamped at 0.
    Normal {
        /// Mean gap, ms.
        mean: f64,
        /// Standard deviation, `>= 0`, ms.
        stddev: f64,
    },
    /// Pareto (type I): `P(X > x) = (scale / x)^shape` for `x >= scale`; bursty arrivals.
    Pareto {
        /// `x_m > 0`: the smallest gap, ms.
        scale: f64,
        /// `α > 0`: the tail index (mean finite for `α > 1`, variance for `α > 2`).
        shape: f64,
    },
}

/// A gap sampler (see [`GapDistributionSpec`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GapDistribution {
    spec: GapDistributionSpec,
    normal: StandardNormal,
}

impl GapDistribution {
    /// Validates the parameters.
    pub fn new(spec: GapDistributionSpec) -> Result<Self, DistributionError> {
        match spec {
            GapDistributionSpec::Constant(c) => {
                require(c.is_finite() && c >= 0.0, "constant gap", ">= 0 (ms)", c)?
            }
            GapDistributionSpec::Uniform { min, max } => {
                require(
                    min.is_finite() && min >= 0.0,
                    "uniform gap min",
                    ">= 0 (ms)",
                    min,
                )?;
                require(
                    max.is_finite() && max >= min,
                    "uniform gap max",
                    &format!(">= min ({min} ms)"),
                    max,
                )?;
            }
            GapDistributionSpec::Exponential { rate } => require(
                rate.is_finite() && rate > 0.0,
                "exponential gap rate",
                "> 0 (events per ms)",
                rate,
            )?,
            GapDistributionSpec::Normal { mean, stddev } => {
                require_finite("normal gap mean", mean)?;
                require(
                    stddev.is_finite() && stddev >= 0.0,
                    "normal gap stddev",
                    ">= 0 (ms)",
                    stddev,
                )?;
            }
            GapDistributionSpec::Pareto { scale, shape } => {
                require(
                    scale.is_finite() && scale > 0.0,
                    "pareto gap scale",
                    "> 0 (ms)",
                    scale,
                )?;
                require(
                    shape.is_finite() && shape > 0.0,
                    "pareto gap shape",
                    "> 0",
                    shape,
                )?;
            }
        }
        Ok(GapDistribution {
            spec,
            normal: StandardNormal::new(),
        })
    }

    /// The validated parameters.
    pub fn spec(&self) -> GapDistributionSpec {
        self.spec
    }

    /// Fills `gaps` with the gaps [`GapDistribution::sample`] would draw one after another
    /// (in one loop of its own for exponential gaps).
    pub fn sample_into(&mut self, rng: &mut Rng, gaps: &mut [f64]) {
        match self.spec {
            GapDistributionSpec::Exponential { rate } => gaps
                .iter_mut()
                .for_each(|g| *g = finite_or_max(StandardExponential.sample(rng) / rate)),
            _ => gaps.iter_mut().for_each(|g| *g = self.sample(rng)),
        }
    }

    /// One gap in ms: finite and `>= 0`.
    #[inline]
    pub fn sample(&mut self, rng: &mut Rng) -> f64 {
        let x = match self.spec {
            GapDistributionSpec::Constant(c) => c,
            GapDistributionSpec::Uniform { min, max } => min + (max - min) * rng.next_f64(),
            GapDistributionSpec::Exponential { rate } => StandardExponential.sample(rng) / rate,
            GapDistributionSpec::Normal { mean, stddev } => {
                (mean + stddev * self.normal.sample(rng)).max(0.0)
            }
            // 1 − u lies in (0, 1]: finite powers
            GapDistributionSpec::Pareto { scale, shape } => {
                scale * (1.0 - rng.next_f64()).powf(-1.0 / shape)
            }
        };
        finite_or_max(x)
    }
}

/// `x`, or the largest finite gap for an infinite one.
#[inline(always)]
fn finite_or_max(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        f64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_is_the_clamped_floor() {
        let mut rng = Rng::substream(7, 0);
        let edges = [
            -1e300,
            -2.0,
            -0.5,
            -0.0,
            0.0,
            0.25,
            0.4999999999999999,
            0.5,
            0.5000000000000001,
            1.0,
            1.4999999999999998,
            1.5,
            2.5,
            99_999.49,
            99_999.5,
            100_000.5,
            4.5e15,
            9.007_199_254_740_992e15,
            1.8e19,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let random: Vec<f64> = (0..100_000)
            .map(|i| (rng.next_f64() - 0.1) * 10f64.powi(i % 20))
            .collect();
        for n in [1.0, 2.0, 100_000.0, 9.3e18] {
            for &x in edges.iter().chain(&random) {
                let floor = (x + 0.5).floor().clamp(1.0, n);
                assert_eq!(
                    nearest_rank(x, 1.0, n).to_bits(),
                    floor.to_bits(),
                    "x = {x}, n = {n}"
                );
            }
        }
    }

    fn samples(spec: GapDistributionSpec, n: usize, seed: u64) -> Vec<f64> {
        let mut d = GapDistribution::new(spec).unwrap();
        let mut rng = Rng::new(seed);
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    fn mean_var(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
        (mean, var)
    }

    /// Kolmogorov–Smirnov statistic of the samples against a continuous CDF.
    fn ks(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        xs.sort_by(f64::total_cmp);
        let n = xs.len() as f64;
        xs.iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = cdf(x);
                (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
            })
            .fold(0.0, f64::max)
    }

    /// Critical KS value at significance 0.001.
    fn ks_critical(n: usize) -> f64 {
        1.95 / (n as f64).sqrt()
    }

    fn close(actual: f64, expected: f64, rel: f64) -> bool {
        (actual - expected).abs() <= rel * expected.abs()
    }

    /// erf by Abramowitz & Stegun 7.1.26 (error < 1.5e-7).
    fn erf(x: f64) -> f64 {
        let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        let y = 1.0 - poly * (-x * x).exp();
        if x < 0.0 {
            -y
        } else {
            y
        }
    }

    fn keys(spec: KeyDistributionSpec, n: u64, count: usize, seed: u64) -> Vec<u64> {
        let mut d = KeyDistribution::new(&spec, n).unwrap();
        let mut rng = Rng::new(seed);
        (0..count).map(|_| d.sample(&mut rng)).collect()
    }

    #[test]
    fn zipf_s1_matches_theory_for_the_top_ranks() {
        let n = 1000u64;
        let count = 500_000;
        let harmonic: f64 = (1..=n).map(|r| 1.0 / r as f64).sum();
        let mut freq = vec![0u32; n as usize];
        for k in keys(KeyDistributionSpec::Zipf { s: 1.0 }, n, count, 11) {
            freq[k as usize] += 1;
        }
        for rank in 1..=5u64 {
            let expected = 1.0 / rank as f64 / harmonic;
            let actual = freq[rank as usize - 1] as f64 / count as f64;
            assert!(
                close(actual, expected, 0.03),
                "rank {rank}: {actual} vs {expected}"
            );
        }
        // The tail is reached too.
        assert!(freq[500..].iter().any(|&c| c > 0));
    }

    #[test]
    fn zipf_other_exponents_and_huge_key_spaces() {
        for s in [0.5, 0.99, 1.01, 2.0] {
            let n = 100u64;
            let count = 50_000;
            let sigmas = 4.5;
            let norm: f64 = (1..=n).map(|r| (r as f64).powf(-s)).sum();
            let mut freq = vec![0u32; n as usize];
            for k in keys(KeyDistributionSpec::Zipf { s }, n, count, 5) {
                freq[k as usize] += 1;
            }
            for rank in 1..=3u64 {
                let expected = (rank as f64).powf(-s) / norm;
                let actual = freq[rank as usize - 1] as f64 / count as f64;
                let sd = (expected * (1.0 - expected) / count as f64).sqrt();
                assert!(
                    (actual - expected).abs() < sigmas * sd,
                    "s={s} rank {rank}: {actual} vs {expected}"
                );
            }
        }
        let mut d = KeyDistribution::zipf(0.8, 1u64 << 62).unwrap();
        let mut rng = Rng::new(3);
        for _ in 0..1000 {
            assert!(d.sample(&mut rng) < 1u64 << 62);
        }
        let mut one = KeyDistribution::zipf(1.0, 1).unwrap();
        assert_eq!(one.sample(&mut rng), 0);
    }

    /// Pearson's chi-square of `count` draws of `draw` against the Zipf(`s`) probabilities of
    /// ranks `first..=n`, the ranks grouped into runs of at least `bin` expected draws; with
    /// the degrees of freedom. Small bins (every popular rank alone) catch a rank drawn too
    /// often or too rarely; large ones a share shifted between the head and the tail.
    fn zipf_chi_square(
        (first, n, s): (u64, u64, f64),
        count: usize,
        bin: f64,
        draw: &mut impl FnMut(&mut Rng) -> u64,
    ) -> (f64, usize) {
        let weight = |r: u64| (r as f64).powf(-s);
        let total: f64 = (first..=n).map(weight).sum();
        // bins as (last rank, expected draws)
        let mut bins: Vec<(u64, f64)> = Vec::new();
        let mut expected = 0.0;
        for r in first..=n {
            expected += weight(r) / total * count as f64;
            if expected >= bin || r == n {
                bins.push((r, expected));
                expected = 0.0;
            }
        }
        let mut observed = vec![0u64; bins.len()];
        let mut rng = Rng::new(17);
        for _ in 0..count {
            let rank = draw(&mut rng);
            assert!((first..=n).contains(&rank), "rank {rank}");
            observed[bins.partition_point(|&(last, _)| last < rank)] += 1;
        }
        let chi2 = bins
            .iter()
            .zip(&observed)
            .map(|(&(_, e), &o)| (o as f64 - e).powi(2) / e)
            .sum();
        (chi2, bins.len() - 1)
    }

    /// The 0.999 quantile of chi-square with `df` degrees of freedom (Wilson–Hilferty).
    fn chi_square_999(df: usize) -> f64 {
        let k = df as f64;
        let z = 3.090_232;
        k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
    }

    #[test]
    fn the_zipf_table_draws_every_rank_with_its_probability() {
        // key spaces inside the table, one rank past it, and far past it
        for (n, s) in [
            (100, 0.99),
            (4_096, 0.5),
            (4_097, 1.0),
            (100_000, 0.99),
            (1_000_000, 1.2),
        ] {
            let zipf = ZipfTable::new(n, s).unwrap();
            for bin in [50.0, 100_000.0] {
                let (chi2, df) =
                    zipf_chi_square((1, n, s), 2_000_000, bin, &mut |rng| zipf.sample(rng));
                assert!(
                    chi2 < chi_square_999(df),
                    "n = {n}, s = {s}, bins of {bin}: chi2 {chi2}, df {df}"
                );
            }
        }
    }

    #[test]
    fn zipf_from_a_later_rank_draws_its_ranks_with_their_probabilities() {
        for (first, n, s) in [
            (4_097, 100_000, 0.99),
            (2, 50, 1.0),
            (10, 20_000, 0.3),
            (300, 301, 2.5),
        ] {
            let zipf = Zipf::ranks(first, n, s).unwrap();
            for bin in [50.0, 50_000.0] {
                let (chi2, df) =
                    zipf_chi_square((first, n, s), 1_000_000, bin, &mut |rng| zipf.sample(rng));
                assert!(
                    chi2 < chi_square_999(df),
                    "ranks {first}..={n}, s = {s}, bins of {bin}: chi2 {chi2}, df {df}"
                );
            }
        }
    }

    #[test]
    fn the_zipf_squeeze_accepts_only_what_the_full_test_accepts() {
        // a rank k is accepted at once when k − x <= threshold, that is when u >=
        // H(k − threshold); that must lie inside k's acceptance interval [H(k + ½) − h(k), …)
        for s in [0.1, 0.5, 0.99, 1.0, 1.01, 2.0, 7.0] {
            for first in [1, 2, 5, 4_097, 1 << 20] {
                let zipf = Zipf::ranks(first, u64::MAX >> 2, s).unwrap();
                for k in (first + 1..first + 2_000).map(|k| k as f64) {
                    let squeeze = zipf.h_integral(k - zipf.threshold);
                    let accepted = zipf.h_integral(k + 0.5) - zipf.h(k);
                    // up to a few float spacings at k (through H' = h) and at H's value
                    let rounding = 4.0 * f64::EPSILON * (k * zipf.h(k) + accepted.abs());
                    assert!(
                        squeeze >= accepted - rounding,
                        "s = {s}, first = {first}, rank {k}: {squeeze} < {accepted}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_zipf_tail_mass_matches_its_sum() {
        for s in [0.1, 0.5, 0.99, 1.0, 1.5, 3.0] {
            for (a, b) in [(4_097, 4_097 + (1 << 16)), (4_097, 1 << 20), (100, 400_000)] {
                let summed: f64 = (a..=b).rev().map(|r| (r as f64).powf(-s)).sum();
                let formula = power_sum(a, b, s);
                assert!(
                    close(formula, summed, 1e-12),
                    "s = {s}, {a}..={b}: {formula} vs {summed}"
                );
            }
        }
    }

    #[test]
    fn uniform_keys_pass_chi_square() {
        let n = 100u64;
        let count = 100_000;
        let mut freq = vec![0u32; n as usize];
        for k in keys(KeyDistributionSpec::Uniform, n, count, 9) {
            freq[k as usize] += 1;
        }
        let expected = count as f64 / n as f64;
        let chi2: f64 = freq
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum();
        // 99 degrees of freedom: the 0.999 quantile is about 148.
        assert!(chi2 < 148.0, "chi2 = {chi2}");
    }

    #[test]
    fn hotspot_sends_the_configured_fraction_to_hot_keys() {
        let n = 1000;
        let count = 100_000;
        let sampled = keys(
            KeyDistributionSpec::Hotspot {
                hot_key_fraction: 0.2,
                hot_operation_fraction: 0.8,
            },
            n,
            count,
            4,
        );
        let hot = sampled.iter().filter(|&&k| k < 200).count() as f64 / count as f64;
        assert!((hot - 0.8).abs() < 0.01, "{hot}");
        assert!(sampled.iter().all(|&k| k < n));
        assert!(sampled.contains(&999) && sampled.contains(&0));
        // Degenerate sets: everything hot, nothing hot.
        assert!(keys(
            KeyDistributionSpec::Hotspot {
                hot_key_fraction: 1.0,
                hot_operation_fraction: 0.0
            },
            10,
            100,
            1
        )
        .iter()
        .all(|&k| k < 10));
        assert!(keys(
            KeyDistributionSpec::Hotspot {
                hot_key_fraction: 0.0,
                hot_operation_fraction: 1.0
            },
            10,
            100,
            1
        )
        .iter()
        .all(|&k| k < 10));
    }

    #[test]
    fn sequential_and_constant_are_exact() {
        let ks = keys(KeyDistributionSpec::Sequential, 4, 10, 0);
        assert_eq!(ks, vec![0, 1, 2, 3, 0, 1, 2, 3, 0, 1]);
        assert_eq!(
            keys(KeyDistributionSpec::Constant(7), 8, 3, 0),
            vec![7, 7, 7]
        );
        assert_eq!(
            keys(KeyDistributionSpec::Sequential, 1, 3, 0),
            vec![0, 0, 0]
        );
    }

    #[test]
    fn latest_follows_the_insertions() {
        let n = 1_000_000;
        let mut d = KeyDistribution::latest(1.0, 0.1, n).unwrap();
        let mut rng = Rng::new(8);
        let mut max_seen = 0;
        let mut near_latest = 0;
        let count = 50_000;
        for _ in 0..count {
            let k = d.sample(&mut rng);
            if k > max_seen {
                // Only insertions move forward, one key at a time.
                assert_eq!(k, max_seen + 1);
                max_seen = k;
            } else if max_seen - k < 10 {
                near_latest += 1;
            }
        }
        // About 5000 insertions.
        assert!((4_500..5_500).contains(&max_seen), "{max_seen}");
        // Most reads hit the newest keys (the rest clamp to 0 early on or go far back).
        assert!(near_latest as f64 / count as f64 > 0.15, "{near_latest}");
        // Wrapping: a tiny key space keeps cycling.
        let ks = keys(
            KeyDistributionSpec::Latest {
                s: 1.0,
                insert_fraction: 1.0,
            },
            3,
            6,
            0,
        );
        assert_eq!(ks, vec![1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn normal_keys_are_rounded_and_clamped() {
        let ks = keys(
            KeyDistributionSpec::Normal {
                mean: 500.0,
                stddev: 50.0,
            },
            1000,
            50_000,
            2,
        );
        let xs: Vec<f64> = ks.iter().map(|&k| k as f64).collect();
        let (mean, var) = mean_var(&xs);
        assert!((mean - 500.0).abs() < 1.0, "{mean}");
        assert!(close(var, 2500.0 + 1.0 / 12.0, 0.05), "{var}");
        let clamped = keys(
            KeyDistributionSpec::Normal {
                mean: 0.0,
                stddev: 100.0,
            },
            10,
            1000,
            2,
        );
        assert!(clamped.iter().all(|&k| k < 10));
        assert!(clamped.iter().filter(|&&k| k == 0).count() > 400);
        assert!(clamped.iter().filter(|&&k| k == 9).count() > 400);
    }

    #[test]
    fn empirical_cdf_samples_the_table() {
        let cdf = EmpiricalCdf::parse(
            "# value,cdf\n2,0.25\n5,0.25\n7,0.75\n\n9,1.0\n",
            Path::new("t.csv"),
        )
        .unwrap();
        let mut d = KeyDistribution::empirical(cdf, 10).unwrap();
        let mut rng = Rng::new(6);
        let mut freq = [0u32; 10];
        for _ in 0..40_000 {
            freq[d.sample(&mut rng) as usize] += 1;
        }
        assert_eq!(freq[5], 0, "zero-probability value");
        for (v, p) in [(2, 0.25), (7, 0.5), (9, 0.25)] {
            let actual = freq[v] as f64 / 40_000.0;
            assert!((actual - p).abs() < 0.01, "{v}: {actual}");
        }
    }

    #[test]
    fn empirical_cdf_errors_name_the_line() {
        let err = |text: &str| {
            EmpiricalCdf::parse(text, Path::new("cdf.csv"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("1,0.5\n2,0.4\n3,1\n"),
            "cdf.csv:2: cumulative probability 0.4 is less than the previous 0.5; the CDF must not decrease"
        );
        assert!(err("1,0.5\n1,1\n").starts_with("cdf.csv:2: value 1 is not greater"));
        assert!(
            err("1,0.5\n2,0.9\n").starts_with("cdf.csv:2: the last cumulative probability is 0.9")
        );
        assert!(err("1,0.5\nx,1\n").starts_with("cdf.csv:2: value \"x\""));
        assert!(err("1;0.5\n").starts_with("cdf.csv:1: expected"));
        assert!(err("1,1.5\n").starts_with("cdf.csv:1: cumulative probability 1.5 is outside"));
        assert!(err("# nothing\n").starts_with("cdf.csv:1: no"));
        assert!(EmpiricalCdf::parse("1,0.3\n2,0.9999999999\n", Path::new("x")).is_ok());
        let cdf = EmpiricalCdf::parse("1,0.5\n20,1\n", Path::new("x")).unwrap();
        assert_eq!(
            KeyDistribution::empirical(cdf, 10).unwrap_err().to_string(),
            "empirical CDF values must be in the key space [0, 10), got 20"
        );
        let missing = KeyDistribution::new(
            &KeyDistributionSpec::Empirical {
                path: "/nonexistent/cdf.csv".into(),
            },
            10,
        )
        .unwrap_err();
        assert!(missing
            .to_string()
            .starts_with("cannot read empirical CDF /nonexistent/cdf.csv"));
    }

    #[test]
    fn parameters_are_validated() {
        let msg = |r: Result<KeyDistribution, DistributionError>| r.unwrap_err().to_string();
        assert_eq!(
            msg(KeyDistribution::zipf(-1.0, 10)),
            "zipf exponent s must be > 0, got -1"
        );
        assert_eq!(
            msg(KeyDistribution::zipf(0.0, 10)),
            "zipf exponent s must be > 0, got 0"
        );
        assert_eq!(
            msg(KeyDistribution::uniform(0)),
            "key space must be >= 1, got 0"
        );
        assert_eq!(
            msg(KeyDistribution::constant(10, 10)),
            "constant key must be in [0, 10), got 10"
        );
        assert_eq!(
            msg(KeyDistribution::hotspot(1.5, 0.5, 10)),
            "hotspot hot_key_fraction must be in [0, 1], got 1.5"
        );
        assert_eq!(
            msg(KeyDistribution::latest(1.0, 0.0, 10)),
            "latest insert_fraction must be in (0, 1], got 0"
        );
        assert_eq!(
            msg(KeyDistribution::normal(1.0, -2.0, 10)),
            "normal key stddev must be >= 0, got -2"
        );
        assert_eq!(
            msg(KeyDistribution::normal(f64::NAN, 2.0, 10)),
            "normal key mean must be a finite number, got NaN"
        );
        let gap = |s| GapDistribution::new(s).unwrap_err().to_string();
        assert_eq!(
            gap(GapDistributionSpec::Exponential { rate: 0.0 }),
            "exponential gap rate must be > 0 (events per ms), got 0"
        );
        assert_eq!(
            gap(GapDistributionSpec::Uniform { min: 5.0, max: 1.0 }),
            "uniform gap max must be >= min (5 ms), got 1"
        );
        assert_eq!(
            gap(GapDistributionSpec::Constant(-1.0)),
            "constant gap must be >= 0 (ms), got -1"
        );
        assert_eq!(
            gap(GapDistributionSpec::Pareto {
                scale: 1.0,
                shape: 0.0
            }),
            "pareto gap shape must be > 0, got 0"
        );
        assert_eq!(
            gap(GapDistributionSpec::Normal {
                mean: 1.0,
                stddev: f64::INFINITY
            }),
            "normal gap stddev must be >= 0 (ms), got inf"
        );
    }

    #[test]
    fn uniform_gaps() {
        let xs = samples(
            GapDistributionSpec::Uniform { min: 2.0, max: 6.0 },
            20_000,
            1,
        );
        assert!(xs.iter().all(|&x| (2.0..6.0).contains(&x)));
        let (mean, var) = mean_var(&xs);
        assert!(close(mean, 4.0, 0.01), "{mean}");
        assert!(close(var, 16.0 / 12.0, 0.03), "{var}");
        let d = ks(xs, |x| ((x - 2.0) / 4.0).clamp(0.0, 1.0));
        assert!(d < ks_critical(20_000), "{d}");
    }

    #[test]
    fn exponential_gaps() {
        let xs = samples(GapDistributionSpec::Exponential { rate: 0.5 }, 20_000, 2);
        assert!(xs.iter().all(|&x| x >= 0.0));
        let (mean, var) = mean_var(&xs);
        assert!(close(mean, 2.0, 0.03), "{mean}");
        assert!(close(var, 4.0, 0.1), "{var}");
        let d = ks(xs, |x| 1.0 - (-0.5 * x).exp());
        assert!(d < ks_critical(20_000), "{d}");
    }

    #[test]
    fn the_ziggurat_draws_standard_exponential_deviates() {
        let count = 2_000_000;
        let mut rng = Rng::new(23);
        let xs: Vec<f64> = (0..count)
            .map(|_| StandardExponential.sample(&mut rng))
            .collect();
        // through its CDF, a deviate is uniform: 1,000 bins of equal probability
        let bins = 1_000;
        let mut observed = vec![0u64; bins];
        for &x in &xs {
            assert!(x >= 0.0 && x.is_finite(), "{x}");
            observed[((1.0 - (-x).exp()) * bins as f64) as usize] += 1;
        }
        let expected = count as f64 / bins as f64;
        let chi2: f64 = observed
            .iter()
            .map(|&o| (o as f64 - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < chi_square_999(bins - 1), "chi2 {chi2}");
        // the tail beyond the base layer: e^(−r) of the draws, r + 1 on average
        let tail: Vec<f64> = xs.iter().copied().filter(|&x| x > ZIGGURAT_TAIL).collect();
        let share = tail.len() as f64 / count as f64;
        let expected_share = (-ZIGGURAT_TAIL).exp();
        let sd = (expected_share / count as f64).sqrt();
        assert!(
            (share - expected_share).abs() < 4.5 * sd,
            "tail share {share}"
        );
        let (mean, _) = mean_var(&tail);
        assert!(
            (mean - (ZIGGURAT_TAIL + 1.0)).abs() < 0.2,
            "tail mean {mean}"
        );
        let d = ks(xs, |x| 1.0 - (-x).exp());
        assert!(d < ks_critical(count), "KS {d}");
    }

    #[test]
    fn the_ziggurat_layers_close_at_zero() {
        // one more step of the recursion from the last boundary reaches x = 0
        let zig = Ziggurat::get();
        let x255 = zig.scaled_width[255] * (1u64 << 53) as f64;
        let area = (ZIGGURAT_TAIL + 1.0) * (-ZIGGURAT_TAIL).exp();
        let next = -((-x255).exp() + area / x255).ln();
        assert!(next.abs() < 1e-12, "{next}");
        assert_eq!(zig.height[256], 1.0);
        assert_eq!(zig.inner[255], 0, "the top layer is all wedge");
    }

    #[test]
    fn normal_gaps() {
        let xs = samples(
            GapDistributionSpec::Normal {
                mean: 100.0,
                stddev: 10.0,
            },
            20_000,
            3,
        );
        let (mean, var) = mean_var(&xs);
        assert!(close(mean, 100.0, 0.005), "{mean}");
        assert!(close(var, 100.0, 0.05), "{var}");
        let d = ks(xs, |x| {
            0.5 * (1.0 + erf((x - 100.0) / (10.0 * 2f64.sqrt())))
        });
        assert!(d < ks_critical(20_000), "{d}");
        // Clamped at zero.
        let xs = samples(
            GapDistributionSpec::Normal {
                mean: 0.0,
                stddev: 1.0,
            },
            1000,
            3,
        );
        assert!(xs.iter().all(|&x| x >= 0.0));
        assert!(xs.iter().filter(|&&x| x == 0.0).count() > 400);
    }

    #[test]
    fn pareto_gaps() {
        // Shape 8: moments up to the 7th are finite, so the sample variance settles quickly.
        let (scale, shape) = (2.0, 8.0);
        let xs = samples(GapDistributionSpec::Pareto { scale, shape }, 20_000, 4);
        assert!(xs.iter().all(|&x| x >= scale));
        let (mean, var) = mean_var(&xs);
        assert!(close(mean, shape * scale / (shape - 1.0), 0.01), "{mean}");
        let expected_var = scale * scale * shape / ((shape - 1.0).powi(2) * (shape - 2.0));
        assert!(close(var, expected_var, 0.15), "{var} vs {expected_var}");
        let d = ks(xs, |x| 1.0 - (scale / x).powf(shape));
        assert!(d < ks_critical(20_000), "{d}");
        // Heavy tails stay finite.
        let xs = samples(
            GapDistributionSpec::Pareto {
                scale: 1.0,
                shape: 0.1,
            },
            1000,
            4,
        );
        assert!(xs.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn constant_gaps() {
        assert_eq!(
            samples(GapDistributionSpec::Constant(0.25), 3, 0),
            vec![0.25; 3]
        );
    }
}
