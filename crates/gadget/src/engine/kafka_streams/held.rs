//! What RocksDB holds in each live segment of a segmented store, and the requests of a range
//! iterator over one segment (`RocksDBRangeIterator` under `SegmentIterator`).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use crate::access::{AccessSink, Op, StateId};

/// The keys RocksDB holds, per live segment id.
#[derive(Debug, Default)]
pub(crate) struct Held {
    segments: BTreeMap<i64, BTreeSet<Vec<u8>>>,
}

impl Held {
    /// `key` was written to segment `id`.
    pub(crate) fn insert(&mut self, id: i64, key: &[u8]) {
        let keys = self.segments.entry(id).or_default();
        if !keys.contains(key) {
            keys.insert(key.to_vec());
        }
    }

    /// `key` was deleted from segment `id`.
    pub(crate) fn remove(&mut self, id: i64, key: &[u8]) {
        if let Some(keys) = self.segments.get_mut(&id) {
            keys.remove(key);
        }
    }

    /// Whether segment `id` holds `key`.
    pub(crate) fn contains(&self, id: i64, key: &[u8]) -> bool {
        self.segments.get(&id).is_some_and(|k| k.contains(key))
    }

    /// Forgets the segments before `oldest` (dropped).
    pub(crate) fn forget_before(&mut self, oldest: Option<i64>) {
        let oldest = oldest.unwrap_or(i64::MAX);
        while self
            .segments
            .first_key_value()
            .is_some_and(|(&id, _)| id < oldest)
        {
            self.segments.pop_first();
        }
    }

    /// A range iterator over [`lower`, `upper`] in segment `id` (data state `state`), read to
    /// its end: a seek to `lower`, then a RocksDB `next` per entry read, which the iterator
    /// makes before it checks the entry against `upper` (it reads one entry ahead). Each
    /// entry within the range goes to `found`.
    pub(crate) fn scan(
        &self,
        out: &mut dyn AccessSink,
        id: i64,
        state: StateId,
        lower: &[u8],
        upper: &[u8],
        found: &mut dyn FnMut(&[u8]),
    ) {
        out.access_all(state, lower, &[(Op::Seek, 0)]);
        let Some(keys) = self.segments.get(&id) else {
            return;
        };
        let mut entries = keys.range::<[u8], _>((Bound::Included(lower), Bound::Unbounded));
        let mut entry = entries.next();
        while let Some(key) = entry {
            entry = entries.next();
            let landed = entry.map_or(&[][..], |e| &e[..]);
            out.access_all(state, landed, &[(Op::Next, 0)]);
            if key[..] > *upper {
                break;
            }
            found(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};

    #[test]
    fn a_scan_seeks_then_reads_one_entry_ahead_until_one_is_past_the_range() {
        let mut held = Held::default();
        for k in [b"a", b"c", b"e", b"g"] {
            held.insert(1, k);
        }
        let mut sink = VecSink::default();
        let mut found = Vec::new();
        held.scan(&mut sink, 1, 7, b"b", b"e", &mut |k| found.push(k.to_vec()));
        assert_eq!(found, [b"c".to_vec(), b"e".to_vec()]);
        let requests: Vec<(Op, Vec<u8>)> = sink
            .records
            .iter()
            .map(|r| match r {
                TraceRecord::Access { op, key, .. } => (*op, key.clone()),
                _ => panic!(),
            })
            .collect();
        // c read → lands on e; e read → lands on g; g read → lands past the end, and is past
        // the range
        assert_eq!(
            requests,
            [
                (Op::Seek, b"b".to_vec()),
                (Op::Next, b"e".to_vec()),
                (Op::Next, b"g".to_vec()),
                (Op::Next, vec![]),
            ]
        );
        held.forget_before(Some(2));
        assert!(!held.contains(1, b"c"));
    }
}
