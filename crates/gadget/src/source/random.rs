//! A small deterministic pseudo-random number generator: xoshiro256++ (Blackman & Vigna),
//! seeded from one `u64` through splitmix64.
//!
//! Implemented here rather than taken from a crate so that a seed yields the same numbers on
//! every platform and with every dependency version. (Distributions that go through `ln`,
//! `exp`, `powf` or `sin` inherit the platform's libm, which may round a last bit differently.)

/// One step of splitmix64: advances `state` and returns the next output.
///
/// Used to expand a `u64` seed into the 256-bit xoshiro state and to derive independent
/// sub-stream seeds from one seed.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The xoshiro256++ generator: 256 bits of state, period 2^256 − 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose state is the first four splitmix64 outputs from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        // splitmix64 is a bijection of its counter, so four consecutive outputs are never all
        // zero; the all-zero state (the one fixed point of xoshiro) cannot occur.
        Rng { s }
    }

    /// A generator with exactly this state (for reference test vectors).
    ///
    /// # Panics
    /// If the state is all zeros (xoshiro would output zeros forever).
    pub fn from_state(s: [u64; 4]) -> Self {
        assert!(s != [0; 4], "xoshiro256++ state must not be all zeros");
        Rng { s }
    }

    /// The `index`-th independent sub-stream of `seed`: a generator seeded with a splitmix64
    /// output derived from both, so that streams for different purposes (keys, gaps,
    /// disorder, ...) do not depend on how many numbers the others consume.
    pub fn substream(seed: u64, index: u64) -> Self {
        let mut sm = seed;
        let base = splitmix64(&mut sm);
        let mut mixed = base ^ index.wrapping_mul(0xd1b5_4a32_d192_ed03);
        Rng::new(splitmix64(&mut mixed))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform `f64` in `[0, 1)`: the top 53 bits scaled by 2^-53.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (`p <= 0`: never, `p >= 1`: always).
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// A uniform integer in `[0, bound)` without modulo bias (Lemire's multiply-and-reject
    /// method: one multiplication, rarely a retry).
    ///
    /// # Panics
    /// If `bound` is 0.
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "Rng::below needs a positive bound");
        let mut m = u128::from(self.next_u64()) * u128::from(bound);
        let mut low = m as u64;
        if low < bound {
            // 2^64 mod bound: the number of low products that would over-represent some values.
            let threshold = bound.wrapping_neg() % bound;
            while low < threshold {
                m = u128::from(self.next_u64()) * u128::from(bound);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// A uniform integer in `[low, high]` (both inclusive), without modulo bias.
    ///
    /// # Panics
    /// If `low > high`.
    #[inline]
    pub fn range_u64(&mut self, low: u64, high: u64) -> u64 {
        assert!(low <= high, "Rng::range_u64: empty range {low}..={high}");
        match (high - low).checked_add(1) {
            Some(span) => low + self.below(span),
            None => self.next_u64(),
        }
    }

    /// A uniform integer in `[low, high]` (both inclusive), without modulo bias.
    ///
    /// # Panics
    /// If `low > high`.
    #[inline]
    pub fn range_i64(&mut self, low: i64, high: i64) -> i64 {
        assert!(low <= high, "Rng::range_i64: empty range {low}..={high}");
        let span = high.wrapping_sub(low) as u64;
        low.wrapping_add(self.range_u64(0, span) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference() {
        // Outputs of Vigna's splitmix64.c from state 0.
        let mut s = 0u64;
        assert_eq!(splitmix64(&mut s), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix64(&mut s), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(splitmix64(&mut s), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn xoshiro256plusplus_matches_the_reference() {
        // Reference outputs of xoshiro256plusplus.c from the state {1, 2, 3, 4}.
        let mut rng = Rng::from_state([1, 2, 3, 4]);
        let expected: [u64; 10] = [
            41943041,
            58720359,
            3588806011781223,
            3591011842654386,
            9228616714210784205,
            9973669472204895162,
            14011001112246962877,
            12406186145184390807,
            15849039046786891736,
            10450023813501588000,
        ];
        for e in expected {
            assert_eq!(rng.next_u64(), e);
        }
    }

    #[test]
    fn same_seed_same_numbers_different_seed_different_numbers() {
        let a: Vec<u64> = {
            let mut r = Rng::new(42);
            (0..100).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(42);
            (0..100).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::new(43);
            (0..100).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut s0 = Rng::substream(42, 0);
        let mut s1 = Rng::substream(42, 1);
        assert_ne!(s0.next_u64(), s1.next_u64());
    }

    #[test]
    fn floats_are_in_the_unit_interval() {
        let mut r = Rng::new(7);
        let mut sum = 0.0;
        for _ in 0..10_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        assert!((sum / 10_000.0 - 0.5).abs() < 0.01);
    }

    #[test]
    fn bounded_integers_are_in_range_and_unbiased() {
        let mut r = Rng::new(1);
        assert_eq!(r.below(1), 0);
        // A bound just above 2^63 rejects almost half of all products: the naive
        // `x % bound` would return values below 2^63 - 1 twice as often as the others.
        let bound = (1u64 << 63) + 12345;
        let mut low_half = 0;
        for _ in 0..4000 {
            let x = r.below(bound);
            assert!(x < bound);
            if x < bound / 2 {
                low_half += 1;
            }
        }
        assert!((1800..2200).contains(&low_half), "{low_half}");
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[r.range_u64(10, 15) as usize - 10] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        for _ in 0..1000 {
            let x = r.range_i64(-3, 3);
            assert!((-3..=3).contains(&x));
        }
        r.range_u64(0, u64::MAX);
        r.range_i64(i64::MIN, i64::MAX);
        assert_eq!(r.range_i64(5, 5), 5);
    }
}
