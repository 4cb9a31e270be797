//! What a trace's gets found: written into a generated trace by [`ReadLengths`] (`gadget gen
//! --reads`), checked against a store by [`check_reads`] (`gadget replay --check-reads`).
//!
//! A recording of an engine carries what its store answered to every get; a generated trace
//! learns it from the memory store, whose answers every store must give (the store contract
//! tests hold each store to them), replaying the requests as they are written. Either way a
//! replay can then require the store it drives to find, for every get, a value of the length
//! the trace says (or none), which is what the engine's own store would have found.

use std::sync::atomic::{AtomicBool, Ordering};

use gadget::access::{Access, AccessSink, Op, ReadLen, StateId};
use gadget::PROGRESS_EVERY;

use crate::store::memory::MemoryStore;
use crate::store::{issue, issue_access, Store, StoreError};
use crate::value::{ValueBytes, DEFAULT_COMPRESSION_RATIO};
use crate::workload::{RequestStream, WorkloadError};

/// A sink that writes into each get what it finds, then hands every record on to `inner`:
/// the requests are replayed into a memory store as they pass.
pub struct ReadLengths<'a, S: AccessSink + ?Sized> {
    inner: &'a mut S,
    /// `None`: records pass unchanged.
    model: Option<MemoryStore>,
    values: ValueBytes,
    failed: Option<StoreError>,
}

impl<'a, S: AccessSink + ?Sized> ReadLengths<'a, S> {
    /// Hands records on to `inner`, the states being those of the operator's table; with
    /// `on` false, unchanged (the gets say nothing about what they found).
    pub fn new(inner: &'a mut S, states: usize, on: bool) -> Self {
        ReadLengths {
            inner,
            model: on.then(|| MemoryStore::new(states)),
            values: ValueBytes::new(0, DEFAULT_COMPRESSION_RATIO),
            failed: None,
        }
    }

    /// The first request the memory store refused (a state outside the table), after which
    /// the gets say nothing about what they found; `None` when every request was taken.
    pub fn finish(self) -> Option<StoreError> {
        self.failed
    }
}

impl<S: AccessSink + ?Sized> AccessSink for ReadLengths<'_, S> {
    #[inline]
    fn access(&mut self, a: Access<'_>) {
        let Some(model) = self.model.as_mut().filter(|_| self.failed.is_none()) else {
            return self.inner.access(a);
        };
        match issue_access(model, a, &mut self.values) {
            Ok(Some(found)) if a.op == Op::Get => self.inner.access(Access {
                value_len: ReadLen::of(found).value_len(),
                ..a
            }),
            Ok(_) => self.inner.access(a),
            Err(e) => {
                self.failed = Some(e);
                self.inner.access(a)
            }
        }
    }

    /// Without `--reads`, the key's requests go on together, to the writer's path for them.
    #[inline]
    fn access_all(&mut self, state: StateId, key: &[u8], requests: &[(Op, u32)]) {
        if self.model.is_none() {
            return self.inner.access_all(state, key, requests);
        }
        gadget::access::access_each(self, state, key, requests);
    }

    fn event(&mut self, input: u8) {
        self.inner.event(input);
    }

    fn watermark(&mut self, timestamp: i64) {
        self.inner.watermark(timestamp);
    }

    fn stopped(&self) -> bool {
        self.inner.stopped()
    }
}

/// What [`check_reads`] found: every get the trace says something about found the same.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCheck {
    /// Requests replayed.
    pub requests: u64,
    /// Gets among them.
    pub gets: u64,
    /// Gets whose trace says what they found: each was checked.
    pub checked: u64,
    /// Checked gets that found a value (the others found nothing, as the trace says).
    pub found: u64,
    /// True when a stop (Ctrl-C) ended the replay before the trace did.
    pub interrupted: bool,
}

/// A get that found other than what its trace says.
#[derive(Debug, thiserror::Error)]
#[error(
    "request #{request} (a get of state {state}, key {key}) found {found} in the {store} store; \
     the trace says it found {expected}. The store does not give the answers the engine's store \
     gave: its contract tests (`cargo test -p gadget-eval {store}`) should show how"
)]
pub struct ReadDiff {
    /// The store checked.
    pub store: &'static str,
    /// The request's index in the trace, from 0.
    pub request: u64,
    /// The state's name.
    pub state: String,
    /// The key in hex.
    pub key: String,
    /// What the trace says.
    pub expected: ReadLen,
    /// What the store found.
    pub found: ReadLen,
    /// What was checked before it.
    pub so_far: ReadCheck,
}

/// Why [`check_reads`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadCheckError {
    /// A get found other than what the trace says.
    #[error(transparent)]
    Differs(Box<ReadDiff>),
    /// The store refused a request.
    #[error("request #{request}: {source}")]
    Store {
        /// The request's index in the trace, from 0.
        request: u64,
        /// What the store said.
        source: StoreError,
    },
    /// The trace could not be read.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
}

/// Replays `stream` into `store` without timing it, checking that every get finds what the
/// trace says it found; the first difference ends it. `progress` hears the requests replayed
/// every [`PROGRESS_EVERY`]; a set `stop` ends the replay where it is (marked interrupted).
pub fn check_reads(
    store: &mut dyn Store,
    mut stream: RequestStream,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64),
) -> Result<ReadCheck, ReadCheckError> {
    let mut c = ReadCheck::default();
    let mut values = ValueBytes::new(0, DEFAULT_COMPRESSION_RATIO);
    while let Some(block) = stream.next_block() {
        for r in &block.requests {
            if c.requests % 256 == 0 && stop.load(Ordering::Relaxed) {
                c.interrupted = true;
                return Ok(c);
            }
            let read =
                issue(store, &block, r, &mut values).map_err(|source| ReadCheckError::Store {
                    request: c.requests,
                    source,
                })?;
            if let (Op::Get, Some(found)) = (r.op, read) {
                c.gets += 1;
                let expected = ReadLen::from_value_len(r.value_len);
                if expected != ReadLen::Unknown {
                    if !expected.agrees_with(found) {
                        return Err(differs(
                            store,
                            &stream,
                            block.key(r),
                            r.state,
                            expected,
                            found,
                            c,
                        ));
                    }
                    c.checked += 1;
                    c.found += u64::from(found.is_some());
                }
            }
            c.requests += 1;
            if c.requests % PROGRESS_EVERY == 0 {
                progress(c.requests);
            }
        }
        stream.recycle(block);
    }
    stream.finish()?;
    progress(c.requests);
    Ok(c)
}

#[cold]
fn differs(
    store: &dyn Store,
    stream: &RequestStream,
    key: &[u8],
    state: StateId,
    expected: ReadLen,
    found: Option<usize>,
    so_far: ReadCheck,
) -> ReadCheckError {
    ReadCheckError::Differs(Box::new(ReadDiff {
        store: store.name(),
        request: so_far.requests,
        state: stream
            .state_names
            .get(usize::from(state))
            .cloned()
            .unwrap_or_else(|| format!("#{state}")),
        key: key.iter().map(|b| format!("{b:02x}")).collect(),
        expected,
        found: ReadLen::of(found),
        so_far,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget::access::{TraceRecord, VecSink};

    fn get(key: &[u8]) -> Access<'_> {
        Access {
            op: Op::Get,
            state: 0,
            key,
            value_len: 0,
        }
    }

    fn write(op: Op, key: &[u8], value_len: u32) -> Access<'_> {
        Access {
            op,
            state: 0,
            key,
            value_len,
        }
    }

    #[test]
    fn gets_learn_what_the_requests_before_them_left_batches_once_committed() {
        let mut out = VecSink::default();
        let mut sink = ReadLengths::new(&mut out, 1, true);
        for a in [
            get(b"k"),
            write(Op::Put, b"k", 5),
            get(b"k"),
            write(Op::Merge, b"k", 3),
            get(b"k"),
            write(Op::BatchPut, b"b", 7),
            get(b"b"),
            write(Op::BatchCommit, b"", 1),
            get(b"b"),
            write(Op::Delete, b"k", 0),
            get(b"k"),
        ] {
            sink.access(a);
        }
        sink.event(0);
        assert!(sink.finish().is_none());
        let gets: Vec<ReadLen> = out
            .records
            .iter()
            .filter_map(|r| match r {
                TraceRecord::Access {
                    op: Op::Get,
                    value_len,
                    ..
                } => Some(ReadLen::from_value_len(*value_len)),
                _ => None,
            })
            .collect();
        // a merge appends with Flink's one-byte delimiter; a batch is seen once committed
        assert_eq!(
            gets,
            [
                ReadLen::Missing,
                ReadLen::Found(5),
                ReadLen::Found(9),
                ReadLen::Missing,
                ReadLen::Found(7),
                ReadLen::Missing
            ]
        );
        assert_eq!(out.records.last(), Some(&TraceRecord::Event { input: 0 }));
    }

    #[test]
    fn switched_off_it_hands_every_record_on_unchanged() {
        let mut out = VecSink::default();
        let mut sink = ReadLengths::new(&mut out, 1, false);
        sink.access(write(Op::Put, b"k", 5));
        sink.access(get(b"k"));
        assert!(sink.finish().is_none());
        assert!(matches!(
            out.records[1],
            TraceRecord::Access {
                op: Op::Get,
                value_len: 0,
                ..
            }
        ));
    }

    #[test]
    fn a_state_outside_the_table_is_reported_and_its_gets_stay_unknown() {
        let mut out = VecSink::default();
        let mut sink = ReadLengths::new(&mut out, 1, true);
        sink.access(Access {
            state: 3,
            ..get(b"k")
        });
        sink.access(get(b"k"));
        let failed = sink.finish().expect("state 3 is not in a table of one");
        assert!(failed.to_string().contains('3'), "{failed}");
        assert!(out
            .records
            .iter()
            .all(|r| matches!(r, TraceRecord::Access { value_len: 0, .. })));
    }
}
