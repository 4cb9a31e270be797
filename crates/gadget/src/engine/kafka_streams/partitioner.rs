//! Which partition of its topic a record goes to: Kafka's default partitioner
//! (`BuiltInPartitioner.partitionForKey`), the positive part of the murmur2 hash of the
//! serialized key, modulo the partitions. A Kafka Streams task reads one partition of each
//! input topic, so this also says which task a record reaches.

use crate::key::Key;

/// Kafka's `Utils.murmur2`: MurmurHash2 (32-bit) with Kafka's seed, as a Java `int`.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h = SEED ^ data.len() as u32;
    let mut words = data.chunks_exact(4);
    for word in &mut words {
        let mut k = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate().rev() {
            h ^= u32::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition of `partitions` a record with key `key` goes to: [`partition_for_key`] of
/// the key as its serde writes it (a string's bytes, a long's 8 bytes big-endian), with
/// nothing allocated.
pub fn partition_of_key(key: &Key, partitions: u32) -> u32 {
    match key {
        Key::Long(v) => partition_for_key(&v.to_be_bytes(), partitions),
        Key::Str(s) => partition_for_key(s.as_bytes(), partitions),
        Key::NullByte => partition_for_key(&[0], partitions),
    }
}

/// The partition of `partitions` a record with the serialized key `key` goes to.
#[inline]
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    let positive = (murmur2(key) & 0x7fff_ffff) as u32;
    positive % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_hashes_as_kafka_does() {
        // the cases of Kafka's own test of Utils.murmur2
        for (data, hash) in [
            (&b"21"[..], -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ] {
            assert_eq!(murmur2(data), hash, "{}", String::from_utf8_lossy(data));
        }
    }

    #[test]
    fn a_key_goes_to_the_positive_hash_modulo_the_partitions() {
        // -973932308 & 0x7fffffff = 1173551340
        assert_eq!(partition_for_key(b"21", 4), 1_173_551_340 % 4);
        assert_eq!(partition_for_key(b"21", 1), 0);
        let spread: std::collections::BTreeSet<u32> = (0..100u64)
            .map(|k| partition_for_key(&k.to_be_bytes(), 4))
            .collect();
        assert_eq!(spread.len(), 4, "100 longs reach every one of 4 partitions");
    }

    #[test]
    fn a_keys_partition_is_that_of_its_serialized_bytes() {
        let mut bytes = Vec::new();
        let keys = (0..200)
            .map(Key::Long)
            .chain((0..200).map(|i| Key::Str(format!("job-{i}").into())))
            .chain([Key::NullByte, Key::Str("".into())]);
        for key in keys {
            super::super::count::serde_key(&key, &mut bytes);
            for partitions in [1, 2, 3, 7, 16] {
                assert_eq!(
                    partition_of_key(&key, partitions),
                    partition_for_key(&bytes, partitions),
                    "{key:?} of {partitions}"
                );
            }
        }
    }
}
