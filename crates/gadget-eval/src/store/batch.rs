//! A write batch buffered until its commit, for stores without native write batches: every
//! key and value in one byte arena, so buffering allocates nothing once the arena has grown.

use gadget::access::StateId;

/// One buffered write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingWrite<'a> {
    /// The state written.
    pub state: StateId,
    /// The key.
    pub key: &'a [u8],
    /// The value of a put; `None` for a delete.
    pub value: Option<&'a [u8]>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    state: StateId,
    start: usize,
    key_len: usize,
    value_len: Option<usize>,
}

/// Puts and deletes waiting for a batch commit, in order.
#[derive(Debug, Default)]
pub(crate) struct PendingBatch {
    entries: Vec<Entry>,
    arena: Vec<u8>,
}

impl PendingBatch {
    /// Buffers a put.
    pub fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) {
        self.push(state, key, Some(value));
    }

    /// Buffers a delete.
    pub fn delete(&mut self, state: StateId, key: &[u8]) {
        self.push(state, key, None);
    }

    fn push(&mut self, state: StateId, key: &[u8], value: Option<&[u8]>) {
        let start = self.arena.len();
        self.arena.extend_from_slice(key);
        if let Some(v) = value {
            self.arena.extend_from_slice(v);
        }
        self.entries.push(Entry {
            state,
            start,
            key_len: key.len(),
            value_len: value.map(<[u8]>::len),
        });
    }

    /// The buffered writes, in the order they were made.
    pub fn writes(&self) -> impl Iterator<Item = PendingWrite<'_>> {
        self.entries.iter().map(|e| {
            let value_start = e.start + e.key_len;
            PendingWrite {
                state: e.state,
                key: &self.arena[e.start..value_start],
                value: e
                    .value_len
                    .map(|n| &self.arena[value_start..value_start + n]),
            }
        })
    }

    /// Commits the batch kept in `store` by `apply`ing each buffered write to it in order,
    /// stopping at the first failure, then forgets the writes either way (RocksDB drops a
    /// failed batch too), keeping the buffers for reuse: the commit of every store that
    /// replays a batch write by write.
    pub fn commit_into<S, E>(
        store: &mut S,
        batch: impl Fn(&mut S) -> &mut PendingBatch,
        mut apply: impl FnMut(&mut S, PendingWrite<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut pending = std::mem::take(batch(store));
        let result = pending.writes().try_for_each(|w| apply(store, w));
        pending.clear();
        *batch(store) = pending;
        result
    }

    /// Forgets the buffered writes (after a commit, or a failed one: RocksDB drops a failed
    /// batch too), keeping the buffers for reuse.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.arena.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_come_back_in_order() {
        let mut b = PendingBatch::default();
        b.put(1, b"k1", b"v1");
        b.delete(0, b"k2");
        b.put(0, b"k3", b"");
        let got: Vec<_> = b.writes().collect();
        assert_eq!(
            got,
            vec![
                PendingWrite {
                    state: 1,
                    key: b"k1",
                    value: Some(b"v1")
                },
                PendingWrite {
                    state: 0,
                    key: b"k2",
                    value: None
                },
                PendingWrite {
                    state: 0,
                    key: b"k3",
                    value: Some(b"")
                },
            ]
        );
        b.clear();
        assert_eq!(b.writes().count(), 0);
    }
}
