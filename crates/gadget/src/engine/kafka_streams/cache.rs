//! Kafka Streams' record cache for one store (`NamedCache` in a `ThreadCache` of
//! `statestore.cache.max.bytes` over the stream threads): least-recently-used entries, each
//! dirty or clean, sized as Kafka sizes them, evicted from the least recently used end
//! whenever the thread's caches together are over its size; evicting a dirty entry flushes
//! every dirty entry, it first.
//!
//! The stores of all the tasks a stream thread runs share its [`ThreadCache`]: a write that
//! takes the thread over its size evicts from the store written (`ThreadCache.maybeEvict`),
//! until the thread is within its size or that store's cache is empty.
//!
//! One index serves every question a record asks of its key: whether it is cached, where its
//! entry is, and (for a cache that tracks it) whether the store holds it; a read-modify-write
//! finds the entry it read again without a second probe. The dirty entries form a list in the
//! order of their last writes, the order a flush writes them in.

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
    /// True while its last write is not yet in the store.
    dirty: bool,
    /// True once the cache wrote the key to the store.
    stored: bool,
    /// Neighbours in the order of use.
    used: Links,
    /// Neighbours among the dirty entries, in the order of their last writes.
    written: Links,
}

/// A node's neighbours in one of the cache's two lists, [`NIL`] at an end.
#[derive(Debug, Clone, Copy)]
struct Links {
    prev: usize,
    next: usize,
}

impl Links {
    const NONE: Links = Links {
        prev: NIL,
        next: NIL,
    };
}

/// One list of nodes, linked through the [`Links`] that `through` picks of each: its first
/// and last node, [`NIL`] when it is empty.
#[derive(Debug, Clone, Copy)]
struct List {
    head: usize,
    tail: usize,
}

/// The links of a node that a list goes through.
type Through = fn(&mut Node) -> &mut Links;

fn used(node: &mut Node) -> &mut Links {
    &mut node.used
}

fn written(node: &mut Node) -> &mut Links {
    &mut node.written
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    /// Takes `n` off the list.
    #[inline]
    fn unlink(&mut self, nodes: &mut [Node], n: usize, through: Through) {
        let Links { prev, next } = *through(&mut nodes[n]);
        match prev {
            NIL => self.head = next,
            p => through(&mut nodes[p]).next = next,
        }
        match next {
            NIL => self.tail = prev,
            x => through(&mut nodes[x]).prev = prev,
        }
    }

    /// Puts `n` first.
    #[inline]
    fn push_front(&mut self, nodes: &mut [Node], n: usize, through: Through) {
        *through(&mut nodes[n]) = Links {
            prev: NIL,
            next: self.head,
        };
        match self.head {
            NIL => self.tail = n,
            h => through(&mut nodes[h]).prev = n,
        }
        self.head = n;
    }

    /// Puts `n` last.
    #[inline]
    fn push_back(&mut self, nodes: &mut [Node], n: usize, through: Through) {
        *through(&mut nodes[n]) = Links {
            prev: self.tail,
            next: NIL,
        };
        match self.tail {
            NIL => self.head = n,
            t => through(&mut nodes[t]).next = n,
        }
        self.tail = n;
    }
}

/// Where the index puts a key.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The key's node, [`NIL`] when it is not cached (a key the store holds, kept by a cache
    /// that [tracks what is stored](ThreadCache::named_tracking_stored)).
    node: usize,
    /// Whether the store holds the key, while it is not cached (a cached key's node says).
    stored: bool,
}

/// What a read of a key finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// The key is cached (now the most recently used).
    Cached,
    /// The key is not cached, and the cache once wrote it to the store (known only to a cache
    /// that [tracks what is stored](ThreadCache::named_tracking_stored)).
    Stored,
    /// The key is not cached, and not known to be in the store.
    Absent,
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
            track_stored: false,
            bytes: 0,
            nodes: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            by_use: List::EMPTY,
            dirty: List::EMPTY,
            recent: NIL,
        }
    }

    /// A store's cache in this thread's that also remembers the keys it wrote to the store
    /// after it evicts them, so that [`RecordCache::read`] says whether a read that misses
    /// the cache finds a value: for a store whose keys recur (a count per key), not for one
    /// whose keys come and go (windows), which would keep every key it ever wrote.
    pub fn named_tracking_stored(&self) -> RecordCache {
        RecordCache {
            track_stored: true,
            ..self.named()
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
    /// Keys evicted after the cache wrote them stay in `index`, not cached.
    track_stored: bool,
    /// This store's entries' bytes.
    bytes: u64,
    nodes: Vec<Node>,
    free: Vec<usize>,
    index: FxHashMap<Vec<u8>, Slot>,
    /// The entries, most recently used first.
    by_use: List,
    /// The dirty entries, the one written longest ago (flushed first) first.
    dirty: List,
    /// The node of the key last read, while it is cached: a read-modify-write finds it again
    /// without a second probe of the index.
    recent: usize,
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
        self.read(key) == Read::Cached
    }

    /// Where `key` is: cached (a hit makes it the most recently used), in the store, or
    /// neither.
    pub fn read(&mut self, key: &[u8]) -> Read {
        self.recent = NIL;
        match self.index.get(key) {
            Some(&Slot { node, .. }) if node != NIL => {
                self.touch(node);
                self.recent = node;
                Read::Cached
            }
            Some(&Slot { stored: true, .. }) => Read::Stored,
            _ => Read::Absent,
        }
    }

    /// Caches a value read from the store (clean, no topic in its context); entries an
    /// eviction writes go to `flushed`.
    pub fn put_clean(&mut self, key: &[u8], value_len: u32, flushed: &mut Flush<'_>) {
        self.put(key, value_len, 0, false, flushed);
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
        self.put(key, value_len, topic_len, true, flushed);
    }

    /// Writes every dirty entry to `flushed` in the order of its last write, each then clean
    /// (a commit).
    pub fn flush(&mut self, flushed: &mut Flush<'_>) {
        while self.dirty.head != NIL {
            let n = self.dirty.head;
            self.unlink_dirty(n);
            let node = &mut self.nodes[n];
            node.stored = true;
            flushed(&node.key, node.value_len);
        }
    }

    /// The node of `key` when it is cached: the one last read when it holds `key`, else the
    /// index's.
    fn cached(&self, key: &[u8]) -> Option<usize> {
        if self.recent != NIL && self.nodes[self.recent].key == key {
            return Some(self.recent);
        }
        self.index
            .get(key)
            .map(|slot| slot.node)
            .filter(|&n| n != NIL)
    }

    fn put(
        &mut self,
        key: &[u8],
        value_len: u32,
        topic_len: u64,
        dirty: bool,
        flushed: &mut Flush<'_>,
    ) {
        let size = key.len() as u64 + ENTRY_OVERHEAD + u64::from(value_len) + topic_len;
        let n = match self.cached(key) {
            Some(n) => {
                self.shrink(self.nodes[n].size);
                let node = &mut self.nodes[n];
                node.size = size;
                node.value_len = value_len;
                if dirty {
                    if node.dirty {
                        self.unlink_dirty(n);
                    }
                    self.push_dirty(n);
                }
                self.touch(n);
                n
            }
            None => {
                let n = self.free.pop().unwrap_or_else(|| {
                    self.nodes.push(Node {
                        key: Vec::new(),
                        value_len: 0,
                        size: 0,
                        dirty: false,
                        stored: false,
                        used: Links::NONE,
                        written: Links::NONE,
                    });
                    self.nodes.len() - 1
                });
                let stored = match self.index.get_mut(key) {
                    Some(slot) => {
                        slot.node = n;
                        slot.stored
                    }
                    None => {
                        self.index.insert(
                            key.to_vec(),
                            Slot {
                                node: n,
                                stored: false,
                            },
                        );
                        false
                    }
                };
                let node = &mut self.nodes[n];
                node.key.clear();
                node.key.extend_from_slice(key);
                (node.value_len, node.size, node.stored) = (value_len, size, stored);
                self.push_head(n);
                if dirty {
                    self.push_dirty(n);
                }
                n
            }
        };
        self.recent = n;
        self.bytes += size;
        self.thread.bytes.fetch_add(size, Ordering::Relaxed);
        while self.thread.over() && self.by_use.tail != NIL {
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
        let n = self.by_use.tail;
        self.by_use.unlink(&mut self.nodes, n, used);
        self.shrink(self.nodes[n].size);
        if self.recent == n {
            self.recent = NIL;
        }
        let key = std::mem::take(&mut self.nodes[n].key);
        let dirty = self.nodes[n].dirty;
        // a dirty entry is written now, so the store holds it from here on
        let stored = self.nodes[n].stored || dirty;
        // the index keeps an evicted key only to say the store holds it: one probe either way
        if self.track_stored && stored {
            if let Some(slot) = self.index.get_mut(key.as_slice()) {
                *slot = Slot {
                    node: NIL,
                    stored: true,
                };
            }
        } else {
            self.index.remove(key.as_slice());
        }
        self.free.push(n);
        if dirty {
            self.unlink_dirty(n);
            self.nodes[n].stored = true;
            flushed(&key, self.nodes[n].value_len);
            self.flush(flushed);
        }
        // the freed node keeps the key's buffer for the next entry
        self.nodes[n].key = key;
    }

    fn touch(&mut self, n: usize) {
        if self.by_use.head != n {
            self.by_use.unlink(&mut self.nodes, n, used);
            self.by_use.push_front(&mut self.nodes, n, used);
        }
    }

    fn push_head(&mut self, n: usize) {
        self.by_use.push_front(&mut self.nodes, n, used);
    }

    /// Takes a dirty entry off the dirty list; it is clean then.
    fn unlink_dirty(&mut self, n: usize) {
        self.dirty.unlink(&mut self.nodes, n, written);
        self.nodes[n].dirty = false;
    }

    /// Marks an entry dirty, its write the last.
    fn push_dirty(&mut self, n: usize) {
        self.nodes[n].dirty = true;
        self.dirty.push_back(&mut self.nodes, n, written);
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
    fn a_cache_tracking_what_is_stored_knows_the_keys_it_wrote_after_evicting_them() {
        let mut written = Written::new();
        let thread = ThreadCache::new(75);
        let (mut tracking, mut plain) =
            (thread.named_tracking_stored(), ThreadCache::new(75).named());
        for cache in [&mut tracking, &mut plain] {
            assert_eq!(cache.read(b"aaaaaaaa"), Read::Absent);
            dirty(cache, b"aaaaaaaa", &mut written);
            assert_eq!(cache.read(b"aaaaaaaa"), Read::Cached);
            // b evicts a, dirty, which flushes a and then b: the store holds both
            dirty(cache, b"bbbbbbbb", &mut written);
        }
        let (a, b) = (b"aaaaaaaa".to_vec(), b"bbbbbbbb".to_vec());
        assert_eq!(written, [a.clone(), b.clone(), a, b]);
        assert_eq!(tracking.read(b"aaaaaaaa"), Read::Stored);
        assert_eq!(
            plain.read(b"aaaaaaaa"),
            Read::Absent,
            "a plain cache forgets it"
        );
        // a clean entry evicted was never written by the cache: a read finds nothing
        let mut tracking = ThreadCache::new(69).named_tracking_stored();
        tracking.put_clean(b"cccccccc", 16, &mut |_, _| panic!("clean"));
        tracking.put_clean(b"dddddddd", 16, &mut |_, _| panic!("clean"));
        assert_eq!(tracking.read(b"cccccccc"), Read::Absent);
        // a committed entry is stored, evicted or not
        let mut tracking = ThreadCache::new(1 << 20).named_tracking_stored();
        dirty(&mut tracking, b"eeeeeeee", &mut written);
        tracking.flush(&mut |_, _| {});
        tracking.put_clean(b"eeeeeeee", 16, &mut |_, _| panic!("clean"));
        assert_eq!(tracking.read(b"eeeeeeee"), Read::Cached);
    }

    #[test]
    fn a_read_modify_write_of_one_key_leaves_the_others_in_place() {
        let mut written = Written::new();
        let mut cache = RecordCache::new(1 << 20);
        for key in [b"a", b"b", b"c"] {
            dirty(&mut cache, key, &mut written);
        }
        // read b, then write another key before b again: the write of b finds b, not c
        assert!(cache.get(b"b"));
        dirty(&mut cache, b"c", &mut written);
        dirty(&mut cache, b"b", &mut written);
        cache.flush(&mut |k, _| written.push(k.to_vec()));
        assert_eq!(written, [b"a".to_vec(), b"c".to_vec(), b"b".to_vec()]);
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
