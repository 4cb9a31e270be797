//! Flink's `KeyGroupRangeAssignment`: which subtask of a keyed operator owns which key groups,
//! and the max parallelism Flink picks when a job sets none.

use std::ops::RangeInclusive;

/// The fewest key groups Flink gives a job without a configured max parallelism
/// (`DEFAULT_LOWER_BOUND_MAX_PARALLELISM`).
pub const DEFAULT_LOWER_BOUND_MAX_PARALLELISM: u32 = 1 << 7;

/// The largest max parallelism (and parallelism) Flink allows (`UPPER_BOUND_MAX_PARALLELISM`).
pub const UPPER_BOUND_MAX_PARALLELISM: u32 = 1 << 15;

/// `computeOperatorIndexForKeyGroup`: the subtask (operator index) of `parallelism` that owns
/// key group `key_group` of `max_parallelism`, `key_group × parallelism / max_parallelism`.
///
/// Key groups are handed out in contiguous ranges, the first subtask taking the lowest ones.
#[inline]
pub fn operator_index_for_key_group(max_parallelism: u32, parallelism: u32, key_group: u32) -> u32 {
    // in 64 bits: Flink's int arithmetic is exact up to its bound of 32768 key groups, and so
    // is this, for any u32
    (u64::from(key_group) * u64::from(parallelism) / u64::from(max_parallelism.max(1))) as u32
}

/// `computeDefaultMaxParallelism`: the max parallelism of an operator of `parallelism` subtasks
/// whose job configures none: `parallelism + parallelism / 2` rounded up to a power of two, at
/// least 128 and at most 32768 (128 for every parallelism up to 85).
pub fn default_max_parallelism(parallelism: u32) -> u32 {
    let p = parallelism.clamp(1, UPPER_BOUND_MAX_PARALLELISM);
    (p + p / 2).next_power_of_two().clamp(
        DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
        UPPER_BOUND_MAX_PARALLELISM,
    )
}

/// The key groups of one subtask: Flink's `KeyGroupRange`, an inclusive range of key groups
/// out of `max_parallelism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyGroupRange {
    /// The number of key groups of the job.
    pub max_parallelism: u32,
    /// The first key group.
    pub start: u32,
    /// The last key group (inclusive); below `start` for an empty range.
    pub end: u32,
}

impl KeyGroupRange {
    /// Every key group: the only subtask of an operator of parallelism 1.
    pub fn all(max_parallelism: u32) -> Self {
        KeyGroupRange::of_subtask(max_parallelism, 1, 0)
    }

    /// `computeKeyGroupRangeForOperatorIndex`: the key groups of subtask `subtask` of
    /// `parallelism`, exactly those [`operator_index_for_key_group`] gives `subtask`.
    pub fn of_subtask(max_parallelism: u32, parallelism: u32, subtask: u32) -> Self {
        let (m, p, i) = (
            u64::from(max_parallelism),
            u64::from(parallelism.max(1)),
            u64::from(subtask),
        );
        let start = (i * m).div_ceil(p);
        let end = ((i + 1) * m).div_ceil(p);
        KeyGroupRange {
            max_parallelism,
            start: start as u32,
            // the last key group whose index × p / m is still i; below start when none is
            end: (end as u32).wrapping_sub(1),
        }
    }

    /// The key groups, in order.
    pub fn groups(&self) -> RangeInclusive<u32> {
        self.start..=self.end
    }

    /// Number of key groups (0 when the subtask owns none, with more subtasks than key groups).
    pub fn len(&self) -> u32 {
        if self.end < self.start || self.end == u32::MAX {
            0
        } else {
            self.end - self.start + 1
        }
    }

    /// True when the range holds no key group.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when `key_group` is in the range.
    #[inline]
    pub fn contains(&self, key_group: u32) -> bool {
        !self.is_empty() && (self.start..=self.end).contains(&key_group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Owners of key groups 0..max by Flink's formula, as runs: `(first, last, subtask)`.
    fn runs(max: u32, p: u32) -> Vec<(u32, u32, u32)> {
        let mut runs: Vec<(u32, u32, u32)> = Vec::new();
        for g in 0..max {
            let i = operator_index_for_key_group(max, p, g);
            match runs.last_mut() {
                Some(run) if run.2 == i => run.1 = g,
                _ => runs.push((g, g, i)),
            }
        }
        runs
    }

    #[test]
    fn key_groups_go_to_subtasks_as_flinks_formula_gives_them() {
        // key group × p / 128, worked out by hand:
        // p = 2: 63 × 2 / 128 = 0, 64 × 2 / 128 = 1
        assert_eq!(runs(128, 2), [(0, 63, 0), (64, 127, 1)]);
        // p = 3: 42 × 3 = 126 < 128, 43 × 3 = 129; 85 × 3 = 255 < 256, 86 × 3 = 258
        assert_eq!(runs(128, 3), [(0, 42, 0), (43, 85, 1), (86, 127, 2)]);
        // p = 4: quarters of 32
        assert_eq!(
            runs(128, 4),
            [(0, 31, 0), (32, 63, 1), (64, 95, 2), (96, 127, 3)]
        );
        // a max parallelism that is no power of two, p = 3 of 10: 3 × 3 = 9, 4 × 3 = 12,
        // 6 × 3 = 18, 7 × 3 = 21
        assert_eq!(runs(10, 3), [(0, 3, 0), (4, 6, 1), (7, 9, 2)]);
        // p = 1: everything to subtask 0
        assert_eq!(runs(128, 1), [(0, 127, 0)]);
    }

    #[test]
    fn a_subtasks_range_holds_exactly_the_key_groups_the_formula_gives_it() {
        for max in [1, 2, 7, 10, 128, 200, 1000] {
            for p in 1..=max.min(40) {
                let mut next = 0;
                for i in 0..p {
                    let range = KeyGroupRange::of_subtask(max, p, i);
                    assert_eq!(range.start, next, "max {max}, p {p}, subtask {i}");
                    for g in range.groups() {
                        assert_eq!(operator_index_for_key_group(max, p, g), i);
                        assert!(range.contains(g));
                    }
                    next = range.end + 1;
                }
                assert_eq!(next, max, "max {max}, p {p}: every key group has an owner");
            }
        }
        assert_eq!(KeyGroupRange::all(128).groups(), 0..=127);
        assert_eq!(KeyGroupRange::of_subtask(128, 3, 1).len(), 43);
    }

    #[test]
    fn default_max_parallelism_is_flinks() {
        // min(max(roundUpToPowerOfTwo(p + p / 2), 128), 32768)
        for (p, max) in [
            (1, 128),
            (2, 128),
            (4, 128),
            (85, 128),  // 85 + 42 = 127 -> 128
            (86, 256),  // 86 + 43 = 129 -> 256
            (171, 256), // 171 + 85 = 256
            (172, 512), // 172 + 86 = 258 -> 512
            (1000, 2048),
            (21845, 32768),
            (32768, 32768), // 49152 -> 65536, bounded
        ] {
            assert_eq!(default_max_parallelism(p), max, "parallelism {p}");
        }
    }
}
