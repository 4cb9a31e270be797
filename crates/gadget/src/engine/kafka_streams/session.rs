//! `groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, grace)).count()`:
//! session windows in a segmented session store ([`Segments`] of the plain layout, a
//! `RocksDBSessionStore`), behind the record cache (`CachingSessionStore`).
//!
//! A session's key in RocksDB is the record key, the session's end and its start (8 bytes
//! each, big-endian); it lives in the segment of its end. Per record at time `t`
//! (`KStreamSessionWindowAggregate.process`):
//!
//! 1. **Find the sessions** within the gap (`findSessions(key, t − gap, t + gap)`): every live
//!    segment from the one holding `from` = max(t − gap, store time − retention + 1) is
//!    searched in turn, oldest first, with a range iterator over [key|from|0, key|MAX|t + gap]:
//!    a seek, then a RocksDB `next` per entry read (the iterator reads ahead one entry, so the
//!    `next` comes before the entry is checked against the range's end); entries of the range
//!    whose start is after `t + gap` are stepped over.
//! 2. **Drop** the record if the merged session ends before stream time − grace − gap.
//! 3. Otherwise, unless the merged session is the record's own `[t, t]`, **remove** each found
//!    session (a RocksDB `delete` reads the old value first: a get, then the delete), then
//!    **put** the merged session with its count (8 bytes).
//!
//! With the record cache, removes and puts are cached (a removal as a tombstone) and reach
//! RocksDB when the cache flushes: a tombstone reads the session first (`fetchSession`) and
//! deletes it only if RocksDB holds it; with old values (a `suppress` downstream) every
//! flushed session is read first. A session's cache key puts its segment id before it.
//!
//! Not modelled: Kafka's cache iterator also finds clean cached sessions whose segment RocksDB
//! already expired (a late record within the gap of a session older than the retention); no
//! recorded setting reaches that case (docs/engines.md).

use std::collections::BTreeMap;

use crate::access::{AccessSink, Op};
use crate::operator::Operator;
use crate::source::element::Event;

use super::cache::{RecordCache, ThreadCache};
use super::count::serde_key;
use super::found::FoundSessions;
use super::held::Held;
use super::segments::{Layout, Segments};
use super::KafkaStreamsSpec;

/// A count's value in a session store: the 8-byte count (no timestamp).
const COUNT_VALUE_BYTES: u32 = 8;
/// A session's end and start after the key in its store key.
const SESSION_SUFFIX: usize = 16;
/// The segment id before the store's key in the cache's key.
const SEGMENT_PREFIX: usize = 8;
/// A tombstone's value size in the cache (a removed session); counts are never empty.
const TOMBSTONE: u32 = 0;

/// Session windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionWindows {
    /// The inactivity gap that closes a session, in ms.
    pub gap: i64,
    /// How long after its end a session still takes late records, in ms.
    pub grace: i64,
}

impl SessionWindows {
    /// The store's retention: the gap plus the grace (`SessionWindowedKStreamImpl`).
    pub fn retention(&self) -> i64 {
        self.gap.saturating_add(self.grace)
    }
}

/// A session's end, from its store key.
fn end_of(session: &[u8]) -> i64 {
    suffix_long(session, 0)
}

/// A session's start, from its store key.
fn start_of(session: &[u8]) -> i64 {
    suffix_long(session, 8)
}

fn suffix_long(session: &[u8], at: usize) -> i64 {
    let from = session.len().saturating_sub(SESSION_SUFFIX) + at;
    session
        .get(from..from + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, i64::from_be_bytes)
}

/// Writes `key | end | start` into `out`.
fn session_key(out: &mut Vec<u8>, key: &[u8], end: i64, start: i64) {
    out.clear();
    out.extend_from_slice(key);
    out.extend_from_slice(&end.to_be_bytes());
    out.extend_from_slice(&start.to_be_bytes());
}

/// The session store below the cache: its segments and the sessions RocksDB holds in each.
#[derive(Debug)]
struct Store {
    segments: Segments,
    /// The sessions RocksDB holds.
    held: Held,
}

impl Store {
    /// `put(session, count)`: the segment is opened if new, old ones dropped; nothing when the
    /// session's segment has expired.
    fn put(&mut self, out: &mut dyn AccessSink, session: &[u8], value_len: u32) {
        let end = end_of(session);
        let state = self.segments.write(end, out);
        self.held.forget_before(self.segments.oldest());
        if let Some(state) = state {
            out.access_all(state, session, &[(Op::Put, value_len)]);
            self.held.insert(self.segments.segment_id(end), session);
        }
    }

    /// `put(session, null)`, a flushed tombstone: a delete where `put` would write.
    fn put_tombstone(&mut self, out: &mut dyn AccessSink, session: &[u8]) {
        let end = end_of(session);
        let state = self.segments.write(end, out);
        self.held.forget_before(self.segments.oldest());
        if let Some(state) = state {
            out.access_all(state, session, &[(Op::Delete, 0)]);
            self.held.remove(self.segments.segment_id(end), session);
        }
    }

    /// `remove(session)`: a get and a delete in the segment holding it, if it exists.
    fn remove(&mut self, out: &mut dyn AccessSink, session: &[u8]) {
        let end = end_of(session);
        self.segments.observe(end);
        if let Some(state) = self.segments.holding(end) {
            out.access_all(state, session, &[(Op::Get, 0), (Op::Delete, 0)]);
            self.held.remove(self.segments.segment_id(end), session);
        }
    }

    /// `fetchSession`: a get unless the session is past the retention or its segment does
    /// not exist; whether RocksDB holds it.
    fn fetch(&self, out: &mut dyn AccessSink, session: &[u8]) -> bool {
        let end = end_of(session);
        let Some(state) = self.segments.read(end) else {
            return false;
        };
        out.access_all(state, session, &[(Op::Get, 0)]);
        self.held.contains(self.segments.segment_id(end), session)
    }

    /// `findSessions(key, earliest_end, latest_start)` in RocksDB: the requests of its
    /// iterators, and each session found appended to `found`.
    fn find(
        &self,
        out: &mut dyn AccessSink,
        key: &[u8],
        earliest_end: i64,
        latest_start: i64,
        bounds: &mut [Vec<u8>; 2],
        found: &mut FoundSessions,
    ) {
        let from = earliest_end.max(self.segments.earliest_live());
        let [lower, upper] = bounds;
        session_key(lower, key, from.max(0), 0);
        session_key(upper, key, i64::MAX, latest_start);
        let own_key = |session: &[u8]| {
            session.len() == key.len() + SESSION_SUFFIX && session.starts_with(key)
        };
        for (id, state) in self.segments.from(from) {
            self.held
                .scan(out, id, state, lower, upper, &mut |session| {
                    if own_key(session)
                        && end_of(session) >= from
                        && start_of(session) <= latest_start
                    {
                        found.insert(session);
                    }
                });
        }
    }
}

/// A session-windowed count.
#[derive(Debug)]
pub struct SessionCount {
    spec: KafkaStreamsSpec,
    windows: SessionWindows,
    cache: RecordCache,
    store: Store,
    /// Sessions the cache holds dirty, by store key: `true` for a removal.
    pending: BTreeMap<Vec<u8>, bool>,
    /// The largest record time seen (the processor's stream time).
    observed: i64,
    key: Vec<u8>,
    found: FoundSessions,
    bounds: [Vec<u8>; 2],
    /// A merged session's key.
    scratch: Vec<u8>,
    cache_key: Vec<u8>,
    topic_len: u64,
    since_commit: u64,
}

impl SessionCount {
    /// The session-windowed count of `spec`'s store over `windows`, the only store of its
    /// thread's cache.
    pub fn new(spec: &KafkaStreamsSpec, windows: SessionWindows) -> SessionCount {
        SessionCount::in_thread(spec, windows, &ThreadCache::new(spec.cache_bytes))
    }

    /// The session-windowed count of `spec`'s store over `windows`, its cache in `thread`'s.
    pub fn in_thread(
        spec: &KafkaStreamsSpec,
        windows: SessionWindows,
        thread: &ThreadCache,
    ) -> SessionCount {
        SessionCount {
            spec: spec.clone(),
            windows,
            cache: thread.named(),
            store: Store {
                segments: Segments::new(spec, windows.retention(), Layout::Plain),
                held: Held::default(),
            },
            pending: BTreeMap::new(),
            observed: i64::MIN,
            key: Vec::with_capacity(16),
            found: FoundSessions::default(),
            bounds: [Vec::with_capacity(40), Vec::with_capacity(40)],
            scratch: Vec::with_capacity(48),
            cache_key: Vec::with_capacity(48),
            topic_len: spec.source_topic().chars().count() as u64,
            since_commit: 0,
        }
    }

    /// Whether the store has a caching layer (a cache of 0 bytes strips it).
    fn cached(&self) -> bool {
        self.spec.cache_bytes > 0
    }

    /// Whether the cache's flushes read each session first: a `suppress` asks for old values.
    fn sends_old_values(&self) -> bool {
        self.spec.suppress && self.cached()
    }

    /// The sessions of the record's key within the gap of `t`: RocksDB's, less those the
    /// cache removed, plus those it holds dirty.
    fn find(&mut self, t: i64, out: &mut dyn AccessSink) {
        let (earliest_end, latest_start) = (t - self.windows.gap, t + self.windows.gap);
        self.found.clear();
        self.store.find(
            out,
            &self.key,
            earliest_end,
            latest_start,
            &mut self.bounds,
            &mut self.found,
        );
        if self.pending.is_empty() {
            self.found.settle();
            return;
        }
        let key = &self.key;
        for (session, &removed) in &self.pending {
            let own_key = session.len() == key.len() + SESSION_SUFFIX && session.starts_with(key);
            if !own_key {
                continue;
            }
            if removed {
                self.found.remove(session);
            } else if end_of(session) >= earliest_end && start_of(session) <= latest_start {
                self.found.insert(session);
            }
        }
        self.found.settle();
    }

    /// Removes `session` (through the cache when there is one).
    fn remove(&mut self, session: &[u8], out: &mut dyn AccessSink) {
        if self.cached() {
            self.cache_write(session, TOMBSTONE, out);
        } else {
            self.store.remove(out, session);
        }
    }

    /// Writes the session in `scratch` with its count.
    fn put_scratch(&mut self, out: &mut dyn AccessSink) {
        let session = std::mem::take(&mut self.scratch);
        if self.cached() {
            self.cache_write(&session, COUNT_VALUE_BYTES, out);
        } else {
            self.store.put(out, &session, COUNT_VALUE_BYTES);
        }
        self.scratch = session;
    }

    /// A dirty write of `session` to the cache, under its segment's id.
    fn cache_write(&mut self, session: &[u8], value_len: u32, out: &mut dyn AccessSink) {
        let old_values = self.sends_old_values();
        let cache_key = &mut self.cache_key;
        cache_key.clear();
        let segment = self.store.segments.segment_id(end_of(session));
        cache_key.extend_from_slice(&segment.to_be_bytes());
        cache_key.extend_from_slice(session);
        // a commit after every record leaves nothing dirty for the next record's search
        if self.spec.commit_every > 1 {
            let removal = value_len == TOMBSTONE;
            match self.pending.get_mut(session) {
                Some(pending) => *pending = removal,
                None => {
                    self.pending.insert(session.to_vec(), removal);
                }
            }
        }
        let (store, pending) = (&mut self.store, &mut self.pending);
        self.cache
            .put_dirty(cache_key, value_len, self.topic_len, &mut |k, v| {
                flush(store, pending, out, k, v, old_values)
            });
    }

    fn commit(&mut self, out: &mut dyn AccessSink) {
        let old_values = self.sends_old_values();
        let (store, pending) = (&mut self.store, &mut self.pending);
        self.cache
            .flush(&mut |k, v| flush(store, pending, out, k, v, old_values));
        self.store.segments.commit(out);
        self.since_commit = 0;
    }
}

/// A session the cache flushed (its cache key) reaching RocksDB
/// (`CachingSessionStore.putAndMaybeForward`): a tombstone, or any session when old values
/// are sent, is read first; a tombstone of a session RocksDB does not hold writes nothing.
fn flush(
    store: &mut Store,
    pending: &mut BTreeMap<Vec<u8>, bool>,
    out: &mut dyn AccessSink,
    cache_key: &[u8],
    value_len: u32,
    old_values: bool,
) {
    let session = cache_key.get(SEGMENT_PREFIX..).unwrap_or_default();
    pending.remove(session);
    let tombstone = value_len == TOMBSTONE;
    let held = (tombstone || old_values) && store.fetch(out, session);
    if tombstone {
        if held {
            store.put_tombstone(out, session);
        }
    } else {
        store.put(out, session, value_len);
    }
}

impl Operator for SessionCount {
    fn states(&self) -> Vec<String> {
        self.store.segments.states()
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let t = event.timestamp;
        serde_key(&event.key, &mut self.key);
        self.observed = self.observed.max(t);
        let close = self
            .observed
            .saturating_sub(self.windows.grace)
            .saturating_sub(self.windows.gap);
        self.find(t, out);
        let (mut start, mut end) = (t, t);
        for session in self.found.iter() {
            start = start.min(start_of(session));
            end = end.max(end_of(session));
        }
        if end >= close {
            if (start, end) != (t, t) {
                let found = std::mem::take(&mut self.found);
                for session in found.iter() {
                    self.remove(session, out);
                }
                self.found = found;
            }
            let mut merged = std::mem::take(&mut self.scratch);
            session_key(&mut merged, &self.key, end, start);
            self.scratch = merged;
            self.put_scratch(out);
        }
        self.since_commit += 1;
        if self.since_commit >= self.spec.commit_every {
            self.commit(out);
        }
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        self.commit(out);
        self.store.segments.close(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};
    use crate::key::Key;

    const GAP_10S: SessionWindows = SessionWindows {
        gap: 10_000,
        grace: 0,
    };

    /// The data requests of `events` (key, time in s) through a session count, as
    /// `op segment-in-s key@start-end` (`next` with the key it lands on, `-` for none); the
    /// `offsets` family's requests and segment opens and drops are left out.
    fn requests(events: &[(i64, i64)], windows: SessionWindows, cache_bytes: u64) -> Vec<String> {
        let spec = KafkaStreamsSpec {
            cache_bytes,
            sessions: Some(windows),
            ..KafkaStreamsSpec::default()
        };
        let mut count = SessionCount::new(&spec, windows);
        let mut names = count.states();
        let mut sink = VecSink::default();
        for &(key, seconds) in events {
            let event = Event {
                key: Key::Long(key),
                timestamp: seconds * 1000,
                input: 0,
                closes: false,
                payload: 0,
            };
            count.on_event(&event, &mut sink);
        }
        count.on_end(&mut sink);
        let mut out = Vec::new();
        for r in &sink.records {
            let TraceRecord::Access { op, state, key, .. } = r else {
                continue;
            };
            let name = &mut names[usize::from(*state)];
            if *op == Op::Open {
                *name = String::from_utf8(key.clone()).unwrap();
            }
            let (segment, cf) = name.rsplit_once('/').unwrap();
            if cf != "default" || matches!(op, Op::Open | Op::Drop) {
                continue;
            }
            let start: i64 = segment.rsplit_once('.').unwrap().1.parse().unwrap();
            let detail = if key.is_empty() {
                "-".to_string()
            } else {
                let at = |i: usize| i64::from_be_bytes(key[i..i + 8].try_into().unwrap());
                format!("{}@{}-{}", at(0), at(16) / 1000, at(8) / 1000)
            };
            out.push(format!("{} {} {detail}", op.name(), start / 1000));
        }
        out
    }

    #[test]
    fn a_record_within_the_gap_merges_the_session_it_finds() {
        let got = requests(&[(5, 100), (5, 105), (2, 107), (9, 108)], GAP_10S, 0);
        assert_eq!(
            got,
            [
                // no segment yet: nothing to search
                "put 60 5@100-100",
                // the search seeks key 5 from 95 s; the iterator reads the session and lands
                // past it; the session is removed (read, deleted) and the merged one written
                "seek 60 5@0-95",
                "next 60 -",
                "get 60 5@100-100",
                "delete 60 5@100-100",
                "put 60 5@100-105",
                // key 2's seek lands on key 5's session: read (the iterator moves on to
                // nothing), past the range's end
                "seek 60 2@0-97",
                "next 60 -",
                "put 60 2@107-107",
                // key 9's seek lands after every session: nothing read
                "seek 60 9@0-98",
                "put 60 9@108-108",
            ]
        );
    }

    #[test]
    fn with_the_cache_a_merged_session_is_written_at_the_commit_and_a_removed_one_read_first() {
        let got = requests(&[(1, 100), (1, 105)], GAP_10S, 10 << 20);
        assert_eq!(
            got,
            [
                "put 60 1@100-100",
                "seek 60 1@0-95",
                "next 60 -",
                // the flush in order of writes: the tombstone reads the session, then deletes
                "get 60 1@100-100",
                "delete 60 1@100-100",
                "put 60 1@100-105",
            ]
        );
        // a record inside its session: the tombstone and the put share a cache key, so only
        // the put reaches RocksDB; without the cache it is a get, a delete and a put
        let inside = [(1, 100), (1, 110), (1, 105)];
        let cached = requests(&inside, GAP_10S, 10 << 20);
        // (the search starts at stream time less the retention: 100.001 s)
        assert_eq!(
            &cached[cached.len() - 3..],
            ["seek 60 1@0-100", "next 60 -", "put 60 1@100-110"]
        );
        let uncached = requests(&inside, GAP_10S, 0);
        assert_eq!(
            &uncached[uncached.len() - 3..],
            [
                "get 60 1@100-110",
                "delete 60 1@100-110",
                "put 60 1@100-110"
            ]
        );
    }

    #[test]
    fn a_search_reads_every_live_segment_and_steps_over_sessions_that_start_too_late() {
        // key 1's sessions end in segments 60 s and 120 s; a late record at 115 s (gap 10 s,
        // grace 60 s) searches both, from 105 s to 125 s
        let windows = SessionWindows {
            gap: 10_000,
            grace: 60_000,
        };
        let got = requests(&[(1, 100), (1, 130), (1, 115)], windows, 0);
        assert_eq!(
            got,
            [
                "put 60 1@100-100",
                // from 120 s on: no segment (segment 60 s is before it)
                "put 120 1@130-130",
                // the session ending at 100 s is before the seek: nothing read in segment 60
                "seek 60 1@0-105",
                // the one starting at 130 s is in the range (its end is before the range's
                // end) but starts after 125 s: read and stepped over
                "seek 120 1@0-105",
                "next 120 -",
                "put 60 1@115-115",
            ]
        );
    }

    #[test]
    fn a_late_record_whose_session_closed_writes_nothing() {
        // stream time 200 s, no grace: sessions ending before 190 s are closed
        let got = requests(&[(1, 200), (2, 100)], GAP_10S, 0);
        assert_eq!(got, ["put 180 1@200-200", "seek 180 2@0-190"], "{got:?}");
    }
}
