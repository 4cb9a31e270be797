//! Per-state iterator positions for stores whose iterators hold a read transaction or a
//! snapshot (LMDB, redb, fjall).
//!
//! A seek opens the store's own range iterator and `next` steps it. Writes close every open
//! iterator: a read transaction held across writes keeps LMDB and redb from reusing pages
//! (the file grows), and the reference semantics (the memory store) see writes made after the
//! seek. A `next` after such a write re-opens the iterator just past the last key returned.
//! Flink's recorded traces never write between a seek and its nexts, so that path only runs
//! for synthetic workloads.

use std::ops::Bound;

use gadget::access::StateId;

use super::StoreError;

/// Where one state's iterator stands.
enum Position<I> {
    /// No iterator, or it ran past the end.
    Closed,
    /// A live iterator; `last` is the key it returned last.
    Open(I),
    /// Closed by a write; `next` re-opens just past `last`.
    Suspended,
}

struct Cursor<I> {
    position: Position<I>,
    last: Vec<u8>,
}

/// The iterators of every state of a store.
pub(crate) struct Cursors<I> {
    cursors: Vec<Cursor<I>>,
    /// How many are `Open`, so that writes skip the scan when none is.
    open: usize,
}

impl<I> Cursors<I> {
    /// No open iterator for `states` states.
    pub(crate) fn new(states: usize) -> Self {
        Cursors {
            cursors: (0..states)
                .map(|_| Cursor {
                    position: Position::Closed,
                    last: Vec::new(),
                })
                .collect(),
            open: 0,
        }
    }

    /// Closes every open iterator before a write (or a flush); their `next` re-seeks.
    pub(crate) fn suspend_all(&mut self) {
        if self.open == 0 {
            return;
        }
        for c in &mut self.cursors {
            if let Position::Open(_) = c.position {
                c.position = Position::Suspended;
            }
        }
        self.open = 0;
    }

    /// Closes the iterator of `state` for good: its `next` returns `None` until a seek (a
    /// dropped state's).
    pub(crate) fn close(&mut self, state: StateId) {
        let c = &mut self.cursors[state as usize];
        if let Position::Open(_) = c.position {
            self.open -= 1;
        }
        c.position = Position::Closed;
    }

    /// A fresh iterator of `state` at the first key `>= key`: `open` creates it from a start
    /// bound, `step` advances it, copies the key it lands on into the given buffer and
    /// returns the value length (`None` past the end).
    pub(crate) fn seek(
        &mut self,
        state: StateId,
        key: &[u8],
        open: impl FnOnce(Bound<&[u8]>) -> Result<I, StoreError>,
        step: impl FnOnce(&mut I, &mut Vec<u8>) -> Result<Option<usize>, StoreError>,
    ) -> Result<Option<usize>, StoreError> {
        let c = &mut self.cursors[state as usize];
        if let Position::Open(_) = c.position {
            self.open -= 1;
        }
        // the previous iterator is closed before the new one opens, as in Flink
        c.position = Position::Closed;
        let mut it = open(Bound::Included(key))?;
        let found = step(&mut it, &mut c.last)?;
        if found.is_some() {
            c.position = Position::Open(it);
            self.open += 1;
        }
        Ok(found)
    }

    /// Advances the iterator of `state` (see [`Cursors::seek`] for `open` and `step`).
    pub(crate) fn next(
        &mut self,
        state: StateId,
        open: impl FnOnce(Bound<&[u8]>) -> Result<I, StoreError>,
        step: impl FnOnce(&mut I, &mut Vec<u8>) -> Result<Option<usize>, StoreError>,
    ) -> Result<Option<usize>, StoreError> {
        let c = &mut self.cursors[state as usize];
        let found = match &mut c.position {
            Position::Closed => return Ok(None),
            Position::Open(it) => {
                self.open -= 1;
                step(it, &mut c.last)
            }
            Position::Suspended => {
                let mut it = open(Bound::Excluded(&c.last))?;
                let found = step(&mut it, &mut c.last);
                c.position = Position::Open(it);
                found
            }
        };
        match found {
            Ok(Some(len)) => {
                self.open += 1;
                Ok(Some(len))
            }
            other => {
                c.position = Position::Closed;
                other
            }
        }
    }
}
