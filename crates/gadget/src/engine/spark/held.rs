//! What a Spark state store's RocksDB holds, each key with the time (µs) the watermark must
//! reach to evict it (and what the operator keeps of its value), and the eviction scan over
//! all of it.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::access::{AccessSink, Op, StateId};

/// The keys of a state store, in RocksDB's order, with their eviction deadlines and a value
/// `V` each (`()` when the operator needs none).
#[derive(Debug)]
pub(crate) struct Held<V = ()> {
    keys: BTreeMap<Vec<u8>, (i64, V)>,
    expired: Vec<Vec<u8>>,
}

impl<V> Default for Held<V> {
    fn default() -> Self {
        Held {
            keys: BTreeMap::new(),
            expired: Vec::new(),
        }
    }
}

impl<V: Default> Held<V> {
    /// Whether the store holds `key`.
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        self.keys.contains_key(key)
    }

    /// Records `key` as held until the watermark reaches `deadline_us` (kept if held).
    pub(crate) fn insert(&mut self, key: &[u8], deadline_us: i64) {
        if !self.keys.contains_key(key) {
            self.keys.insert(key.to_vec(), (deadline_us, V::default()));
        }
    }

    /// The value held for `key`.
    pub(crate) fn value(&self, key: &[u8]) -> Option<&V> {
        self.keys.get(key).map(|(_, v)| v)
    }

    /// Holds `key` with `value` until the watermark reaches `deadline_us`, replacing what
    /// was held (no allocation when it was).
    pub(crate) fn set(&mut self, key: &[u8], deadline_us: i64, value: V) {
        match self.keys.get_mut(key) {
            Some(held) => *held = (deadline_us, value),
            None => {
                self.keys.insert(key.to_vec(), (deadline_us, value));
            }
        }
    }

    /// Stops holding `key`.
    pub(crate) fn remove(&mut self, key: &[u8]) {
        self.keys.remove(key);
    }

    /// A prefix scan of `state` (`prefixScan`): a `seek` to `prefix`, then per entry under it
    /// a `next` landing on the key after it (the iterator steps before it hands an entry
    /// over); `entry` sees each entry's key and deadline.
    pub(crate) fn scan_prefix(
        &self,
        state: StateId,
        prefix: &[u8],
        out: &mut dyn AccessSink,
        mut entry: impl FnMut(&[u8], i64),
    ) {
        out.access_all(state, prefix, &[(Op::Seek, 0)]);
        let mut entries = self
            .keys
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .peekable();
        while let Some((key, (deadline, _))) = entries.next() {
            if !key.starts_with(prefix) {
                break;
            }
            let landed = entries.peek().map_or(&[][..], |(k, _)| &k[..]);
            out.access_all(state, landed, &[(Op::Next, 0)]);
            entry(key, *deadline);
        }
    }

    /// The eviction scan of `state` at `watermark` (ms): an iterator from the first key (a `seek` to
    /// the empty key, then a `next` per entry read, landing on the entry after it: the
    /// iterator steps before it hands an entry over); every entry whose deadline the
    /// watermark reached is removed (a `get`, row counting, then a `delete`).
    pub(crate) fn evict(&mut self, state: StateId, watermark: i64, out: &mut dyn AccessSink) {
        out.access_all(state, b"", &[(Op::Seek, 0)]);
        let limit = watermark.saturating_mul(1000);
        self.expired.clear();
        let mut entries = self.keys.iter().peekable();
        while let Some((key, (deadline, _))) = entries.next() {
            let landed = entries.peek().map_or(&[][..], |(k, _)| &k[..]);
            out.access_all(state, landed, &[(Op::Next, 0)]);
            if *deadline <= limit {
                out.access_all(state, key, &[(Op::Get, 0), (Op::Delete, 0)]);
                self.expired.push(key.clone());
            }
        }
        for key in self.expired.drain(..) {
            self.keys.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};

    #[test]
    fn the_scan_reads_every_entry_and_removes_those_the_watermark_reached() {
        let mut held: Held = Held::default();
        held.insert(b"b", 2000);
        held.insert(b"a", 9000);
        held.insert(b"b", 9000);
        let mut sink = VecSink::default();
        held.evict(0, 2, &mut sink);
        let got: Vec<String> = sink
            .records
            .iter()
            .filter_map(|r| match r {
                TraceRecord::Access { op, key, .. } => {
                    Some(format!("{} {}", op.name(), String::from_utf8_lossy(key)))
                }
                _ => None,
            })
            .collect();
        assert_eq!(got, ["seek ", "next b", "next ", "get b", "delete b"]);
        assert!(held.contains(b"a") && !held.contains(b"b"));
    }

    #[test]
    fn a_set_key_moves_its_deadline_and_keeps_its_value() {
        let mut held: Held<i64> = Held::default();
        held.set(b"a", 1000, 7);
        held.set(b"a", 5000, 8);
        held.insert(b"a", 1000);
        assert_eq!(held.value(b"a"), Some(&8));
        let mut sink = VecSink::default();
        held.evict(0, 4, &mut sink);
        assert!(held.contains(b"a"), "its deadline moved to 5 s");
        held.evict(0, 5, &mut sink);
        assert_eq!(held.value(b"a"), None);
    }
}
