//! Kafka Streams' record cache for one store (`NamedCache` in a `ThreadCache` of
//! `statestore.cache.max.bytes` over the stream threads): least-recently-used entries, each
//! dirty or clean, sized as Kafka sizes them, evicted from the least recently used end
//! whenever the thread's caches together are over its size; evicting a dirty entry flushes
//! every dirty entry, it first.
//!
//! The stores of all the tasks a stream thread runs share its [`ThreadCache`]: a write that
//! takes the thread over its size evicts from the store written (`ThreadCache.maybeEvict`),
//! until the thread is within its size or that store's cache is empty.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustc_hash::FxHashMap;

/// What Kafka adds to a key and value per cached entry: the node's three references (24),
/// the dirty flag (1), and the record context's timestamp, offset and partition (20).
const ENTRY_OVERHEAD: u64 = 24 + 1 + 8 + 8 + 4;

/// No node.
const NIL: usize = usize::MAX;

#[derive(Debug, Clone)]
struct Node {
    key: Vec<u8>,
    value_len: u32,
    size: u64,
    /// The place of its last dirty write in the flush order, when dirty.
    dirty: Option<u64>,
    prev: usize,
    next: usize,
}

/// A stream thread's cache: its size, and the bytes its stores' caches hold together.
#[derive(Debug, Clone)]
pub struct ThreadCache {
    max_bytes: u64,
    bytes: Arc<AtomicU64>,
}

impl ThreadCache {
    /// A thread's cache of `max_bytes` (`statestore.cache.max.bytes` over the threads).
    pub fn new(max_bytes: u64) -> ThreadCache {
        ThreadCache {
            max_bytes,
            bytes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// A store's cache in this thread's.
    pub fn named(&self) -> RecordCache {
        RecordCache {
            thread: self.clone(),
            bytes: 0,
            nodes: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            head: NIL,
            tail: NIL,
            dirty: BTreeMap::new(),
            next_dirty: 0,
        }
    }

    fn over(&self) -> bool {
        self.bytes.load(Ordering::Relaxed) > self.max_bytes
    }
}

/// One store's record cache.
#[derive(Debug, Clone)]
pub struct RecordCache {
    thread: ThreadCache,
    /// This store's entries' bytes.
    bytes: u64,
    nodes: Vec<Node>,
    free: Vec<usize>,
    index: FxHashMap<Vec<u8>, usize>,
    /// Most recently used.
    head: usize,
    /// Least recently used.
    tail: usize,
    /// Dirty entries by the order of their last write.
    dirty: BTreeMap<u64, usize>,
    next_dirty: u64,
}

/// Receives each entry the cache writes to the store: its key and value size.
pub type Flush<'a> = dyn FnMut(&[u8], u32) + 'a;

impl RecordCache {
    /// The only store's cache of a thread of `max_bytes` (`statestore.cache.max.bytes`).
    pub fn new(max_bytes: u64) -> RecordCache {
        ThreadCache::new(max_bytes).named()
    }

    /// Whether `key` is cached (a hit makes it the most recently used).
    pub fn get(&mut self, key: &[u8]) -> bool {
        match self.index.get(key) {
            Some(&n) => {
                self.touch(n);
                true
            }
            None => false,
        }
    }

    /// Caches a value read from the store (clean, no topic in its context); entries an
    /// eviction writes go to `flushed`.
    pub fn put_clean(&mut self, key: &[u8], value_len: u32, flushed: &mut Flush<'_>) {
        self.put(key, value_len, 0, None, flushed);
    }

    /// Caches a write of the record being processed (dirty, its context naming `topic_len`
    /// characters of topic); entries an eviction writes go to `flushed`.
    pub fn put_dirty(
        &mut self,
        key: &[u8],
        value_len: u32,
        topic_len: u64,
        flushed: &mut Flush<'_>,
    ) {
        let order = self.next_dirty;
        self.next_dirty += 1;
        self.put(key, value_len, topic_len, Some(order), flushed);
    }

    /// Writes every dirty entry to `flushed` in the order of its last write, each then clean
    /// (a commit).
    pub fn flush(&mut self, flushed: &mut Flush<'_>) {
        while let Some((_, n)) = self.dirty.pop_first() {
            let node = &mut self.nodes[n];
            node.dirty = None;
            flushed(&node.key, node.value_len);
        }
    }

    fn put(
        &mut self,
        key: &[u8],
        value_len: u32,
        topic_len: u64,
        dirty: Option<u64>,
        flushed: &mut Flush<'_>,
    ) {
        let size = key.len() as u64 + ENTRY_OVERHEAD + u64::from(value_len) + topic_len;
        match self.index.get(key) {
            Some(&n) => {
                self.shrink(self.nodes[n].size);
                let node = &mut self.nodes[n];
                node.size = size;
                node.value_len = value_len;
                if let Some(order) = dirty {
                    if let Some(old) = node.dirty.replace(order) {
                        self.dirty.remove(&old);
                    }
                    self.dirty.insert(order, n);
                }
                self.touch(n);
            }
            None => {
                let n = match self.free.pop() {
                    Some(n) => {
                        let node = &mut self.nodes[n];
                        node.key.clear();
                        node.key.extend_from_slice(key);
                        (node.value_len, node.size, node.dirty) = (value_len, size, dirty);
                        n
                    }
                    None => {
                        self.nodes.push(Node {
                            key: key.to_vec(),
                            value_len,
                            size,
                            dirty,
                            prev: NIL,
                            next: NIL,
                        });
                        self.nodes.len() - 1
                    }
                };
                self.index.insert(key.to_vec(), n);
                self.push_head(n);
                if let Some(order) = dirty {
                    self.dirty.insert(order, n);
                }
            }
        }
        self.bytes += size;
        self.thread.bytes.fetch_add(size, Ordering::Relaxed);
        while self.thread.over() && self.tail != NIL {
            self.evict(flushed);
        }
    }

    /// `size` bytes fewer in this store's cache and its thread's.
    fn shrink(&mut self, size: u64) {
        self.bytes -= size;
        self.thread.bytes.fetch_sub(size, Ordering::Relaxed);
    }

    /// Drops the least recently used entry; a dirty one flushes every dirty entry, it first.
    fn evict(&mut self, flushed: &mut Flush<'_>) {
        let n = self.tail;
        self.unlink(n);
        self.shrink(self.nodes[n].size);
        let key = std::mem::take(&mut self.nodes[n].key);
        self.index.remove(&key);
        self.free.push(n);
        if let Some(order) = self.nodes[n].dirty.take() {
            self.dirty.remove(&order);
            flushed(&key, self.nodes[n].value_len);
            self.flush(flushed);
        }
        // the freed node keeps the key's buffer for the next entry
        self.nodes[n].key = key;
    }

    fn touch(&mut self, n: usize) {
        if self.head != n {
            self.unlink(n);
            self.push_head(n);
        }
    }

    fn unlink(&mut self, n: usize) {
        let (prev, next) = (self.nodes[n].prev, self.nodes[n].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NIL => self.tail = prev,
            x => self.nodes[x].prev = prev,
        }
    }

    fn push_head(&mut self, n: usize) {
        self.nodes[n].prev = NIL;
        self.nodes[n].next = self.head;
        if self.head != NIL {
            self.nodes[self.head].prev = n;
        }
        self.head = n;
        if self.tail == NIL {
            self.tail = n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys the cache wrote to the store, in order.
    type Written = Vec<Vec<u8>>;

    fn dirty(cache: &mut RecordCache, key: &[u8], written: &mut Written) {
        cache.put_dirty(key, 16, 6, &mut |k, v| {
            assert_eq!(v, 16);
            written.push(k.to_vec());
        });
    }

    #[test]
    fn entries_are_sized_as_kafka_sizes_them() {
        let mut written = Written::new();
        // a dirty count: 8-byte key, 16-byte value, topic `events`: 75 bytes
        let mut cache = RecordCache::new(75);
        dirty(&mut cache, b"12345678", &mut written);
        assert!(written.is_empty() && cache.get(b"12345678"));
        // one byte less and it is evicted at once, which writes it
        let mut cache = RecordCache::new(74);
        dirty(&mut cache, b"12345678", &mut written);
        assert_eq!(written, [b"12345678".to_vec()]);
        assert!(!cache.get(b"12345678"));
    }

    #[test]
    fn the_least_recently_used_goes_first_and_a_dirty_one_flushes_all_dirty_ones() {
        let mut written = Written::new();
        let mut cache = RecordCache::new(3 * 75);
        for key in [b"aaaaaaaa", b"bbbbbbbb", b"cccccccc"] {
            dirty(&mut cache, key, &mut written);
        }
        // a is used again: b is now the least recently used
        assert!(cache.get(b"aaaaaaaa"));
        dirty(&mut cache, b"dddddddd", &mut written);
        // b evicted, then the other dirty ones in write order
        let expected: Written = [b"bbbbbbbb", b"aaaaaaaa", b"cccccccc", b"dddddddd"]
            .iter()
            .map(|k| k.to_vec())
            .collect();
        assert_eq!(written, expected);
        written.clear();
        cache.flush(&mut |k, _| written.push(k.to_vec()));
        assert!(written.is_empty(), "all clean after the eviction's flush");
        // a clean entry read from the store is sized without a topic, and evicted silently
        let mut cache = RecordCache::new(69);
        cache.put_clean(b"12345678", 16, &mut |_, _| {
            panic!("a clean entry is not written")
        });
        assert!(cache.get(b"12345678"));
    }

    #[test]
    fn a_write_over_the_threads_size_evicts_from_the_store_written() {
        let mut written = Written::new();
        let thread = ThreadCache::new(2 * 75);
        let (mut first, mut second) = (thread.named(), thread.named());
        dirty(&mut first, b"aaaaaaaa", &mut written);
        dirty(&mut first, b"bbbbbbbb", &mut written);
        assert!(written.is_empty(), "two entries fit the thread's cache");
        // the second store's first entry takes the thread over: it is evicted from the
        // second store, the one written, which is then empty; the first keeps both
        dirty(&mut second, b"cccccccc", &mut written);
        assert_eq!(written, [b"cccccccc".to_vec()]);
        assert!(first.get(b"aaaaaaaa") && first.get(b"bbbbbbbb"));
        // the first store's next write evicts from the first store until the thread fits
        written.clear();
        dirty(&mut first, b"dddddddd", &mut written);
        assert_eq!(
            written,
            [
                b"aaaaaaaa".to_vec(),
                b"bbbbbbbb".to_vec(),
                b"dddddddd".to_vec()
            ],
            "a, the least recently used, goes, and its flush writes the other dirty ones"
        );
        assert!(!first.get(b"aaaaaaaa") && first.get(b"bbbbbbbb"));
    }

    #[test]
    fn a_commit_flushes_in_the_order_of_the_last_writes() {
        let mut written = Written::new();
        let mut cache = RecordCache::new(1 << 20);
        for key in [b"a", b"b", b"a"] {
            dirty(&mut cache, key, &mut written);
        }
        cache.flush(&mut |k, _| written.push(k.to_vec()));
        assert_eq!(written, [b"b".to_vec(), b"a".to_vec()]);
    }
}
