//! A faithful copy of the behaviour of Flink's `HeapPriorityQueueSet`: one array heap ordered by
//! timestamp only, de-duplicated by equality. Ties pop in the order the heap's sift operations
//! leave them, which is not insertion order; mirroring the array operations exactly is what makes
//! Gadget's firing order identical to Flink's.

use std::hash::Hash;

use super::Timer;

const HEAD: usize = 1;

/// The heap timer queue of one timer service.
#[derive(Debug, Clone)]
pub struct HeapTimerQueue<N: Clone + Eq + Hash> {
    /// Slot `HEAD..=size` holds slab ids; slot 0 is unused, as in Flink.
    heap: Vec<usize>,
    size: usize,
    /// Timers by slab id, with their current heap index.
    slab: Vec<Option<(Timer<N>, usize)>>,
    free: Vec<usize>,
    dedup: rustc_hash::FxHashMap<Timer<N>, usize>,
    /// The timer of the last add, remove or poll, and whether it is registered now: window
    /// operators add a timer twice in a row (trigger and cleanup at one time) and delete the
    /// timer they just polled, which this answers without hashing.
    recent: Option<(Timer<N>, bool)>,
}

impl<N: Clone + Eq + Hash> Default for HeapTimerQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<N: Clone + Eq + Hash> HeapTimerQueue<N> {
    /// An empty queue.
    pub fn new() -> Self {
        HeapTimerQueue {
            heap: vec![usize::MAX],
            size: 0,
            slab: Vec::new(),
            free: Vec::new(),
            dedup: Default::default(),
            recent: None,
        }
    }

    /// Number of registered timers.
    pub fn len(&self) -> usize {
        self.size
    }

    /// True when no timer is registered.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The timer that fires next.
    pub fn peek(&self) -> Option<&Timer<N>> {
        (self.size > 0).then(|| self.timer(self.heap[HEAD]))
    }

    /// Registers a timer; returns false if an equal one was already registered.
    // Out of line: inlined, it makes `TimerQueue::add` too large to be inlined into the
    // window operators, which costs the RocksDB-timer path 2% (BENCHMARKS.md).
    #[inline(never)]
    pub fn add(&mut self, timer: Timer<N>) -> bool {
        if matches!(&self.recent, Some((recent, true)) if *recent == timer) {
            return false;
        }
        if self.dedup.contains_key(&timer) {
            self.recent = Some((timer, true));
            return false;
        }
        self.recent = Some((timer.clone(), true));
        let id = match self.free.pop() {
            Some(id) => {
                self.slab[id] = Some((timer.clone(), 0));
                id
            }
            None => {
                self.slab.push(Some((timer.clone(), 0)));
                self.slab.len() - 1
            }
        };
        self.dedup.insert(timer, id);
        self.size += 1;
        if self.heap.len() <= self.size {
            self.heap.push(id);
        }
        self.move_to(id, self.size);
        self.sift_up(self.size);
        true
    }

    /// Deletes a registered timer; returns false if none was registered.
    // Out of line for the same reason as `add`.
    #[inline(never)]
    pub fn remove(&mut self, timer: &Timer<N>) -> bool {
        if matches!(&self.recent, Some((recent, false)) if recent == timer) {
            return false;
        }
        self.recent = Some((timer.clone(), false));
        match self.dedup.remove(timer) {
            Some(id) => {
                let idx = self.index_of(id);
                self.remove_at(idx);
                self.slab[id] = None;
                self.free.push(id);
                true
            }
            None => false,
        }
    }

    /// Removes and returns the timer that fires next.
    pub fn poll(&mut self) -> Option<Timer<N>> {
        if self.size == 0 {
            return None;
        }
        let id = self.remove_at(HEAD);
        let (timer, _) = self.slab[id].take().expect("polled slot holds a timer");
        self.free.push(id);
        self.dedup.remove(&timer);
        self.recent = Some((timer.clone(), false));
        Some(timer)
    }

    fn timer(&self, id: usize) -> &Timer<N> {
        &self.slab[id].as_ref().expect("live slab id").0
    }

    fn ts(&self, id: usize) -> i64 {
        self.timer(id).timestamp
    }

    fn index_of(&self, id: usize) -> usize {
        self.slab[id].as_ref().expect("live slab id").1
    }

    fn move_to(&mut self, id: usize, idx: usize) {
        self.heap[idx] = id;
        if let Some((_, i)) = self.slab[id].as_mut() {
            *i = idx;
        }
    }

    /// Flink's `removeInternal`: move the last element into the hole, then adjust it.
    /// Returns the slab id that left the heap.
    fn remove_at(&mut self, idx: usize) -> usize {
        let removed = self.heap[idx];
        let old_size = self.size;
        if idx != old_size {
            let last = self.heap[old_size];
            self.move_to(last, idx);
            // Flink adjusts before shrinking the size: the last slot still holds the moved element.
            self.sift_down(idx, old_size);
            if self.heap[idx] == last {
                self.sift_up(idx);
            }
        }
        self.heap[old_size] = usize::MAX;
        self.size -= 1;
        removed
    }

    fn sift_up(&mut self, mut idx: usize) {
        let current = self.heap[idx];
        let current_ts = self.ts(current);
        let mut parent = idx >> 1;
        while parent > 0 && current_ts < self.ts(self.heap[parent]) {
            let p = self.heap[parent];
            self.move_to(p, idx);
            idx = parent;
            parent >>= 1;
        }
        self.move_to(current, idx);
    }

    fn sift_down(&mut self, mut idx: usize, heap_size: usize) {
        let current = self.heap[idx];
        let current_ts = self.ts(current);
        let mut first = idx << 1;
        let mut second = first + 1;
        if second <= heap_size && self.ts(self.heap[second]) < self.ts(self.heap[first]) {
            first = second;
        }
        while first <= heap_size && self.ts(self.heap[first]) < current_ts {
            let c = self.heap[first];
            self.move_to(c, idx);
            idx = first;
            first = idx << 1;
            second = first + 1;
            if second <= heap_size && self.ts(self.heap[second]) < self.ts(self.heap[first]) {
                first = second;
            }
        }
        self.move_to(current, idx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;

    fn t(ts: i64, k: i64) -> Timer<u8> {
        Timer {
            timestamp: ts,
            key: Key::Long(k),
            namespace: 0,
        }
    }

    #[test]
    fn pops_in_timestamp_order_and_deduplicates() {
        let mut q = HeapTimerQueue::new();
        for (ts, k) in [(5, 1), (3, 2), (9, 3), (3, 2), (1, 4)] {
            q.add(t(ts, k));
        }
        assert_eq!(q.len(), 4);
        let order: Vec<i64> = std::iter::from_fn(|| q.poll().map(|x| x.timestamp)).collect();
        assert_eq!(order, vec![1, 3, 5, 9]);
    }

    #[test]
    fn ties_pop_in_heap_order_not_insertion_order() {
        // Java's HeapPriorityQueue with keys a..e all at one timestamp pops a, e, d, c, b:
        // poll moves the last element to the head and sift-down keeps it there on ties.
        let mut q = HeapTimerQueue::new();
        for k in 1..=5 {
            q.add(t(7, k));
        }
        let order: Vec<i64> = std::iter::from_fn(|| {
            q.poll().map(|x| match x.key {
                Key::Long(v) => v,
                _ => unreachable!(),
            })
        })
        .collect();
        assert_eq!(order, vec![1, 5, 4, 3, 2]);
    }

    proptest::proptest! {
        /// Adds, removes and polls answer as a set of the registered timers does, and polls
        /// take a timer of the earliest time; also through the shortcuts for a timer added
        /// twice in a row and for the timer just polled or removed.
        #[test]
        fn the_queue_answers_as_a_set_of_its_timers(
            steps in proptest::collection::vec((0u8..3, 0i64..4, 0i64..3), 1..300)
        ) {
            let mut q = HeapTimerQueue::new();
            let mut registered = std::collections::HashSet::new();
            for (action, ts, k) in steps {
                let timer = t(ts, k);
                match action {
                    0 => proptest::prop_assert_eq!(q.add(timer), registered.insert((ts, k))),
                    1 => proptest::prop_assert_eq!(q.remove(&timer), registered.remove(&(ts, k))),
                    _ => {
                        let earliest = registered.iter().map(|&(ts, _)| ts).min();
                        let polled = q.poll();
                        proptest::prop_assert_eq!(polled.as_ref().map(|p| p.timestamp), earliest);
                        if let Some(p) = polled {
                            let Key::Long(k) = p.key else { unreachable!() };
                            proptest::prop_assert!(registered.remove(&(p.timestamp, k)));
                        }
                    }
                }
                proptest::prop_assert_eq!(q.len(), registered.len());
            }
        }
    }

    #[test]
    fn remove_keeps_the_heap_valid() {
        let mut q = HeapTimerQueue::new();
        for (i, ts) in [8, 3, 7, 1, 9, 2, 6].into_iter().enumerate() {
            q.add(t(ts, i as i64));
        }
        assert!(q.remove(&t(1, 3)));
        assert!(!q.remove(&t(1, 3)));
        assert!(q.remove(&t(9, 4)));
        let order: Vec<i64> = std::iter::from_fn(|| q.poll().map(|x| x.timestamp)).collect();
        assert_eq!(order, vec![2, 3, 6, 7, 8]);
    }
}
