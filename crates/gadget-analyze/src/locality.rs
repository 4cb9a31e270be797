//! Temporal locality of a key sequence.
//!
//! Temporal locality is the LRU stack distance of every access: the number of distinct other
//! keys accessed since the previous access to the same key (0: the same key again at once).
//! An LRU cache of `c` entries hits exactly the accesses with a distance below `c`, so the
//! distances give the whole miss-ratio curve. Spatial locality (distinct key sequences) is in
//! [`crate::sequences`].

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::fenwick::PositionSet;

/// A stop flag never set, for the functions that run to the end.
pub(crate) static NEVER: AtomicBool = AtomicBool::new(false);

/// Accesses between two looks at a stop flag: a few milliseconds of work at most.
const STOP_CHECK_EVERY: usize = 1 << 16;

/// True at every [`STOP_CHECK_EVERY`]th position `i` once `stop` is set.
#[inline]
pub(crate) fn stopped_at(i: usize, stop: &AtomicBool) -> bool {
    i % STOP_CHECK_EVERY == 0 && stop.load(Ordering::Relaxed)
}

/// Stack distances of a key sequence: an exact histogram, or one of a sample of its keys
/// standing for the whole (see [`crate::sampling`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackDistances {
    /// `counts[d]`: accesses at stack distance `d` (in the sample, when sampled).
    pub counts: Vec<u64>,
    /// First accesses to a key (infinite distance, a miss at every cache size).
    pub cold: u64,
    /// How many of the whole's accesses, and of its distance, each sampled one stands for:
    /// `1 << scale_shift` (0: exact).
    pub scale_shift: u32,
}

impl StackDistances {
    /// Computes the stack distance of every access in `ids` (dense key ids below `distinct`),
    /// in O(n log d): a set marks the position of each key's last access (a bitmap with a
    /// Fenwick tree over its words), and the distance is the number of marks after it. Positions are renumbered whenever they reach
    /// twice the number of keys, so the tree stays small (and in cache) however long the trace.
    ///
    /// Panics with 2^32 or more accesses (the trace scan refuses those before).
    pub fn of(ids: &[u32], distinct: usize) -> StackDistances {
        StackDistances::of_until(ids, distinct, &NEVER)
    }

    /// [`of`](Self::of) that gives up early once `stop` is set (Ctrl-C); the result is then
    /// incomplete, and a caller that sees `stop` set discards it.
    pub fn of_until(ids: &[u32], distinct: usize, stop: &AtomicBool) -> StackDistances {
        const NONE: u32 = u32::MAX;
        assert!(
            ids.len() < u32::MAX as usize,
            "stack distances count in 32 bits: at most 2^32 - 1 accesses"
        );
        let capacity = (2 * distinct).max(1024);
        let mut last = vec![NONE; distinct];
        let mut marks = PositionSet::new(capacity);
        let mut marked = 0u64;
        let mut next = 0usize;
        let mut out = StackDistances::default();
        // counts fit 32 bits (positions do) and half the size misses the cache less
        let mut counts: Vec<u32> = Vec::new();
        // The loads that miss the cache are prefetched ahead: a key's last position
        // `AHEAD` accesses before its turn, that position's bitmap word half as far ahead, and
        // the count of a distance is incremented `DELAYED` accesses after it is known.
        const AHEAD: usize = 16;
        const DELAYED: usize = 8;
        let mut delayed = [u32::MAX; DELAYED];
        for (i, &id) in ids.iter().enumerate() {
            if stopped_at(i, stop) {
                break;
            }
            if let Some(&ahead) = ids.get(i + AHEAD) {
                crate::prefetch(last.as_ptr().wrapping_add(ahead as usize));
            }
            if let Some(&near) = ids.get(i + AHEAD / 2) {
                marks.prefetch(last[near as usize] as usize);
            }
            if next == capacity {
                next = compact(&mut last, &mut marks, capacity);
            }
            let prev = last[id as usize];
            if prev == NONE {
                out.cold += 1;
                marked += 1;
            } else {
                let d = (marked - marks.rank(prev as usize)) as usize;
                if d >= counts.len() {
                    counts.resize(d + 1, 0);
                }
                crate::prefetch(counts.as_ptr().wrapping_add(d));
                let due = std::mem::replace(&mut delayed[i % DELAYED], d as u32);
                if due != u32::MAX {
                    counts[due as usize] += 1;
                }
                marks.remove(prev as usize);
            }
            marks.insert(next);
            last[id as usize] = next as u32;
            next += 1;
        }
        for due in delayed.into_iter().filter(|&d| d != u32::MAX) {
            counts[due as usize] += 1;
        }
        out.counts = counts.into_iter().map(u64::from).collect();
        out
    }

    /// How many of the whole's accesses (and distances) one counted here stands for.
    fn unit(&self) -> u64 {
        1 << self.scale_shift
    }

    /// Accesses that re-touch a key (all but the cold ones).
    pub fn reuses(&self) -> u64 {
        self.counts.iter().sum::<u64>() << self.scale_shift
    }

    /// Mean stack distance over re-accesses (cold accesses have none); 0 without any.
    pub fn mean(&self) -> f64 {
        let n: u64 = self.counts.iter().sum();
        if n == 0 {
            return 0.0;
        }
        let sum: f64 = self
            .counts
            .iter()
            .enumerate()
            .map(|(d, &c)| d as f64 * c as f64)
            .sum();
        sum / n as f64 * self.unit() as f64
    }

    /// The smallest distance at or below which a fraction `q` of the re-accesses lie.
    pub fn quantile(&self, q: f64) -> u64 {
        let n: u64 = self.counts.iter().sum();
        let target = (q * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (d, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= target {
                return d as u64 * self.unit();
            }
        }
        self.counts.len().saturating_sub(1) as u64 * self.unit()
    }

    /// Hit ratio of an LRU cache of `size` entries over all accesses (cold ones miss).
    pub fn hit_ratio(&self, size: u64) -> f64 {
        let total = self.counts.iter().sum::<u64>() + self.cold;
        if total == 0 {
            return 0.0;
        }
        let hits: u64 = self.counts.iter().take(self.counted_below(size)).sum();
        hits as f64 / total as f64
    }

    /// How many of `counts`' distances lie below a cache of `size` entries: distance `d`
    /// stands for `d × unit`, which hits when below `size`.
    fn counted_below(&self, size: u64) -> usize {
        size.div_ceil(self.unit()).min(self.counts.len() as u64) as usize
    }

    /// The miss-ratio curve at cache sizes 1, 2, 4, … up to the number of distinct keys:
    /// `(size, hit ratio)` pairs. A sample's curve starts at the size one sampled key stands
    /// for: it cannot tell smaller caches apart.
    pub fn hit_ratio_curve(&self) -> Vec<(u64, f64)> {
        let total = (self.counts.iter().sum::<u64>() + self.cold).max(1) as f64;
        let limit = (self.counts.len() as u64 * self.unit()).max(1);
        let mut out = Vec::new();
        let (mut hits, mut counted) = (0u64, 0usize);
        let mut ratio_at = |size: u64| {
            let below = self.counted_below(size);
            hits += self.counts[counted..below].iter().sum::<u64>();
            counted = below;
            (size, hits as f64 / total)
        };
        let mut size = self.unit();
        while size < limit {
            out.push(ratio_at(size));
            size *= 2;
        }
        out.push(ratio_at(limit));
        out
    }

    /// Re-access counts in power-of-two buckets: `(lowest distance, count)` for distances
    /// 0, 1, 2–3, 4–7, … (the histogram the plots draw).
    pub fn log2_buckets(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (d, &c) in self.counts.iter().enumerate() {
            let d = d as u64 * self.unit();
            let low = if d == 0 {
                0
            } else {
                1u64 << (63 - d.leading_zeros())
            };
            match out.last_mut() {
                Some((l, n)) if *l == low => *n += c << self.scale_shift,
                _ => out.push((low, c << self.scale_shift)),
            }
        }
        out
    }

    /// The summary reported: mean, quantiles, buckets and the hit-ratio curve.
    pub fn summary(&self) -> StackSummary {
        StackSummary {
            accesses: self.reuses() + (self.cold << self.scale_shift),
            cold: self.cold << self.scale_shift,
            mean: self.mean(),
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
            max: self.counts.len().saturating_sub(1) as u64 * self.unit(),
            buckets: self.log2_buckets(),
            hit_ratio_curve: self.hit_ratio_curve(),
        }
    }
}

/// Renumbers the live marks (each seen key's last position) to `0..k` in order, rebuilds the
/// set with them, and returns `k`, the next free position. Linear: a key's new position is the
/// number of marks before its old one.
fn compact(last: &mut [u32], marks: &mut PositionSet, capacity: usize) -> usize {
    let before = marks.members_before_words();
    let mut live = 0usize;
    for p in last.iter_mut().filter(|p| **p != u32::MAX) {
        *p = marks.packed_rank(*p as usize, &before);
        live += 1;
    }
    *marks = PositionSet::first(capacity, live);
    live
}

/// Stack distances as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StackSummary {
    /// Accesses with a key.
    pub accesses: u64,
    /// First accesses to a key.
    pub cold: u64,
    /// Mean distance over re-accesses.
    pub mean: f64,
    /// Median distance.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest distance.
    pub max: u64,
    /// `(lowest distance, re-accesses)` in power-of-two buckets.
    pub buckets: Vec<(u64, u64)>,
    /// `(LRU cache size in keys, hit ratio)` at powers of two.
    pub hit_ratio_curve: Vec<(u64, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_made_sequence_has_known_distances() {
        // a b c a a b d c
        let ids = [0, 1, 2, 0, 0, 1, 3, 2];
        let s = StackDistances::of(&ids, 4);
        // a: 2 (b, c); a: 0; b: 2 (c, a); c: 3 (a, b, d)
        assert_eq!(s.cold, 4);
        assert_eq!(s.counts, vec![1, 0, 2, 1]);
        assert_eq!(s.mean(), 7.0 / 4.0);
        assert_eq!(s.quantile(0.5), 2);
        assert_eq!(s.hit_ratio(1), 1.0 / 8.0);
        assert_eq!(s.hit_ratio(3), 3.0 / 8.0);
        assert_eq!(s.hit_ratio(4), 4.0 / 8.0);
        assert_eq!(s.log2_buckets(), vec![(0, 1), (1, 0), (2, 3)]);
    }
}
