//! Dense ids for a trace's keys, in order of first access.
//!
//! The scan meets tens of millions of distinct keys, so nearly every lookup misses the cache.
//! [`KeyInterner`] overlaps those misses: each key's table slot is prefetched when the key is
//! read and looked up [`RESOLVE_LAG`] keys later; its per-key counters are prefetched when its
//! id is known and updated [`TOUCH_LAG`] keys after that. The results are those of doing each
//! access at once, in order.

use std::collections::VecDeque;

use crate::ephemerality::Lifetimes;
use crate::{prefetch, AnalyzeError};

/// Keys read ahead of the one being looked up.
const RESOLVE_LAG: usize = 16;
/// Ids found ahead of the one whose counters are updated.
const TOUCH_LAG: usize = 8;

/// A key's fingerprint to its id: an open-addressing table (linear probing) of 16-byte slots
/// holding the first 64 bits of the fingerprint, the top 32 bits of the second half, and the
/// id plus one (0: an empty slot). Two of `d` distinct keys collide on those 96 bits with
/// probability about d²/2^97 (10^-15 for 10^7 keys).
#[derive(Debug)]
pub struct KeyIndex {
    slots: Vec<[u64; 2]>,
    len: usize,
}

const TAG: u64 = !0xffff_ffff;

impl Default for KeyIndex {
    fn default() -> Self {
        KeyIndex {
            slots: vec![[0; 2]; 1024],
            len: 0,
        }
    }
}

impl KeyIndex {
    /// Keys indexed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key is indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn home(&self, fingerprint: &[u64; 2]) -> usize {
        fingerprint[0] as usize & (self.slots.len() - 1)
    }

    /// Asks the CPU to bring `fingerprint`'s slot into cache.
    #[inline]
    pub fn prefetch(&self, fingerprint: &[u64; 2]) {
        prefetch(self.slots.as_ptr().wrapping_add(self.home(fingerprint)));
    }

    /// The id of `fingerprint`, or `next` (below `u32::MAX`) after indexing it under that id.
    #[inline]
    pub fn id_or_insert(&mut self, fingerprint: [u64; 2], next: u32) -> u32 {
        debug_assert!(next < u32::MAX);
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let tag = fingerprint[1] & TAG;
        let mask = self.slots.len() - 1;
        let mut i = self.home(&fingerprint);
        loop {
            let slot = self.slots[i];
            if slot[1] == 0 {
                self.slots[i] = [fingerprint[0], tag | (next as u64 + 1)];
                self.len += 1;
                return next;
            }
            if slot[0] == fingerprint[0] && slot[1] & TAG == tag {
                return (slot[1] as u32) - 1;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let doubled = vec![[0; 2]; 2 * self.slots.len()];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|s| s[1] != 0) {
            let mut i = slot[0] as usize & mask;
            while self.slots[i][1] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }
}

/// Turns the scan's keyed accesses into dense ids and per-key counts, with lookups overlapped
/// (see the module docs). Call [`KeyInterner::finish`] after the last access.
#[derive(Debug, Default)]
pub struct KeyInterner {
    index: KeyIndex,
    to_resolve: VecDeque<([u64; 2], i64)>,
    to_touch: VecDeque<(u32, u32, i64)>,
    /// The key of every access, as a dense id.
    pub ids: Vec<u32>,
    /// Accesses per key id.
    pub popularity: Vec<u64>,
    /// First and last access of every key.
    pub lifetimes: Lifetimes,
}

impl KeyInterner {
    /// Records an access to the key with `fingerprint` at event time `now`.
    #[inline]
    pub fn access(&mut self, fingerprint: [u64; 2], now: i64) -> Result<(), AnalyzeError> {
        self.index.prefetch(&fingerprint);
        self.to_resolve.push_back((fingerprint, now));
        if self.to_resolve.len() > RESOLVE_LAG {
            self.resolve_oldest()?;
        }
        Ok(())
    }

    /// Completes the accesses still in flight.
    pub fn finish(&mut self) -> Result<(), AnalyzeError> {
        while !self.to_resolve.is_empty() {
            self.resolve_oldest()?;
        }
        while !self.to_touch.is_empty() {
            self.touch_oldest();
        }
        Ok(())
    }

    fn resolve_oldest(&mut self) -> Result<(), AnalyzeError> {
        let Some((fingerprint, now)) = self.to_resolve.pop_front() else {
            return Ok(());
        };
        let next = self.popularity.len();
        if next >= u32::MAX as usize {
            return Err(AnalyzeError::TooLarge {
                what: "distinct keys",
            });
        }
        let id = self.index.id_or_insert(fingerprint, next as u32);
        if id as usize == next {
            self.popularity.push(0);
        }
        let position = self.ids.len();
        if position >= u32::MAX as usize {
            return Err(AnalyzeError::TooLarge {
                what: "keyed requests",
            });
        }
        self.ids.push(id);
        let at = id as usize;
        prefetch(self.popularity.as_ptr().wrapping_add(at));
        prefetch(self.lifetimes.last.as_ptr().wrapping_add(at));
        prefetch(self.lifetimes.last_time.as_ptr().wrapping_add(at));
        self.to_touch.push_back((id, position as u32, now));
        if self.to_touch.len() > TOUCH_LAG {
            self.touch_oldest();
        }
        Ok(())
    }

    fn touch_oldest(&mut self) {
        if let Some((id, position, now)) = self.to_touch.pop_front() {
            self.popularity[id as usize] += 1;
            self.lifetimes.touch(id, position, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    #[test]
    fn ids_follow_first_access_through_growth() {
        let mut index = KeyIndex::default();
        let mut expected: FxHashMap<[u64; 2], u32> = FxHashMap::default();
        let key = |k: u64| [crate::mix64(k), crate::mix64(k ^ 0xabcd)];
        for round in 0..3u64 {
            for k in 0..5000u64 {
                let k = (k * 7919 + round) % 4000;
                let next = expected.len() as u32;
                let want = *expected.entry(key(k)).or_insert(next);
                assert_eq!(index.id_or_insert(key(k), next), want);
            }
        }
        assert_eq!(index.len(), expected.len());
    }

    #[test]
    fn interner_matches_immediate_accesses() {
        let keys: Vec<u64> = (0..1000u64).map(|i| (i * i) % 97).collect();
        let mut interner = KeyInterner::default();
        for (i, &k) in keys.iter().enumerate() {
            interner
                .access([crate::mix64(k), k], i as i64 / 10)
                .unwrap();
        }
        interner.finish().unwrap();
        let mut first: FxHashMap<u64, u32> = FxHashMap::default();
        let mut want = Lifetimes::default();
        let mut popularity = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            let next = first.len() as u32;
            let id = *first.entry(k).or_insert(next);
            if id == next {
                popularity.push(0);
            }
            popularity[id as usize] += 1;
            want.touch(id, i as u32, i as i64 / 10);
            assert_eq!(interner.ids[i], id);
        }
        assert_eq!(interner.popularity, popularity);
        assert_eq!(interner.lifetimes.last, want.last);
        assert_eq!(interner.lifetimes.first_time, want.first_time);
        assert_eq!(interner.lifetimes.last_time, want.last_time);
    }
}
