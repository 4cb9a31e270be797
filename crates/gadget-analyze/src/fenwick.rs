//! A Fenwick (binary indexed) tree of counts: point update and prefix sum in O(log n).

/// Counts at positions `0..len`, with prefix sums.
#[derive(Debug, Clone)]
pub struct Fenwick {
    tree: Vec<u32>,
}

impl Fenwick {
    /// A tree of `len` zero counts.
    pub fn new(len: usize) -> Self {
        Fenwick {
            tree: vec![0; len + 1],
        }
    }

    /// A tree over `counts`, built in O(len).
    pub fn from_counts(counts: &[u32]) -> Self {
        let len = counts.len();
        let mut tree = vec![0u32; len + 1];
        tree[1..].copy_from_slice(counts);
        for i in 1..=len {
            let parent = i + (i & i.wrapping_neg());
            if parent <= len {
                tree[parent] += tree[i];
            }
        }
        Fenwick { tree }
    }

    /// Adds `delta` (±1) at `pos`.
    #[inline]
    pub fn add(&mut self, pos: usize, delta: i32) {
        let mut i = pos + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// The sum of the counts at positions `0..=pos`.
    #[inline]
    pub fn prefix(&self, pos: usize) -> u64 {
        let mut i = pos + 1;
        let mut sum = 0u64;
        while i > 0 {
            sum += self.tree[i] as u64;
            i &= i - 1;
        }
        sum
    }
}

/// A set of positions `0..len` that answers "how many members up to here" in O(log(len / 64)):
/// a bit per position, and a Fenwick tree over the member counts of each 64-position word. The
/// tree is 64 times smaller than one over the positions, so it stays in cache where the
/// positions (twice the distinct keys of a trace, tens of millions) would not, and a query
/// reads one word of the bitmap.
#[derive(Debug, Clone)]
pub struct PositionSet {
    words: Vec<u64>,
    counts: Fenwick,
}

impl PositionSet {
    /// An empty set of positions below `len`.
    pub fn new(len: usize) -> Self {
        let words = len.div_ceil(64);
        PositionSet {
            words: vec![0; words],
            counts: Fenwick::new(words),
        }
    }

    /// The set of positions `0..members` among `0..len`, built in O(len / 64).
    pub fn first(len: usize, members: usize) -> Self {
        let mut words = vec![0u64; len.div_ceil(64)];
        let full = members / 64;
        words[..full].fill(u64::MAX);
        if members % 64 != 0 {
            words[full] = (1u64 << (members % 64)) - 1;
        }
        let counts: Vec<u32> = words.iter().map(|w| w.count_ones()).collect();
        PositionSet {
            counts: Fenwick::from_counts(&counts),
            words,
        }
    }

    /// Adds `pos`, which must not be a member.
    #[inline]
    pub fn insert(&mut self, pos: usize) {
        let (w, bit) = (pos / 64, 1u64 << (pos % 64));
        debug_assert!(self.words[w] & bit == 0, "{pos} is already a member");
        self.words[w] |= bit;
        self.counts.add(w, 1);
    }

    /// Removes `pos`, which must be a member.
    #[inline]
    pub fn remove(&mut self, pos: usize) {
        let (w, bit) = (pos / 64, 1u64 << (pos % 64));
        debug_assert!(self.words[w] & bit != 0, "{pos} is not a member");
        self.words[w] &= !bit;
        self.counts.add(w, -1);
    }

    /// The positions' new numbers if the members were renumbered `0..k` in order: for each
    /// word of 64 positions, the members before it. With [`PositionSet::packed_rank`], O(1) per
    /// member.
    pub fn members_before_words(&self) -> Vec<u32> {
        let mut before = Vec::with_capacity(self.words.len());
        let mut n = 0u32;
        for w in &self.words {
            before.push(n);
            n += w.count_ones();
        }
        before
    }

    /// The number of members before `pos` (a member), given
    /// [`PositionSet::members_before_words`] of this set: its number among the members.
    #[inline]
    pub fn packed_rank(&self, pos: usize, before_words: &[u32]) -> u32 {
        let w = pos / 64;
        let below = (1u64 << (pos % 64)) - 1;
        before_words[w] + (self.words[w] & below).count_ones()
    }

    /// Asks the CPU to bring the bitmap word holding `pos` into cache (a hint; `pos` may be out
    /// of range).
    #[inline]
    pub fn prefetch(&self, pos: usize) {
        crate::prefetch(self.words.as_ptr().wrapping_add(pos / 64));
    }

    /// Members at positions `0..=pos`.
    #[inline]
    pub fn rank(&self, pos: usize) -> u64 {
        let w = pos / 64;
        let below = if w == 0 { 0 } else { self.counts.prefix(w - 1) };
        let upto = u64::MAX >> (63 - pos % 64);
        below + (self.words[w] & upto).count_ones() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::{Fenwick, PositionSet};

    #[test]
    fn prefix_sums_follow_updates() {
        let mut f = Fenwick::new(10);
        f.add(0, 1);
        f.add(3, 1);
        f.add(9, 1);
        assert_eq!(f.prefix(0), 1);
        assert_eq!(f.prefix(2), 1);
        assert_eq!(f.prefix(3), 2);
        assert_eq!(f.prefix(9), 3);
        f.add(3, -1);
        assert_eq!(f.prefix(9), 2);
    }

    #[test]
    fn a_tree_built_from_counts_has_their_prefix_sums() {
        let counts = [3u32, 0, 1, 4, 1, 5, 9, 2, 6];
        let f = Fenwick::from_counts(&counts);
        let mut sum = 0u64;
        for (i, c) in counts.iter().enumerate() {
            sum += *c as u64;
            assert_eq!(f.prefix(i), sum);
        }
    }

    #[test]
    fn position_set_ranks_match_a_plain_set() {
        let len = 1_000;
        let mut set = PositionSet::first(len, 130);
        let mut plain: Vec<bool> = (0..len).map(|p| p < 130).collect();
        let mut x = 12345u64;
        for _ in 0..5_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pos = (x >> 33) as usize % len;
            if plain[pos] {
                set.remove(pos);
            } else {
                set.insert(pos);
            }
            plain[pos] = !plain[pos];
            let probe = (x >> 13) as usize % len;
            let expected = plain[..=probe].iter().filter(|m| **m).count() as u64;
            assert_eq!(set.rank(probe), expected, "rank({probe})");
        }
        let before = set.members_before_words();
        let mut n = 0;
        for (pos, member) in plain.iter().enumerate() {
            if *member {
                assert_eq!(set.packed_rank(pos, &before), n, "packed rank of {pos}");
                n += 1;
            }
        }
        assert_eq!(PositionSet::new(len).rank(len - 1), 0);
        assert_eq!(PositionSet::first(128, 128).rank(127), 128);
    }
}
