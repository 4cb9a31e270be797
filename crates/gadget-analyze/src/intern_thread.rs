//! Where the scan's keyed accesses go: a [`KeyInterner`] on the scan's own thread, or on a
//! thread of its own, fed in batches, so that the scan's reading and counting and the
//! interner's cache misses run on two cores.
//!
//! Batches go to the interner through a bounded channel and come back empty for reuse, so the
//! scan allocates nothing per access once the first few batches exist. A sample's interner has
//! little to do, and handing it over made a sampled scan 1.2× slower: it stays on the scan's
//! thread.

use std::ops::ControlFlow;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};

use crate::intern::KeyInterner;
use crate::AnalyzeError;

/// One keyed access: the key's fingerprint and the event time.
type Access = ([u64; 2], i64);

/// Accesses per batch: large enough that handing one over costs nothing per access, small
/// enough to stay in the cache the two cores share.
const BATCH: usize = 16 * 1024;

/// Batches in flight at most.
const IN_FLIGHT: usize = 4;

/// Where the scan sends each keyed access.
pub(crate) trait Interning {
    /// Records an access to the key with `fingerprint` at event time `now`; `Break` once
    /// interning has failed, the error then coming from [`finish`](Self::finish).
    fn access(&mut self, fingerprint: [u64; 2], now: i64) -> ControlFlow<()>;

    /// The ids and counts, once every access is interned.
    fn finish(self) -> Result<KeyInterner, AnalyzeError>;
}

/// A [`KeyInterner`] on the scan's own thread.
#[derive(Default)]
pub(crate) struct InternerHere {
    keys: KeyInterner,
    error: Option<AnalyzeError>,
}

impl Interning for InternerHere {
    #[inline]
    fn access(&mut self, fingerprint: [u64; 2], now: i64) -> ControlFlow<()> {
        match self.keys.access(fingerprint, now) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
        }
    }

    fn finish(mut self) -> Result<KeyInterner, AnalyzeError> {
        match self.error {
            Some(e) => Err(e),
            None => self.keys.finish().map(|()| self.keys),
        }
    }
}

/// The scan's end of a [`KeyInterner`] running on another thread.
pub(crate) struct InternerThread<'scope> {
    to_interner: Option<SyncSender<Vec<Access>>>,
    returned: Receiver<Vec<Access>>,
    batch: Vec<Access>,
    interner: ScopedJoinHandle<'scope, Result<KeyInterner, AnalyzeError>>,
}

impl<'scope> InternerThread<'scope> {
    /// Starts the interner on a thread of `scope`.
    pub(crate) fn spawn<'env>(scope: &'scope Scope<'scope, 'env>) -> Self {
        let (to_interner, batches) = mpsc::sync_channel::<Vec<Access>>(IN_FLIGHT);
        let (give_back, returned) = mpsc::channel();
        let interner = scope.spawn(move || {
            let mut keys = KeyInterner::default();
            for mut batch in batches {
                for &(fingerprint, now) in &batch {
                    keys.access(fingerprint, now)?;
                }
                batch.clear();
                // the scan may be done and gone: the batch is then dropped
                let _ = give_back.send(batch);
            }
            keys.finish()?;
            Ok(keys)
        });
        InternerThread {
            to_interner: Some(to_interner),
            returned,
            batch: Vec::with_capacity(BATCH),
            interner,
        }
    }

    /// Sends the batch being filled; false when the interner is gone. Once per batch: kept out
    /// of the scan's loop.
    #[cold]
    #[inline(never)]
    fn hand_over(&mut self) -> bool {
        let next = self
            .returned
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(&mut self.batch, next);
        self.to_interner
            .as_ref()
            .is_some_and(|to| to.send(full).is_ok())
    }
}

impl Interning for InternerThread<'_> {
    #[inline]
    fn access(&mut self, fingerprint: [u64; 2], now: i64) -> ControlFlow<()> {
        self.batch.push((fingerprint, now));
        if self.batch.len() < BATCH || self.hand_over() {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    }

    /// Hands over the last accesses and waits for the interner's ids and counts.
    fn finish(mut self) -> Result<KeyInterner, AnalyzeError> {
        if !self.batch.is_empty() {
            self.hand_over();
        }
        // the interner's loop ends when its channel closes
        self.to_interner = None;
        match self.interner.join() {
            Ok(keys) => keys,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_over_many_batches_intern_as_on_one_thread() {
        let n = 3 * BATCH + 17;
        let key = |i: usize| [crate::mix64((i % 1000) as u64), (i % 1000) as u64];
        let mut alone = KeyInterner::default();
        for i in 0..n {
            alone.access(key(i), i as i64).unwrap();
        }
        alone.finish().unwrap();
        let threaded = std::thread::scope(|scope| {
            let mut keys = InternerThread::spawn(scope);
            for i in 0..n {
                assert!(keys.access(key(i), i as i64).is_continue());
            }
            keys.finish().unwrap()
        });
        assert_eq!(threaded.ids, alone.ids);
        assert_eq!(threaded.popularity, alone.popularity);
        assert_eq!(threaded.lifetimes.last, alone.lifetimes.last);
        assert_eq!(threaded.lifetimes.first_time, alone.lifetimes.first_time);
    }
}
