//! Spark's shuffle partitioning of a stateful operator's input: `HashPartitioning` over the
//! grouping columns, `pmod(murmur3(columns, seed 42), spark.sql.shuffle.partitions)`, with
//! Spark's `Murmur3_x86_32` (`Murmur3Hash`): a long hashed as its low then its high word, a
//! struct field by field, a string over its bytes (four at a time, then each trailing byte on
//! its own, as Spark's `hashUnsafeBytes` does).

use crate::key::Key;

/// The seed `Murmur3Hash` starts from.
pub(crate) const SEED: i32 = 42;

fn mix_k1(k1: i32) -> i32 {
    (k1.wrapping_mul(0xcc9e_2d51_u32 as i32))
        .rotate_left(15)
        .wrapping_mul(0x1b87_3593)
}

fn mix_h1(h1: i32, k1: i32) -> i32 {
    (h1 ^ k1)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64_u32 as i32)
}

fn fmix(h1: i32, length: i32) -> i32 {
    let mut h = (h1 ^ length) as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h as i32
}

/// `Murmur3_x86_32.hashLong`.
pub(crate) fn hash_long(value: i64, seed: i32) -> i32 {
    let low = value as i32;
    let high = (value >> 32) as i32;
    let h1 = mix_h1(seed, mix_k1(low));
    fmix(mix_h1(h1, mix_k1(high)), 8)
}

/// `Murmur3_x86_32.hashUnsafeBytes`: whole little-endian words, then each trailing byte
/// (sign-extended) mixed on its own.
pub(crate) fn hash_bytes(bytes: &[u8], seed: i32) -> i32 {
    let mut h1 = seed;
    let words = bytes.chunks_exact(4);
    let tail = words.remainder();
    for w in words {
        h1 = mix_h1(h1, mix_k1(i32::from_le_bytes([w[0], w[1], w[2], w[3]])));
    }
    for &b in tail {
        h1 = mix_h1(h1, mix_k1(b as i8 as i32));
    }
    fmix(h1, bytes.len() as i32)
}

/// The hash of a record key column, from `seed`.
pub(crate) fn hash_key(key: &Key, seed: i32) -> i32 {
    match key {
        Key::Long(v) => hash_long(*v, seed),
        Key::Str(s) => hash_bytes(s.as_bytes(), seed),
        // a null column leaves the hash as it was
        Key::NullByte => seed,
    }
}

/// The shuffle partition, of `partitions`, of a row whose columns hash to `hash()`:
/// `pmod(hash, partitions)`, the hash computed only when there are several partitions.
pub(crate) fn partition_of(partitions: usize, hash: impl FnOnce() -> i32) -> usize {
    if partitions > 1 {
        hash().rem_euclid(partitions as i32) as usize
    } else {
        0
    }
}

/// The shuffle partition, of `partitions`, of a row grouped by the record key alone.
pub(crate) fn key_partition(key: &Key, partitions: usize) -> usize {
    partition_of(partitions, || hash_key(key, SEED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_sparks() {
        // Murmur3_x86_32 of Spark 4.1.1 (spark-unsafe), seed 42
        assert_eq!(hash_long(0, SEED), -1_670_924_195);
        assert_eq!(hash_long(6_270_505_101, SEED), -193_146_296);
        assert_eq!(hash_long(-1, SEED), -939_490_007);
        assert_eq!(hash_bytes(b"abcdefg", SEED), 2_132_013_596);
        assert_eq!(hash_bytes("été".as_bytes(), SEED), -149_728_428);
        // a window struct (start, end in µs) then the key, as the aggregation's shuffle hashes
        let h = hash_long(150_940_000_000, hash_long(150_935_000_000, SEED));
        assert_eq!(hash_long(6_270_505_101, h), 219_832_873);
        assert_eq!(partition_of(3, || -7), 2);
        assert_eq!(partition_of(3, || 7), 1);
        assert_eq!(
            partition_of(1, || unreachable!("one partition needs no hash")),
            0
        );
    }
}
