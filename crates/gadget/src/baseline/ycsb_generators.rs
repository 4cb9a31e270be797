//! YCSB's number generators (`site.ycsb.generator`), with YCSB's constants and quirks.
//!
//! The formulas follow YCSB 0.17's `ZipfianGenerator`, `ScrambledZipfianGenerator`,
//! `SkewedLatestGenerator`, `HotspotIntegerGenerator`, `ExponentialGenerator`,
//! `SequentialGenerator` and `UniformLongGenerator`. YCSB draws from Java's unseeded
//! `ThreadLocalRandom`; these draw from Gadget's seeded [`Rng`], so the distributions are
//! YCSB's and a seed reproduces a run, but the individual numbers differ from any Java run.

use crate::source::random::Rng;

/// YCSB's Zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// The item count of the Zipfian behind YCSB's scrambled Zipfian
/// (`ScrambledZipfianGenerator.ITEM_COUNT`).
pub const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;

/// YCSB's precomputed ζ(10¹⁰, 0.99) (`ScrambledZipfianGenerator.ZETAN`).
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the eight little-endian bytes of `value`, made
/// non-negative with Java's `Math.abs` (which leaves `i64::MIN` negative, as here).
#[inline]
pub fn fnv_hash64(value: i64) -> i64 {
    let mut v = value as u64;
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        hash ^= v & 0xff;
        v >>= 8;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    (hash as i64).wrapping_abs()
}

/// ζ(n, θ) continued from `initial` (the sum up to `from`): Σ_{i=from}^{n-1} 1/(i+1)^θ.
pub fn zeta(from: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// YCSB's `ZipfianGenerator`: Gray et al.'s method over the integers `[min, max]`, the
/// smallest the most popular.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    base: i64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    zeta2theta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// Items `[min, max]` with YCSB's constant 0.99 (ζ computed in O(max − min)).
    ///
    /// # Panics
    /// If `min > max`.
    pub fn new(min: i64, max: i64) -> Self {
        assert!(min <= max, "Zipfian over an empty range {min}..={max}");
        let items = (max - min + 1) as u64;
        Self::with_zetan(
            min,
            max,
            ZIPFIAN_CONSTANT,
            zeta(0, items, ZIPFIAN_CONSTANT, 0.0),
        )
    }

    /// Items `[min, max]` with a precomputed ζ(items, θ).
    fn with_zetan(min: i64, max: i64, theta: f64, zetan: f64) -> Self {
        let items = (max - min + 1) as u64;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        Zipfian {
            items,
            base: min,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
            zeta2theta,
            count_for_zeta: items,
        }
    }

    /// The number of items it was built for.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The probability YCSB's formula aims at for the item of popularity rank `rank`
    /// (0-based): 1 / ((rank + 1)^θ · ζ(items, θ)).
    pub fn probability(&self, rank: u64) -> f64 {
        1.0 / (((rank + 1) as f64).powf(self.theta) * self.zetan)
    }

    /// The next value over the first `item_count` items (`nextLong(itemcount)`): a count
    /// above the one ζ was computed for extends ζ incrementally, as the latest distribution
    /// needs while records are inserted. (Like YCSB, `eta` keeps the original item count.)
    #[inline]
    pub fn next_over(&mut self, rng: &mut Rng, item_count: u64) -> i64 {
        if item_count > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as i64
    }

    /// The next value over all its items.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> i64 {
        self.next_over(rng, self.items)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: a Zipfian over 10¹⁰ ranks (θ = 0.99, YCSB's
/// precomputed ζ), each rank hashed with FNV-64 onto `[min, max]`, so popular items are spread
/// over the key space instead of clustered at its start.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    ranks: Zipfian,
    min: i64,
    item_count: i64,
}

impl ScrambledZipfian {
    /// Items `[min, max]`.
    ///
    /// # Panics
    /// If `min > max`.
    pub fn new(min: i64, max: i64) -> Self {
        assert!(
            min <= max,
            "scrambled Zipfian over an empty range {min}..={max}"
        );
        ScrambledZipfian {
            ranks: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
            min,
            item_count: max - min + 1,
        }
    }

    /// The item a popularity rank lands on.
    #[inline]
    pub fn scramble(&self, rank: i64) -> i64 {
        self.min + fnv_hash64(rank) % self.item_count
    }

    /// The next popularity rank (the unscrambled draw).
    #[inline]
    pub fn next_rank(&mut self, rng: &mut Rng) -> i64 {
        self.ranks.next(rng)
    }

    /// The next item.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> i64 {
        let rank = self.next_rank(rng);
        self.scramble(rank)
    }
}

/// YCSB's `HotspotIntegerGenerator`: `[low, high]` split into a hot set (the first
/// `data_fraction` of it) that receives `operation_fraction` of the draws, uniformly, and a
/// cold set that receives the rest, uniformly.
#[derive(Debug, Clone)]
pub struct Hotspot {
    low: i64,
    hot: u64,
    cold: u64,
    operation_fraction: f64,
}

impl Hotspot {
    /// `data_fraction` of `[low, high]` is hot and takes `operation_fraction` of the draws.
    /// The hot set has `⌊(high − low + 1) · data_fraction⌋` items, as in YCSB.
    pub fn new(low: i64, high: i64, data_fraction: f64, operation_fraction: f64) -> Self {
        let interval = (high - low + 1) as u64;
        let hot = (interval as f64 * data_fraction) as u64;
        Hotspot {
            low,
            hot,
            cold: interval - hot,
            operation_fraction,
        }
    }

    /// The number of hot items.
    pub fn hot_items(&self) -> u64 {
        self.hot
    }

    /// The next item. (YCSB takes `|nextLong()| mod n`; this draws without modulo bias.)
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> i64 {
        let hot = rng.next_f64() < self.operation_fraction;
        if (hot && self.hot > 0) || self.cold == 0 {
            self.low + rng.below(self.hot) as i64
        } else {
            self.low + (self.hot + rng.below(self.cold)) as i64
        }
    }
}

/// YCSB's `ExponentialGenerator`: exponential offsets back from the newest record, with
/// `percentile`% of them below `range`.
#[derive(Debug, Clone)]
pub struct Exponential {
    gamma: f64,
}

impl Exponential {
    /// `percentile` percent of the draws fall below `range` (YCSB's
    /// `exponential.percentile` and `recordcount · exponential.frac`).
    pub fn new(percentile: f64, range: f64) -> Self {
        Exponential {
            gamma: -(1.0 - percentile / 100.0).ln() / range,
        }
    }

    /// The next offset (≥ 0).
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> f64 {
        // 1 − u lies in (0, 1], so the logarithm is finite.
        -(1.0 - rng.next_f64()).ln() / self.gamma
    }
}

/// YCSB's `SequentialGenerator`: `start, start + 1, …, end`, then around again.
#[derive(Debug, Clone)]
pub struct Sequential {
    start: i64,
    interval: u64,
    counter: u64,
}

impl Sequential {
    /// Cycles over `[start, end]`.
    pub fn new(start: i64, end: i64) -> Self {
        Sequential {
            start,
            interval: (end - start + 1) as u64,
            counter: 0,
        }
    }

    /// The next item.
    #[inline]
    pub fn next_item(&mut self) -> i64 {
        let v = self.start + (self.counter % self.interval) as i64;
        self.counter += 1;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_ycsb() {
        // FNV-1a of eight zero bytes, computed by hand from the offset basis and prime.
        let mut h = FNV_OFFSET_BASIS_64;
        for _ in 0..8 {
            h = h.wrapping_mul(FNV_PRIME_64);
        }
        assert_eq!(fnv_hash64(0), (h as i64).wrapping_abs());
        assert!(fnv_hash64(1) >= 0);
        assert_ne!(fnv_hash64(1), fnv_hash64(2));
    }

    #[test]
    fn precomputed_zetan_is_ycsbs() {
        // ζ(10¹⁰) is too long to sum in a test; check the formula's small values instead.
        assert!((zeta(0, 2, 0.99, 0.0) - (1.0 + 0.5f64.powf(0.99))).abs() < 1e-15);
        assert!((zeta(2, 3, 0.99, zeta(0, 2, 0.99, 0.0)) - zeta(0, 3, 0.99, 0.0)).abs() < 1e-15);
    }

    #[test]
    fn zipfian_stays_in_range() {
        let mut rng = Rng::new(1);
        let mut z = Zipfian::new(5, 14);
        for _ in 0..10_000 {
            let v = z.next(&mut rng);
            assert!((5..=14).contains(&v), "{v}");
        }
    }

    #[test]
    fn sequential_wraps() {
        let mut s = Sequential::new(3, 5);
        let got: Vec<i64> = (0..7).map(|_| s.next_item()).collect();
        assert_eq!(got, [3, 4, 5, 3, 4, 5, 3]);
    }
}
