//! Java `HashMap`/`HashSet` iteration order for `TimeWindow` keys.
//!
//! Flink's `MergingWindowSet` keeps its windows in a `HashMap` and `TimeWindow.mergeWindows`
//! groups them in `HashSet`s; which window's state survives a session merge and the order of
//! timer deletions depend on their iteration order, so Gadget reproduces it: buckets by the
//! spread hash, in insertion order within a bucket (capacity 16, doubling past 3/4 full).

use crate::key::long_to_int_with_bit_mixing;

/// A window `[start, end)`.
pub(crate) type Window = (i64, i64);

/// `TimeWindow.hashCode()` after `HashMap.hash()` spreading.
fn spread_hash(w: Window) -> u32 {
    let h = long_to_int_with_bit_mixing(w.0.wrapping_add(w.1)) as u32;
    h ^ (h >> 16)
}

/// A tiny map with Java's iteration order. Sessions per key are few, so a vector suffices.
#[derive(Debug, Clone, Default)]
pub(crate) struct JavaWindowMap<V: Clone + PartialEq> {
    entries: Vec<(Window, V, u64)>,
    capacity: usize,
    seq: u64,
}

impl<V: Clone + PartialEq> JavaWindowMap<V> {
    pub(crate) fn new() -> Self {
        JavaWindowMap {
            entries: Vec::new(),
            capacity: 16,
            seq: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn get(&self, k: &Window) -> Option<&V> {
        self.entries.iter().find(|e| &e.0 == k).map(|e| &e.1)
    }

    /// `put`: an existing key keeps its place; a new one goes to the end of its bucket.
    pub(crate) fn put(&mut self, k: Window, v: V) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.0 == k) {
            e.1 = v;
            return;
        }
        self.seq += 1;
        self.entries.push((k, v, self.seq));
        while self.entries.len() * 4 > self.capacity * 3 {
            self.capacity *= 2;
        }
    }

    pub(crate) fn remove(&mut self, k: &Window) -> Option<V> {
        let i = self.entries.iter().position(|e| &e.0 == k)?;
        Some(self.entries.remove(i).1)
    }

    /// Entries in Java's iteration order.
    pub(crate) fn iter_ordered(&self) -> Vec<(Window, V)> {
        let mask = self.capacity as u32 - 1;
        let mut v: Vec<_> = self.entries.iter().collect();
        v.sort_by_key(|e| (spread_hash(e.0) & mask, e.2));
        v.into_iter().map(|e| (e.0, e.1.clone())).collect()
    }

    /// Same entries, regardless of order (`AbstractMap.equals`).
    pub(crate) fn same_entries(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .entries
                .iter()
                .all(|e| other.get(&e.0).is_some_and(|v| *v == e.1))
    }
}

/// A `HashSet<TimeWindow>` in Java's iteration order.
pub(crate) fn java_set_order(insertion_order: &[Window]) -> Vec<Window> {
    let mut m: JavaWindowMap<()> = JavaWindowMap::new();
    for &w in insertion_order {
        m.put(w, ());
    }
    m.iter_ordered().into_iter().map(|e| e.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_by_bucket_then_insertion() {
        let ws: Vec<Window> = (0..20).map(|i| (i * 10, i * 10 + 5)).collect();
        let order = java_set_order(&ws);
        assert_eq!(order.len(), 20);
        let mask = 31; // 20 entries grow the table to 32 buckets
        for pair in order.windows(2) {
            assert!(spread_hash(pair[0]) & mask <= spread_hash(pair[1]) & mask);
        }
    }
}
