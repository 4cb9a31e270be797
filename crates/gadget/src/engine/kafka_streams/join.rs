//! `left.join(right, joiner, JoinWindows.ofTimeDifferenceAndGrace(difference, grace))`: a
//! KStream–KStream inner join, each side's records in a segmented window store that keeps
//! duplicates ([`Segments`] of the plain layout, no record cache: Kafka Streams builds join
//! stores without one).
//!
//! The stores are `<store>-this-join-store` (the left side's) and `<store>-other-join-store`
//! (the right side's). A record's key in its store is the record key, its timestamp (8 bytes)
//! and the store's sequence number (4 bytes, one more per write: duplicates are kept), in the
//! segment of its timestamp; its value the record's value (a long, 8 bytes). Per record at
//! time `t` (`KStreamKStreamJoin` after `KStreamJoinWindow`, which forwards a record before it
//! stores it):
//!
//! 1. **Fetch** the other side's records of the key within the window
//!    (`otherWindowStore.fetch(key, t − before, t + after)`): nothing when the window ends
//!    before the other store's stream time less its retention; otherwise each live segment
//!    between those times, oldest first, with a range iterator (a seek to key | from | 0, a
//!    `next` per entry read, to key | to | `Integer.MAX_VALUE`).
//! 2. **Put** the record in its side's store: the segment is opened if new and old ones
//!    dropped; nothing is written when the segment has expired.
//!
//! A commit writes the changelog offset and position of every live segment, the left store's
//! first; each store's position names the topic that writes it.

use crate::access::{AccessSink, Op};
use crate::operator::Operator;
use crate::source::element::Event;

use super::count::serde_key;
use super::held::Held;
use super::segments::{Layout, Segments};
use super::KafkaStreamsSpec;

/// A record's value in a join store: a long.
const VALUE_BYTES: u32 = 8;
/// The timestamp and the sequence number after the key in a window store's key.
const WINDOW_SUFFIX: usize = 8 + 4;

/// A join's window: the other side's records from `before` ms before a record to `after` ms
/// after it join it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinWindows {
    /// How far before a record the other side's records join it, in ms.
    pub before: i64,
    /// How far after it, in ms.
    pub after: i64,
    /// How long after the window's end a late record still joins, in ms.
    pub grace: i64,
}

impl JoinWindows {
    /// `JoinWindows.ofTimeDifferenceAndGrace(difference, grace)`: symmetric.
    pub fn of_time_difference(difference: i64, grace: i64) -> JoinWindows {
        JoinWindows {
            before: difference,
            after: difference,
            grace,
        }
    }

    /// Each store's retention: the window's size (before + after) plus the grace.
    pub fn retention(&self) -> i64 {
        self.before
            .saturating_add(self.after)
            .saturating_add(self.grace)
    }
}

/// One side's window store.
#[derive(Debug)]
struct Side {
    segments: Segments,
    held: Held,
    seqnum: u32,
}

impl Side {
    /// `put(key, value, t)`: the next sequence number, then the write in `t`'s segment.
    fn put(&mut self, out: &mut dyn AccessSink, key: &[u8], t: i64, scratch: &mut Vec<u8>) {
        self.seqnum = self.seqnum.wrapping_add(1) & 0x7fff_ffff;
        window_key(scratch, key, t, self.seqnum);
        let state = self.segments.write(t, out);
        self.held.forget_before(self.segments.oldest());
        if let Some(state) = state {
            out.access_all(state, scratch, &[(Op::Put, VALUE_BYTES)]);
            self.held.insert(self.segments.segment_id(t), scratch);
        }
    }

    /// `fetch(key, from, to)`: the requests of its iterators, read to the end.
    fn fetch(
        &self,
        out: &mut dyn AccessSink,
        key: &[u8],
        from: i64,
        to: i64,
        bounds: &mut [Vec<u8>; 2],
    ) {
        let from = from.max(self.segments.earliest_live());
        if to < from {
            return;
        }
        let [lower, upper] = bounds;
        window_key(lower, key, from.max(0), 0);
        window_key(upper, key, to, i32::MAX as u32);
        for (id, state) in self.segments.between(from, to) {
            self.held.scan(out, id, state, lower, upper, &mut |_| {});
        }
    }
}

/// Writes `key | timestamp | seqnum` into `out`.
fn window_key(out: &mut Vec<u8>, key: &[u8], timestamp: i64, seqnum: u32) {
    out.clear();
    out.extend_from_slice(key);
    out.extend_from_slice(&timestamp.to_be_bytes());
    out.extend_from_slice(&seqnum.to_be_bytes());
}

/// A KStream–KStream windowed inner join.
#[derive(Debug)]
pub struct StreamJoin {
    windows: JoinWindows,
    /// The left side's store (`this`), then the right side's (`other`).
    sides: [Side; 2],
    commit_every: u64,
    since_commit: u64,
    key: Vec<u8>,
    bounds: [Vec<u8>; 2],
    scratch: Vec<u8>,
}

impl StreamJoin {
    /// The join of `spec`'s topic (left) with `right_topic` over `windows`.
    pub fn new(spec: &KafkaStreamsSpec, windows: JoinWindows, right_topic: &str) -> StreamJoin {
        let side = |suffix: &str, topic: &str| Side {
            segments: Segments::named(
                spec,
                &format!("{}-{suffix}-join-store", spec.store),
                topic,
                windows.retention(),
                Layout::Plain,
            ),
            held: Held::default(),
            seqnum: 0,
        };
        let this = side("this", &spec.topic);
        let mut other = side("other", right_topic);
        other.segments = other
            .segments
            .at(this.segments.states().len() as crate::access::StateId);
        StreamJoin {
            windows,
            sides: [this, other],
            commit_every: spec.commit_every,
            since_commit: 0,
            key: Vec::with_capacity(16),
            bounds: [
                Vec::with_capacity(8 + WINDOW_SUFFIX),
                Vec::with_capacity(8 + WINDOW_SUFFIX),
            ],
            scratch: Vec::with_capacity(8 + WINDOW_SUFFIX),
        }
    }

    fn commit(&mut self, out: &mut dyn AccessSink) {
        for side in &self.sides {
            side.segments.commit(out);
        }
        self.since_commit = 0;
    }
}

impl Operator for StreamJoin {
    fn states(&self) -> Vec<String> {
        let mut states = self.sides[0].segments.states();
        states.extend(self.sides[1].segments.states());
        states
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let t = event.timestamp;
        serde_key(&event.key, &mut self.key);
        // input 1 is the left side, 2 the right
        let this = usize::from(event.input == 2);
        // the right side's processor sees the window mirrored
        let (before, after) = if this == 0 {
            (self.windows.before, self.windows.after)
        } else {
            (self.windows.after, self.windows.before)
        };
        let (from, to) = ((t - before).max(0), (t + after).max(0));
        self.sides[1 - this].fetch(out, &self.key, from, to, &mut self.bounds);
        self.sides[this].put(out, &self.key, t, &mut self.scratch);
        self.since_commit += 1;
        if self.since_commit >= self.commit_every {
            self.commit(out);
        }
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        self.commit(out);
        for side in &self.sides {
            side.segments.close(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};
    use crate::key::Key;

    /// The data requests of `events` (side 1 or 2, key, time in s) through a join of 5 s, as
    /// `op side segment-in-s key@time#seq` (`next` with the key it lands on, `-` for none).
    fn requests(events: &[(u8, i64, i64)]) -> Vec<String> {
        let spec = KafkaStreamsSpec {
            store: "j".into(),
            ..KafkaStreamsSpec::default()
        };
        let mut join = StreamJoin::new(&spec, JoinWindows::of_time_difference(5_000, 0), "r");
        let mut names = join.states();
        let mut sink = VecSink::default();
        for &(input, key, seconds) in events {
            let event = Event {
                key: Key::Long(key),
                timestamp: seconds * 1000,
                input,
                closes: false,
                payload: 0,
            };
            join.on_event(&event, &mut sink);
        }
        join.on_end(&mut sink);
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
            let side = if segment.contains("-this-") { "L" } else { "R" };
            let start: i64 = segment.rsplit_once('.').unwrap().1.parse().unwrap();
            let detail = if key.is_empty() {
                "-".to_string()
            } else {
                let at = |i: usize| i64::from_be_bytes(key[i..i + 8].try_into().unwrap());
                let seq = u32::from_be_bytes(key[16..20].try_into().unwrap());
                format!("{}@{}#{seq}", at(0), at(8) / 1000)
            };
            out.push(format!("{} {side}{} {detail}", op.name(), start / 1000));
        }
        out
    }

    #[test]
    fn a_record_fetches_the_other_sides_window_then_is_stored_with_the_next_sequence_number() {
        let got = requests(&[(1, 7, 100), (2, 7, 103), (2, 7, 104), (1, 7, 108)]);
        assert_eq!(
            got,
            [
                // the right store has no segment yet: nothing fetched
                "put L60 7@100#1",
                // the right record reads the left record (the iterator lands past it)
                "seek L60 7@98#0",
                "next L60 -",
                "put R60 7@103#1",
                "seek L60 7@99#0",
                "next L60 -",
                "put R60 7@104#2",
                // the left record at 108 s reads both right records of 103 s to 113 s
                "seek R60 7@103#0",
                "next R60 7@104#2",
                "next R60 -",
                "put L60 7@108#2",
            ]
        );
    }

    #[test]
    fn a_window_spanning_two_segments_is_fetched_in_both_and_a_late_one_not_at_all() {
        // a right record at 62 s fetches the left store from 57 s to 67 s: segments 0 and 60
        let got = requests(&[(1, 1, 58), (1, 1, 61), (2, 1, 62)]);
        assert_eq!(
            &got[got.len() - 5..],
            [
                "seek L0 1@57#0",
                "next L0 -",
                "seek L60 1@57#0",
                "next L60 -",
                "put R60 1@62#1",
            ],
            "{got:?}"
        );
        // the right store's stream time is 200 s and its retention 10 s, so a left record at
        // 100 s fetches nothing there; each store keeps its own stream time, and the left
        // store, which has seen only 100 s, stores it
        let got = requests(&[(2, 1, 200), (1, 1, 100)]);
        assert_eq!(got, ["put R180 1@200#1", "put L60 1@100#1"], "{got:?}");
    }
}
