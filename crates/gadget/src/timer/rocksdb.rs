//! Flink's RocksDB timer service: per key group a `RocksDBCachingPriorityQueueSet` (an ordered
//! cache of up to 128 serialized timers in front of a column family, written through a shared
//! write batch of 500 entries), and over them a heap of key groups ordered by their head timer
//! (`KeyGroupPartitionedPriorityQueue`). Every request the real service issues is emitted.
//!
//! One concept, Flink's RocksDB timer service request for request (its cache, its write batch
//! and its key-group heap together), which is why the file is long.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::hash::Hash;
use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::Arc;

use crate::access::{Access, AccessSink, Op, StateId};
use crate::key::{Key, KeyGroupRange, KeyKind, KeyLayout};

use super::Timer;

const CACHE_CAPACITY: usize = 128;
const BATCH_CAPACITY: u32 = 500;

/// How a timer namespace is serialized into the timer key, and read back from its end.
pub trait TimerNamespace: Clone + Eq + Hash {
    /// Appends the namespace bytes.
    fn serialize_into(&self, out: &mut Vec<u8>);

    /// Reads the namespace that `bytes` end with (as [`TimerNamespace::serialize_into`] wrote
    /// it); with the number of bytes it takes. `None` when they do not end with one.
    fn deserialize_suffix(bytes: &[u8]) -> Option<(Self, usize)>;

    /// The serialized bytes as two big-endian words, for a namespace of exactly 16 bytes (a
    /// window's); `None` for every other size.
    #[inline]
    fn as_words(&self) -> Option<[u64; 2]> {
        None
    }
}

/// Bytes of a timer key kept in the words of a [`TimerKey`]; longer keys spill to its tail.
const INLINE_BYTES: usize = 32;

/// A serialized timer key without its key-group prefix (`timestamp | key | namespace`), kept as
/// big-endian words so that comparisons are word compares and short keys allocate nothing.
///
/// The derived order equals the byte-lexicographic order of the bytes: `head` holds the first
/// [`INLINE_BYTES`] bytes zero-padded, `tail` the bytes after them (empty, without an
/// allocation, for short keys) and `len` breaks ties between a key and its zero-extensions.
/// Equal heads mean equal first bytes; then a key that ends within the head sorts before one
/// that goes on (empty tail first) and two that end within it sort by length (the shorter is
/// a prefix of the longer); two long keys sort by their tails.
#[derive(Debug, Clone, Default)]
struct TimerKey {
    head: Head,
    tail: Box<[u8]>,
    len: u32,
}

impl TimerKey {
    #[inline]
    fn new(bytes: &[u8]) -> Self {
        let mut head = [0u64; INLINE_BYTES / 8];
        if bytes.len() == INLINE_BYTES {
            // the common case (long key, window namespace): four whole words
            for (word, chunk) in head.iter_mut().zip(bytes.chunks_exact(8)) {
                *word = u64::from_be_bytes(chunk.try_into().expect("8-byte chunk"));
            }
            return TimerKey {
                head: Head(head),
                tail: Box::default(),
                len: INLINE_BYTES as u32,
            };
        }
        for (word, chunk) in head.iter_mut().zip(bytes.chunks(8)) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_be_bytes(w);
        }
        let tail = match bytes.get(INLINE_BYTES..) {
            Some(rest) if !rest.is_empty() => rest.into(),
            _ => Box::default(),
        };
        TimerKey {
            head: Head(head),
            tail,
            len: bytes.len() as u32,
        }
    }

    /// The key of a timer: `timestamp | key | namespace` (no key-group prefix). A long key
    /// with a window namespace, the common case, goes straight into the words; anything else
    /// is serialized through `scratch`.
    #[inline(always)]
    fn of_timer<N: TimerNamespace>(timer: &Timer<N>, scratch: &mut Vec<u8>) -> Self {
        let timestamp = (timer.timestamp as u64) ^ (1 << 63);
        if let (Key::Long(key), Some([start, end])) = (&timer.key, timer.namespace.as_words()) {
            return TimerKey {
                head: Head([timestamp, *key as u64, start, end]),
                tail: Box::default(),
                len: INLINE_BYTES as u32,
            };
        }
        scratch.clear();
        scratch.extend_from_slice(&timestamp.to_be_bytes());
        timer.key.serialize_into(scratch);
        timer.namespace.serialize_into(scratch);
        TimerKey::new(scratch)
    }

    /// The timer's timestamp (the first word, sign bit flipped back).
    fn timestamp(&self) -> i64 {
        (self.head.0[0] ^ (1 << 63)) as i64
    }

    /// Appends `prefix` (at most 2 bytes: a key-group prefix, or none) and the key's bytes,
    /// the prefix and head composed in place and copied in one piece.
    #[inline]
    fn write_after(&self, prefix: &[u8], out: &mut Vec<u8>) {
        let mut bytes = [0u8; 2 + INLINE_BYTES];
        for (i, word) in self.head.0.iter().enumerate() {
            bytes[2 + 8 * i..10 + 8 * i].copy_from_slice(&word.to_be_bytes());
        }
        let from = 2 - prefix.len();
        bytes[from..2].copy_from_slice(prefix);
        out.extend_from_slice(&bytes[from..2 + (self.len as usize).min(INLINE_BYTES)]);
        out.extend_from_slice(&self.tail);
    }
}

impl Ord for TimerKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // the B-tree of whole keys (string keys, keys of several shapes) orders with this
        match self.head.cmp(&other.head) {
            Ordering::Equal => self.cmp_after_head(other),
            unequal => unequal,
        }
    }
}

impl TimerKey {
    /// `self < other`: the heads word by word, then what follows them.
    #[inline(always)]
    fn precedes(&self, other: &Self) -> bool {
        self.head
            .precedes_or(&other.head, || self.cmp_after_head(other) == Ordering::Less)
    }

    /// The order of two keys with equal heads.
    #[inline]
    fn cmp_after_head(&self, other: &Self) -> Ordering {
        if self.tail.is_empty() && other.tail.is_empty() {
            self.len.cmp(&other.len)
        } else {
            self.tail.cmp(&other.tail).then(self.len.cmp(&other.len))
        }
    }
}

impl PartialOrd for TimerKey {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for TimerKey {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for TimerKey {}

/// How a map entry reads its timer's key back: long and null-byte keys from the key bytes,
/// a string key from a slot of [`StringKeys`] (shared, so reading it back allocates nothing;
/// long keys, the common case, touch no slot at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyRef(u32);

impl KeyRef {
    const LONG: KeyRef = KeyRef(u32::MAX);
    const NULL_BYTE: KeyRef = KeyRef(u32::MAX - 1);
}

/// The string keys of the timers in a queue's maps, by slot; freed slots are reused.
#[derive(Debug, Clone, Default)]
struct StringKeys {
    slots: Vec<Option<Arc<str>>>,
    free: Vec<u32>,
}

impl StringKeys {
    /// How the maps refer to `key` (a string takes a slot).
    #[inline]
    fn key_ref(&mut self, key: Key) -> KeyRef {
        match key {
            Key::Long(_) => KeyRef::LONG,
            Key::NullByte => KeyRef::NULL_BYTE,
            Key::Str(s) => match self.free.pop() {
                Some(i) => {
                    self.slots[i as usize] = Some(s);
                    KeyRef(i)
                }
                None => {
                    let i = u32::try_from(self.slots.len())
                        .ok()
                        .filter(|&i| i < KeyRef::NULL_BYTE.0)
                        .expect("fewer than 2^32 - 2 timers with string keys at once");
                    self.slots.push(Some(s));
                    KeyRef(i)
                }
            },
        }
    }

    /// The string of `key_ref`, its slot freed.
    fn take(&mut self, key_ref: KeyRef) -> Arc<str> {
        self.free.push(key_ref.0);
        self.slots[key_ref.0 as usize]
            .take()
            .expect("a string key's slot is live")
    }

    /// Frees the slot of `key_ref`, if it has one.
    #[inline]
    fn forget(&mut self, key_ref: KeyRef) {
        if key_ref != KeyRef::LONG && key_ref != KeyRef::NULL_BYTE {
            self.take(key_ref);
        }
    }
}

/// Timer keys as a key group's cache or overflow keeps them. While they share one shape (one
/// length without a tail, one [`KeyRef`] without a slot: a long or null-byte key, so every
/// timer of a job with long keys) only their heads are kept, 32 bytes a key, so that
/// searches touch fewer cache lines (`Uniform`). A key of another shape turns the collection
/// into whole keys with their own [`KeyRef`]s (`Mixed`) until it runs empty.
#[derive(Debug, Clone)]
enum Shaped<H, W> {
    /// Keys of one shape: `heads`, all of length `len`, all read back as `key_ref` says.
    Uniform { heads: H, len: u32, key_ref: KeyRef },
    /// Keys of any shape, each with its own [`KeyRef`].
    Mixed(W),
}

impl<H: Default, W> Default for Shaped<H, W> {
    fn default() -> Self {
        Shaped::Uniform {
            heads: H::default(),
            len: 0,
            key_ref: KeyRef::LONG,
        }
    }
}

impl<H, W> Shaped<H, W>
where
    H: Default,
    for<'a> &'a H: IntoIterator<Item = &'a Head>,
    W: FromIterator<(TimerKey, KeyRef)>,
{
    /// Readies the layout for adding `key`, read back as `key_ref` says: an `empty`
    /// collection takes the key's shape; a uniform one the key does not fit turns mixed.
    /// Afterwards a uniform layout fits the key.
    #[inline(always)]
    fn admit(&mut self, key: &TimerKey, key_ref: KeyRef, empty: bool) {
        let fits = key.fits_head(key_ref);
        match self {
            Shaped::Uniform {
                len, key_ref: kept, ..
            } if fits && key.len == *len && key_ref == *kept => {}
            _ if fits && empty => {
                *self = Shaped::Uniform {
                    heads: H::default(),
                    len: key.len,
                    key_ref,
                }
            }
            Shaped::Uniform { .. } => self.make_mixed(),
            Shaped::Mixed(_) => {}
        }
    }

    /// Turns a uniform layout into a mixed one, keeping its keys.
    #[cold]
    fn make_mixed(&mut self) {
        if let Shaped::Uniform {
            heads,
            len,
            key_ref,
        } = self
        {
            let whole = heads
                .into_iter()
                .map(|head| (TimerKey::of_head(*head, *len), *key_ref))
                .collect();
            *self = Shaped::Mixed(whole);
        }
    }
}

/// A key group's cached timer keys in ascending order, with their [`KeyRef`]s: a sorted ring
/// buffer, so the first and last are taken in O(1) and a lookup is a binary search over at
/// most [`CACHE_CAPACITY`] keys (cheaper, at this size, than a B-tree's node scans).
type OrderedCache = Shaped<VecDeque<Head>, VecDeque<(TimerKey, KeyRef)>>;

/// The head of a timer key (its first [`INLINE_BYTES`] bytes as big-endian words), as the
/// caches and B-trees of keys of one shape keep it: 32 bytes, ordered word by word.
#[derive(Debug, Clone, Copy, Default)]
struct Head([u64; INLINE_BYTES / 8]);

impl Head {
    /// `self < other`, word by word.
    #[inline(always)]
    fn precedes(&self, other: &Head) -> bool {
        self.precedes_or(other, || false)
    }

    /// `self < other` by the first differing word (the first, a timer's timestamp, is mostly
    /// equal among a key group's timers; the second, its key, mostly decides), `if_equal` for
    /// equal heads. Written out: a separate equality test first costs more.
    #[inline(always)]
    fn precedes_or(&self, other: &Head, if_equal: impl FnOnce() -> bool) -> bool {
        let (a, b) = (&self.0, &other.0);
        if a[0] != b[0] {
            return a[0] < b[0];
        }
        if a[1] != b[1] {
            return a[1] < b[1];
        }
        if a[2] != b[2] {
            return a[2] < b[2];
        }
        if a[3] != b[3] {
            return a[3] < b[3];
        }
        if_equal()
    }
}

impl PartialEq for Head {
    /// Without a branch per word.
    #[inline(always)]
    fn eq(&self, other: &Head) -> bool {
        let (a, b) = (&self.0, &other.0);
        ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0
    }
}

impl Eq for Head {}

impl Ord for Head {
    #[inline]
    fn cmp(&self, other: &Head) -> Ordering {
        if self.precedes(other) {
            Ordering::Less
        } else if self == other {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    }
}

impl PartialOrd for Head {
    #[inline]
    fn partial_cmp(&self, other: &Head) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl TimerKey {
    /// The key of `head` for a key of `len` bytes that has no tail.
    #[inline(always)]
    fn of_head(head: Head, len: u32) -> Self {
        TimerKey {
            head,
            tail: Box::default(),
            len,
        }
    }

    /// Whether the key, read back as `key_ref` says, can be kept as its head alone (with a
    /// length and [`KeyRef`] shared by the keys beside it): it has no tail and its
    /// [`KeyRef`] needs no slot.
    #[inline(always)]
    fn fits_head(&self, key_ref: KeyRef) -> bool {
        self.tail.is_empty() && matches!(key_ref, KeyRef::LONG | KeyRef::NULL_BYTE)
    }

    /// Whether the key has no tail and `len` bytes: keys of that shape are ordered by their
    /// heads alone.
    #[inline(always)]
    fn has_shape(&self, len: u32) -> bool {
        self.tail.is_empty() && self.len == len
    }
}

impl OrderedCache {
    #[inline]
    fn len(&self) -> usize {
        match self {
            OrderedCache::Uniform { heads, .. } => heads.len(),
            OrderedCache::Mixed(entries) => entries.len(),
        }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `f` of the first cached key (or, with `back`, the last); `None` for an empty cache.
    #[inline(always)]
    fn with_end<R>(&self, back: bool, f: impl FnOnce(&TimerKey) -> R) -> Option<R> {
        match self {
            OrderedCache::Uniform { heads, len, .. } => {
                let head = if back { heads.back() } else { heads.front() }?;
                Some(f(&TimerKey::of_head(*head, *len)))
            }
            OrderedCache::Mixed(entries) => {
                let (key, _) = if back {
                    entries.back()
                } else {
                    entries.front()
                }?;
                Some(f(key))
            }
        }
    }

    /// The first key's timestamp.
    #[inline(always)]
    fn first_timestamp(&self) -> Option<i64> {
        self.with_end(false, TimerKey::timestamp)
    }

    /// Whether `key` sorts before the first cached key (or the cache is empty).
    #[inline(always)]
    fn precedes_first(&self, key: &TimerKey) -> bool {
        self.with_end(false, |first| key.precedes(first))
            .unwrap_or(true)
    }

    /// Whether `key` sorts before the last cached key (false for an empty cache).
    #[inline(always)]
    fn precedes_last(&self, key: &TimerKey) -> bool {
        self.with_end(true, |last| key.precedes(last))
            .unwrap_or(false)
    }

    /// Whether `key` is the first cached key.
    #[inline(always)]
    fn is_first(&self, key: &TimerKey) -> bool {
        self.with_end(false, |first| first == key).unwrap_or(false)
    }

    /// Whether `key` is the last cached key.
    #[inline(always)]
    fn is_last(&self, key: &TimerKey) -> bool {
        self.with_end(true, |last| last == key).unwrap_or(false)
    }

    /// Takes the first cached key (or, with `back`, the last).
    #[inline(always)]
    fn pop_end(&mut self, back: bool) -> Option<(TimerKey, KeyRef)> {
        match self {
            OrderedCache::Uniform {
                heads,
                len,
                key_ref,
            } => {
                let head = if back {
                    heads.pop_back()
                } else {
                    heads.pop_front()
                }?;
                Some((TimerKey::of_head(head, *len), *key_ref))
            }
            OrderedCache::Mixed(entries) => {
                if back {
                    entries.pop_back()
                } else {
                    entries.pop_front()
                }
            }
        }
    }

    #[inline]
    fn pop_first(&mut self) -> Option<(TimerKey, KeyRef)> {
        self.pop_end(false)
    }

    #[inline]
    fn pop_last(&mut self) -> Option<(TimerKey, KeyRef)> {
        self.pop_end(true)
    }

    /// Where `key` is (`Ok`), or where it would go (`Err`).
    #[inline]
    fn search(&self, key: &TimerKey) -> Result<usize, usize> {
        match self {
            OrderedCache::Uniform { heads, len, .. } if key.has_shape(*len) => {
                // a key of the cached shape: heads alone order it
                let head = key.head;
                ring_search(heads, |h| h.precedes(&head), |h| *h == head)
            }
            _ => self.search_any_shape(key),
        }
    }

    /// [`OrderedCache::search`] for a mixed cache, or a key of another shape than a uniform
    /// cache's.
    #[inline(never)]
    fn search_any_shape(&self, key: &TimerKey) -> Result<usize, usize> {
        match self {
            OrderedCache::Uniform { heads, len, .. } => {
                // a key of another shape is none of the cached ones
                ring_search(
                    heads,
                    |head| TimerKey::of_head(*head, *len).precedes(key),
                    |_| false,
                )
            }
            OrderedCache::Mixed(entries) => {
                ring_search(entries, |(k, _)| k.precedes(key), |(k, _)| k == key)
            }
        }
    }

    /// Inserts `key` at `index`, which [`OrderedCache::search`] returned for it as `Err`.
    #[inline]
    fn insert_at(&mut self, index: usize, key: TimerKey, key_ref: KeyRef) {
        debug_assert!(self.search(&key) == Err(index), "inserted out of order");
        self.admit(&key, key_ref, self.is_empty());
        match self {
            OrderedCache::Uniform { heads, .. } => heads.insert(index, key.head),
            OrderedCache::Mixed(entries) => entries.insert(index, (key, key_ref)),
        }
    }

    /// Appends `key`, which sorts after every cached key.
    fn push_last(&mut self, key: TimerKey, key_ref: KeyRef) {
        debug_assert!(
            self.is_empty() || self.search(&key) == Err(self.len()),
            "appended out of order"
        );
        self.insert_at(self.len(), key, key_ref);
    }

    /// Removes `key`; its [`KeyRef`] if it was cached.
    fn remove(&mut self, key: &TimerKey) -> Option<KeyRef> {
        let index = self.search(key).ok()?;
        match self {
            OrderedCache::Uniform { heads, key_ref, .. } => heads.remove(index).map(|_| *key_ref),
            OrderedCache::Mixed(entries) => entries.remove(index).map(|(_, key_ref)| key_ref),
        }
    }

    /// The cached keys in order, with their [`KeyRef`]s.
    #[cfg(test)]
    fn entries(&self) -> Vec<(TimerKey, KeyRef)> {
        let mut copy = self.clone();
        std::iter::from_fn(|| copy.pop_first()).collect()
    }
}

/// Where, in the sorted ring buffer `entries`, a key is (`Ok`) or would go (`Err`), given
/// which entries precede it and which equals it. Keys outside the cached range (a timer just
/// polled and now removed, a timer later than every cached one) take no search.
#[inline(always)]
fn ring_search<T>(
    entries: &VecDeque<T>,
    precedes_key: impl Fn(&T) -> bool,
    equals_key: impl Fn(&T) -> bool,
) -> Result<usize, usize> {
    let (Some(first), Some(last)) = (entries.front(), entries.back()) else {
        return Err(0);
    };
    if !precedes_key(first) && !equals_key(first) {
        return Err(0);
    }
    if precedes_key(last) {
        return Err(entries.len());
    }
    let (front, back) = entries.as_slices();
    let (slice, offset) = match back.first() {
        Some(first) if precedes_key(first) || equals_key(first) => (back, front.len()),
        _ => (front, 0),
    };
    let index = lower_bound(slice, &precedes_key);
    match slice.get(index) {
        Some(entry) if equals_key(entry) => Ok(offset + index),
        _ => Err(offset + index),
    }
}

/// The first index of sorted `entries` that does not precede the key (`entries.len()` when
/// there is none); a binary search whose steps do not branch on the comparisons.
#[inline(always)]
fn lower_bound<T>(entries: &[T], precedes_key: &impl Fn(&T) -> bool) -> usize {
    if entries.is_empty() {
        return 0;
    }
    let mut base = 0;
    let mut size = entries.len();
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        if precedes_key(&entries[mid]) {
            base = mid;
        }
        size -= half;
    }
    base + usize::from(precedes_key(&entries[base]))
}

/// Slots of [`CachedTimers`]: room for the hot keys' timers, in few enough cache lines
/// (192 KiB) that the table stays in the core's caches beside the key groups' caches.
const CACHED_TIMER_SLOTS: usize = 1 << 12;

/// Timer keys known to be in their key group's cache: a direct-mapped table of keys that are
/// their heads alone (32 bytes: a long key's timer with a window namespace), so that
/// registering a timer that is cached already takes one load instead of a search of the
/// cache. Window operators register a window's timer again with each of its elements: with
/// skewed keys, most registrations are of cached timers.
///
/// An entry says that the key was in its key group's cache when the group had seen
/// [`KeyGroupQueue::cache_removals`] removals; while that count stands, the key is cached
/// still (adds remove nothing). A key enters the table when a registration finds it cached,
/// that is, on its second registration: keys registered once (cold keys) leave the hot keys'
/// entries alone. A newer key may take the slot: then the next registration of the older
/// one searches the cache again.
#[derive(Debug, Clone)]
struct CachedTimers {
    slots: Box<[CachedTimer]>,
}

/// A slot of [`CachedTimers`]: a cached key, its key group ([`CachedTimer::EMPTY`]'s when the
/// slot holds none) and that group's removal count then.
#[derive(Debug, Clone, Copy)]
struct CachedTimer {
    head: Head,
    removals: u64,
    group: u32,
}

impl CachedTimer {
    const EMPTY: CachedTimer = CachedTimer {
        head: Head([0; INLINE_BYTES / 8]),
        removals: 0,
        group: u32::MAX,
    };
}

impl Default for CachedTimers {
    fn default() -> Self {
        CachedTimers {
            slots: vec![CachedTimer::EMPTY; CACHED_TIMER_SLOTS].into_boxed_slice(),
        }
    }
}

impl CachedTimers {
    /// The slot of `head`, from its first two words, a timer's timestamp and key (a key's
    /// timers of one window differ in their timestamps, a window's timers in their keys).
    #[inline(always)]
    fn slot(head: &Head) -> usize {
        let [timestamp, key, ..] = head.0;
        let mixed = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ timestamp)
            .wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (mixed >> (64 - CACHED_TIMER_SLOTS.trailing_zeros())) as usize
    }

    /// Whether the table knows `key` to be in the cache of key group `g`, which has seen
    /// `removals` removals.
    #[inline(always)]
    fn holds(&self, key: &TimerKey, g: usize, removals: u64) -> bool {
        if !key.has_shape(INLINE_BYTES as u32) {
            return false;
        }
        let entry = &self.slots[Self::slot(&key.head)];
        entry.head == key.head && entry.group as usize == g && entry.removals == removals
    }

    /// Notes that the cache of key group `g`, after `removals` removals, holds `key` (a key
    /// with a tail, or shorter than a head, is left out).
    #[inline(always)]
    fn record(&mut self, key: &TimerKey, g: usize, removals: u64) {
        if key.has_shape(INLINE_BYTES as u32) {
            self.slots[Self::slot(&key.head)] = CachedTimer {
                head: key.head,
                removals,
                group: g as u32,
            };
        }
    }
}

/// A key group's timer keys that only RocksDB has, in order, with their [`KeyRef`]s: B-trees,
/// whose nodes span half the cache lines with heads alone.
type Overflow = Shaped<BTreeSet<Head>, BTreeMap<TimerKey, KeyRef>>;

impl Overflow {
    fn is_empty(&self) -> bool {
        match self {
            Overflow::Uniform { heads, .. } => heads.is_empty(),
            Overflow::Mixed(keys) => keys.is_empty(),
        }
    }

    /// Adds `key`; the [`KeyRef`] it replaces if it was there already (the key stays).
    #[inline]
    fn insert(&mut self, key: TimerKey, key_ref: KeyRef) -> Option<KeyRef> {
        self.admit(&key, key_ref, self.is_empty());
        match self {
            Overflow::Uniform { heads, .. } => (!heads.insert(key.head)).then_some(key_ref),
            Overflow::Mixed(keys) => keys.insert(key, key_ref),
        }
    }

    /// Removes `key`; its [`KeyRef`] if it was there.
    #[inline]
    fn remove(&mut self, key: &TimerKey) -> Option<KeyRef> {
        match self {
            Overflow::Uniform {
                heads,
                len,
                key_ref,
            } => (key.has_shape(*len) && heads.remove(&key.head)).then_some(*key_ref),
            Overflow::Mixed(keys) => keys.remove(key),
        }
    }

    /// Where the uniform keys (of `len` bytes) not below `from` start: a head equal to
    /// `from`'s is not below it when `from` is no longer (a key with a tail is longer).
    fn bound(from: &TimerKey, len: u32) -> Bound<Head> {
        if from.len <= len {
            Bound::Included(from.head)
        } else {
            Bound::Excluded(from.head)
        }
    }

    /// Whether there is a key not below `from`.
    fn has_from(&self, from: &TimerKey) -> bool {
        match self {
            Overflow::Uniform { heads, len, .. } => heads
                .range((Self::bound(from, *len), Bound::Unbounded))
                .next()
                .is_some(),
            Overflow::Mixed(keys) => keys.range(from..).next().is_some(),
        }
    }

    /// Removes and returns the first key not below `from`.
    fn pop_first_from(&mut self, from: &TimerKey) -> Option<(TimerKey, KeyRef)> {
        match self {
            Overflow::Uniform {
                heads,
                len,
                key_ref,
            } => {
                let head = *heads
                    .range((Self::bound(from, *len), Bound::Unbounded))
                    .next()?;
                heads.remove(&head);
                Some((TimerKey::of_head(head, *len), *key_ref))
            }
            Overflow::Mixed(keys) => {
                let key = keys.range(from..).next()?.0.clone();
                let key_ref = keys.remove(&key)?;
                Some((key, key_ref))
            }
        }
    }

    /// The keys in order, with their [`KeyRef`]s.
    #[cfg(test)]
    fn entries(&self) -> Vec<(TimerKey, KeyRef)> {
        let mut copy = self.clone();
        std::iter::from_fn(|| copy.pop_first_from(&TimerKey::default())).collect()
    }
}

/// One key group. RocksDB holds `cache ∪ overflow`: the cache is written through, so every
/// cached timer is also in RocksDB, and `overflow` holds the timers only RocksDB has.
///
/// Laid out so that what every registration reads (the cache's bounds, `all_in_cache`)
/// shares the first cache line of the group, which starts a line: a registration of a
/// random key group touches one line of it, not two.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
struct KeyGroupQueue {
    /// Timer keys, with what it takes to read the timer back from them: the bytes hold its
    /// timestamp, key and namespace; [`KeyRef`] says how to read the key.
    cache: OrderedCache,
    all_in_cache: bool,
    outer_index: usize,
    /// Timers that left the cache so far (polled, removed, dropped to RocksDB alone): while
    /// it stands, a timer [`CachedTimers`] saw in the cache is there still.
    cache_removals: u64,
    /// Timer keys only RocksDB has, as in `cache`.
    overflow: Overflow,
    /// Where a reload seeks, as requested: the full bytes of the hint (the key group's prefix,
    /// or the last timer key that left an emptied cache) and a zero byte after them, as Flink's
    /// `RocksBytesIterator` seeks to `Arrays.copyOf(seekHint, seekHint.length + 1)`.
    seek_hint: Vec<u8>,
    /// `seek_hint` without the key-group prefix.
    seek_from: TimerKey,
}

// what a registration reads stays within the group's first cache line
const _: () = assert!(std::mem::offset_of!(KeyGroupQueue, cache_removals) + 8 <= 64);

/// The event-time timer queue of one RocksDB timer service.
#[derive(Debug, Clone)]
pub struct RocksDbTimerQueue<N: TimerNamespace> {
    timer_state: StateId,
    batch_state: StateId,
    /// The processing-time queue's column family: Flink makes and loads it at start-up
    /// whatever the operator's timers, and it stays empty.
    processing_state: StateId,
    layout: KeyLayout,
    groups: Vec<KeyGroupQueue>,
    /// The timers are read back from their keys on poll (no copy of them is kept).
    namespace: PhantomData<N>,
    /// The string keys of the timers in the maps.
    strings: StringKeys,
    /// Timers known to be cached, so that registering them again takes no search.
    cached: CachedTimers,
    /// The heap of key groups, 1-based as in Flink.
    outer: Vec<usize>,
    batch_entries: u32,
    /// The full bytes of the timer key of the last request (the repeated-add and
    /// polled-removal shortcuts issue them again). Also scratch for timer keys off
    /// [`TimerKey::of_timer`]'s direct path: whatever uses it replaces `last_add` and clears
    /// `last_poll`, so the shortcuts never read the scratch.
    key: Vec<u8>,
    /// The timer of the last [`RocksDbTimerQueue::add`], its key group and where it went;
    /// cleared by anything else that changes the queue.
    last_add: Option<(Timer<N>, usize, Placement)>,
    /// The timer of the last [`RocksDbTimerQueue::poll`] and its key group, whose key bytes
    /// `key` still holds; cleared by anything else that changes the queue.
    last_poll: Option<(Timer<N>, usize)>,
}

/// Writes the full bytes of timer key `key` of key group `g` into `out`.
#[inline]
fn write_full_key(layout: &KeyLayout, g: usize, key: &TimerKey, out: &mut Vec<u8>) {
    let (prefix, from) = layout.key_group_bytes(g as u32);
    out.clear();
    key.write_after(&prefix[from..], out);
}

/// Where an added timer went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Into the key group's cache (or it was cached already).
    Cache,
    /// Only into RocksDB.
    Store,
}

impl<N: TimerNamespace> RocksDbTimerQueue<N> {
    /// A queue writing timer requests to `timer_state` and batch commits to `batch_state`;
    /// `processing_state` is the processing-time queue beside it (see [`Self::start_up`]).
    pub fn new(
        max_parallelism: u32,
        timer_state: StateId,
        batch_state: StateId,
        processing_state: StateId,
    ) -> Self {
        let layout = KeyLayout::new(max_parallelism);
        let groups = (0..max_parallelism as usize)
            .map(|g| KeyGroupQueue {
                cache: OrderedCache::default(),
                overflow: Overflow::default(),
                all_in_cache: true,
                seek_hint: {
                    let mut prefix = Vec::new();
                    layout.push_key_group(g as u32, &mut prefix);
                    prefix.push(0);
                    prefix
                },
                seek_from: TimerKey::default(),
                outer_index: g + 1,
                cache_removals: 0,
            })
            .collect();
        let mut outer = vec![usize::MAX];
        outer.extend(0..max_parallelism as usize);
        RocksDbTimerQueue {
            timer_state,
            batch_state,
            processing_state,
            layout,
            groups,
            outer,
            namespace: PhantomData,
            strings: StringKeys::default(),
            cached: CachedTimers::default(),
            batch_entries: 0,
            key: Vec::with_capacity(64),
            last_add: None,
            last_poll: None,
        }
    }

    /// Keeps only the key groups of `range` in the heap of key groups: a subtask's
    /// `KeyGroupPartitionedPriorityQueue` holds one queue per key group of its own range, in
    /// order, so timers of equal time pop in the order those alone give. Before any timer is
    /// added; a range of other key groups than the queue's, or an empty one, changes nothing.
    pub fn restrict_to(&mut self, range: KeyGroupRange) {
        if range.is_empty()
            || range.max_parallelism != self.layout.max_parallelism()
            || range.end as usize >= self.groups.len()
        {
            return;
        }
        for group in &mut self.groups {
            // index 0 is no heap slot: `adjust` leaves such a group alone
            group.outer_index = 0;
        }
        self.outer.truncate(1);
        for g in range.groups() {
            self.groups[g as usize].outer_index = self.outer.len();
            self.outer.push(g as usize);
        }
    }

    /// What Flink's timer service issues when it is made, before the first input: it builds
    /// the processing-time queue and then the event-time one (`InternalTimerServiceImpl`),
    /// each a `KeyGroupPartitionedPriorityQueue` that adds its key groups' sets to its heap
    /// one by one. Adding a set compares its head with its parent's, and the first look at a
    /// set's head (`RocksDBCachingPriorityQueueSet.peek`, its cache not yet known complete)
    /// commits the write batch, empty, and seeks to the key group's prefix, finding nothing.
    /// So the second key group is loaded first, then the first, then the others in order;
    /// a subtask of one key group compares nothing and loads nothing.
    pub fn start_up(&mut self, out: &mut dyn AccessSink) {
        let heap = &self.outer[1..];
        if heap.len() < 2 {
            return;
        }
        let order: Vec<usize> = [heap[1], heap[0]]
            .into_iter()
            .chain(heap[2..].iter().copied())
            .collect();
        for state in [self.processing_state, self.timer_state] {
            for &g in &order {
                self.flush(out);
                out.access(Access {
                    op: Op::Seek,
                    state,
                    key: &self.groups[g].seek_hint,
                    value_len: 0,
                });
            }
        }
    }

    /// The timer's key group and its key without the key-group prefix (`self.key` is left
    /// alone: the full bytes are written only for a request, by [`write_full_key`]).
    #[inline]
    fn timer_key(&mut self, timer: &Timer<N>) -> (usize, TimerKey) {
        let g = self.layout.cached_key_group(&timer.key) as usize;
        (g, TimerKey::of_timer(timer, &mut self.key))
    }

    /// The timer whose full key bytes are in `self.key`, its key as `key_ref` says (a string
    /// key leaves [`StringKeys`]).
    fn deserialize(&mut self, key_ref: KeyRef) -> Timer<N> {
        let bytes = &self.key[self.layout.prefix_bytes()..];
        let (timestamp, rest) = bytes.split_at(8);
        let timestamp =
            (u64::from_be_bytes(timestamp.try_into().expect("8 bytes")) ^ (1 << 63)) as i64;
        let (namespace, namespace_len) =
            N::deserialize_suffix(rest).expect("a timer key ends with its namespace");
        let key_bytes = &rest[..rest.len() - namespace_len];
        let key = match key_ref {
            KeyRef::LONG => Key::deserialize(KeyKind::Long, key_bytes),
            KeyRef::NULL_BYTE => Key::deserialize(KeyKind::NullByte, key_bytes),
            string => Some(Key::Str(self.strings.take(string))),
        }
        .expect("a timer key holds the key it was written with");
        Timer {
            timestamp,
            key,
            namespace,
        }
    }

    /// Writes the full bytes of `key` of key group `g` into `self.key`.
    #[inline]
    fn unserialize(&mut self, g: usize, key: &TimerKey) {
        write_full_key(&self.layout, g, key, &mut self.key);
    }

    /// Adds the timer key in `self.key` to the write batch.
    #[inline]
    fn batch_entry(&mut self, op: Op, out: &mut dyn AccessSink) {
        out.access(Access {
            op,
            state: self.timer_state,
            key: &self.key,
            value_len: 0,
        });
        self.batch_entries += 1;
        if self.batch_entries == BATCH_CAPACITY {
            self.flush(out);
        }
    }

    /// `RocksDBWriteBatchWrapper.flush()`: commits the batch, even an empty one.
    fn flush(&mut self, out: &mut dyn AccessSink) {
        out.access(Access {
            op: Op::BatchCommit,
            state: self.batch_state,
            key: &[],
            value_len: self.batch_entries,
        });
        self.batch_entries = 0;
    }

    /// `RocksDBWriteBatchWrapper.close()`: commits what is pending at the end of the job.
    pub fn close(&mut self, out: &mut dyn AccessSink) {
        if self.batch_entries != 0 {
            self.flush(out);
        }
    }

    /// `checkRefillCacheFromStore`: an empty cache with timers in the store reloads up to 128.
    #[inline]
    fn check_refill(&mut self, g: usize, out: &mut dyn AccessSink) {
        if !self.groups[g].all_in_cache && self.groups[g].cache.is_empty() {
            self.refill(g, out);
        }
    }

    /// Reloads the empty cache of key group `g` from the timers only RocksDB has.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, g: usize, out: &mut dyn AccessSink) {
        self.flush(out);
        out.access(Access {
            op: Op::Seek,
            state: self.timer_state,
            key: &self.groups[g].seek_hint,
            value_len: 0,
        });
        let group = &mut self.groups[g];
        let mut loaded = 0;
        while loaded < CACHE_CAPACITY {
            let Some((key, key_ref)) = group.overflow.pop_first_from(&group.seek_from) else {
                break;
            };
            group.cache.push_last(key, key_ref);
            loaded += 1;
        }
        let more = group.overflow.has_from(&group.seek_from);
        for _ in 0..loaded {
            out.access(Access {
                op: Op::Next,
                state: self.timer_state,
                key: &[],
                value_len: 0,
            });
        }
        self.groups[g].all_in_cache = !more;
    }

    #[inline]
    fn group_peek(&mut self, g: usize, out: &mut dyn AccessSink) -> Option<i64> {
        self.check_refill(g, out);
        self.groups[g].cache.first_timestamp()
    }

    /// `InternalPriorityQueueComparator`: by head timestamp, empty groups last.
    #[inline]
    fn less(&mut self, a: usize, b: usize, out: &mut dyn AccessSink) -> bool {
        let left = self.group_peek(a, out);
        let right = self.group_peek(b, out);
        match (left, right) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(l), Some(r)) => l < r,
        }
    }

    fn outer_move(&mut self, g: usize, idx: usize) {
        self.outer[idx] = g;
        self.groups[g].outer_index = idx;
    }

    fn adjust(&mut self, g: usize, out: &mut dyn AccessSink) {
        let idx = self.groups[g].outer_index;
        if self.outer[idx] != g {
            return;
        }
        self.sift_down(idx, out);
        if self.outer[idx] == g {
            self.sift_up(idx, out);
        }
    }

    fn sift_up(&mut self, mut idx: usize, out: &mut dyn AccessSink) {
        let current = self.outer[idx];
        let mut parent = idx >> 1;
        while parent > 0 && self.less(current, self.outer[parent], out) {
            self.outer_move(self.outer[parent], idx);
            idx = parent;
            parent >>= 1;
        }
        self.outer_move(current, idx);
    }

    fn sift_down(&mut self, mut idx: usize, out: &mut dyn AccessSink) {
        let size = self.outer.len() - 1;
        let current = self.outer[idx];
        let mut first = idx << 1;
        let mut second = first + 1;
        if second <= size && self.less(self.outer[second], self.outer[first], out) {
            first = second;
        }
        while first <= size && self.less(self.outer[first], current, out) {
            self.outer_move(self.outer[first], idx);
            idx = first;
            first = idx << 1;
            second = first + 1;
            if second <= size && self.less(self.outer[second], self.outer[first], out) {
                first = second;
            }
        }
        self.outer_move(current, idx);
    }

    /// Registers a timer (`KeyGroupPartitionedPriorityQueue.add`).
    ///
    /// The maps are updated before the batch put is emitted: only the requests' order matters.
    ///
    /// Adding the timer just added once more (Flink's window operators do, when a window's
    /// cleanup time is its end) issues the requests of a second add without redoing its work
    /// where the outcome is known: a timer that went only to RocksDB goes there again
    /// (another batch put); one cached in a key group whose cache is not full and holds all
    /// its timers is de-duplicated (no request).
    // Inlined into `TimerQueue::add`: 0.2% fewer instructions on the bench configs than a call.
    #[inline]
    pub fn add(&mut self, timer: Timer<N>, out: &mut dyn AccessSink) {
        self.add_copies(&timer, 1, out);
    }

    /// Registers a timer twice in a row, as [`RocksDbTimerQueue::add`] twice: Flink's window
    /// operators do when a window's cleanup time is its end. A timer that goes only to
    /// RocksDB gets both batch puts in one call to the sink, so that the sink handles their
    /// one key once; one that goes to the cache is searched for once.
    #[inline]
    pub fn add_twice(&mut self, timer: Timer<N>, out: &mut dyn AccessSink) {
        self.add_copies(&timer, 2, out);
    }

    /// Registers `timer` `copies` times in a row (1 or 2).
    #[inline(always)]
    fn add_copies(&mut self, timer: &Timer<N>, copies: u32, out: &mut dyn AccessSink) {
        self.last_poll = None;
        if let Some((last, g, placement)) = &self.last_add {
            if last == timer {
                let group = &self.groups[*g];
                match placement {
                    Placement::Store => {
                        self.batch_puts(copies, out);
                        return;
                    }
                    Placement::Cache
                        if group.all_in_cache && group.cache.len() < CACHE_CAPACITY =>
                    {
                        return; // de-duplicated, however often
                    }
                    Placement::Cache => {}
                }
            }
        }
        let (g, key) = self.timer_key(timer);
        self.check_refill(g, out);
        let group = &mut self.groups[g];
        let full = group.cache.len() >= CACHE_CAPACITY;
        if !full && group.all_in_cache && self.cached.holds(&key, g, group.cache_removals) {
            // cached already, where the search below finds it: de-duplicated, no request
            self.last_add = Some((timer.clone(), g, Placement::Cache));
            return;
        }
        let goes_to_cache = (!full && group.all_in_cache) || group.cache.precedes_last(&key);
        if goes_to_cache {
            let head_changed = group.cache.precedes_first(&key);
            self.last_add = Some((timer.clone(), g, Placement::Cache));
            if full {
                // Flink drops the lowest-priority cached timer before it adds the new one
                // (which sorts before it), also when the new one is cached already: the
                // dropped timer now lives only in RocksDB
                if let Some((k, key_ref)) = group.cache.pop_last() {
                    group.cache_removals += 1;
                    if let Some(old) = group.overflow.insert(k, key_ref) {
                        self.strings.forget(old);
                    }
                }
                group.all_in_cache = false;
            }
            let index = match group.cache.search(&key) {
                // the cache de-duplicates: no request
                Ok(index) => {
                    // registered again: likely a hot key's, worth a slot in the table
                    if !full && group.all_in_cache {
                        self.cached.record(&key, g, group.cache_removals);
                    }
                    index
                }
                Err(index) => {
                    write_full_key(&self.layout, g, &key, &mut self.key);
                    group
                        .cache
                        .insert_at(index, key, self.strings.key_ref(timer.key.clone()));
                    self.batch_entry(Op::BatchPut, out);
                    if head_changed {
                        self.adjust(g, out);
                    }
                    index
                }
            };
            if copies == 2 {
                let is_last = index + 1 == self.groups[g].cache.len();
                self.add_cached_again(g, is_last, out);
            }
        } else {
            self.last_add = Some((timer.clone(), g, Placement::Store));
            write_full_key(&self.layout, g, &key, &mut self.key);
            // A timer equal to the full cache's last is rewritten where it already is: it
            // stays cached, and is not one RocksDB alone has (else it would fire again after
            // a reload). Any other timer here sorts after every cached one.
            if !group.cache.is_last(&key) {
                let key_ref = self.strings.key_ref(timer.key.clone());
                if let Some(old) = group.overflow.insert(key, key_ref) {
                    self.strings.forget(old);
                }
            }
            group.all_in_cache = false;
            self.batch_puts(copies, out);
        }
    }

    /// Registers once more the timer that the last add put into (or found in) the cache of
    /// key group `g`, where it is the last cached timer if `is_last`: the outcome of a full
    /// add without its search. Flink drops the full cache's last timer to RocksDB before it
    /// finds the timer cached (no request); the last timer itself sorts after no cached one,
    /// so it is written to RocksDB again.
    #[inline]
    fn add_cached_again(&mut self, g: usize, is_last: bool, out: &mut dyn AccessSink) {
        let group = &mut self.groups[g];
        let full = group.cache.len() >= CACHE_CAPACITY;
        if !full && group.all_in_cache {
            return;
        }
        group.all_in_cache = false;
        if !is_last {
            if full {
                if let Some((k, key_ref)) = group.cache.pop_last() {
                    group.cache_removals += 1;
                    if let Some(old) = group.overflow.insert(k, key_ref) {
                        self.strings.forget(old);
                    }
                }
            }
            return;
        }
        if let Some((_, _, placement)) = self.last_add.as_mut() {
            *placement = Placement::Store;
        }
        let group = &self.groups[g];
        group.cache.with_end(true, |last| {
            write_full_key(&self.layout, g, last, &mut self.key);
        });
        self.batch_entry(Op::BatchPut, out);
    }

    /// Adds `copies` (1 or 2) batch puts of the timer key in `self.key` to the write batch;
    /// two in one call to the sink unless a commit falls between them.
    #[inline]
    fn batch_puts(&mut self, copies: u32, out: &mut dyn AccessSink) {
        if copies == 2 && self.batch_entries + 2 <= BATCH_CAPACITY {
            out.access_all(
                self.timer_state,
                &self.key,
                &[(Op::BatchPut, 0), (Op::BatchPut, 0)],
            );
            self.batch_entries += 2;
            if self.batch_entries == BATCH_CAPACITY {
                self.flush(out);
            }
        } else {
            for _ in 0..copies {
                self.batch_entry(Op::BatchPut, out);
            }
        }
    }

    /// Deletes a timer (`KeyGroupPartitionedPriorityQueue.remove`); a key group with no cached
    /// timer returns early without a request.
    ///
    /// Deleting the timer just polled (Flink's window operators do, as they clear a fired
    /// window) issues what the full removal issues without searching for it: it is neither
    /// cached nor among the timers only RocksDB has, and its key group's head stays.
    pub fn remove(&mut self, timer: &Timer<N>, out: &mut dyn AccessSink) {
        self.last_add = None;
        if let Some((polled, g)) = self.last_poll.take() {
            if polled == *timer {
                self.check_refill(g, out);
                if !self.groups[g].cache.is_empty() {
                    self.batch_entry(Op::BatchDelete, out);
                }
                return;
            }
        }
        let (g, key) = self.timer_key(timer);
        self.check_refill(g, out);
        if self.groups[g].cache.is_empty() {
            return;
        }
        // removing any other timer leaves the head in place
        let was_head = self.groups[g].cache.is_first(&key);
        self.unserialize(g, &key);
        self.batch_entry(Op::BatchDelete, out);
        let group = &mut self.groups[g];
        if let Some(old) = group.overflow.remove(&key) {
            self.strings.forget(old);
        }
        if let Some(old) = group.cache.remove(&key) {
            group.cache_removals += 1;
            self.strings.forget(old);
        }
        let changed = if group.cache.is_empty() {
            group.seek_hint.clear();
            group.seek_hint.extend_from_slice(&self.key);
            group.seek_hint.push(0);
            group.seek_from = key;
            true
        } else {
            was_head
        };
        if changed {
            self.adjust(g, out);
        }
    }

    /// The timestamp of the next timer (may reload a key group's cache).
    pub fn peek_timestamp(&mut self, out: &mut dyn AccessSink) -> Option<i64> {
        let g = self.outer[1];
        self.group_peek(g, out)
    }

    /// Removes and returns the next timer.
    pub fn poll(&mut self, out: &mut dyn AccessSink) -> Option<Timer<N>> {
        self.last_add = None;
        self.last_poll = None;
        let g = self.outer[1];
        self.check_refill(g, out);
        let result = self.groups[g].cache.pop_first().map(|(key, key_ref)| {
            self.groups[g].cache_removals += 1;
            self.unserialize(g, &key);
            let timer = self.deserialize(key_ref);
            self.last_poll = Some((timer.clone(), g));
            self.batch_entry(Op::BatchDelete, out);
            let group = &mut self.groups[g];
            if group.cache.is_empty() {
                group.seek_hint.clear();
                group.seek_hint.extend_from_slice(&self.key);
                group.seek_hint.push(0);
                group.seek_from = key;
            }
            timer
        });
        self.adjust(g, out);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::{
        CachedTimer, CachedTimers, KeyRef, OrderedCache, Overflow, RocksDbTimerQueue, TimerKey,
        TimerNamespace, CACHE_CAPACITY, INLINE_BYTES,
    };
    use crate::access::{Op, TraceRecord, VecSink};
    use crate::key::{Key, KeyLayout};
    use crate::timer::Timer;
    use proptest::prelude::*;

    /// Flink's write batch (`RocksDBWriteBatchWrapper`), shared by every key group: it records
    /// the requests and commits every 500 entries.
    #[derive(Default)]
    struct FlinkBatch {
        entries: u32,
        requests: Requests,
    }

    impl FlinkBatch {
        fn entry(&mut self, op: Op, key: &[u8]) {
            self.requests.push((op, key.to_vec()));
            self.entries += 1;
            if self.entries == 500 {
                self.flush();
            }
        }

        fn flush(&mut self) {
            self.requests.push((Op::BatchCommit, Vec::new()));
            self.entries = 0;
        }
    }

    /// Flink's `RocksDBCachingPriorityQueueSet` for one key group, written as plainly as its
    /// Java: a sorted cache of at most 128 keys, written through to a sorted store, reloaded
    /// from the store (from the last key removed) when it runs empty while the store holds
    /// more. `add` and `remove` answer whether the head may have changed, as Flink's do.
    #[derive(Default)]
    struct FlinkQueueSet {
        cache: std::collections::BTreeSet<Vec<u8>>,
        store: std::collections::BTreeSet<Vec<u8>>,
        not_all_in_cache: bool,
        seek_hint: Vec<u8>,
    }

    impl FlinkQueueSet {
        fn check_refill(&mut self, batch: &mut FlinkBatch) {
            if self.not_all_in_cache && self.cache.is_empty() {
                batch.flush();
                // `RocksBytesIterator` seeks past the hint: a zero byte appended
                let mut target = self.seek_hint.clone();
                target.push(0);
                batch.requests.push((Op::Seek, target));
                let from: Vec<Vec<u8>> = self
                    .store
                    .range(self.seek_hint.clone()..)
                    .cloned()
                    .collect();
                for key in from.iter().take(CACHE_CAPACITY) {
                    self.cache.insert(key.clone());
                    batch.requests.push((Op::Next, Vec::new()));
                }
                self.not_all_in_cache = from.len() > CACHE_CAPACITY;
            }
        }

        fn add(&mut self, key: Vec<u8>, batch: &mut FlinkBatch) -> bool {
            self.check_refill(batch);
            let full = self.cache.len() >= CACHE_CAPACITY;
            let before_last = self.cache.last().is_some_and(|last| key < *last);
            if (!full && !self.not_all_in_cache) || before_last {
                if full {
                    self.cache.pop_last();
                    self.not_all_in_cache = true;
                }
                if self.cache.insert(key.clone()) {
                    self.store.insert(key.clone());
                    batch.entry(Op::BatchPut, &key);
                    return self.cache.first() == Some(&key);
                }
            } else {
                self.store.insert(key.clone());
                batch.entry(Op::BatchPut, &key);
                self.not_all_in_cache = true;
            }
            false
        }

        fn peek(&mut self, batch: &mut FlinkBatch) -> Option<Vec<u8>> {
            self.check_refill(batch);
            self.cache.first().cloned()
        }

        fn poll(&mut self, batch: &mut FlinkBatch) -> Option<Vec<u8>> {
            self.check_refill(batch);
            let first = self.cache.pop_first()?;
            self.store.remove(&first);
            batch.entry(Op::BatchDelete, &first);
            if self.cache.is_empty() {
                self.seek_hint = first.clone();
            }
            Some(first)
        }

        fn remove(&mut self, key: Vec<u8>, batch: &mut FlinkBatch) -> bool {
            self.check_refill(batch);
            let Some(old_head) = self.cache.first().cloned() else {
                return false;
            };
            self.store.remove(&key);
            batch.entry(Op::BatchDelete, &key);
            self.cache.remove(&key);
            if self.cache.is_empty() {
                self.seek_hint = key;
                return true;
            }
            self.cache.first() != Some(&old_head)
        }
    }

    /// Flink's `KeyGroupPartitionedPriorityQueue` over one [`FlinkQueueSet`] per key group, as
    /// plainly as its Java: a `HeapPriorityQueue` of the key groups (1-based, with the index of
    /// each), ordered by the timestamp of their heads (an empty one last), whose comparisons
    /// peek, and so may reload, both groups compared. Key bytes begin with the key group, and
    /// a timestamp is the eight bytes after it (sign bit flipped).
    struct FlinkTimerQueue {
        sets: Vec<FlinkQueueSet>,
        heap: Vec<usize>,
        index: Vec<usize>,
        prefix: usize,
        batch: FlinkBatch,
    }

    impl FlinkTimerQueue {
        /// The queue as Flink builds it (each key group added to the heap in turn). Flink's
        /// first peeks reload every group from an empty store; Gadget leaves those start-up
        /// requests out, so the sets start as holding everything.
        fn new(layout: &KeyLayout, key_groups: usize) -> Self {
            FlinkTimerQueue {
                sets: (0..key_groups).map(|_| FlinkQueueSet::default()).collect(),
                heap: (0..=key_groups).map(|i| i.saturating_sub(1)).collect(),
                index: (1..=key_groups).collect(),
                prefix: layout.prefix_bytes(),
                batch: FlinkBatch::default(),
            }
        }

        fn key_group(&self, key: &[u8]) -> usize {
            key[..self.prefix]
                .iter()
                .fold(0, |group, &byte| group << 8 | usize::from(byte))
        }

        fn timestamp(&self, key: &[u8]) -> i64 {
            let bytes = key[self.prefix..self.prefix + 8]
                .try_into()
                .expect("8 bytes");
            (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64
        }

        /// `InternalPriorityQueueComparator.comparePriority(a, b) < 0`.
        fn less(&mut self, a: usize, b: usize) -> bool {
            let left = self.sets[a].peek(&mut self.batch);
            let right = self.sets[b].peek(&mut self.batch);
            match (left, right) {
                (Some(l), Some(r)) => self.timestamp(&l) < self.timestamp(&r),
                (Some(_), None) => true,
                (None, _) => false,
            }
        }

        fn move_to(&mut self, set: usize, idx: usize) {
            self.heap[idx] = set;
            self.index[set] = idx;
        }

        fn sift_up(&mut self, mut idx: usize) {
            let current = self.heap[idx];
            let mut parent = idx >> 1;
            while parent > 0 && self.less(current, self.heap[parent]) {
                self.move_to(self.heap[parent], idx);
                idx = parent;
                parent >>= 1;
            }
            self.move_to(current, idx);
        }

        fn sift_down(&mut self, mut idx: usize) {
            let size = self.heap.len() - 1;
            let current = self.heap[idx];
            let mut first = idx << 1;
            if first < size && self.less(self.heap[first + 1], self.heap[first]) {
                first += 1;
            }
            while first <= size && self.less(self.heap[first], current) {
                self.move_to(self.heap[first], idx);
                idx = first;
                first = idx << 1;
                if first < size && self.less(self.heap[first + 1], self.heap[first]) {
                    first += 1;
                }
            }
            self.move_to(current, idx);
        }

        fn adjust_modified(&mut self, set: usize) {
            let idx = self.index[set];
            if self.heap[idx] == set {
                self.sift_down(idx);
                if self.heap[idx] == set {
                    self.sift_up(idx);
                }
            }
        }

        fn peek(&mut self) -> Option<Vec<u8>> {
            let top = self.heap[1];
            self.sets[top].peek(&mut self.batch)
        }

        fn poll(&mut self) -> Option<Vec<u8>> {
            let top = self.heap[1];
            let head = self.sets[top].poll(&mut self.batch);
            self.adjust_modified(top);
            head
        }

        fn add(&mut self, key: Vec<u8>) {
            let set = self.key_group(&key);
            if self.sets[set].add(key, &mut self.batch) {
                self.adjust_modified(set);
                self.peek(); // `toAdd.equals(peek())`: may reload the top group
            }
        }

        fn remove(&mut self, key: Vec<u8>) {
            let set = self.key_group(&key);
            self.peek(); // `oldHead = peek()`: may reload the top group
            if self.sets[set].remove(key, &mut self.batch) {
                self.adjust_modified(set);
            }
        }
    }

    /// Requests as op and key bytes.
    type Requests = Vec<(Op, Vec<u8>)>;

    /// The full key bytes of a window timer.
    fn full_key(layout: &KeyLayout, timer: &Timer<(i64, i64)>) -> Vec<u8> {
        let mut bytes = Vec::new();
        super::write_full_key(
            layout,
            layout.key_group(&timer.key) as usize,
            &TimerKey::of_timer(timer, &mut Vec::new()),
            &mut bytes,
        );
        bytes
    }

    /// Runs `steps` (key, window, action: 0 advances the watermark and fires what is due,
    /// 1 removes, else adds once or twice, half of the twice with one `add_twice`) through a
    /// queue of `key_groups` key groups and through Flink's; the requests of each.
    fn against_flinks_timer_queue(
        key_groups: u32,
        steps: &[(i64, i64, u8)],
    ) -> (Requests, Requests) {
        let layout = KeyLayout::new(key_groups);
        let mut q = RocksDbTimerQueue::<(i64, i64)>::new(key_groups, 1, 2, 3);
        let mut out = VecSink::default();
        let mut flink = FlinkTimerQueue::new(&layout, key_groups as usize);
        let mut watermark = 0;
        for &(key, window, action) in steps {
            let end = watermark + 1 + window * 5;
            let timer = Timer {
                timestamp: end - 1,
                key: Key::Long(key),
                namespace: (end - 5, end),
            };
            match action {
                0 => {
                    watermark += 20;
                    // `InternalTimerServiceImpl.advanceWatermark`: peek, then poll
                    while q.peek_timestamp(&mut out).is_some_and(|t| t <= watermark) {
                        let flinks_next = flink.peek().expect("Flink's has a timer");
                        assert!(flink.timestamp(&flinks_next) <= watermark, "Flink's is due");
                        let due = q.poll(&mut out).expect("a due timer");
                        assert_eq!(Some(full_key(&layout, &due)), flink.poll(), "polled");
                        q.remove(&due, &mut out);
                        flink.remove(full_key(&layout, &due));
                    }
                    let flinks_next = flink.peek();
                    assert!(
                        flinks_next.is_none_or(|k| flink.timestamp(&k) > watermark),
                        "Flink's has a due timer left"
                    );
                }
                1 => {
                    q.remove(&timer, &mut out);
                    flink.remove(full_key(&layout, &timer));
                }
                _ => {
                    let times = 1 + action % 2;
                    if action % 4 == 3 {
                        q.add_twice(timer.clone(), &mut out);
                    } else {
                        for _ in 0..times {
                            q.add(timer.clone(), &mut out);
                        }
                    }
                    for _ in 0..times {
                        flink.add(full_key(&layout, &timer));
                    }
                }
            }
        }
        q.close(&mut out);
        if flink.batch.entries != 0 {
            flink.batch.flush();
        }
        let issued = out
            .records
            .iter()
            .filter_map(|r| match r {
                TraceRecord::Access { op, key, .. } => Some((*op, key.clone())),
                _ => None,
            })
            .collect();
        (issued, flink.batch.requests)
    }

    /// The action of a step of [`against_flinks_timer_queue`] for `roll` in `0..1000`:
    /// `watermarks` in a thousand advance the watermark, a tenth remove, the rest add once or
    /// twice.
    fn step_action(roll: u64, watermarks: u64) -> u8 {
        if roll < watermarks {
            0
        } else if roll < watermarks + 100 {
            1
        } else {
            2 + (roll % 2) as u8
        }
    }

    /// A long fixed run of the comparison over `key_groups` key groups that surely spills and
    /// reloads; panics at the first request that differs.
    fn a_long_run_against_flink(key_groups: u32) {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let steps: Vec<(i64, i64, u8)> = (0..20_000)
            .map(|_| {
                // as many timers pending per key group, whatever the number of groups
                let groups = u64::from(key_groups);
                let key = next(300 * groups) as i64;
                let window = next(60) as i64;
                (key, window, step_action(next(1000), 50 / groups))
            })
            .collect();
        let (issued, expected) = against_flinks_timer_queue(key_groups, &steps);
        assert!(
            issued.iter().filter(|(op, _)| *op == Op::Seek).count() > 3,
            "reloads"
        );
        assert!(
            issued.iter().any(|(op, _)| *op == Op::Next),
            "reloaded timers"
        );
        let first = issued.iter().zip(&expected).position(|(a, b)| a != b);
        if let Some(i) = first {
            let show = |v: &[(Op, Vec<u8>)]| {
                v[i.saturating_sub(4)..(i + 6).min(v.len())]
                    .iter()
                    .map(|(op, k)| {
                        format!(
                            "{op} {}",
                            k.iter().map(|b| format!("{b:02x}")).collect::<String>()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            panic!(
                "request {i} differs:\nours:\n{}\nflink:\n{}",
                show(&issued),
                show(&expected)
            );
        }
        assert_eq!(issued.len(), expected.len(), "request counts");
    }

    #[test]
    fn a_long_run_issues_what_flinks_queue_set_issues_through_reloads() {
        a_long_run_against_flink(1);
    }

    /// Several key groups: the heap of key groups peeks (and so reloads) the groups it
    /// compares in Flink's order, and polls them in Flink's order.
    #[test]
    fn a_long_run_over_key_groups_issues_what_flinks_timer_queue_issues() {
        a_long_run_against_flink(3);
        a_long_run_against_flink(4);
    }

    /// Steps of the ordered-cache and overflow tests: an operation (0–3) and a key, with its
    /// bytes and [`KeyRef`] (see [`shaped_key`]). A case's keys mostly share one shape; some
    /// cases add odd keys, others only search for and remove them, so that their collection
    /// keeps heads only while it meets them.
    #[allow(clippy::type_complexity)]
    fn shaped_steps() -> impl Strategy<Value = Vec<(u8, Vec<u8>, TimerKey, KeyRef)>> {
        let steps = proptest::collection::vec(
            (
                0u8..4,
                0u64..40,
                0u64..3,
                prop_oneof![4 => Just(0u8), 1 => 1u8..5],
            ),
            1..600,
        );
        (any::<bool>(), any::<bool>(), steps).prop_map(|(short, odd_inserts, steps)| {
            steps
                .into_iter()
                .enumerate()
                .map(|(i, (op, word, tie, odd))| {
                    let odd = if op < 2 && !odd_inserts { 0 } else { odd };
                    let (bytes, key, key_ref) = shaped_key(short, odd, word, tie, i);
                    (op, bytes, key, key_ref)
                })
                .collect()
        })
    }

    /// Keys as their bytes, with their [`KeyRef`]s.
    fn with_bytes(keys: impl IntoIterator<Item = (TimerKey, KeyRef)>) -> Vec<(Vec<u8>, KeyRef)> {
        keys.into_iter()
            .map(|(key, key_ref)| {
                let mut bytes = Vec::new();
                key.write_after(&[], &mut bytes);
                (bytes, key_ref)
            })
            .collect()
    }

    /// A key for the ordered-cache and overflow tests, with its bytes and [`KeyRef`]. A case's
    /// keys mostly share one shape: 32 bytes with long keys' [`KeyRef`], or (`short`) 24
    /// bytes with null-byte keys'. `odd` 1 gives the other length, 2 the 32-byte head
    /// followed by a tail (with a string key's slot), 3 the other slot-less [`KeyRef`], 4 a
    /// string key's slot (`i`).
    fn shaped_key(
        short: bool,
        odd: u8,
        word: u64,
        tie: u64,
        i: usize,
    ) -> (Vec<u8>, TimerKey, KeyRef) {
        let (len, slotless) = if short {
            (INLINE_BYTES - 8, [KeyRef::NULL_BYTE, KeyRef::LONG])
        } else {
            (INLINE_BYTES, [KeyRef::LONG, KeyRef::NULL_BYTE])
        };
        let mut bytes = [word.to_be_bytes(), tie.to_be_bytes()].concat();
        match odd {
            1 => bytes.resize(INLINE_BYTES + INLINE_BYTES - 8 - len, 0),
            2 => {
                bytes.resize(INLINE_BYTES, 0);
                bytes.extend(std::iter::repeat_n(1, 1 + (word % 2) as usize));
            }
            _ => bytes.resize(len, 0),
        }
        let key = TimerKey::new(&bytes);
        let key_ref = match odd {
            2 | 4 => KeyRef(i as u32),
            3 => slotless[1],
            _ => slotless[0],
        };
        (bytes, key, key_ref)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// One key group's requests and timers are those of Flink's queue set, written plainly
        /// above, whatever the adds (again and again, as window operators do), polls and
        /// removals: the cache fills, spills, drains and reloads.
        #[test]
        fn one_key_group_issues_what_flinks_queue_set_issues(
            steps in proptest::collection::vec((0i64..300, 0i64..60, 0u8..10), 300..1_200)
        ) {
            let (issued, expected) = against_flinks_timer_queue(1, &steps);
            prop_assert_eq!(issued, expected);
        }

        /// Several key groups (up to more than 128, whose keys begin with two bytes) issue
        /// what Flink's heap of key groups over its queue sets issues.
        #[test]
        fn key_groups_issue_what_flinks_timer_queue_issues(
            key_groups in prop_oneof![2u32..9, Just(129u32)],
            calm in 1u64..=8,
            steps in proptest::collection::vec((0i64..900, 0i64..60, 0u64..1000), 300..1_500)
        ) {
            // watermarks 1/calm as often as in the one-group test, so that some runs fill
            // their caches
            let steps: Vec<(i64, i64, u8)> = steps
                .into_iter()
                .map(|(key, window, roll)| (key, window, step_action(roll, 100 / calm)))
                .collect();
            let (issued, expected) = against_flinks_timer_queue(key_groups, &steps);
            prop_assert_eq!(issued, expected);
        }

        /// Adding the timer just added takes a shortcut, which must issue exactly what a
        /// second add without it issues, whatever the caches hold: few key groups and many
        /// timers fill them, overflow them and make them reload. `add_twice` issues the same.
        #[test]
        fn adding_a_timer_again_issues_what_a_second_full_add_issues(
            steps in proptest::collection::vec((0i64..400, 0i64..200, 0u8..8), 600..1_500)
        ) {
            let mut full = RocksDbTimerQueue::<(i64, i64)>::new(2, 1, 2, 3);
            let mut again = full.clone();
            let mut twice = full.clone();
            let (mut out_full, mut out_again) = (VecSink::default(), VecSink::default());
            let mut out_twice = VecSink::default();
            let mut watermark = 0;
            for (key, window, advance) in steps {
                if advance == 0 {
                    watermark += 10;
                    for (q, out) in [
                        (&mut full, &mut out_full),
                        (&mut again, &mut out_again),
                        (&mut twice, &mut out_twice),
                    ] {
                        while q.peek_timestamp(out).is_some_and(|t| t <= watermark) {
                            let timer = q.poll(out).expect("a due timer");
                            q.remove(&timer, out);
                        }
                    }
                }
                let end = watermark + 1 + window * 5;
                let timer = Timer { timestamp: end - 1, key: Key::Long(key), namespace: (end - 5, end) };
                full.add(timer.clone(), &mut out_full);
                full.forget_shortcuts(&timer); // the second add does all the work
                full.add(timer.clone(), &mut out_full);
                again.add(timer.clone(), &mut out_again);
                again.add(timer.clone(), &mut out_again);
                twice.add_twice(timer, &mut out_twice);
                prop_assert_eq!(&out_again.records, &out_full.records);
                prop_assert_eq!(&out_twice.records, &out_full.records);
            }
            prop_assert!(out_full.records.len() > CACHE_CAPACITY);
        }

        /// The ordered cache finds, inserts and removes as an ordered map does, also when its
        /// ring buffer has wrapped around (taking from the front moves where it starts), and
        /// while it switches between keeping heads only (keys of one shape with a shared
        /// [`KeyRef`]) and keeping every key whole (keys of several shapes, string keys).
        #[test]
        fn the_ordered_cache_behaves_as_an_ordered_map(
            steps in shaped_steps(),
        ) {
            let mut cache = OrderedCache::default();
            let mut model = std::collections::BTreeMap::new();
            for (op, bytes, key, key_ref) in steps {
                let found = cache.search(&key);
                let position = model.range::<Vec<u8>, _>(..&bytes).count();
                prop_assert_eq!(
                    found,
                    if model.contains_key(&bytes) { Ok(position) } else { Err(position) }
                );
                prop_assert_eq!(
                    cache.precedes_first(&key),
                    model.first_key_value().is_none_or(|(first, _)| bytes < *first)
                );
                prop_assert_eq!(
                    cache.precedes_last(&key),
                    model.last_key_value().is_some_and(|(last, _)| bytes < *last)
                );
                prop_assert_eq!(
                    cache.is_first(&key),
                    model.first_key_value().is_some_and(|(first, _)| bytes == *first)
                );
                prop_assert_eq!(
                    cache.is_last(&key),
                    model.last_key_value().is_some_and(|(last, _)| bytes == *last)
                );
                match op {
                    0 | 1 => {
                        if let Err(index) = found {
                            cache.insert_at(index, key, key_ref);
                            model.insert(bytes, key_ref);
                        }
                    }
                    2 => {
                        let first = cache.pop_first().map(|(_, r)| r);
                        prop_assert_eq!(first, model.pop_first().map(|(_, r)| r));
                    }
                    _ => prop_assert_eq!(cache.remove(&key), model.remove(&bytes)),
                }
                prop_assert_eq!(cache.len(), model.len());
                let timestamp = model
                    .keys()
                    .next()
                    .map(|k| (u64::from_be_bytes(k[..8].try_into().unwrap()) ^ (1 << 63)) as i64);
                prop_assert_eq!(cache.first_timestamp(), timestamp);
                prop_assert_eq!(
                    with_bytes(cache.entries()),
                    model.clone().into_iter().collect::<Vec<_>>()
                );
            }
        }

        /// The keys only RocksDB has are added, removed and handed out from a bound as an
        /// ordered map does them, while the overflow switches between keeping heads only and
        /// keeping every key whole (the same keys as the ordered cache's test; a bound of any
        /// shape, equal heads included).
        #[test]
        fn the_overflow_behaves_as_an_ordered_map(
            steps in shaped_steps(),
        ) {
            let mut overflow = Overflow::default();
            let mut model = std::collections::BTreeMap::new();
            for (op, bytes, key, key_ref) in steps {
                match op {
                    0 | 1 => prop_assert_eq!(
                        overflow.insert(key, key_ref),
                        model.insert(bytes, key_ref)
                    ),
                    2 => {
                        let expected = model
                            .range(bytes.clone()..)
                            .next()
                            .map(|(k, r)| (k.clone(), *r));
                        prop_assert_eq!(overflow.has_from(&key), expected.is_some());
                        if let Some((k, _)) = &expected {
                            model.remove(k);
                        }
                        let popped = overflow.pop_first_from(&key);
                        prop_assert_eq!(with_bytes(popped), expected.into_iter().collect::<Vec<_>>());
                    }
                    _ => prop_assert_eq!(overflow.remove(&key), model.remove(&bytes)),
                }
                prop_assert_eq!(
                    with_bytes(overflow.entries()),
                    model.clone().into_iter().collect::<Vec<_>>()
                );
            }
        }

        /// A cache, and an overflow, of keys of one shape keep their heads only, and go back
        /// to that once a key of another shape has come and gone.
        #[test]
        fn keys_of_one_shape_keep_heads_only(words in proptest::collection::vec(0u64..1000, 1..200)) {
            let key = |w: u64, len: usize| {
                let mut bytes = w.to_be_bytes().to_vec();
                bytes.resize(len, 7);
                TimerKey::new(&bytes)
            };
            let odd = key(words[0], INLINE_BYTES + 3);
            let mut cache = OrderedCache::default();
            let mut overflow = Overflow::default();
            for &w in &words {
                if let Err(index) = cache.search(&key(w, INLINE_BYTES)) {
                    cache.insert_at(index, key(w, INLINE_BYTES), KeyRef::LONG);
                }
                overflow.insert(key(w, INLINE_BYTES), KeyRef::LONG);
            }
            let uniform = matches!(cache, OrderedCache::Uniform { .. })
                && matches!(overflow, Overflow::Uniform { .. });
            prop_assert!(uniform, "keys of one shape keep heads only");
            if let Err(index) = cache.search(&odd) {
                cache.insert_at(index, odd.clone(), KeyRef(0));
            }
            overflow.insert(odd, KeyRef(0));
            let mixed = matches!(cache, OrderedCache::Mixed(_))
                && matches!(overflow, Overflow::Mixed(_));
            prop_assert!(mixed, "a key with a tail makes them mixed");
            while cache.pop_first().is_some() {}
            while overflow.pop_first_from(&TimerKey::default()).is_some() {}
            let index = cache.search(&key(1, 16)).unwrap_err();
            cache.insert_at(index, key(1, 16), KeyRef::NULL_BYTE);
            overflow.insert(key(1, 16), KeyRef::NULL_BYTE);
            let uniform = matches!(
                cache,
                OrderedCache::Uniform { len: 16, key_ref: KeyRef::NULL_BYTE, .. }
            ) && matches!(
                overflow,
                Overflow::Uniform { len: 16, key_ref: KeyRef::NULL_BYTE, .. }
            );
            prop_assert!(uniform, "emptied, they take the shape of their next key");
        }
    }

    /// Timers are read back from their keys: every kind of key and namespace comes back equal,
    /// through caches that overflow and reload, and a string key comes back as the same
    /// shared string (no allocation per timer).
    #[test]
    fn polled_timers_equal_the_added_ones_and_share_their_string_keys() {
        let mut q = RocksDbTimerQueue::<(i64, i64)>::new(1, 1, 2, 3);
        let mut out = VecSink::default();
        let mut added = Vec::new();
        for i in 0..3 * CACHE_CAPACITY as i64 {
            let key = match i % 3 {
                0 => Key::Long(i * 7 - 100),
                1 => Key::Str(format!("key-{i}-ü").into()),
                _ => Key::NullByte,
            };
            // timestamps out of order, so the caches fill, spill and reload
            let t = (i * 7_919) % 1_000;
            let timer = Timer {
                timestamp: t,
                key,
                namespace: (t - 9, t + 1),
            };
            q.add(timer.clone(), &mut out);
            added.push(timer);
        }
        let mut polled = Vec::new();
        while let Some(timer) = q.poll(&mut out) {
            polled.push(timer);
        }
        assert!(out.records.iter().any(|r| matches!(
            r,
            crate::access::TraceRecord::Access {
                op: crate::access::Op::Seek,
                ..
            }
        )));
        assert_eq!(polled.len(), added.len());
        for timer in &polled {
            let original = added
                .iter()
                .find(|a| *a == timer)
                .expect("every polled timer was added");
            if let (Key::Str(a), Key::Str(b)) = (&original.key, &timer.key) {
                assert!(std::sync::Arc::ptr_eq(a, b), "{b} was allocated anew");
            }
        }
        let timestamps: Vec<i64> = polled.iter().map(|t| t.timestamp).collect();
        assert!(
            timestamps.windows(2).all(|w| w[0] < w[1]),
            "polled in time order"
        );
    }

    /// The add that fills a key group's cache with its latest timer leaves that timer last in
    /// a full cache, so a second add of it goes to RocksDB: another batch put. That rewrites
    /// it where it already is (write-through) and leaves it cached: once polled (and deleted)
    /// it is gone, and Flink's `RocksDBCachingPriorityQueueSet` reloads an empty store: a
    /// seek, no entry.
    impl<N: TimerNamespace> RocksDbTimerQueue<N> {
        /// Forgets what lets adding `timer` again skip work: the last add, and the table
        /// entry `timer`'s key would have.
        fn forget_shortcuts(&mut self, timer: &Timer<N>) {
            self.last_add = None;
            let (_, key) = self.timer_key(timer);
            self.cached.slots[CachedTimers::slot(&key.head)] = CachedTimer::EMPTY;
        }

        /// Whether the table of cached timers knows `timer` to be cached.
        fn knows_cached(&mut self, timer: &Timer<N>) -> bool {
            let (g, key) = self.timer_key(timer);
            self.cached.holds(&key, g, self.groups[g].cache_removals)
        }
    }

    /// A timer found cached is registered again without a search and without a request; once
    /// it has left the cache (polled, or removed), registering it again puts it again.
    #[test]
    fn a_cached_timer_is_known_until_it_leaves_the_cache() {
        let mut q = RocksDbTimerQueue::<(i64, i64)>::new(1, 1, 2, 3);
        let mut out = VecSink::default();
        let timer = |key: i64| Timer {
            timestamp: 4_999,
            key: Key::Long(key),
            namespace: (0, 5_000),
        };
        let puts = |out: &VecSink| {
            out.records
                .iter()
                .filter(|r| {
                    matches!(
                        r,
                        TraceRecord::Access {
                            op: Op::BatchPut,
                            ..
                        }
                    )
                })
                .count()
        };
        let (a, b) = (timer(1), timer(2));
        q.add(a.clone(), &mut out);
        q.add(b.clone(), &mut out);
        assert!(
            !q.knows_cached(&a),
            "a key enters the table when it is found cached"
        );
        q.add(a.clone(), &mut out);
        assert!(q.knows_cached(&a));
        q.add(b.clone(), &mut out);
        q.add(a.clone(), &mut out);
        assert_eq!(puts(&out), 2, "one put per timer: {:?}", out.records);

        assert_eq!(q.poll(&mut out), Some(a.clone()));
        assert!(!q.knows_cached(&a), "a polled timer is not cached");
        q.add(b.clone(), &mut out);
        q.add(a.clone(), &mut out);
        assert_eq!(puts(&out), 3, "a polled timer is put again");

        q.add(b.clone(), &mut out);
        q.add(a.clone(), &mut out);
        assert!(q.knows_cached(&a));
        q.remove(&a, &mut out);
        assert!(!q.knows_cached(&a), "a removed timer is not cached");
        q.add(b.clone(), &mut out);
        q.add(a.clone(), &mut out);
        assert_eq!(puts(&out), 4, "a removed timer is put again");
    }

    #[test]
    fn a_timer_added_again_as_the_full_caches_last_is_put_again_and_fires_once() {
        let mut q = RocksDbTimerQueue::<(i64, i64)>::new(1, 1, 2, 3);
        let mut out = VecSink::default();
        let timer = |t: i64| Timer {
            timestamp: t,
            key: Key::Long(7),
            namespace: (t - 4, t + 1),
        };
        let mut added: Vec<_> = (0..CACHE_CAPACITY as i64 - 1).map(timer).collect();
        for t in &added {
            q.add(t.clone(), &mut out);
        }
        let before = out.records.len();
        q.add(timer(1_000), &mut out);
        q.add(timer(1_000), &mut out);
        added.push(timer(1_000));
        let puts: Vec<_> = out.records[before..].to_vec();
        assert_eq!(puts.len(), 2, "two batch puts: {puts:?}");
        assert_eq!(puts[0], puts[1]);

        let mut polled = Vec::new();
        while let Some(t) = q.poll(&mut out) {
            polled.push(t);
        }
        assert_eq!(polled, added, "every timer once, in order");
        let seek = out
            .records
            .iter()
            .position(|r| matches!(r, TraceRecord::Access { op: Op::Seek, .. }))
            .expect("the emptied cache reloads from the store");
        assert!(
            !out.records[seek..]
                .iter()
                .any(|r| matches!(r, TraceRecord::Access { op: Op::Next, .. })),
            "the store holds no timer any more"
        );
    }

    #[test]
    fn timer_keys_of_timers_hold_the_bytes_flink_writes() {
        let mut layout = KeyLayout::new(128);
        let mut scratch = Vec::new();
        let window_timers = [
            (0, 0, (0, 0)),
            (-1, i64::MIN, (i64::MIN, -1)),
            (4_999, 6_253, (0, 5_000)),
        ];
        for (timestamp, key, (start, end)) in window_timers {
            let key = Key::Long(key);
            let timer = Timer {
                timestamp,
                key: key.clone(),
                namespace: (start, end),
            };
            let mut expected = Vec::new();
            (start, end).serialize_into(&mut expected);
            let expected = layout.timer_key(&key, timestamp, &expected)[1..].to_vec();
            let mut bytes = Vec::new();
            TimerKey::of_timer(&timer, &mut scratch).write_after(&[], &mut bytes);
            assert_eq!(bytes, expected, "{timer:?}");
        }
        for key in [Key::Str("job".into()), Key::NullByte] {
            let timer = Timer {
                timestamp: 7,
                key: key.clone(),
                namespace: 3u8,
            };
            let expected = layout.timer_key(&key, 7, &[3])[1..].to_vec();
            let mut bytes = Vec::new();
            TimerKey::of_timer(&timer, &mut scratch).write_after(&[], &mut bytes);
            assert_eq!(bytes, expected, "{timer:?}");
        }
    }

    #[test]
    fn timer_keys_order_like_their_bytes() {
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![0xff; 8],
            vec![0xff; 9],
            [vec![7; 31], vec![0]].concat(),
            vec![7; 32],
            [vec![7; 32], vec![0]].concat(),
            [vec![7; 32], vec![0, 0]].concat(),
            [vec![7; 32], vec![1]].concat(),
            [vec![7; 32], vec![0xff; 40]].concat(),
            [vec![7; 31], vec![8], vec![0; 9]].concat(),
            vec![0x80, 0, 0, 0, 0, 0, 0, 1, 2],
        ];
        for a in &samples {
            let ka = TimerKey::new(a);
            let mut bytes = Vec::new();
            ka.write_after(&[], &mut bytes);
            assert_eq!(&bytes, a, "round trip");
            for b in &samples {
                let kb = TimerKey::new(b);
                assert_eq!(ka.cmp(&kb), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(ka.precedes(&kb), a < b, "{a:?} precedes {b:?}");
            }
        }
    }
}
