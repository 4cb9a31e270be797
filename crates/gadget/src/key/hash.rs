//! Flink's hash functions: `MathUtils.murmurHash`, `KeyGroupRangeAssignment`, `longToIntWithBitMixing`.

/// Flink's `MathUtils.murmurHash(int)`: one murmur3 round plus the fmix32 finaliser, made non-negative.
#[inline]
pub fn murmur_hash(code: i32) -> i32 {
    let mut h = code as u32;
    h = h.wrapping_mul(0xcc9e_2d51);
    h = h.rotate_left(15);
    h = h.wrapping_mul(0x1b87_3593);
    h = h.rotate_left(13);
    h = h.wrapping_mul(5).wrapping_add(0xe654_6b64);
    h ^= 4;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    // Java's `Math.abs`, with the one negative result (of i32::MIN) taken as 0; without a
    // branch, since the sign of a hash is a coin toss the branch predictor cannot learn
    (h as i32).wrapping_abs().max(0)
}

/// `KeyGroupRangeAssignment.computeKeyGroupForKeyHash`.
#[inline]
pub fn key_group_for_hash(java_hash: i32, max_parallelism: u32) -> u32 {
    let hash = murmur_hash(java_hash) as u32;
    if max_parallelism.is_power_of_two() {
        hash & (max_parallelism - 1) // the same as `%`, without a division
    } else {
        hash % max_parallelism
    }
}

/// Java's `String.hashCode()` over UTF-16 code units.
#[inline(never)] // keeps the string loop out of the key-group lookups it would bloat
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(u as i32))
}

/// Flink's `MathUtils.longToIntWithBitMixing` (used by `TimeWindow.hashCode`): the
/// SplitMix64 finalizer, truncated to 32 bits.
pub fn long_to_int_with_bit_mixing(v: i64) -> i32 {
    let mut x = v as u64;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    x as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_mixing_is_flinks() {
        // Values printed by Flink 1.20.3's MathUtils.longToIntWithBitMixing; the last is
        // TimeWindow(151827732, 151857732).hashCode().
        for (v, mixed) in [
            (0i64, 0i32),
            (1, 269_157_861),
            (303_657_402, -1_460_583_372),
            (-5, -223_893_682),
            (151_827_732 + 151_857_732, -1_370_264_760),
        ] {
            assert_eq!(long_to_int_with_bit_mixing(v), mixed, "{v}");
        }
    }

    #[test]
    fn murmur_results_are_made_non_negative_as_java_does() {
        assert_eq!(murmur_hash(1), 68_075_478, "a negative mix is negated");
        assert_eq!(
            murmur_hash(-2_089_875_627),
            0,
            "the mix of i32::MIN becomes 0"
        );
        assert!((-1000..1000).all(|code| murmur_hash(code) >= 0));
    }

    #[test]
    fn key_groups_of_reference_job_ids() {
        // Key-group prefixes observed in the Flink 1.20 reference traces (max parallelism 128).
        for (job, group) in [
            (0x0000_0001_75c0_508di64, 0x00u32),
            (0x0000_0001_75c0_428e, 0x55),
            (0x0000_0001_75c0_4e94, 0x0c),
            (0x0000_0001_75c0_4f30, 0x3d),
            (0x0000_0001_75be_e100, 0x39),
        ] {
            let hash = (job ^ ((job as u64) >> 32) as i64) as i32;
            assert_eq!(key_group_for_hash(hash, 128), group, "job {job:#x}");
        }
    }
}
