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

    /// A tree of `len` counts whose first `ones` are 1, built in O(len).
    pub fn ones(len: usize, ones: usize) -> Self {
        let mut tree = vec![0u32; len + 1];
        for t in tree.iter_mut().skip(1).take(ones) {
            *t = 1;
        }
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

#[cfg(test)]
mod tests {
    use super::Fenwick;

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
    fn a_tree_of_ones_has_the_prefix_sums_of_ones() {
        let f = Fenwick::ones(20, 7);
        for i in 0..20 {
            assert_eq!(f.prefix(i), (i as u64 + 1).min(7));
        }
    }
}
