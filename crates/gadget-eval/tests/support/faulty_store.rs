//! A store for fault-injection tests: the memory store, with one fault at request number `at`
//! (counting from 1): a stall, or a failed request.
#![allow(dead_code)]

use std::time::Duration;

use gadget::access::{Op, StateId};
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::store::{Store, StoreError};

/// What happens at the faulty request.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// It waits this long, then succeeds.
    Stall(Duration),
    /// It fails, as a store out of disk space would, and so does every later one.
    Fail,
}

/// The memory store with one [`Fault`] at request number `at`.
pub struct FaultyStore {
    inner: MemoryStore,
    requests: u64,
    at: u64,
    fault: Fault,
}

impl FaultyStore {
    /// A memory store of `states` states whose request number `at` meets `fault`.
    pub fn new(states: usize, at: u64, fault: Fault) -> Self {
        FaultyStore {
            inner: MemoryStore::new(states),
            requests: 0,
            at,
            fault,
        }
    }

    /// Requests received so far, the faulty one included.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    fn tick(&mut self, op: Op) -> Result<(), StoreError> {
        self.requests += 1;
        match self.fault {
            Fault::Stall(d) if self.requests == self.at => std::thread::sleep(d),
            Fault::Fail if self.requests >= self.at => {
                return Err(StoreError::Request {
                    store: "faulty-memory",
                    op,
                    message: "No space left on device (injected)".to_string(),
                })
            }
            _ => {}
        }
        Ok(())
    }
}

impl Store for FaultyStore {
    fn name(&self) -> &'static str {
        "faulty-memory"
    }
    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.tick(Op::Get)?;
        self.inner.get(state, key)
    }
    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.tick(Op::Put)?;
        self.inner.put(state, key, value)
    }
    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.tick(Op::Merge)?;
        self.inner.merge(state, key, value)
    }
    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.tick(Op::Delete)?;
        self.inner.delete(state, key)
    }
    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.tick(Op::Seek)?;
        self.inner.seek(state, key)
    }
    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.tick(Op::Next)?;
        self.inner.next(state)
    }
    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.tick(Op::BatchPut)?;
        self.inner.batch_put(state, key, value)
    }
    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.tick(Op::BatchDelete)?;
        self.inner.batch_delete(state, key)
    }
    fn batch_commit(&mut self) -> Result<(), StoreError> {
        self.tick(Op::BatchCommit)?;
        self.inner.batch_commit()
    }
    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        self.tick(Op::RangeQuery)?;
        self.inner.range_query(state, start, end)
    }
    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.tick(Op::RangeDelete)?;
        self.inner.range_delete(state, start, end)
    }
    fn open_state(&mut self, state: StateId, name: &str) -> Result<(), StoreError> {
        self.tick(Op::Open)?;
        self.inner.open_state(state, name)
    }
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.tick(Op::Drop)?;
        self.inner.drop_state(state)
    }
}
