//! Timer services: Flink's heap priority queue (no state requests) and the RocksDB one (write batches).

mod heap;

pub use heap::HeapTimerQueue;

use crate::key::Key;

/// Where timers live, as Flink's `state.backend.rocksdb.timer-service.factory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimerService {
    /// On the JVM heap: timers cost no state requests.
    #[default]
    Heap,
}

/// An event-time timer: Flink's `TimerHeapInternalTimer` (equality on all three fields, priority on the timestamp).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Timer<N> {
    /// When it fires (ms).
    pub timestamp: i64,
    /// The key it was registered under.
    pub key: Key,
    /// The operator's namespace (a window, a join side, ...).
    pub namespace: N,
}
