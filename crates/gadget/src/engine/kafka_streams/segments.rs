//! A segmented store's RocksDB instances: one instance per time segment, opened by the first
//! write into it and dropped when stream time leaves it behind. A window store's segments
//! are timestamped (`TimestampedSegments` under `RocksDBTimestampedWindowStore`), a session
//! store's plain (`KeyValueSegments` under `RocksDBSessionStore`).
//!
//! Each segment is two or three states of the trace (its column families: `default`,
//! `offsets` and, timestamped, `keyValueWithTimestamp`), in a slot of the state table that
//! the segment opens ([`Op::Open`]) and frees when it is dropped ([`Op::Drop`]), so the table
//! stays as small as the live segments: at most retention ÷ segment interval + 3 of them.

use std::collections::BTreeMap;

use crate::access::{AccessSink, Op, StateId};

use super::{position_bytes, KafkaStreamsSpec, OFFSET_BYTES, STATUS_BYTES};

/// A segment's `default` column family, relative to its slot's first state.
const DEFAULT: StateId = 0;
/// Its `offsets` column family.
const OFFSETS: StateId = 1;

/// What a segment's RocksDB instance holds its data in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A timestamped store's: values in `keyValueWithTimestamp`, and `default` (the
    /// pre-timestamp format) checked empty with a seek when the segment opens.
    Timestamped,
    /// A plain store's: values in `default`.
    Plain,
}

impl Layout {
    /// The column families, in the order of their states within a slot.
    fn families(self) -> &'static [&'static str] {
        match self {
            Layout::Timestamped => &["default", "offsets", "keyValueWithTimestamp"],
            Layout::Plain => &["default", "offsets"],
        }
    }

    /// The data column family, relative to a slot's first state.
    fn data(self) -> StateId {
        match self {
            Layout::Timestamped => 2,
            Layout::Plain => DEFAULT,
        }
    }
}

/// The live segments of one window store.
#[derive(Debug, Clone)]
pub(crate) struct Segments {
    layout: Layout,
    /// The first state of slot 0 in the operator's state table.
    base: StateId,
    /// `<application.id>/<task>/<store>/<store>`: a segment's instance adds `.<start>`.
    prefix: String,
    changelog_key: Vec<u8>,
    position_bytes: u32,
    /// Segment length in ms: max(retention ÷ 2, 60 s).
    interval: i64,
    retention: i64,
    /// Live segments by id, each with its slot.
    live: BTreeMap<i64, u16>,
    free: Vec<u16>,
    slots: u16,
    /// The largest window start written (the store's stream time).
    observed: i64,
    /// The store's name (after its task's id when the job has several), in the names of
    /// free slots.
    store: String,
    name: String,
}

impl Segments {
    /// The segments of `spec`'s store, which keeps windows for `retention` ms.
    pub(crate) fn new(spec: &KafkaStreamsSpec, retention: i64, layout: Layout) -> Segments {
        Segments::named(spec, &spec.store, &spec.source_topic(), retention, layout)
    }

    /// The segments of store `store` of `spec`'s application, written by records of `topic`;
    /// their states start at `base` in the operator's state table (see [`Segments::at`]).
    pub(crate) fn named(
        spec: &KafkaStreamsSpec,
        store: &str,
        topic: &str,
        retention: i64,
        layout: Layout,
    ) -> Segments {
        let interval = (retention / 2).max(60_000);
        let slots = u16::try_from(retention / interval + 3).unwrap_or(u16::MAX);
        Segments {
            layout,
            base: 0,
            prefix: format!("{}/{}/{store}/{store}", spec.application_id, spec.task_id()),
            changelog_key: spec.changelog(store).into_bytes(),
            position_bytes: position_bytes(&[(topic, 1)]),
            interval,
            retention,
            live: BTreeMap::new(),
            free: (0..slots).rev().collect(),
            slots,
            observed: i64::MIN,
            store: if spec.partitions > 1 {
                format!("{}/{store}", spec.task_id())
            } else {
                store.to_string()
            },
            name: String::new(),
        }
    }

    /// The same segments with their states from `base` on in the state table (after another
    /// store's).
    pub(crate) fn at(mut self, base: StateId) -> Segments {
        self.base = base;
        self
    }

    /// The state table: every slot's states, `<store>.(slot N)/<column family>` until a
    /// segment opens them.
    pub(crate) fn states(&self) -> Vec<String> {
        let families = self.layout.families();
        (0..self.slots)
            .flat_map(|slot| {
                families
                    .iter()
                    .map(move |cf| format!("{}.(slot {slot})/{cf}", self.store))
            })
            .collect()
    }

    /// The oldest time a read still finds: stream time less the retention, plus 1.
    pub(crate) fn earliest_live(&self) -> i64 {
        self.observed
            .saturating_sub(self.retention)
            .saturating_add(1)
    }

    /// A removal of a key with segment timestamp `timestamp` moves the stream time.
    pub(crate) fn observe(&mut self, timestamp: i64) {
        self.observed = self.observed.max(timestamp);
    }

    /// The live segments from the one holding `from` on, oldest first: each id and its data
    /// state (`AbstractSegments.segments(from, Long.MAX_VALUE)`).
    pub(crate) fn from(&self, from: i64) -> impl Iterator<Item = (i64, StateId)> + '_ {
        self.between(from, i64::MAX)
    }

    /// The live segments from the one holding `from` to the one holding `to`, oldest first
    /// (`AbstractSegments.segments(from, to)`).
    pub(crate) fn between(&self, from: i64, to: i64) -> impl Iterator<Item = (i64, StateId)> + '_ {
        let data = self.layout.data();
        let (first, last) = (self.segment_id(from), self.segment_id(to));
        // an inverted range holds no segment (`BTreeMap::range` refuses one)
        let ids = if first <= last {
            first..last.saturating_add(1)
        } else {
            first..first
        };
        self.live
            .range(ids)
            .map(move |(&id, &slot)| (id, self.first_state(slot) + data))
    }

    /// The data state of the live segment holding `timestamp`, expired or not
    /// (`segmentForTimestamp`).
    pub(crate) fn holding(&self, timestamp: i64) -> Option<StateId> {
        let slot = *self.live.get(&self.segment_id(timestamp))?;
        Some(self.first_state(slot) + self.layout.data())
    }

    /// The id of the oldest live segment, if any.
    pub(crate) fn oldest(&self) -> Option<i64> {
        self.live.keys().next().copied()
    }

    /// The segment holding `timestamp` (Java's division: toward zero).
    pub(crate) fn segment_id(&self, timestamp: i64) -> i64 {
        timestamp / self.interval
    }

    /// The data state of the live segment holding `window_start`, if a read of it reaches
    /// RocksDB: none when the window is past the retention or its segment does not exist.
    pub(crate) fn read(&self, window_start: i64) -> Option<StateId> {
        if window_start < self.observed.saturating_sub(self.retention) + 1 {
            return None;
        }
        let slot = *self.live.get(&(window_start / self.interval))?;
        Some(self.first_state(slot) + self.layout.data())
    }

    /// The data state a write of `window_start` goes to: the stream time moves, its segment
    /// is opened if it is live and new, and segments left behind are closed and dropped;
    /// `None` when its segment has expired (Kafka Streams skips the record).
    pub(crate) fn write(&mut self, window_start: i64, out: &mut dyn AccessSink) -> Option<StateId> {
        self.observed = self.observed.max(window_start);
        let id = window_start / self.interval;
        let min_live = self.observed.saturating_sub(self.retention) / self.interval;
        let slot = if id >= min_live {
            Some(match self.live.get(&id) {
                Some(&slot) => slot,
                None => self.open(id, out),
            })
        } else {
            None
        };
        while let Some(entry) = self.live.first_entry() {
            if *entry.key() >= min_live {
                break;
            }
            let slot = entry.remove();
            self.drop_segment(slot, out);
        }
        slot.map(|s| self.first_state(s) + self.layout.data())
    }

    /// A commit's checkpoint: the changelog offset and the position, in every live segment.
    pub(crate) fn commit(&self, out: &mut dyn AccessSink) {
        for &slot in self.live.values() {
            let offsets = self.first_state(slot) + OFFSETS;
            out.access_all(offsets, &self.changelog_key, &[(Op::Put, OFFSET_BYTES)]);
            out.access_all(offsets, b"position", &[(Op::Put, self.position_bytes)]);
        }
    }

    /// Closing the store: each live segment writes its status.
    pub(crate) fn close(&self, out: &mut dyn AccessSink) {
        for &slot in self.live.values() {
            out.access_all(
                self.first_state(slot) + OFFSETS,
                b"status",
                &[(Op::Put, STATUS_BYTES)],
            );
        }
    }

    /// Opens segment `id` in a free slot: its states, then what opening the instance reads
    /// and writes.
    fn open(&mut self, id: i64, out: &mut dyn AccessSink) -> u16 {
        // at most retention ÷ interval + 2 segments are live when one opens, so a slot is free
        let slot = self.free.pop().unwrap_or(self.slots.saturating_sub(1));
        self.live.insert(id, slot);
        let first = self.first_state(slot);
        for (i, cf) in self.layout.families().iter().enumerate() {
            use std::fmt::Write;
            self.name.clear();
            let _ = write!(self.name, "{}.{}/{cf}", self.prefix, id * self.interval);
            out.access_all(first + i as StateId, self.name.as_bytes(), &[(Op::Open, 0)]);
        }
        // a timestamped store checks the pre-timestamp column family empty; then the status
        // and the position
        if self.layout == Layout::Timestamped {
            out.access_all(first + DEFAULT, b"", &[(Op::Seek, 0)]);
        }
        out.access_all(
            first + OFFSETS,
            b"status",
            &[(Op::Get, 0), (Op::Put, STATUS_BYTES)],
        );
        out.access_all(first + OFFSETS, b"position", &[(Op::Get, 0)]);
        slot
    }

    /// Closes the segment in `slot` (its status written) and drops its instance.
    fn drop_segment(&mut self, slot: u16, out: &mut dyn AccessSink) {
        let first = self.first_state(slot);
        out.access_all(first + OFFSETS, b"status", &[(Op::Put, STATUS_BYTES)]);
        for i in 0..self.layout.families().len() as StateId {
            out.access_all(first + i, b"", &[(Op::Drop, 0)]);
        }
        self.free.push(slot);
    }
}

impl Segments {
    /// The first of `slot`'s states.
    fn first_state(&self, slot: u16) -> StateId {
        self.base + slot * self.layout.families().len() as StateId
    }
}
