//! Timer services: Flink's heap priority queue (no state requests) and the RocksDB one (write batches).

mod heap;
mod rocksdb;

pub use heap::HeapTimerQueue;
pub use rocksdb::{RocksDbTimerQueue, TimerNamespace};

use crate::access::{AccessSink, StateId};
use crate::key::{Key, KeyGroupRange};

/// Where timers live, as Flink's `state.backend.rocksdb.timer-service.factory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimerService {
    /// In RocksDB (Flink's default): registrations and deletions are write-batch requests.
    #[default]
    RocksDb,
    /// On the JVM heap: timers cost no state requests.
    Heap,
}

/// Requests the timer service of a subtask holding `key_groups` issues at start-up (see
/// [`RocksDbTimerQueue::start_up`]): for RocksDB timers a batch commit and a seek per key
/// group in each of its two queues, when there are two key groups or more; none on the heap.
pub fn start_up_requests(service: TimerService, key_groups: KeyGroupRange) -> u64 {
    match service {
        TimerService::RocksDb if key_groups.len() >= 2 => 4 * u64::from(key_groups.len()),
        _ => 0,
    }
}

/// The start-up of a timer service that an operator makes but never registers a timer in
/// (Flink's `KeyedProcessOperator` and `KeyedCoProcessOperator` make `user-timers` when they
/// open): its states are [`TimerQueue::states`] from `first_state` on, and it issues what
/// [`RocksDbTimerQueue::start_up`] does for the key groups `range`.
pub fn unused_service_start_up(
    service: TimerService,
    range: KeyGroupRange,
    first_state: StateId,
    out: &mut dyn AccessSink,
) {
    let mut queue = TimerQueue::<u8>::new(service, range.max_parallelism, first_state);
    queue.restrict_to(range);
    queue.start_up(out);
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

/// The event-time timers of one operator, in the configured service.
#[derive(Debug, Clone)]
pub enum TimerQueue<N: TimerNamespace> {
    /// Heap timers.
    Heap(HeapTimerQueue<N>),
    /// RocksDB timers.
    RocksDb(RocksDbTimerQueue<N>),
}

impl<N: TimerNamespace> TimerQueue<N> {
    /// The states a timer service adds to the operator's state table (after its own states).
    pub fn states(service: TimerService, service_name: &str) -> Vec<String> {
        match service {
            TimerService::Heap => Vec::new(),
            TimerService::RocksDb => vec![
                format!("_timer_state/event_{service_name}"),
                "default".to_string(),
                format!("_timer_state/processing_{service_name}"),
            ],
        }
    }

    /// A queue; RocksDB timer requests use states `first_state` to `first_state + 2`, in the
    /// order of [`TimerQueue::states`].
    pub fn new(service: TimerService, max_parallelism: u32, first_state: StateId) -> Self {
        match service {
            TimerService::Heap => TimerQueue::Heap(HeapTimerQueue::new()),
            TimerService::RocksDb => TimerQueue::RocksDb(RocksDbTimerQueue::new(
                max_parallelism,
                first_state,
                first_state + 1,
                first_state + 2,
            )),
        }
    }

    /// Before the first input: what the service issues when it is made (the RocksDB
    /// service's [`RocksDbTimerQueue::start_up`]; nothing on the heap).
    pub fn start_up(&mut self, out: &mut dyn AccessSink) {
        if let TimerQueue::RocksDb(q) = self {
            q.start_up(out);
        }
    }

    /// Keeps the queue to the key groups of one subtask (the RocksDB service's heap of key
    /// groups holds its subtask's alone; heap timers have one heap whatever the key groups).
    /// Before any timer is added.
    pub fn restrict_to(&mut self, range: KeyGroupRange) {
        if let TimerQueue::RocksDb(q) = self {
            q.restrict_to(range);
        }
    }

    /// Registers a timer (idempotent for equal timers).
    pub fn add(&mut self, timer: Timer<N>, out: &mut dyn AccessSink) {
        match self {
            TimerQueue::Heap(q) => {
                q.add(timer);
            }
            TimerQueue::RocksDb(q) => q.add(timer, out),
        }
    }

    /// Registers the timers of `key`'s window `namespace`: its trigger timer at `trigger`
    /// (`None` when the trigger fired at once), then its cleanup timer at `cleanup` (`None`
    /// when it has none), as [`TimerQueue::add`] each. With no allowed lateness both are at
    /// the window's end: one timer, which Flink's window operators register twice, here in
    /// fewer steps (the RocksDB service hands both batch puts to the sink at once).
    pub fn add_window_timers(
        &mut self,
        key: &Key,
        namespace: N,
        trigger: Option<i64>,
        cleanup: Option<i64>,
        out: &mut dyn AccessSink,
    ) {
        let timer = |timestamp| Timer {
            timestamp,
            key: key.clone(),
            namespace: namespace.clone(),
        };
        match (trigger, cleanup, self) {
            (Some(trigger), Some(cleanup), TimerQueue::RocksDb(q)) if trigger == cleanup => {
                q.add_twice(timer(trigger), out)
            }
            (trigger, cleanup, queue) => {
                for timestamp in [trigger, cleanup].into_iter().flatten() {
                    queue.add(timer(timestamp), out);
                }
            }
        }
    }

    /// Deletes a timer if registered.
    pub fn remove(&mut self, timer: &Timer<N>, out: &mut dyn AccessSink) {
        match self {
            TimerQueue::Heap(q) => {
                q.remove(timer);
            }
            TimerQueue::RocksDb(q) => q.remove(timer, out),
        }
    }

    /// Pops the next timer if it is due at `watermark` (Flink's `peek` then `poll`).
    pub fn poll_due(&mut self, watermark: i64, out: &mut dyn AccessSink) -> Option<Timer<N>> {
        match self {
            TimerQueue::Heap(q) => {
                if q.peek()?.timestamp <= watermark {
                    q.poll()
                } else {
                    None
                }
            }
            TimerQueue::RocksDb(q) => {
                if q.peek_timestamp(out)? <= watermark {
                    q.poll(out)
                } else {
                    None
                }
            }
        }
    }

    /// End of the job: commits a pending write batch.
    pub fn close(&mut self, out: &mut dyn AccessSink) {
        if let TimerQueue::RocksDb(q) = self {
            q.close(out);
        }
    }
}

impl TimerNamespace for (i64, i64) {
    #[inline]
    fn serialize_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_be_bytes());
        out.extend_from_slice(&self.1.to_be_bytes());
    }

    #[inline]
    fn deserialize_suffix(bytes: &[u8]) -> Option<(Self, usize)> {
        let tail = bytes.get(bytes.len().checked_sub(16)?..)?;
        let (start, end) = tail.split_at(8);
        Some((
            (
                i64::from_be_bytes(start.try_into().ok()?),
                i64::from_be_bytes(end.try_into().ok()?),
            ),
            16,
        ))
    }

    #[inline]
    fn as_words(&self) -> Option<[u64; 2]> {
        Some([self.0 as u64, self.1 as u64])
    }
}

impl TimerNamespace for u8 {
    #[inline]
    fn serialize_into(&self, out: &mut Vec<u8>) {
        out.push(*self);
    }

    #[inline]
    fn deserialize_suffix(bytes: &[u8]) -> Option<(Self, usize)> {
        Some((*bytes.last()?, 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Access, Op};
    use crate::operator::Side;

    /// Each namespace reads back from the end of a timer key, whatever key bytes precede it.
    fn reads_back<N: TimerNamespace + std::fmt::Debug>(namespace: N) {
        for key in [&b""[..], &[0], &[0xff; 8], b"\x0dCLEANUP_LEFT"] {
            let mut bytes = key.to_vec();
            namespace.serialize_into(&mut bytes);
            assert_eq!(
                N::deserialize_suffix(&bytes),
                Some((namespace.clone(), bytes.len() - key.len())),
                "{namespace:?} after {key:?}"
            );
        }
    }

    #[test]
    fn timer_namespaces_read_back_from_the_end_of_their_keys() {
        reads_back((0i64, 5_000i64));
        reads_back((i64::MIN, -1i64));
        reads_back(7u8);
        reads_back(Side::Left);
        reads_back(Side::Right);
        assert_eq!(<(i64, i64)>::deserialize_suffix(&[0; 15]), None);
        assert_eq!(Side::deserialize_suffix(b"\x0dCLEANUP_LEF"), None);
    }

    /// Counts requests by op.
    #[derive(Default)]
    struct Counted(Vec<(Op, StateId)>);

    impl AccessSink for Counted {
        fn access(&mut self, a: Access<'_>) {
            self.0.push((a.op, a.state));
        }
    }

    #[test]
    fn the_start_up_is_a_commit_and_a_seek_per_key_group_in_each_queue_as_counted() {
        for (parallelism, subtask) in [(1, 0), (4, 3), (64, 5), (128, 7), (3, 1)] {
            let range = KeyGroupRange::of_subtask(128, parallelism, subtask);
            for service in [TimerService::RocksDb, TimerService::Heap] {
                let mut q = TimerQueue::<(i64, i64)>::new(service, 128, 1);
                q.restrict_to(range);
                let mut out = Counted::default();
                q.start_up(&mut out);
                assert_eq!(
                    out.0.len() as u64,
                    start_up_requests(service, range),
                    "{service:?}, {} key groups",
                    range.len()
                );
                if service == TimerService::RocksDb && range.len() >= 2 {
                    let n = range.len() as usize;
                    // the processing-time queue (state 3) first, then the event-time one (1)
                    assert_eq!(out.0[..2], [(Op::BatchCommit, 2), (Op::Seek, 3)]);
                    assert_eq!(
                        out.0[2 * n..2 * n + 2],
                        [(Op::BatchCommit, 2), (Op::Seek, 1)]
                    );
                }
            }
        }
    }
}
