//! A closed loop's completions: for each request of a chunk, the clock's reading as it
//! completed, its op, its state and what it read, kept until the chunk is recorded after its
//! last request, so that recording is outside every request's time.

use gadget::access::{Op, StateId};

use crate::clock::RunClock;
use crate::workload::Request;

/// One request of a closed loop as it completed: the clock's raw reading then, its op and what
/// it read (16 bytes, so that a chunk's completions stay in the first-level cache).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Completion {
    pub(crate) ticks: u64,
    /// The length read (0 unless [`ReadOutcome::Found`]); a length beyond 4 GiB saturates.
    pub(crate) read_len: u32,
    pub(crate) op: Op,
    pub(crate) state: StateId,
    pub(crate) read: ReadOutcome,
}

/// Whether a request read, and whether it found a value (an index into a tally of three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadOutcome {
    /// A write.
    NotARead = 0,
    /// A read that found nothing.
    Empty = 1,
    /// A read that found `read_len` bytes.
    Found = 2,
}

impl Completion {
    /// The completion of a request of `op` that returned `read` (see
    /// [`issue`](crate::store::issue)).
    #[inline]
    fn new(op: Op, state: StateId, ticks: u64, read: Option<Option<usize>>) -> Self {
        let (read, read_len) = match read {
            None => (ReadOutcome::NotARead, 0),
            Some(None) => (ReadOutcome::Empty, 0),
            Some(Some(n)) => (ReadOutcome::Found, u32::try_from(n).unwrap_or(u32::MAX)),
        };
        Completion {
            ticks,
            read_len,
            op,
            state,
            read,
        }
    }
}

/// A chunk's requests as they completed, and the raw reading just before the first started.
#[derive(Debug)]
pub struct CompletedChunk {
    pub(crate) start: u64,
    pub(crate) completions: Vec<Completion>,
}

impl CompletedChunk {
    /// Room for `requests` completions, allocated once for the run.
    pub(crate) fn with_capacity(requests: usize) -> Self {
        CompletedChunk {
            start: 0,
            completions: Vec::with_capacity(requests),
        }
    }

    /// Starts a chunk: forgets the last one's completions and reads the clock.
    pub(crate) fn begin(&mut self, clock: &RunClock) {
        self.completions.clear();
        self.start = clock.raw();
    }

    /// Notes that `request` completed just now, having returned `read`.
    #[inline(always)]
    pub(crate) fn complete(
        &mut self,
        clock: &RunClock,
        request: &Request,
        read: Option<Option<usize>>,
    ) {
        self.completions.push(Completion::new(
            request.op,
            request.state,
            clock.raw(),
            read,
        ));
    }

    /// The raw reading at the chunk's last completion (its start when none completed).
    pub(crate) fn last_ticks(&self) -> u64 {
        self.completions.last().map_or(self.start, |c| c.ticks)
    }
}
