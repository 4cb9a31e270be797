//! The one-screen summary of a generated trace: composition and amplification.

use std::fmt::Write as _;

use crate::access::{AccessCounts, AccessSink, Op, StateId};
use crate::key::Key;

/// Counts distinct items exactly up to 2^16 (a set that stays in cache), then estimates with HyperLogLog (±1%), so memory
/// stays bounded however long the trace is.
#[derive(Debug, Clone)]
pub struct DistinctCounter {
    /// The distinct hashes while there are at most [`EXACT_LIMIT`]; then `None`.
    exact: Option<HashSet64>,
    /// HyperLogLog registers, filled from the exact set when it is dropped and kept up to
    /// date from then on.
    registers: Box<[u8; 1 << HLL_BITS]>,
    /// Hashes added but not yet applied: they are applied [`PENDING_HASHES`] at a time, so
    /// that the set's or registers' loads of one batch overlap instead of each stalling
    /// the work after it.
    pending: [u64; PENDING_HASHES],
    /// How many of `pending` are waiting.
    pending_len: usize,
}

/// Hashes a [`DistinctCounter`] applies in one go.
const PENDING_HASHES: usize = 32;

/// A set of 64-bit hashes: open addressing with linear probing, the top bits of a hash
/// choosing its first slot (the hashes are well mixed already), at most half full up to
/// [`HashSet64::MAX_SLOTS`] (room for [`EXACT_LIMIT`] + 1 hashes, all the exact count ever
/// holds). 0 marks an empty slot, so the hash 0 is kept aside as a flag.
#[derive(Debug, Clone)]
struct HashSet64 {
    slots: Vec<u64>,
    /// `64 - log2(slots.len())`: a hash shifted right by this is its first slot.
    shift: u32,
    /// Nonzero hashes in `slots`.
    len: usize,
    has_zero: bool,
}

impl HashSet64 {
    const INITIAL_SLOTS: usize = 1 << 10;
    /// The table stops growing here: twice the exact count's limit.
    const MAX_SLOTS: usize = 2 * EXACT_LIMIT;

    fn new() -> Self {
        HashSet64 {
            slots: vec![0; Self::INITIAL_SLOTS],
            shift: 64 - Self::INITIAL_SLOTS.trailing_zeros(),
            len: 0,
            has_zero: false,
        }
    }

    /// Distinct hashes held.
    fn len(&self) -> usize {
        self.len + usize::from(self.has_zero)
    }

    #[inline]
    fn insert(&mut self, h: u64) {
        if h == 0 {
            self.has_zero = true;
            return;
        }
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let slot = self.slots[i];
            if slot == h {
                return;
            }
            if slot == 0 {
                break;
            }
            i = (i + 1) & mask;
        }
        self.slots[i] = h;
        self.len += 1;
        debug_assert!(self.len < self.slots.len(), "a free slot ends every probe");
        if self.len * 2 > self.slots.len() && self.slots.len() < Self::MAX_SLOTS {
            self.grow();
        }
    }

    #[cold]
    fn grow(&mut self) {
        let doubled = vec![0; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        self.shift -= 1;
        let mask = self.slots.len() - 1;
        for h in old.into_iter().filter(|&h| h != 0) {
            let mut i = (h >> self.shift) as usize;
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = h;
        }
    }

    /// Every hash held.
    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let zero = self.has_zero.then_some(0);
        self.slots.iter().copied().filter(|&h| h != 0).chain(zero)
    }
}

/// The constants [`DistinctCounter::hash`] mixes in: the first hexadecimal digits of π, made
/// odd.
const HASH_SEEDS: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7345,
    0xa409_3822_299f_31d1,
    0x082e_fa98_ec4e_6c89,
];

/// The 128-bit product of `a` and `b`, its halves xor-ed: every bit of either factor moves
/// the middle bits of the result.
#[inline(always)]
fn fold_multiply(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ (product >> 64) as u64
}

const EXACT_LIMIT: usize = 1 << 16;
const HLL_BITS: u32 = 14;

impl Default for DistinctCounter {
    fn default() -> Self {
        DistinctCounter {
            exact: Some(HashSet64::new()),
            registers: Box::new([0; 1 << HLL_BITS]),
            pending: [0; PENDING_HASHES],
            pending_len: 0,
        }
    }
}

impl DistinctCounter {
    /// Hashes bytes with a fixed, fast 64-bit hash (the same on every run and machine).
    ///
    /// Each 16 bytes are folded by one 64 × 64 → 128-bit multiplication of their two words
    /// (the product's halves xor-ed), independently of the others, so that a key's
    /// multiplications overlap; one more folds the results, the length is added, and
    /// SplitMix64's finalizer mixes that.
    #[inline(always)]
    pub fn hash(bytes: &[u8]) -> u64 {
        let n = bytes.len();
        let word = |at: usize| {
            u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes of the key"))
        };
        let half = |at: usize| {
            u64::from(u32::from_le_bytes(
                bytes[at..at + 4].try_into().expect("4 bytes of the key"),
            ))
        };
        // the key as two words; every byte counts, through loads that overlap where the
        // key is shorter than both (its length is mixed in below)
        let (a, b) = match n {
            0 => (0, 0),
            1..=3 => (
                u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16,
                0,
            ),
            4..=7 => (half(0), half(n - 4)),
            8..=16 => (word(0), word(n - 8)),
            _ => {
                // 16-byte chunks, the last one ending with the key (overlapping the one before)
                let mut chunks = 0u64;
                let mut at = 0;
                while at + 16 < n {
                    chunks = chunks.rotate_left(23)
                        ^ fold_multiply(word(at) ^ HASH_SEEDS[2], word(at + 8) ^ HASH_SEEDS[3]);
                    at += 16;
                }
                let last = fold_multiply(word(n - 16) ^ HASH_SEEDS[2], word(n - 8) ^ HASH_SEEDS[3]);
                (chunks, last)
            }
        };
        // the length apart from the words: two keys that load the same words differ in it
        let h = fold_multiply(a ^ HASH_SEEDS[0], b ^ HASH_SEEDS[1])
            .wrapping_add((n as u64).wrapping_mul(HASH_SEEDS[2]));
        // SplitMix64's finalizer, a bijection, spreads the fold over every bit
        let h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^ (h >> 31)
    }

    /// Adds an event key by the hash of its serialized bytes (a long key's are hashed where
    /// they are; other keys are serialized into `scratch`).
    #[inline]
    pub fn add_key(&mut self, key: &Key, scratch: &mut Vec<u8>) {
        let h = match key {
            Key::Long(k) => Self::hash(&k.to_be_bytes()),
            _ => {
                scratch.clear();
                key.serialize_into(scratch);
                Self::hash(scratch)
            }
        };
        self.add_hash(h);
    }

    /// Adds one item by its 64-bit hash.
    #[inline]
    pub fn add_hash(&mut self, h: u64) {
        self.pending[self.pending_len] = h;
        self.pending_len += 1;
        if self.pending_len == PENDING_HASHES {
            self.settle();
        }
    }

    /// Applies the pending hashes.
    #[inline(never)]
    fn settle(&mut self) {
        let (pending, n) = (self.pending, self.pending_len);
        self.pending_len = 0;
        for &h in &pending[..n] {
            self.apply(h);
        }
    }

    /// Adds a hash to the exact set or the registers.
    #[inline(always)]
    fn apply(&mut self, h: u64) {
        match self.exact.as_mut() {
            Some(set) => {
                set.insert(h);
                if set.len() > EXACT_LIMIT {
                    self.estimate_from_now_on();
                }
            }
            None => self.add_to_registers(h),
        }
    }

    /// Drops the exact set for the HyperLogLog registers, filling them from it (a register
    /// is the maximum over the hashes added, in any order).
    #[cold]
    fn estimate_from_now_on(&mut self) {
        if let Some(set) = self.exact.take() {
            for h in set.iter() {
                self.add_to_registers(h);
            }
        }
    }

    /// The register a hash goes to (its top bits) and its rank there (one more than the
    /// leading zeros of the rest).
    #[inline]
    fn register_of(h: u64) -> (usize, u8) {
        let idx = (h >> (64 - HLL_BITS)) as usize;
        let rank = ((h << HLL_BITS) | (1 << (HLL_BITS - 1))).leading_zeros() as u8 + 1;
        (idx, rank)
    }

    /// Raises the hash's register to its rank, without a branch (a skip of the hashes that
    /// change nothing mispredicts where it saves a load, once loads overlap in a batch).
    #[inline(always)]
    fn add_to_registers(&mut self, h: u64) {
        let (idx, rank) = Self::register_of(h);
        let register = &mut self.registers[idx];
        *register = (*register).max(rank);
    }

    /// The count, and whether it is exact.
    pub fn count(&self) -> (u64, bool) {
        if self.pending_len > 0 {
            let mut settled = self.clone();
            settled.settle();
            return settled.count();
        }
        if let Some(set) = &self.exact {
            return (set.len() as u64, true);
        }
        let m = self.registers.len() as f64;
        let sum: f64 = self.registers.iter().map(|r| 2f64.powi(-(*r as i32))).sum();
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        (((alpha * m * m) / sum).round() as u64, false)
    }
}

/// Counts distinct event keys: long keys in `[0, 2^24)` (every synthetic key of a key space
/// up to 2^24) exactly in a bitmap as large as the largest of them needs (at most 2 MiB), every other key in a
/// [`DistinctCounter`].
///
/// A source draws each event's key anew, so hot keys repeat within a few events and cold ones
/// are spread over the whole key space: the bitmap of 100,000 keys (12.5 KiB) stays in cache,
/// where the hash set of the same keys (1 MiB) would miss it on nearly every event.
#[derive(Debug, Clone, Default)]
pub struct EventKeyCounter {
    /// Bit `k` is set once the long key `k` was seen.
    small: Vec<u64>,
    /// Set bits in `small`.
    small_count: u64,
    /// Every key not in the bitmap.
    others: DistinctCounter,
}

impl EventKeyCounter {
    /// Long keys below this go to the bitmap.
    const SMALL_LIMIT: i64 = 1 << 24;

    /// Adds an event key (`scratch` holds the bytes of a key that is hashed).
    #[inline]
    pub fn add(&mut self, key: &Key, scratch: &mut Vec<u8>) {
        match key {
            Key::Long(k) if (0..Self::SMALL_LIMIT).contains(k) => {
                let (word, bit) = ((*k as usize) >> 6, 1u64 << (*k & 63));
                if word >= self.small.len() {
                    self.small.resize((word + 1).next_power_of_two(), 0);
                }
                let w = &mut self.small[word];
                if *w & bit == 0 {
                    *w |= bit;
                    self.small_count += 1;
                }
            }
            _ => self.others.add_key(key, scratch),
        }
    }

    /// The count, and whether it is exact.
    pub fn count(&self) -> (u64, bool) {
        let (others, exact) = self.others.count();
        (self.small_count + others, exact)
    }
}

/// Passes accesses on and counts their distinct keys (requests with an empty key are skipped).
pub struct KeyStats<'a, S: AccessSink + ?Sized = dyn AccessSink> {
    inner: &'a mut S,
    /// Distinct state keys seen so far.
    pub keys: DistinctCounter,
}

impl<'a, S: AccessSink + ?Sized> KeyStats<'a, S> {
    /// Wraps a sink.
    pub fn new(inner: &'a mut S) -> Self {
        KeyStats {
            inner,
            keys: DistinctCounter::default(),
        }
    }
}

impl<S: AccessSink + ?Sized> KeyStats<'_, S> {
    /// Counts the state key `key` of `state` (the state is mixed in: equal bytes in two
    /// states are two keys).
    #[inline]
    fn add_key_bytes(&mut self, state: StateId, key: &[u8]) {
        let h = DistinctCounter::hash(key) ^ (state as u64).rotate_left(48);
        self.keys.add_hash(h);
    }
}

impl<S: AccessSink + ?Sized> AccessSink for KeyStats<'_, S> {
    #[inline]
    fn access(&mut self, a: crate::access::Access<'_>) {
        if !a.key.is_empty() {
            self.add_key_bytes(a.state, a.key);
        }
        self.inner.access(a);
    }
    #[inline]
    fn access_all(&mut self, state: StateId, key: &[u8], requests: &[(Op, u32)]) {
        // one key: hashed once
        if !key.is_empty() && !requests.is_empty() {
            self.add_key_bytes(state, key);
        }
        self.inner.access_all(state, key, requests);
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

/// What `gadget gen` reports.
#[derive(Debug, Clone)]
pub struct Summary {
    /// State names, indexing `counts.by_state`.
    pub states: Vec<String>,
    /// Requests by op and state, events, watermarks.
    pub counts: AccessCounts,
    /// Distinct state keys (requests with a key).
    pub distinct_state_keys: (u64, bool),
    /// Distinct event keys.
    pub distinct_event_keys: (u64, bool),
    /// True when a request limit or Ctrl-C cut the trace short.
    pub truncated: bool,
    /// True when Ctrl-C cut the trace short.
    pub interrupted: bool,
}

impl Summary {
    /// Requests per input event.
    pub fn event_amplification(&self) -> f64 {
        self.counts.requests() as f64 / self.counts.events.max(1) as f64
    }

    /// Distinct state keys per distinct event key.
    pub fn key_space_amplification(&self) -> f64 {
        self.distinct_state_keys.0 as f64 / self.distinct_event_keys.0.max(1) as f64
    }

    /// The summary as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let by_op: serde_json::Map<_, _> = Op::ALL
            .iter()
            .filter(|op| self.counts.by_op[**op as usize] > 0)
            .map(|op| {
                (
                    op.name().to_string(),
                    self.counts.by_op[*op as usize].into(),
                )
            })
            .collect();
        let by_state: serde_json::Map<_, _> = self
            .counts
            .by_state
            .iter()
            .enumerate()
            .map(|(i, ops)| {
                let name = self
                    .states
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("#{i}"));
                let m: serde_json::Map<_, _> = Op::ALL
                    .iter()
                    .filter(|op| ops[**op as usize] > 0)
                    .map(|op| (op.name().to_string(), ops[*op as usize].into()))
                    .collect();
                (name, serde_json::Value::Object(m))
            })
            .collect();
        serde_json::json!({
            "events": self.counts.events,
            "watermarks": self.counts.watermarks,
            "requests": self.counts.requests(),
            "requests_by_op": by_op,
            "requests_by_state": by_state,
            "distinct_state_keys": self.distinct_state_keys.0,
            "distinct_state_keys_exact": self.distinct_state_keys.1,
            "distinct_event_keys": self.distinct_event_keys.0,
            "distinct_event_keys_exact": self.distinct_event_keys.1,
            "event_amplification": self.event_amplification(),
            "key_space_amplification": self.key_space_amplification(),
            "truncated": self.truncated,
            "interrupted": self.interrupted,
        })
    }

    /// The summary as a short human-readable table.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let total = self.counts.requests();
        let approx = |exact: bool| if exact { "" } else { " (estimated)" };
        let _ = writeln!(s, "events        {:>12}", self.counts.events);
        let _ = writeln!(s, "watermarks    {:>12}", self.counts.watermarks);
        let _ = writeln!(
            s,
            "requests      {:>12}{}",
            total,
            if self.interrupted {
                "  (PARTIAL: stopped by Ctrl-C or SIGTERM)"
            } else if self.truncated {
                "  (truncated by the request limit)"
            } else {
                ""
            }
        );
        let _ = writeln!(s, "\nby op");
        for op in Op::ALL {
            let n = self.counts.by_op[op as usize];
            if n > 0 {
                let _ = writeln!(
                    s,
                    "  {:<14}{:>12}  {:>5.1}%",
                    op.name(),
                    n,
                    100.0 * n as f64 / total.max(1) as f64
                );
            }
        }
        let _ = writeln!(s, "\nby state");
        for (i, ops) in self.counts.by_state.iter().enumerate() {
            let n: u64 = ops.iter().sum();
            if n == 0 {
                continue;
            }
            let name = self.states.get(i).map_or("?", |x| x.as_str());
            let detail: Vec<String> = Op::ALL
                .iter()
                .filter(|op| ops[**op as usize] > 0)
                .map(|op| format!("{} {}", op.name(), ops[*op as usize]))
                .collect();
            let _ = writeln!(s, "  {:<36}{:>12}  ({})", name, n, detail.join(", "));
        }
        let _ = writeln!(s, "\namplification");
        let _ = writeln!(
            s,
            "  event       {:>8.3} requests per event",
            self.event_amplification()
        );
        let _ = writeln!(
            s,
            "  key space   {:>8.3} state keys per event key ({} state keys{}, {} event keys{})",
            self.key_space_amplification(),
            self.distinct_state_keys.0,
            approx(self.distinct_state_keys.1),
            self.distinct_event_keys.0,
            approx(self.distinct_event_keys.1)
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    proptest! {
        #[test]
        fn the_exact_set_counts_what_a_hash_set_counts(
            hashes in prop::collection::vec(
                prop_oneof![Just(0u64), 0u64..64, any::<u64>(), (0u64..64).prop_map(|i| i << 58)],
                0..3000,
            )
        ) {
            let mut set = HashSet64::new();
            let mut reference = HashSet::new();
            for h in hashes {
                set.insert(h);
                reference.insert(h);
                prop_assert_eq!(set.len(), reference.len());
            }
            let mut held: Vec<u64> = set.iter().collect();
            held.sort_unstable();
            let mut expected: Vec<u64> = reference.into_iter().collect();
            expected.sort_unstable();
            prop_assert_eq!(held, expected);
        }
    }

    #[test]
    fn every_byte_of_a_key_changes_its_hash() {
        let mut seen = HashSet::new();
        for len in 0..=48usize {
            let zeros = vec![0u8; len];
            assert!(seen.insert(DistinctCounter::hash(&zeros)), "{len} zeros");
            for at in 0..len {
                for byte in [1u8, 0x80, 0xff] {
                    let mut key = zeros.clone();
                    key[at] = byte;
                    assert!(
                        seen.insert(DistinctCounter::hash(&key)),
                        "{len} bytes, byte {at} = {byte:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn keys_whose_16_byte_chunks_trade_places_hash_apart() {
        for len in [32usize, 40, 48, 64] {
            let key: Vec<u8> = (0..len as u8).collect();
            let mut swapped = key.clone();
            let (first, rest) = swapped.split_at_mut(16);
            first.swap_with_slice(&mut rest[..16]);
            assert_ne!(
                DistinctCounter::hash(&key),
                DistinctCounter::hash(&swapped),
                "{len} bytes"
            );
        }
    }

    #[test]
    fn event_keys_count_by_their_serialized_bytes() {
        let mut scratch = Vec::new();
        for key in [
            Key::Long(-3),
            Key::Long(1 << 40),
            Key::Str("job".into()),
            Key::NullByte,
        ] {
            let mut by_key = DistinctCounter::default();
            by_key.add_key(&key, &mut scratch);
            let mut bytes = Vec::new();
            key.serialize_into(&mut bytes);
            let mut by_bytes = DistinctCounter::default();
            by_bytes.add_hash(DistinctCounter::hash(&bytes));
            by_key.settle();
            by_bytes.settle();
            assert_eq!(by_key.exact.as_ref().map(HashSet64::len), Some(1));
            assert_eq!(
                by_key.exact.as_ref().map(|s| s.iter().collect::<Vec<_>>()),
                by_bytes
                    .exact
                    .as_ref()
                    .map(|s| s.iter().collect::<Vec<_>>()),
                "{key:?}"
            );
        }
    }

    #[test]
    fn key_stats_count_a_key_of_several_requests_once() {
        let mut grouped_out = AccessCounts::default();
        let mut single_out = AccessCounts::default();
        let mut grouped = KeyStats::new(&mut grouped_out);
        let mut single = KeyStats::new(&mut single_out);
        for i in 0u8..50 {
            let key = [i % 7, i % 5];
            let requests = [(Op::Get, 0), (Op::Put, 8)];
            grouped.access_all(StateId::from(i % 2), &key, &requests);
            for (op, value_len) in requests {
                single.access(crate::access::Access {
                    op,
                    state: StateId::from(i % 2),
                    key: &key,
                    value_len,
                });
            }
        }
        grouped.access_all(0, &[], &[(Op::BatchCommit, 3)]);
        single.access(crate::access::Access {
            op: Op::BatchCommit,
            state: 0,
            key: &[],
            value_len: 3,
        });
        assert_eq!(grouped.keys.count(), (50, true)); // (i mod 7, i mod 5, i mod 2): all differ
        assert_eq!(single.keys.count(), (50, true));
        assert_eq!(grouped_out.by_op, single_out.by_op);
    }

    #[test]
    fn exact_then_estimated() {
        let mut c = DistinctCounter::default();
        for i in 0..1000u64 {
            c.add_hash(DistinctCounter::hash(&i.to_le_bytes()));
            c.add_hash(DistinctCounter::hash(&i.to_le_bytes()));
        }
        assert_eq!(c.count(), (1000, true));
        let mut c = DistinctCounter::default();
        let n = EXACT_LIMIT as u64 + 200_000;
        for i in 0..n {
            c.add_hash(DistinctCounter::hash(&i.to_le_bytes()));
        }
        let (est, exact) = c.count();
        assert!(!exact);
        let err = (est as f64 - n as f64).abs() / n as f64;
        assert!(err < 0.03, "estimate {est} for {n}");
    }

    proptest! {
        /// Small long keys (bitmap) and every other key (hash counter) add up to the exact
        /// number of distinct keys, each counted once however often it repeats.
        #[test]
        fn event_keys_are_counted_once_each(
            keys in prop::collection::vec(
                prop_oneof![
                    (0i64..200).prop_map(Key::Long),
                    prop_oneof![Just(-1i64), Just(1 << 24), Just((1 << 24) - 1), Just(i64::MIN)]
                        .prop_map(Key::Long),
                    any::<i64>().prop_map(Key::Long),
                    "[a-c]{0,3}".prop_map(|s| Key::Str(s.as_str().into())),
                ],
                0..400,
            )
        ) {
            let mut counter = EventKeyCounter::default();
            let mut scratch = Vec::new();
            for key in &keys {
                counter.add(key, &mut scratch);
            }
            let distinct: HashSet<&Key> = keys.iter().collect();
            prop_assert_eq!(counter.count(), (distinct.len() as u64, true));
        }
    }

    /// Past the hash counter's exact limit the count is an estimate, and the bitmap's exact
    /// part is added to it.
    #[test]
    fn event_keys_beyond_the_exact_limit_are_estimated() {
        let mut counter = EventKeyCounter::default();
        let mut scratch = Vec::new();
        let small = 100_000i64;
        let large = EXACT_LIMIT as i64 + 100_000;
        for k in 0..small {
            counter.add(&Key::Long(k), &mut scratch);
        }
        assert_eq!(counter.count(), (small as u64, true));
        for k in 0..large {
            counter.add(&Key::Long(-1 - k), &mut scratch);
        }
        let (n, exact) = counter.count();
        assert!(!exact);
        let expected = (small + large) as f64;
        assert!(
            (n as f64 - expected).abs() / expected < 0.03,
            "{n} for {expected}"
        );
    }

    /// Hashes applied in batches, and the exact phase's when it ends, leave every register
    /// at the highest rank of its hashes; `count` includes the hashes still pending.
    #[test]
    fn registers_hold_the_highest_rank_of_their_hashes() {
        let mut c = DistinctCounter::default();
        let mut plain = vec![0u8; 1 << HLL_BITS];
        for i in 0..1_000_003u64 {
            // repeats too: every third hash is one seen before
            let h = DistinctCounter::hash(&(if i % 3 == 0 { i / 7 } else { i }).to_le_bytes());
            c.add_hash(h);
            let (idx, rank) = DistinctCounter::register_of(h);
            plain[idx] = plain[idx].max(rank);
        }
        assert_ne!(c.pending_len, 0);
        let counted = c.count();
        c.settle();
        assert!(c.exact.is_none());
        assert_eq!(c.registers[..], plain[..]);
        assert_eq!(counted, c.count());
    }

    #[test]
    fn estimates_of_keys_of_every_length_stay_close() {
        // decimal strings of 1 to 6 digits: every tail length, as string keys have
        for n in [70_000u64, 300_000] {
            let mut c = DistinctCounter::default();
            for i in 0..n {
                c.add_hash(DistinctCounter::hash(i.to_string().as_bytes()));
            }
            let (est, exact) = c.count();
            assert!(!exact);
            let err = (est as f64 - n as f64).abs() / n as f64;
            assert!(err < 0.03, "estimate {est} for {n}");
        }
    }
}
