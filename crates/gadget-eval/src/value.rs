//! The bytes of the values Gadget writes, as RocksDB's `db_bench` makes them: a pool of
//! pseudo-random printable bytes, deterministic from the seed, in which each 100-byte piece
//! repeats a random prefix of `compression ratio` × 100 bytes, so that a compressor shrinks
//! the data to about that fraction (`db_bench --compression_ratio`, 0.5 by default). A value
//! is the next slice of the pool: no allocation and no work per request beyond the copy the
//! store makes.
//!
//! Filling values with one repeated byte, as Gadget did, let Snappy shrink RocksDB's data 20×
//! and flattered every store that compresses.

/// The compression ratio of values unless a run sets one: `db_bench`'s default.
pub const DEFAULT_COMPRESSION_RATIO: f64 = 0.5;

/// Bytes in the pool values are sliced from (`db_bench`'s is 1 MB).
const POOL_LEN: usize = 1 << 20;

/// Bytes per piece; each repeats its own random prefix.
const PIECE_LEN: usize = 100;

/// A source of value bytes.
#[derive(Debug, Clone)]
pub struct ValueBytes {
    pool: Vec<u8>,
    at: usize,
    rng: u64,
    compression_ratio: f64,
}

impl ValueBytes {
    /// Values from `seed` that compress to about `compression_ratio` of their size (0.01 to
    /// 1; 1 is incompressible).
    pub fn new(seed: u64, compression_ratio: f64) -> Self {
        let mut v = ValueBytes {
            pool: Vec::new(),
            at: 0,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
            compression_ratio: compression_ratio.clamp(0.0, 1.0),
        };
        v.extend_pool(POOL_LEN);
        v
    }

    /// The next `len` value bytes.
    #[inline]
    pub fn next(&mut self, len: usize) -> &[u8] {
        if len > self.pool.len() {
            self.extend_pool(len);
        }
        if self.at + len > self.pool.len() {
            self.at = 0;
        }
        let start = self.at;
        self.at += len;
        &self.pool[start..start + len]
    }

    /// Grows the pool to at least `len` bytes, a piece at a time (only for a value longer
    /// than the pool, which is at most [`gadget::trace::MAX_VALUE_LEN`]: workloads and traces
    /// refuse longer ones).
    #[cold]
    fn extend_pool(&mut self, len: usize) {
        let raw = ((PIECE_LEN as f64 * self.compression_ratio) as usize).clamp(1, PIECE_LEN);
        self.pool
            .reserve_exact(len.next_multiple_of(PIECE_LEN) - self.pool.len());
        let mut piece = [0u8; PIECE_LEN];
        while self.pool.len() < len {
            for b in &mut piece[..raw] {
                // a printable character, as db_bench's RandomString gives
                *b = b' ' + (self.random() % 95) as u8;
            }
            // the rest of the piece repeats its random prefix
            for start in (raw..PIECE_LEN).step_by(raw) {
                piece.copy_within(0..raw.min(PIECE_LEN - start), start);
            }
            self.pool.extend_from_slice(&piece);
        }
    }

    /// splitmix64.
    fn random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of `data` after a simple LZ77-style pass: each byte is either a literal or part
    /// of a match of at least 4 bytes within the last 64 KiB (what Snappy finds), counted as
    /// 3 bytes per match.
    fn compressed_len(data: &[u8]) -> usize {
        let mut last = std::collections::HashMap::new();
        let (mut i, mut out) = (0, 0);
        while i + 4 <= data.len() {
            let word = &data[i..i + 4];
            match last.insert(word, i) {
                Some(j) if i - j <= 65_536 => {
                    let mut n = 4;
                    while i + n < data.len() && data[j + n] == data[i + n] {
                        n += 1;
                    }
                    out += 3;
                    i += n;
                }
                _ => {
                    out += 1;
                    i += 1;
                }
            }
        }
        out + data.len() - i
    }

    #[test]
    fn values_compress_to_about_their_ratio() {
        for ratio in [0.1, 0.25, 0.5, 0.75, 1.0] {
            let mut v = ValueBytes::new(7, ratio);
            let data: Vec<u8> = (0..1000).flat_map(|_| v.next(100).to_vec()).collect();
            let got = compressed_len(&data) as f64 / data.len() as f64;
            assert!(
                (got - ratio).abs() < 0.1,
                "ratio {ratio}: compressed to {got:.3}"
            );
        }
    }

    #[test]
    fn values_are_deterministic_from_the_seed_and_printable() {
        let a: Vec<u8> = ValueBytes::new(1, 0.5).next(5000).to_vec();
        assert_eq!(a, ValueBytes::new(1, 0.5).next(5000));
        assert_ne!(a, ValueBytes::new(2, 0.5).next(5000));
        assert!(a.iter().all(|b| (b' '..=b'~').contains(b)));
    }

    #[test]
    fn values_longer_than_the_pool_and_wrapping_ones_are_whole() {
        let mut v = ValueBytes::new(3, 0.5);
        assert_eq!(v.next(3 * POOL_LEN).len(), 3 * POOL_LEN);
        for _ in 0..10 {
            assert_eq!(v.next(POOL_LEN - 1).len(), POOL_LEN - 1);
        }
        assert_eq!(v.next(0).len(), 0);
    }
}
