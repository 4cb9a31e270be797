//! The sessions a session store's search found for a record: their keys in one flat buffer
//! that keeps its capacity from record to record, sorted and without repeats once settled.

/// Session keys found by one search.
#[derive(Debug, Default)]
pub(crate) struct FoundSessions {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl FoundSessions {
    /// Forgets every session (keeping the buffers' capacity).
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    /// Adds `session` (a repeat goes when the set is settled).
    pub(crate) fn insert(&mut self, session: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(session);
        self.spans.push((start, self.bytes.len()));
    }

    /// Removes every copy of `session`.
    pub(crate) fn remove(&mut self, session: &[u8]) {
        let bytes = &self.bytes;
        self.spans.retain(|&(a, b)| &bytes[a..b] != session);
    }

    /// Sorts the sessions by key and drops repeats: call once the search is done.
    pub(crate) fn settle(&mut self) {
        let bytes = &self.bytes;
        self.spans
            .sort_unstable_by(|x, y| bytes[x.0..x.1].cmp(&bytes[y.0..y.1]));
        self.spans
            .dedup_by(|x, y| bytes[x.0..x.1] == bytes[y.0..y.1]);
    }

    /// The sessions, in key order once settled.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.spans.iter().map(|&(a, b)| &self.bytes[a..b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settled_set_is_sorted_without_repeats_or_removed_sessions() {
        let mut found = FoundSessions::default();
        for s in [&b"c"[..], b"a", b"c", b"b"] {
            found.insert(s);
        }
        found.remove(b"b");
        found.settle();
        assert_eq!(found.iter().collect::<Vec<_>>(), [&b"a"[..], b"c"]);
        found.clear();
        assert_eq!(found.iter().count(), 0);
    }
}
