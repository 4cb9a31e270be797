//! `groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(size, grace)[.advanceBy(advance)])
//! .count()`: tumbling and hopping windows in a segmented window store
//! ([`Segments`](super::segments)), behind the record cache (`CachingWindowStore`).
//!
//! Per record, for each window it falls in (oldest first) that has not closed (its end
//! after the largest record time seen minus the grace), the count is fetched (from the cache,
//! else from its segment, when the segment exists and the window is within the retention;
//! a value read from RocksDB is not cached) and written to the cache. Flushing the cache
//! writes each dirty window to its segment, which may open that segment and drop old ones.

use crate::access::{AccessSink, Op};
use crate::operator::Operator;
use crate::source::element::Event;

use super::cache::{RecordCache, ThreadCache};
use super::count::serde_key;
use super::segments::{Layout, Segments};
use super::KafkaStreamsSpec;

/// A count's value: the 8-byte timestamp and the 8-byte count (`ValueAndTimestamp<Long>`).
const COUNT_VALUE_BYTES: u32 = 16;
/// The window start and the sequence number after the key in a window store's key.
const WINDOW_SUFFIX: usize = 8 + 4;
/// The segment id before the store's key in the cache's key.
const SEGMENT_PREFIX: usize = 8;

/// Time windows: tumbling when `advance == size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindows {
    /// Window length in ms.
    pub size: i64,
    /// Distance between window starts in ms.
    pub advance: i64,
    /// How long after its end a window still takes late records, in ms.
    pub grace: i64,
}

impl TimeWindows {
    /// The store's retention: the window size plus the grace (`Materialized`'s default).
    pub fn retention(&self) -> i64 {
        self.size.saturating_add(self.grace)
    }

    /// The start of the oldest window holding `timestamp` (`TimeWindows.windowsFor`).
    fn first_start(&self, timestamp: i64) -> i64 {
        (timestamp - self.size + self.advance).max(0) / self.advance * self.advance
    }
}

/// A windowed count.
#[derive(Debug)]
pub struct WindowedCount {
    spec: KafkaStreamsSpec,
    windows: TimeWindows,
    cache: RecordCache,
    segments: Segments,
    /// The largest record time seen (the processor's stream time).
    observed: i64,
    /// The cache's key: segment id, key, window start, sequence number.
    cache_key: Vec<u8>,
    /// The record's key as its serde writes it.
    key: Vec<u8>,
    topic_len: u64,
    since_commit: u64,
}

impl WindowedCount {
    /// The windowed count of `spec`'s store over `windows`, the only store of its thread's
    /// cache.
    pub fn new(spec: &KafkaStreamsSpec, windows: TimeWindows) -> WindowedCount {
        WindowedCount::in_thread(spec, windows, &ThreadCache::new(spec.cache_bytes))
    }

    /// The windowed count of `spec`'s store over `windows`, its cache in `thread`'s.
    pub fn in_thread(
        spec: &KafkaStreamsSpec,
        windows: TimeWindows,
        thread: &ThreadCache,
    ) -> WindowedCount {
        let segments = Segments::new(spec, windows.retention(), Layout::Timestamped);
        WindowedCount {
            spec: spec.clone(),
            windows,
            cache: thread.named(),
            segments,
            observed: i64::MIN,
            cache_key: Vec::with_capacity(40),
            key: Vec::with_capacity(16),
            topic_len: spec.source_topic().chars().count() as u64,
            since_commit: 0,
        }
    }

    fn commit(&mut self, out: &mut dyn AccessSink) {
        let old_values = self.sends_old_values();
        let segments = &mut self.segments;
        self.cache
            .flush(&mut |key, value_len| write(segments, out, key, value_len, old_values));
        self.segments.commit(out);
        self.since_commit = 0;
    }
}

/// A window the cache flushed (its cache key), written to its segment; read from it first
/// when the count sends old values (`CachingWindowStore.putAndMaybeForward`).
fn write(
    segments: &mut Segments,
    out: &mut dyn AccessSink,
    cache_key: &[u8],
    value_len: u32,
    old_values: bool,
) {
    let key = cache_key.get(SEGMENT_PREFIX..).unwrap_or_default();
    let start = key.len().saturating_sub(WINDOW_SUFFIX);
    let window_start = key
        .get(start..start + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, i64::from_be_bytes);
    if old_values {
        if let Some(state) = segments.read(window_start) {
            out.access_all(state, key, &[(Op::Get, 0)]);
        }
    }
    if let Some(state) = segments.write(window_start, out) {
        out.access_all(state, key, &[(Op::Put, value_len)]);
    }
}

impl Operator for WindowedCount {
    fn states(&self) -> Vec<String> {
        self.segments.states()
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let timestamp = event.timestamp;
        serde_key(&event.key, &mut self.key);
        self.observed = self.observed.max(timestamp);
        let close = self.observed.saturating_sub(self.windows.grace);
        let mut window_start = self.windows.first_start(timestamp);
        while window_start <= timestamp {
            // a record may fall in up to MAX_WINDOWS_PER_EVENT windows: a limit reached or a
            // stop asked for ends its work here (the run ends after it)
            if out.stopped() {
                return;
            }
            if window_start + self.windows.size > close {
                self.count(window_start, out);
            }
            window_start += self.windows.advance;
        }
        self.since_commit += 1;
        if self.since_commit >= self.spec.commit_every {
            self.commit(out);
        }
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        self.commit(out);
        self.segments.close(out);
    }
}

impl WindowedCount {
    /// Whether the cache's flushes read the old value: when a `suppress` asks for old values
    /// and the store has a caching layer (a cache of 0 bytes strips it from the topology:
    /// `InternalTopologyBuilder.rewriteTopology`, and the processor forwards the old value it
    /// fetched).
    fn sends_old_values(&self) -> bool {
        self.spec.suppress && self.spec.cache_bytes > 0
    }

    /// The fetch and the cached write of one window's count.
    fn count(&mut self, window_start: i64, out: &mut dyn AccessSink) {
        let old_values = self.sends_old_values();
        let key = &mut self.cache_key;
        key.clear();
        key.extend_from_slice(&self.segments.segment_id(window_start).to_be_bytes());
        key.extend_from_slice(&self.key);
        key.extend_from_slice(&window_start.to_be_bytes());
        key.extend_from_slice(&0u32.to_be_bytes());
        if !self.cache.get(key) {
            if let Some(state) = self.segments.read(window_start) {
                out.access_all(state, &key[SEGMENT_PREFIX..], &[(Op::Get, 0)]);
            }
        }
        let segments = &mut self.segments;
        self.cache
            .put_dirty(key, COUNT_VALUE_BYTES, self.topic_len, &mut |k, v| {
                write(segments, out, k, v, old_values)
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};
    use crate::key::Key;

    /// The requests of `events` (key, time) through a windowed count, as `op segment/cf
    /// detail value-len`: the segment by its start in seconds, a data key as `key@start`.
    fn requests(events: &[(i64, i64)], windows: TimeWindows, cache_bytes: u64) -> Vec<String> {
        requests_of(events, windows, cache_bytes, false)
    }

    /// [`requests`], `suppress`ed or not.
    fn requests_of(
        events: &[(i64, i64)],
        windows: TimeWindows,
        cache_bytes: u64,
        suppress: bool,
    ) -> Vec<String> {
        let spec = KafkaStreamsSpec {
            cache_bytes,
            windows: Some(windows),
            suppress,
            ..KafkaStreamsSpec::default()
        };
        let mut count = WindowedCount::new(&spec, windows);
        let mut names = count.states();
        let mut sink = VecSink::default();
        for &(key, timestamp) in events {
            let event = Event {
                key: Key::Long(key),
                timestamp,
                input: 0,
                closes: false,
                payload: 0,
            };
            count.on_event(&event, &mut sink);
        }
        count.on_end(&mut sink);
        let mut out = Vec::new();
        for r in &sink.records {
            let TraceRecord::Access {
                op,
                state,
                key,
                value_len,
            } = r
            else {
                continue;
            };
            let name = &mut names[usize::from(*state)];
            if *op == Op::Open {
                *name = String::from_utf8(key.clone()).unwrap();
            }
            // `gadget/0_0/counts/counts.60000/offsets` → `60/offsets`
            let (segment, cf) = name.rsplit_once('/').unwrap();
            let start = segment.rsplit_once('.').map_or("?", |(_, s)| s);
            let start = start
                .parse::<i64>()
                .map_or("?".into(), |s| (s / 1000).to_string());
            let detail = match (cf, *op) {
                (_, Op::Open | Op::Drop) | ("default", _) => String::new(),
                ("keyValueWithTimestamp", _) => {
                    let at = |i: usize| i64::from_be_bytes(key[i..i + 8].try_into().unwrap());
                    format!("{}@{}", at(0), at(8))
                }
                _ => String::from_utf8_lossy(key).replace("gadget-counts-changelog-0", "changelog"),
            };
            let cf = if cf == "keyValueWithTimestamp" {
                "data"
            } else {
                cf
            };
            out.push(format!("{} {start}/{cf} {detail} {value_len}", op.name()).replace("  ", " "));
        }
        out
    }

    fn open(start: &str) -> Vec<String> {
        let mut v: Vec<String> = ["default", "offsets", "data"]
            .iter()
            .map(|cf| format!("open {start}/{cf} 0"))
            .collect();
        v.extend(
            [
                "seek {s}/default 0",
                "get {s}/offsets status 0",
                "put {s}/offsets status 8",
                "get {s}/offsets position 0",
            ]
            .map(|r| r.replace("{s}", start)),
        );
        v
    }

    fn commit(starts: &[&str]) -> Vec<String> {
        starts
            .iter()
            .flat_map(|s| {
                [
                    format!("put {s}/offsets changelog 8"),
                    format!("put {s}/offsets position 206"),
                ]
            })
            .collect()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const TUMBLING_5S: TimeWindows = TimeWindows {
        size: 5_000,
        advance: 5_000,
        grace: 0,
    };

    #[test]
    fn without_a_cache_the_first_write_opens_the_segment_and_later_segments_drop_it() {
        let got = requests(&[(1, 0), (1, 1_000), (2, 70_000)], TUMBLING_5S, 0);
        let mut want = Vec::new();
        // no read: the segment does not exist yet; the write opens it
        want.extend(open("0"));
        want.extend(strings(&["put 0/data 1@0 16"]));
        want.extend(commit(&["0"]));
        want.extend(strings(&["get 0/data 1@0 0", "put 0/data 1@0 16"]));
        want.extend(commit(&["0"]));
        // window 70 s is in segment 60 s; stream time 70 s less the 5 s retention leaves
        // segment 0 behind: it is closed and dropped after the new one opens
        want.extend(open("60"));
        want.extend(strings(&[
            "put 0/offsets status 8",
            "drop 0/default 0",
            "drop 0/offsets 0",
            "drop 0/data 0",
            "put 60/data 2@70000 16",
        ]));
        want.extend(commit(&["60"]));
        want.extend(commit(&["60"]));
        want.extend(strings(&["put 60/offsets status 8"]));
        assert_eq!(got, want);
    }

    #[test]
    fn suppressed_a_flushed_window_is_read_from_its_segment_before_it_is_written() {
        let got = requests_of(
            &[(1, 0), (1, 1_000), (1, 2_000)],
            TUMBLING_5S,
            10 << 20,
            true,
        );
        // the first flush finds no segment to read (the write opens it)
        let mut want = open("0");
        want.extend(strings(&["put 0/data 1@0 16"]));
        want.extend(commit(&["0"]));
        for _ in 0..2 {
            // the record's fetch hits the cache; the flush reads the old value, then writes
            want.extend(strings(&["get 0/data 1@0 0", "put 0/data 1@0 16"]));
            want.extend(commit(&["0"]));
        }
        want.extend(commit(&["0"]));
        want.extend(strings(&["put 0/offsets status 8"]));
        assert_eq!(got, want);
        let plain = requests(&[(1, 0), (1, 1_000), (1, 2_000)], TUMBLING_5S, 10 << 20);
        assert_eq!(got.len(), plain.len() + 2);
        // without a cache there is no caching layer to flush: the same requests as unsuppressed
        let events = [(1, 0), (1, 1_000), (2, 70_000)];
        assert_eq!(
            requests_of(&events, TUMBLING_5S, 0, true),
            requests(&events, TUMBLING_5S, 0)
        );
    }

    #[test]
    fn with_the_cache_a_window_is_read_from_rocksdb_only_before_it_is_cached() {
        let got = requests(&[(1, 0), (1, 1_000), (1, 2_000)], TUMBLING_5S, 10 << 20);
        let mut want = open("0");
        want.extend(strings(&["put 0/data 1@0 16"]));
        want.extend(commit(&["0"]));
        for _ in 0..2 {
            // the fetch hits the cache; the commit writes the dirty window
            want.extend(strings(&["put 0/data 1@0 16"]));
            want.extend(commit(&["0"]));
        }
        want.extend(commit(&["0"]));
        want.extend(strings(&["put 0/offsets status 8"]));
        assert_eq!(got, want);
    }

    /// A sink that takes no more once it has taken `room` requests, as the generation's
    /// limit does (and as a stop does at once).
    struct Room {
        taken: u64,
        room: u64,
    }

    impl AccessSink for Room {
        fn access(&mut self, _: crate::access::Access<'_>) {
            self.taken += 1;
        }
        fn stopped(&self) -> bool {
            self.taken >= self.room
        }
    }

    #[test]
    fn a_record_in_many_windows_ends_its_work_once_the_sink_takes_no_more() {
        // 100,000 windows a record, the most a config allows: 200,000 requests without a cache
        let windows = TimeWindows {
            size: 86_400_000,
            advance: 864,
            grace: 0,
        };
        let spec = KafkaStreamsSpec {
            cache_bytes: 0,
            windows: Some(windows),
            ..KafkaStreamsSpec::default()
        };
        let mut count = WindowedCount::new(&spec, windows);
        let mut sink = Room {
            taken: 0,
            room: 1_000,
        };
        let event = Event {
            key: Key::Long(1),
            timestamp: 100_000_000,
            input: 0,
            closes: false,
            payload: 0,
        };
        count.on_event(&event, &mut sink);
        // at most one window's requests (a get, a put, a segment's opening) past the look
        assert!((1_000..1_020).contains(&sink.taken), "{}", sink.taken);
    }

    #[test]
    fn a_record_of_a_closed_window_is_dropped_and_hopping_windows_are_counted_oldest_first() {
        // the window [0, 5 s) closed when stream time reached 10 s (no grace): nothing
        let got = requests(&[(1, 10_000), (1, 1_000)], TUMBLING_5S, 0);
        let mut want = open("0");
        want.extend(strings(&["put 0/data 1@10000 16"]));
        want.extend(commit(&["0"]));
        want.extend(commit(&["0"]));
        want.extend(commit(&["0"]));
        want.extend(strings(&["put 0/offsets status 8"]));
        assert_eq!(got, want);
        // with a grace of 10 s it still counts, in its own (existing) segment
        let grace = TimeWindows {
            grace: 10_000,
            ..TUMBLING_5S
        };
        let got = requests(&[(1, 10_000), (1, 1_000)], grace, 0);
        assert!(got.contains(&"put 0/data 1@0 16".to_string()), "{got:?}");
        let hopping = TimeWindows {
            size: 10_000,
            advance: 5_000,
            grace: 0,
        };
        let got = requests(&[(7, 12_000)], hopping, 0);
        let puts: Vec<&String> = got.iter().filter(|r| r.starts_with("put 0/data")).collect();
        assert_eq!(puts, ["put 0/data 7@5000 16", "put 0/data 7@10000 16"]);
    }
}
