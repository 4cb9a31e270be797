//! The in-memory store: an ordered map per state. No persistence, no serialization; the
//! upper bound that real stores are compared against. Every op is native.

use super::batch::PendingBatch;
use std::collections::BTreeMap;
use std::ops::Bound;

use gadget::access::{Op, StateId};

use super::{empty_range, Store, StoreError, MERGE_DELIMITER};

/// What the memory store is: Gadget's own code, of this version.
pub(crate) fn library() -> String {
    format!(
        "Gadget {}'s in-memory store (an ordered map per state)",
        env!("CARGO_PKG_VERSION")
    )
}

/// The memory store reads no settings.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "memory",
    about: "ordered maps in memory: the upper bound",
    reads: &[],
    applied: |_, _| {},
    library: |_| library(),
    open: super::spec::Opener::PerInstance(|_, states, _| {
        Ok(Box::new(MemoryStore::new(states.len())))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// One ordered map per state.
#[derive(Debug, Default)]
pub struct MemoryStore {
    states: Vec<BTreeMap<Vec<u8>, Vec<u8>>>,
    /// Per state, the key the open iterator stands on (`None`: no iterator or past the end).
    cursors: Vec<Option<Vec<u8>>>,
    batch: PendingBatch,
}

impl MemoryStore {
    /// A store with `states` empty keyspaces.
    pub fn new(states: usize) -> Self {
        MemoryStore {
            states: vec![BTreeMap::new(); states],
            cursors: vec![None; states],
            batch: PendingBatch::default(),
        }
    }

    fn map(&mut self, state: StateId) -> Result<&mut BTreeMap<Vec<u8>, Vec<u8>>, StoreError> {
        let states = self.states.len();
        self.states
            .get_mut(state as usize)
            .ok_or(StoreError::UnknownState { state, states })
    }

    /// Moves the cursor of `state` to the first key in `from`; the value length there.
    fn land(&mut self, state: StateId, from: Bound<&[u8]>) -> Result<Option<usize>, StoreError> {
        let map = self.map(state)?;
        let found = map
            .range::<[u8], _>((from, Bound::Unbounded))
            .next()
            .map(|(k, v)| (k.clone(), v.len()));
        let cursor = &mut self.cursors[state as usize];
        match found {
            Some((k, len)) => {
                *cursor = Some(k);
                Ok(Some(len))
            }
            None => {
                *cursor = None;
                Ok(None)
            }
        }
    }
}

impl Store for MemoryStore {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        Ok(self.map(state)?.get(key).map(Vec::len))
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let map = self.map(state)?;
        match map.get_mut(key) {
            Some(v) => {
                v.clear();
                v.extend_from_slice(value);
            }
            None => {
                map.insert(key.to_vec(), value.to_vec());
            }
        }
        Ok(())
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let map = self.map(state)?;
        match map.get_mut(key) {
            Some(v) => {
                v.push(MERGE_DELIMITER);
                v.extend_from_slice(value);
            }
            None => {
                map.insert(key.to_vec(), value.to_vec());
            }
        }
        Ok(())
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.map(state)?.remove(key);
        Ok(())
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.land(state, Bound::Included(key))
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.map(state)?;
        match self.cursors[state as usize].take() {
            None => Ok(None),
            Some(at) => self.land(state, Bound::Excluded(&at)),
        }
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.map(state)?;
        self.batch.put(state, key, value);
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.map(state)?;
        self.batch.delete(state, key);
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        PendingBatch::commit_into(
            self,
            |s| &mut s.batch,
            |s, w| {
                let map = &mut s.states[w.state as usize];
                match w.value {
                    Some(v) => {
                        map.insert(w.key.to_vec(), v.to_vec());
                    }
                    None => {
                        map.remove(w.key);
                    }
                }
                Ok(())
            },
        )
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        let map = self.map(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let range = map.range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)));
        let mut entries = 0;
        for (_, value) in range {
            std::hint::black_box(value);
            entries += 1;
        }
        Ok(entries)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        let map = self.map(state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        let mut covered = map.split_off(start);
        let mut after = covered.split_off(end);
        map.append(&mut after);
        Ok(())
    }

    /// Clears the state's map; the pending batch keeps its entries.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.map(state)?.clear();
        self.cursors[state as usize] = None;
        Ok(())
    }

    fn emulated(&self) -> &'static [Op] {
        &[Op::Checkpoint]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_appends_with_flinks_delimiter_and_get_returns_the_length() {
        let mut s = MemoryStore::new(1);
        s.merge(0, b"k", b"abc").unwrap();
        s.merge(0, b"k", b"de").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), Some(6));
        s.delete(0, b"k").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), None);
    }

    #[test]
    fn seek_and_next_walk_the_state_in_key_order() {
        let mut s = MemoryStore::new(2);
        for (k, v) in [(&b"b"[..], 2), (b"a", 1), (b"d", 4)] {
            s.put(0, k, &vec![0; v]).unwrap();
        }
        s.put(1, b"c", b"x").unwrap();
        assert_eq!(s.seek(0, b"b").unwrap(), Some(2));
        assert_eq!(s.next(0).unwrap(), Some(4));
        assert_eq!(s.next(0).unwrap(), None);
        assert_eq!(s.next(0).unwrap(), None);
        assert_eq!(s.seek(0, b"").unwrap(), Some(1));
    }

    #[test]
    fn a_batch_takes_effect_on_commit_only() {
        let mut s = MemoryStore::new(1);
        s.put(0, b"gone", b"1").unwrap();
        s.batch_put(0, b"new", b"123").unwrap();
        s.batch_delete(0, b"gone").unwrap();
        assert_eq!(s.get(0, b"new").unwrap(), None);
        s.batch_commit().unwrap();
        assert_eq!(s.get(0, b"new").unwrap(), Some(3));
        assert_eq!(s.get(0, b"gone").unwrap(), None);
    }

    #[test]
    fn range_ops_cover_start_up_to_end() {
        super::super::contract::range_ops_cover_start_up_to_end(&mut MemoryStore::new(2));
    }

    #[test]
    fn a_next_after_a_write_sees_the_write() {
        // the behaviour the stores whose iterators re-open after a write are held to
        super::super::contract::next_after_a_write_sees_the_write(&mut MemoryStore::new(1));
    }

    #[test]
    fn a_drop_empties_its_state_only() {
        super::super::contract::a_drop_empties_its_state_and_nothing_else(&mut MemoryStore::new(2));
        super::super::contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(
            &mut MemoryStore::new(2),
        );
    }

    #[test]
    fn an_unknown_state_is_an_error() {
        let mut s = MemoryStore::new(1);
        assert!(matches!(
            s.get(3, b"k"),
            Err(StoreError::UnknownState {
                state: 3,
                states: 1
            })
        ));
    }
}
