//! KVBench's building blocks: its per-operation index distributions (uniform, normal, beta,
//! Zipfian, mapped onto positions of the key vector as the KVBench paper describes), and the
//! structures that keep its bookkeeping exact without allocating per operation: a sorted key
//! arena and a Fenwick tree that finds the `k`-th existing key in `O(log n)`.

use crate::source::distribution::{StandardNormal, Zipf};
use crate::source::random::Rng;

/// KVBench's key alphabet (`Key::key_alphanum`): digits, then upper case, then lower case, so
/// that the order of alphabet indices is the byte order of the characters.
pub const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Number of two-character key prefixes (62²) over which KVBench distributes inserts.
pub const PREFIXES: u64 = 62 * 62;

/// How KVBench chooses a position among `n` candidates (`--XD` and its parameters).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IndexDistribution {
    /// Every position equally likely (`--XD 0`).
    Uniform,
    /// Position `round(N(mean · n, (stddev · n)²))`, redrawn until inside `[0, n)` (`--XD 1`).
    Normal {
        /// `--XD_NMP`: the mean as a fraction of `n`.
        mean: f64,
        /// `--XD_NDEV`: the standard deviation as a multiple of `n`.
        stddev: f64,
    },
    /// Position `⌊n · a / (a + b)⌋` with `a ~ Γ(alpha, 1)`, `b ~ Γ(beta, 1)` (`--XD 2`).
    Beta {
        /// `--XD_BALPHA`.
        alpha: f64,
        /// `--XD_BBETA`.
        beta: f64,
    },
    /// Popularity rank `i` (0-based) with probability `∝ 1 / (i + 1)^alpha`, over a shuffled
    /// copy of the key vector (`--XD 3`).
    Zipfian {
        /// `--XD_ZALPHA`; 0 is uniform.
        alpha: f64,
    },
}

impl IndexDistribution {
    /// KVBench's name of the distribution, as in config files.
    pub fn name(&self) -> &'static str {
        match self {
            IndexDistribution::Uniform => "uniform",
            IndexDistribution::Normal { .. } => "normal",
            IndexDistribution::Beta { .. } => "beta",
            IndexDistribution::Zipfian { .. } => "zipfian",
        }
    }
}

/// A position drawn by an [`IndexSampler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The `i`-th candidate in key order.
    Sorted(u64),
    /// The candidate of popularity rank `i` (0 = most popular) in the shuffled order.
    Popular(u64),
}

/// Draws positions from an [`IndexDistribution`] over a candidate count that may change from
/// one draw to the next (keys come and go), without allocating.
#[derive(Debug, Clone)]
pub struct IndexSampler {
    distribution: IndexDistribution,
    normal: StandardNormal,
    /// The Zipf ranks for the last `n` (rebuilt, in O(1), when `n` changes).
    zipf: Option<Zipf>,
}

impl IndexSampler {
    /// A sampler of `distribution`.
    pub fn new(distribution: IndexDistribution) -> Self {
        IndexSampler {
            distribution,
            normal: StandardNormal::new(),
            zipf: None,
        }
    }

    /// One position among `n > 0` candidates.
    #[inline]
    pub fn next(&mut self, n: u64, rng: &mut Rng) -> Pick {
        debug_assert!(n > 0, "no candidates to choose from");
        match self.distribution {
            IndexDistribution::Uniform => Pick::Sorted(rng.below(n)),
            IndexDistribution::Normal { mean, stddev } => {
                let (mu, sigma) = (mean * n as f64, stddev * n as f64);
                loop {
                    let x = (mu + sigma * self.normal.sample(rng)).round();
                    if x >= 0.0 && x < n as f64 {
                        return Pick::Sorted(x as u64);
                    }
                }
            }
            IndexDistribution::Beta { alpha, beta } => {
                let x = beta_sample(alpha, beta, rng, &mut self.normal);
                Pick::Sorted(((x * n as f64) as u64).min(n - 1))
            }
            IndexDistribution::Zipfian { alpha } => {
                if alpha == 0.0 {
                    return Pick::Popular(rng.below(n));
                }
                if self.zipf.as_ref().is_none_or(|z| z.n() != n) {
                    self.zipf = Some(Zipf::new(n, alpha).expect("validated: alpha > 0, n >= 1"));
                }
                let z = self.zipf.as_ref().expect("just set");
                Pick::Popular(z.sample(rng) - 1)
            }
        }
    }
}

/// A `Γ(shape, 1)` deviate (Marsaglia and Tsang, 2000; shapes below 1 boosted by `U^(1/shape)`).
pub fn gamma_sample(shape: f64, rng: &mut Rng, normal: &mut StandardNormal) -> f64 {
    if shape < 1.0 {
        let u = 1.0 - rng.next_f64();
        return gamma_sample(shape + 1.0, rng, normal) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal.sample(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = 1.0 - rng.next_f64();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A `Beta(alpha, beta)` deviate as KVBench draws it: `a / (a + b)` of two gamma deviates.
pub fn beta_sample(alpha: f64, beta: f64, rng: &mut Rng, normal: &mut StandardNormal) -> f64 {
    loop {
        let a = gamma_sample(alpha, rng, normal);
        let b = gamma_sample(beta, rng, normal);
        // Tiny shapes can underflow both to 0; draw again rather than divide 0 by 0.
        if a + b > 0.0 {
            return a / (a + b);
        }
    }
}

/// Keys of any length, stored back to back; index `i` is the `i`-th key pushed (or, after
/// [`KeyArena::sorted`], the `i`-th in byte order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyArena {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl KeyArena {
    /// An empty arena.
    pub fn new() -> Self {
        KeyArena::default()
    }

    /// Appends a key.
    pub fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True if there is no key.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`-th key.
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// The keys in byte order, and for each new index the old one.
    pub fn sorted(&self) -> (KeyArena, Vec<u32>) {
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_unstable_by(|a, b| self.get(*a as usize).cmp(self.get(*b as usize)));
        let mut out = KeyArena {
            bytes: Vec::with_capacity(self.bytes.len()),
            ends: Vec::with_capacity(self.len()),
        };
        for &i in &order {
            out.push(self.get(i as usize));
        }
        (out, order)
    }

    /// The index of `key` in a [sorted](KeyArena::sorted) arena.
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = (low + high) / 2;
            match self.get(mid).cmp(key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

/// A Fenwick (binary indexed) tree of 0/1 marks: mark, unmark, and find the `k`-th mark, each
/// in `O(log n)`: KVBench's sorted vector `V` without its `O(n)` inserts and erases.
#[derive(Debug, Clone)]
pub struct Fenwick {
    tree: Vec<u32>,
    top: usize,
}

impl Fenwick {
    /// `n` positions, none marked.
    pub fn new(n: usize) -> Self {
        Fenwick {
            tree: vec![0; n + 1],
            top: if n == 0 {
                0
            } else {
                1 << (usize::BITS - 1 - n.leading_zeros())
            },
        }
    }

    /// Adds `delta` (+1 or −1) at position `i`.
    #[inline]
    pub fn add(&mut self, i: usize, delta: i32) {
        let mut j = i + 1;
        while j < self.tree.len() {
            self.tree[j] = self.tree[j].wrapping_add_signed(delta);
            j += j & j.wrapping_neg();
        }
    }

    /// The position of the `k`-th mark (0-based); `k` must be below the number of marks.
    #[inline]
    pub fn select(&self, mut k: u32) -> usize {
        let mut pos = 0;
        let mut step = self.top;
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] <= k {
                pos = next;
                k -= self.tree[next];
            }
            step >>= 1;
        }
        pos
    }

    /// The number of marks at positions below `i`.
    pub fn rank(&self, i: usize) -> u32 {
        let mut j = i;
        let mut sum = 0;
        while j > 0 {
            sum += self.tree[j];
            j &= j - 1;
        }
        sum
    }
}

/// A uniformly random permutation of `0..n` (Fisher–Yates).
pub fn shuffled(n: usize, rng: &mut Rng) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenwick_selects_the_kth_mark() {
        let mut f = Fenwick::new(13);
        let marked = [0usize, 3, 4, 9, 12];
        for &i in &marked {
            f.add(i, 1);
        }
        for (k, &i) in marked.iter().enumerate() {
            assert_eq!(f.select(k as u32), i);
            assert_eq!(f.rank(i), k as u32);
        }
        f.add(4, -1);
        assert_eq!(f.select(2), 9);
    }

    #[test]
    fn arena_sorts_and_finds() {
        let mut a = KeyArena::new();
        for k in ["b", "a", "cc", "ab"] {
            a.push(k.as_bytes());
        }
        let (s, order) = a.sorted();
        let keys: Vec<&[u8]> = (0..s.len()).map(|i| s.get(i)).collect();
        assert_eq!(keys, [&b"a"[..], b"ab", b"b", b"cc"]);
        assert_eq!(order, [1, 3, 0, 2]);
        assert_eq!(s.find(b"b"), Some(2));
        assert_eq!(s.find(b"ba"), None);
    }

    #[test]
    fn alphabet_order_is_byte_order() {
        assert!(ALPHABET.windows(2).all(|w| w[0] < w[1]));
    }
}
