//! Spatial locality: the number of distinct key sequences (n-grams) of each length.
//!
//! Each window of keys is reduced to a 63-bit fingerprint (a polynomial hash over random
//! per-key values, extended by one key per length); equal fingerprints are counted once. Two
//! different sequences share a fingerprint with probability about 2^-63, so for 10^8 windows
//! the count is exact with probability above 99.9%.
//!
//! The lengths are counted one after another, and each looks only at the windows that can
//! still repeat. A window whose first `n − 1` keys occur nowhere else in the trace is unique at
//! length `n` and at every longer length, so it is counted without being looked at again:
//! length `n` fingerprints only the *candidates*, the positions whose `(n − 1)`-key prefix
//! repeats. Every other occurrence of a candidate's window is a candidate too (it has the same
//! prefix), so the distinct windows of length `n` are the non-candidates plus the distinct
//! windows among the candidates. On a shuffled trace almost no pair of keys repeats, so every
//! length past two costs next to nothing; on a real trace the candidates shrink length by
//! length.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::locality::{stopped_at, NEVER};

/// The polynomial hash's base (odd, so multiplying by it loses nothing modulo 2^64).
const BASE: u64 = 0x100_0000_01b3 | 1;

/// A window's fingerprint from its hash. The lowest bit is always 0: the counting's hash set
/// keeps a flag there.
#[inline]
fn fingerprint(h: u64) -> u64 {
    crate::mix64(h) & !1
}

/// A key's random value in the polynomial hash.
#[inline]
fn value(id: u32) -> u64 {
    crate::mix64(id as u64 ^ 0x5851_f42d_4c95_7f2d)
}

/// Number of distinct key sequences of each length `1..=max_len` in `ids`, dense key ids
/// below `distinct` (an id at or above it panics).
pub fn unique_sequences(ids: &[u32], distinct: usize, max_len: usize) -> Vec<u64> {
    unique_sequences_until(ids, distinct, max_len, &NEVER)
}

/// [`unique_sequences`] that gives up early once `stop` is set (Ctrl-C); the counts are then
/// incomplete, and a caller that sees `stop` set discards them.
///
/// Memory: 1 byte per key, and 20 bytes per position whose key occurs more than once (its
/// position, its prefix's hash, its fingerprint), less with every length.
pub fn unique_sequences_until(
    ids: &[u32],
    distinct: usize,
    max_len: usize,
    stop: &AtomicBool,
) -> Vec<u64> {
    assert!(
        ids.len() < u32::MAX as usize,
        "sequences are counted at 32-bit positions: at most 2^32 - 1 accesses"
    );
    let mut out = Vec::with_capacity(max_len);
    if max_len == 0 {
        return out;
    }
    // length 1: the distinct keys; the candidates for length 2 are the keys seen twice (two
    // bitmaps of a bit per key, which stay in cache where a byte per key would not)
    let mut once = vec![0u64; distinct.div_ceil(64)];
    let mut twice = once.clone();
    for (i, &id) in ids.iter().enumerate() {
        if stopped_at(i, stop) {
            return out;
        }
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        twice[word] |= once[word] & bit;
        once[word] |= bit;
    }
    out.push(once.iter().map(|w| u64::from(w.count_ones())).sum());
    let mut candidates = Candidates::default();
    for (i, &id) in ids.iter().enumerate().take(ids.len().saturating_sub(1)) {
        if stopped_at(i, stop) {
            return out;
        }
        if twice[id as usize / 64] >> (id % 64) & 1 == 1 {
            candidates.pos.push(i as u32);
            candidates.prefix.push(value(id));
        }
    }
    drop((once, twice));
    let mut counter = Counter::default();
    for len in 2..=max_len {
        let windows = (ids.len() + 1).saturating_sub(len) as u64;
        let candidate_windows = candidates.pos.len() as u64;
        let repeated = counter.count(ids, len, len == max_len, &mut candidates, stop);
        if stop.load(Ordering::Relaxed) {
            return out;
        }
        out.push(windows - candidate_windows + repeated);
    }
    out
}

/// The positions whose window may repeat at the next length, in order, each with the hash of
/// its window so far.
#[derive(Default)]
struct Candidates {
    pos: Vec<u32>,
    prefix: Vec<u64>,
}

/// The reusable buffers of one length's count.
#[derive(Default)]
struct Counter {
    /// Fingerprints scattered into buckets by their top bits.
    buffer: Vec<u64>,
    /// Per buffer entry: does its fingerprint occur more than once?
    repeats: Vec<u64>,
}

impl Counter {
    /// Extends every candidate's window to `len` keys, counts the distinct windows among them,
    /// and keeps as candidates for `len + 1` those whose window repeats and has a next key
    /// (none if `last`).
    ///
    /// Fingerprints are scattered into buckets small enough to count in cache (each bucket
    /// keeps the candidates' order), counted bucket by bucket, and marked repeated or not; a
    /// last pass walks the candidates in order, finds each one's mark at its bucket's next
    /// entry, and keeps the repeated ones in place.
    fn count(
        &mut self,
        ids: &[u32],
        len: usize,
        last: bool,
        candidates: &mut Candidates,
        stop: &AtomicBool,
    ) -> u64 {
        let n = candidates.pos.len();
        if n == 0 {
            return 0;
        }
        // at most 1024 buckets: few enough output streams for the scatter to stay in cache,
        // and buckets of ~100K fingerprints for 10^8 windows, whose hash set stays in cache
        let bits = (n / 65536).max(1).ilog2().min(10);
        let bucket = |f: u64| {
            if bits == 0 {
                0
            } else {
                (f >> (64 - bits)) as usize
            }
        };
        let buckets = 1usize << bits;
        let mut starts = vec![0usize; buckets + 1];
        for (k, (&p, h)) in candidates
            .pos
            .iter()
            .zip(candidates.prefix.iter_mut())
            .enumerate()
        {
            if stopped_at(k, stop) {
                return 0;
            }
            *h = h
                .wrapping_mul(BASE)
                .wrapping_add(value(ids[p as usize + len - 1]));
            starts[bucket(fingerprint(*h)) + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        // fewer candidates each length: what the last one needed more goes back to the system
        self.buffer.clear();
        self.buffer.shrink_to(n);
        self.buffer.resize(n, 0);
        let fingerprints = candidates
            .prefix
            .iter()
            .enumerate()
            .take_while(|&(k, _)| !stopped_at(k, stop))
            .map(|(_, &h)| fingerprint(h));
        // a stop during the scatter leaves buckets part-filled: never past their ends
        scatter(fingerprints, &starts, bucket, &mut self.buffer);
        if stop.load(Ordering::Relaxed) {
            return 0;
        }
        self.repeats.clear();
        self.repeats.resize(n.div_ceil(64), 0);
        let largest = starts.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let mut set = BucketSet::new(largest, bits);
        let mut found = 0;
        for (b, w) in starts.windows(2).enumerate() {
            if stop.load(Ordering::Relaxed) {
                return 0;
            }
            found += set.count_and_mark(&self.buffer, w[0]..w[1], b as u64, &mut self.repeats);
        }
        if last {
            candidates.pos.clear();
            candidates.prefix.clear();
            return found;
        }
        // keep, in order, the repeated windows that have a next key
        let mut fill = starts;
        let mut kept = 0;
        for k in 0..n {
            if stopped_at(k, stop) {
                return 0;
            }
            let (p, h) = (candidates.pos[k], candidates.prefix[k]);
            let b = bucket(fingerprint(h));
            let entry = fill[b];
            fill[b] += 1;
            let repeated = self.repeats[entry / 64] >> (entry % 64) & 1 == 1;
            if repeated && (p as usize + len) < ids.len() {
                candidates.pos[kept] = p;
                candidates.prefix[kept] = h;
                kept += 1;
            }
        }
        candidates.pos.truncate(kept);
        candidates.prefix.truncate(kept);
        candidates.pos.shrink_to_fit();
        candidates.prefix.shrink_to_fit();
        found
    }
}

/// Writes each fingerprint into its bucket's part of `buffer` (bucket `b` fills
/// `starts[b]..starts[b + 1]`), in order. Fingerprints are staged a cache line per bucket and
/// written a line at a time, so the scatter's writes to a thousand places do not each wait for
/// memory.
fn scatter(
    fingerprints: impl Iterator<Item = u64>,
    starts: &[usize],
    bucket: impl Fn(u64) -> usize,
    buffer: &mut [u64],
) {
    const LINE: usize = 8;
    let buckets = starts.len() - 1;
    let mut staged = vec![[0u64; LINE]; buckets];
    let mut staged_len = vec![0u8; buckets];
    let mut fill = starts[..buckets].to_vec();
    for f in fingerprints {
        let b = bucket(f);
        let k = staged_len[b] as usize;
        staged[b][k] = f;
        if k + 1 == LINE {
            buffer[fill[b]..fill[b] + LINE].copy_from_slice(&staged[b]);
            fill[b] += LINE;
            staged_len[b] = 0;
        } else {
            staged_len[b] = k as u8 + 1;
        }
    }
    for b in 0..buckets {
        let k = staged_len[b] as usize;
        buffer[fill[b]..fill[b] + k].copy_from_slice(&staged[b][..k]);
    }
}

/// A hash set of one bucket's fingerprints at a time (linear probing, at most a third full),
/// each slot's lowest bit set once its value was seen more than once. It is never cleared: a
/// slot belongs to the current bucket only if it holds a value with that bucket's top bits,
/// so the previous buckets' values read as empty slots.
struct BucketSet {
    slots: Vec<u64>,
    bits: u32,
    /// Per value of the bucket being counted: the slot it went to (`u32::MAX`: a zero value).
    slot_of: Vec<u32>,
}

impl BucketSet {
    /// A set for buckets of up to `largest` values, bucketed by their top `bits` bits.
    fn new(largest: usize, bits: u32) -> Self {
        BucketSet {
            slots: vec![0; (3 * largest).next_power_of_two().max(16)],
            bits,
            slot_of: Vec::with_capacity(largest),
        }
    }

    /// Where `v`'s probe starts.
    #[inline]
    fn home(&self, v: u64) -> usize {
        (v >> 1) as usize & (self.slots.len() - 1)
    }

    /// The slot holding `v` (a fingerprint, not 0), or the empty one where it goes, in bucket
    /// `b`, and whether `v` is there.
    #[inline]
    fn find(&self, v: u64, b: u64) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(v);
        loop {
            let slot = self.slots[i];
            if slot & !1 == v {
                return (i, true);
            }
            // 0 marks an empty slot; so does a previous bucket's value
            if slot == 0 || (self.bits > 0 && slot >> (64 - self.bits) != b) {
                return (i, false);
            }
            i = (i + 1) & mask;
        }
    }

    /// Distinct values in `buffer[range]`, all in bucket `b` (buckets must come in increasing
    /// order), and sets the bit of each entry in `repeats` whose value occurs more than once.
    fn count_and_mark(
        &mut self,
        buffer: &[u64],
        range: std::ops::Range<usize>,
        b: u64,
        repeats: &mut [u64],
    ) -> u64 {
        // the probes miss the cache: each value's home slot is prefetched this many ahead
        const AHEAD: usize = 16;
        let values = &buffer[range.clone()];
        self.slot_of.clear();
        // 0 marks an empty slot: a zero value is counted apart
        let mut zeros = 0u64;
        let mut distinct = 0u64;
        for (k, &v) in values.iter().enumerate() {
            if let Some(&ahead) = values.get(k + AHEAD) {
                crate::prefetch(self.slots.as_ptr().wrapping_add(self.home(ahead)));
            }
            if v == 0 {
                zeros += 1;
                self.slot_of.push(u32::MAX);
                continue;
            }
            let (i, found) = self.find(v, b);
            if found {
                self.slots[i] |= 1;
            } else {
                self.slots[i] = v;
                distinct += 1;
            }
            self.slot_of.push(i as u32);
        }
        for (entry, &i) in range.zip(&self.slot_of) {
            let repeated = if i == u32::MAX {
                zeros > 1
            } else {
                self.slots[i as usize] & 1 == 1
            };
            repeats[entry / 64] |= u64::from(repeated) << (entry % 64);
        }
        distinct + u64::from(zeros > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distinct windows of each length, counted by brute force.
    fn brute(ids: &[u32], max_len: usize) -> Vec<u64> {
        (1..=max_len)
            .map(|len| {
                let set: std::collections::HashSet<&[u32]> = ids.windows(len).collect();
                set.len() as u64
            })
            .collect()
    }

    #[test]
    fn sequences_spread_over_many_buckets_are_counted_exactly() {
        // 300K windows: the count scatters them into four buckets and reuses one hash set
        let mut x = 7u64;
        let ids: Vec<u32> = (0..300_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 33) % 60) as u32
            })
            .collect();
        assert_eq!(unique_sequences(&ids, 60, 5), brute(&ids, 5));
    }

    #[test]
    fn repeated_paths_among_unique_keys_are_counted_exactly() {
        // a path of 20 keys walked again and again, with a fresh key (seen once) between walks
        // and a short loop now and then: candidates shrink unevenly from length to length
        let mut ids = Vec::new();
        let mut fresh = 100u32;
        for walk in 0..2000u32 {
            ids.extend((0..20).map(|k| (k * 7 + walk % 3) % 40));
            if walk % 5 == 0 {
                ids.extend([41, 42, 41, 42, 41]);
            }
            ids.push(fresh);
            fresh += 1;
        }
        assert_eq!(unique_sequences(&ids, fresh as usize, 12), brute(&ids, 12));
    }

    #[test]
    fn hand_made_sequences_count() {
        // a b a b a: 2 keys; pairs ab, ba; triples aba, bab; ...
        assert_eq!(
            unique_sequences(&[0, 1, 0, 1, 0], 2, 6),
            vec![2, 2, 2, 2, 1, 0]
        );
        assert_eq!(unique_sequences(&[7, 7, 7], 8, 2), vec![1, 1]);
        assert_eq!(unique_sequences(&[], 0, 3), vec![0, 0, 0]);
        assert_eq!(unique_sequences(&[3], 4, 2), vec![1, 0]);
        assert_eq!(unique_sequences(&[0, 1, 2], 3, 0), Vec::<u64>::new());
    }
}
