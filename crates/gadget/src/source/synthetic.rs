//! A synthetic event source: keys and event-time gaps drawn from configurable distributions,
//! optional bounded disorder, and watermarks as a Flink job's watermark strategy emits them.
//!
//! One seed drives everything. It is split into independent sub-streams (keys, gaps,
//! disorder, join inputs), so for instance turning disorder on does not change which keys and
//! timestamps are generated, only the order in which they are delivered.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::iter::FusedIterator;
use std::sync::Arc;

use super::distribution::{
    DistributionError, GapDistribution, GapDistributionSpec, KeyDistribution, KeyDistributionSpec,
};
use super::element::{Event, StreamElement, WatermarkGenerator, WatermarkPolicy};
use super::random::Rng;
use crate::key::Key;

/// What a [`SyntheticSource`] generates.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    /// Number of distinct keys `N`, in `[1, 2^63]`; keys are `0..N`.
    pub key_space: u64,
    /// Key popularity.
    pub keys: KeyDistributionSpec,
    /// Event-time gaps between consecutive generated events (ms, may be fractional: the
    /// clock is an `f64` offset from `start_time` and event times use its integer part).
    pub gaps: GapDistributionSpec,
    /// Number of events; `None`: an infinite stream.
    pub events: Option<u64>,
    /// Fraction of events, in `[0, 1]`, held back and delivered late.
    pub out_of_order_fraction: f64,
    /// A held-back event with time `t` is delivered just before the first generated event
    /// whose time exceeds `t + d`, `d` uniform in `[1, max_delay]` ms (or at the end); so it
    /// arrives at most `max_delay` ms behind the largest event time delivered before it.
    /// Must be `>= 1` when `out_of_order_fraction > 0`, else `>= 0`. While event time stands
    /// still (zero gaps) held-back events wait, so an infinite stream needs advancing time.
    pub max_delay: i64,
    /// When watermarks are emitted. With `out_of_orderness >= max_delay` no event is late.
    pub watermarks: WatermarkPolicy,
    /// `true`: keys are `Key::Str` of the decimal key number; `false`: `Key::Long`.
    pub string_keys: bool,
    /// Event time of the first generated event, ms.
    pub start_time: i64,
}

/// A held-back event, ordered so that the `BinaryHeap` (a max-heap) pops the earliest release
/// time first, ties in generation order.
#[derive(Debug)]
struct Pending {
    release: i64,
    seq: u64,
    event: Event,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.release, self.seq) == (other.release, other.seq)
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.release, other.seq).cmp(&(self.release, self.seq))
    }
}

/// Sub-stream indices of the seed.
const KEY_STREAM: u64 = 0;
const GAP_STREAM: u64 = 1;
const DISORDER_STREAM: u64 = 2;
const INPUT_STREAM: u64 = 3;

/// Keys and gaps drawn in one go, ahead of the events that take them.
const DRAWN_AHEAD: usize = 64;

/// The next events' keys and event-time gaps, drawn [`DRAWN_AHEAD`] at a time.
///
/// Each comes from a random stream of its own, so drawing ahead gives the same keys and gaps
/// as drawing one per event. In one go the draws do not wait on each other: the sampler's
/// table lookups overlap, where one per event would each stall the event's work that
/// follows from its key.
#[derive(Debug)]
struct DrawnAhead {
    keys: [u64; DRAWN_AHEAD],
    gaps: [f64; DRAWN_AHEAD],
    /// Index of the next key and gap; [`DRAWN_AHEAD`] when all are taken.
    next: usize,
}

impl DrawnAhead {
    fn new() -> Self {
        DrawnAhead {
            keys: [0; DRAWN_AHEAD],
            gaps: [0.0; DRAWN_AHEAD],
            next: DRAWN_AHEAD,
        }
    }
}

/// A deterministic generator of events and watermarks (see [`SyntheticSpec`]).
///
/// Delivers every generated event exactly once, then `StreamElement::Watermark(i64::MAX)`
/// (Flink's final watermark), then ends. A watermark, when due, directly follows the event
/// that triggered it. Per event, nothing is allocated for `Key::Long` keys (the queue of
/// held-back events grows amortised); a string key is one allocation.
#[derive(Debug)]
pub struct SyntheticSource {
    seed: u64,
    keys: KeyDistribution,
    gaps: GapDistribution,
    key_rng: Rng,
    gap_rng: Rng,
    disorder_rng: Rng,
    ahead: DrawnAhead,
    /// Join inputs: the generator and the probability of input 1.
    inputs: Option<(Rng, f64)>,
    string_keys: bool,
    start_time: i64,
    /// Event time of the next generated event, relative to `start_time`, ms.
    clock: f64,
    remaining: Option<u64>,
    out_of_order_fraction: f64,
    max_delay: i64,
    /// Count of generated events, delivered or not.
    generated: u64,
    /// Time of the latest generated event: held-back events released before it are due.
    frontier: i64,
    /// The latest generated in-order event, not yet delivered.
    candidate: Option<Event>,
    pending: BinaryHeap<Pending>,
    watermarks: WatermarkGenerator,
    due_watermark: Option<i64>,
    exhausted: bool,
    finished: bool,
}

fn bad(parameter: &'static str, allowed: &str, got: impl ToString) -> DistributionError {
    DistributionError::Parameter {
        parameter,
        allowed: allowed.to_string(),
        got: got.to_string(),
    }
}

fn check_bound(out_of_orderness: i64) -> Result<(), DistributionError> {
    if out_of_orderness < 0 {
        return Err(bad(
            "watermark out_of_orderness",
            ">= 0 (ms)",
            out_of_orderness,
        ));
    }
    Ok(())
}

impl SyntheticSource {
    /// Validates the spec (reading an empirical CDF file if it names one) and prepares the
    /// stream for `seed`.
    pub fn new(spec: SyntheticSpec, seed: u64) -> Result<Self, DistributionError> {
        if spec.key_space == 0 || spec.key_space > 1u64 << 63 {
            return Err(bad("key_space", "in [1, 2^63]", spec.key_space));
        }
        if !(0.0..=1.0).contains(&spec.out_of_order_fraction) {
            return Err(bad(
                "out_of_order_fraction",
                "in [0, 1]",
                spec.out_of_order_fraction,
            ));
        }
        if spec.out_of_order_fraction > 0.0 && spec.max_delay < 1 {
            return Err(bad(
                "max_delay",
                ">= 1 (ms) when out_of_order_fraction > 0",
                spec.max_delay,
            ));
        }
        if spec.max_delay < 0 {
            return Err(bad("max_delay", ">= 0 (ms)", spec.max_delay));
        }
        match spec.watermarks {
            WatermarkPolicy::Punctuated {
                every,
                out_of_orderness,
            } => {
                if every < 1 {
                    return Err(bad("punctuated watermark every", ">= 1 (events)", every));
                }
                check_bound(out_of_orderness)?;
            }
            WatermarkPolicy::Periodic {
                interval,
                out_of_orderness,
            } => {
                if interval < 1 {
                    return Err(bad("periodic watermark interval", ">= 1 (ms)", interval));
                }
                check_bound(out_of_orderness)?;
            }
        }
        Ok(SyntheticSource {
            seed,
            keys: KeyDistribution::new(&spec.keys, spec.key_space)?,
            gaps: GapDistribution::new(spec.gaps)?,
            key_rng: Rng::substream(seed, KEY_STREAM),
            gap_rng: Rng::substream(seed, GAP_STREAM),
            disorder_rng: Rng::substream(seed, DISORDER_STREAM),
            ahead: DrawnAhead::new(),
            inputs: None,
            string_keys: spec.string_keys,
            start_time: spec.start_time,
            clock: 0.0,
            remaining: spec.events,
            out_of_order_fraction: spec.out_of_order_fraction,
            max_delay: spec.max_delay,
            generated: 0,
            frontier: i64::MIN,
            candidate: None,
            pending: BinaryHeap::new(),
            watermarks: WatermarkGenerator::new(spec.watermarks),
            due_watermark: None,
            exhausted: false,
            finished: false,
        })
    }

    /// Makes the events those of a two-input operator: each is on input 1 with probability
    /// `left_fraction`, else on input 2 (drawn from a sub-stream of its own, so keys, times and
    /// order stay as without it). Without this call every event is on input 0. Call it before
    /// the first `next`.
    pub fn with_join_inputs(mut self, left_fraction: f64) -> Result<Self, DistributionError> {
        if !(0.0..=1.0).contains(&left_fraction) {
            return Err(bad("join left_fraction", "in [0, 1]", left_fraction));
        }
        self.inputs = Some((Rng::substream(self.seed, INPUT_STREAM), left_fraction));
        Ok(self)
    }

    /// Number of events generated so far (delivered or still held back).
    pub fn generated(&self) -> u64 {
        self.generated
    }

    fn make_key(&self, k: u64) -> Key {
        if !self.string_keys {
            // Validated: k < N <= 2^63.
            return Key::Long(k as i64);
        }
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        let mut v = k;
        loop {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        Key::Str(Arc::from(
            std::str::from_utf8(&buf[i..]).expect("ASCII digits"),
        ))
    }

    /// Generates one event: the next in-order one (returned), or a held-back one (kept
    /// in `pending`).
    fn generate(&mut self) -> Option<Event> {
        if let Some(r) = self.remaining.as_mut() {
            *r -= 1;
        }
        if self.ahead.next == DRAWN_AHEAD {
            self.draw_ahead();
        }
        let (k, gap) = (
            self.ahead.keys[self.ahead.next],
            self.ahead.gaps[self.ahead.next],
        );
        self.ahead.next += 1;
        let key = self.make_key(k);
        // `as` saturates: absurd clocks pin at the end of time instead of wrapping.
        let timestamp = self.start_time.saturating_add(self.clock as i64);
        self.clock += gap;
        let input = match self.inputs.as_mut() {
            None => 0,
            Some((rng, left)) => {
                if rng.chance(*left) {
                    1
                } else {
                    2
                }
            }
        };
        let event = Event {
            key,
            timestamp,
            input,
            closes: false,
            payload: 0,
        };
        let seq = self.generated;
        self.generated += 1;
        self.frontier = timestamp;
        if self.out_of_order_fraction > 0.0 && self.disorder_rng.chance(self.out_of_order_fraction)
        {
            let delay = self.disorder_rng.range_i64(1, self.max_delay);
            self.pending.push(Pending {
                release: timestamp.saturating_add(delay),
                seq,
                event,
            });
            None
        } else {
            Some(event)
        }
    }

    /// Draws the next [`DRAWN_AHEAD`] keys and gaps.
    #[inline(never)]
    fn draw_ahead(&mut self) {
        let ahead = &mut self.ahead;
        self.keys.sample_into(&mut self.key_rng, &mut ahead.keys);
        self.gaps.sample_into(&mut self.gap_rng, &mut ahead.gaps);
        ahead.next = 0;
    }

    fn deliver(&mut self, event: Event) -> StreamElement {
        self.due_watermark = self.watermarks.on_event(event.timestamp);
        StreamElement::Event(event)
    }
}

impl Iterator for SyntheticSource {
    type Item = StreamElement;

    fn next(&mut self) -> Option<StreamElement> {
        if let Some(w) = self.due_watermark.take() {
            return Some(StreamElement::Watermark(w));
        }
        loop {
            // Held-back events whose release time the stream has passed go first.
            if let Some(top) = self.pending.peek() {
                if self.exhausted || top.release < self.frontier {
                    let p = self.pending.pop().expect("peeked");
                    return Some(self.deliver(p.event));
                }
            }
            if let Some(e) = self.candidate.take() {
                return Some(self.deliver(e));
            }
            if self.exhausted {
                if self.finished {
                    return None;
                }
                self.finished = true;
                return Some(StreamElement::Watermark(i64::MAX));
            }
            if self.remaining == Some(0) {
                self.exhausted = true;
                continue;
            }
            if let Some(e) = self.generate() {
                if self.pending.is_empty() {
                    // nothing held back can be due first: deliver it without parking it
                    return Some(self.deliver(e));
                }
                self.candidate = Some(e);
            }
        }
    }
}

impl FusedIterator for SyntheticSource {}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SyntheticSpec {
        SyntheticSpec {
            key_space: 1000,
            keys: KeyDistributionSpec::Zipf { s: 1.0 },
            gaps: GapDistributionSpec::Exponential { rate: 0.5 },
            events: None,
            out_of_order_fraction: 0.1,
            max_delay: 50,
            watermarks: WatermarkPolicy::Punctuated {
                every: 100,
                out_of_orderness: 50,
            },
            string_keys: false,
            start_time: 1_000_000,
        }
    }

    fn run(spec: SyntheticSpec, seed: u64) -> Vec<StreamElement> {
        SyntheticSource::new(spec, seed).unwrap().collect()
    }

    fn events(elements: &[StreamElement]) -> Vec<&Event> {
        elements
            .iter()
            .filter_map(|e| match e {
                StreamElement::Event(e) => Some(e),
                StreamElement::Watermark(_) => None,
            })
            .collect()
    }

    fn watermarks(elements: &[StreamElement]) -> Vec<i64> {
        elements
            .iter()
            .filter_map(|e| match e {
                StreamElement::Watermark(w) => Some(*w),
                StreamElement::Event(_) => None,
            })
            .collect()
    }

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let first = |seed| -> Vec<StreamElement> {
            SyntheticSource::new(spec(), seed)
                .unwrap()
                .take(10_000)
                .collect()
        };
        let a = first(7);
        assert_eq!(a.len(), 10_000);
        assert_eq!(a, first(7));
        assert_ne!(a, first(8));
        assert!(events(&a).iter().all(|e| e.input == 0));
    }

    /// Keys and gaps drawn ahead in batches are those drawn one per event from the same
    /// streams, for every key shape and the gap shapes (one with its own batch loop).
    #[test]
    fn keys_and_gaps_drawn_ahead_are_those_drawn_one_by_one() {
        let shapes = [
            KeyDistributionSpec::Zipf { s: 0.99 },
            KeyDistributionSpec::Uniform,
            KeyDistributionSpec::Latest {
                s: 0.99,
                insert_fraction: 0.05,
            },
            KeyDistributionSpec::Hotspot {
                hot_key_fraction: 0.2,
                hot_operation_fraction: 0.8,
            },
        ];
        let gaps = [
            GapDistributionSpec::Exponential { rate: 0.5 },
            GapDistributionSpec::Uniform { min: 0.0, max: 3.0 },
        ];
        for (keys, gaps) in shapes.into_iter().zip(gaps.into_iter().cycle()) {
            let mut s = spec();
            s.keys = keys.clone();
            s.gaps = gaps;
            s.key_space = 100_000;
            s.out_of_order_fraction = 0.0;
            s.events = Some(3 * DRAWN_AHEAD as u64 + 5);
            let elements = run(s.clone(), 11);
            let mut key_sampler = KeyDistribution::new(&keys, s.key_space).unwrap();
            let mut gap_sampler = GapDistribution::new(gaps).unwrap();
            let mut key_rng = Rng::substream(11, KEY_STREAM);
            let mut gap_rng = Rng::substream(11, GAP_STREAM);
            let mut clock = 0.0;
            let drawn = events(&elements);
            assert_eq!(drawn.len() as u64, s.events.unwrap());
            for e in drawn {
                let key = key_sampler.sample(&mut key_rng);
                assert_eq!(e.key, Key::Long(key as i64), "{keys:?}");
                assert_eq!(e.timestamp, s.start_time + clock as i64, "{gaps:?}");
                clock += gap_sampler.sample(&mut gap_rng);
            }
        }
    }

    #[test]
    fn string_keys_are_the_decimal_numbers() {
        let mut s = spec();
        s.events = Some(500);
        let longs = run(s.clone(), 3);
        s.string_keys = true;
        let strings = run(s, 3);
        assert_eq!(longs.len(), strings.len());
        for (l, t) in events(&longs).into_iter().zip(events(&strings)) {
            let Key::Long(k) = l.key else { panic!() };
            assert_eq!(t.key, Key::Str(Arc::from(k.to_string().as_str())));
            assert_eq!(l.timestamp, t.timestamp);
        }
        let s0 = SyntheticSource::new(spec(), 0).unwrap();
        assert_eq!(s0.make_key(0), Key::Long(0));
        let mut s1 = spec();
        s1.string_keys = true;
        let s1 = SyntheticSource::new(s1, 0).unwrap();
        assert_eq!(s1.make_key(0), Key::Str("0".into()));
        assert_eq!(
            s1.make_key(u64::MAX),
            Key::Str("18446744073709551615".into())
        );
    }

    #[test]
    fn disorder_matches_the_fraction_and_the_bound() {
        let mut s = spec();
        s.keys = KeyDistributionSpec::Uniform;
        s.gaps = GapDistributionSpec::Constant(1.0);
        s.events = Some(50_000);
        s.max_delay = 100;
        let out = run(s.clone(), 5);
        let evs = events(&out);
        assert_eq!(evs.len(), 50_000);
        let mut max = i64::MIN;
        let mut behind = 0;
        let mut worst = 0;
        for e in &evs {
            if e.timestamp < max {
                behind += 1;
                worst = worst.max(max - e.timestamp);
            }
            max = max.max(e.timestamp);
        }
        let fraction = behind as f64 / evs.len() as f64;
        assert!((fraction - 0.1).abs() < 0.006, "{fraction}");
        assert!(worst <= 100, "{worst}");
        assert!(worst >= 95, "{worst}");
        // Disorder reorders the same events: keys and times come from their own streams.
        s.out_of_order_fraction = 0.0;
        let ordered = run(s, 5);
        let mut sorted: Vec<(i64, Key)> =
            evs.iter().map(|e| (e.timestamp, e.key.clone())).collect();
        sorted.sort();
        let mut reference: Vec<(i64, Key)> = events(&ordered)
            .iter()
            .map(|e| (e.timestamp, e.key.clone()))
            .collect();
        assert!(reference.windows(2).all(|w| w[0].0 < w[1].0));
        reference.sort();
        assert_eq!(sorted, reference);
    }

    #[test]
    fn bursty_gaps_stay_within_the_delay_bound_and_everything_is_flushed() {
        for fraction in [0.3, 1.0] {
            let mut s = spec();
            s.gaps = GapDistributionSpec::Pareto {
                scale: 0.5,
                shape: 1.2,
            };
            s.out_of_order_fraction = fraction;
            s.max_delay = 30;
            s.events = Some(5_000);
            let out = run(s, 9);
            let evs = events(&out);
            assert_eq!(evs.len(), 5_000);
            let mut max = i64::MIN;
            for e in &evs {
                assert!(max.saturating_sub(e.timestamp) <= 30);
                max = max.max(e.timestamp);
            }
            // With out_of_orderness >= max_delay no event is behind the current watermark.
            let mut wm = i64::MIN;
            for el in &out {
                match el {
                    StreamElement::Watermark(w) => wm = *w,
                    StreamElement::Event(e) => assert!(e.timestamp > wm),
                }
            }
            assert_eq!(out.last(), Some(&StreamElement::Watermark(i64::MAX)));
        }
    }

    #[test]
    fn punctuated_watermarks_follow_every_nth_event() {
        let mut s = spec();
        s.gaps = GapDistributionSpec::Constant(3.0);
        s.out_of_order_fraction = 0.0;
        s.max_delay = 0;
        s.events = Some(25);
        s.start_time = 1000;
        s.watermarks = WatermarkPolicy::Punctuated {
            every: 10,
            out_of_orderness: 5,
        };
        let out = run(s, 1);
        assert_eq!(out.len(), 25 + 2 + 1);
        assert_eq!(
            out[10],
            StreamElement::Watermark(1000 + 9 * 3 - 5 - 1),
            "{:?}",
            &out[..12]
        );
        assert_eq!(out[21], StreamElement::Watermark(1000 + 19 * 3 - 5 - 1));
        assert_eq!(out[27], StreamElement::Watermark(i64::MAX));
        match &out[0] {
            StreamElement::Event(e) => assert_eq!(e.timestamp, 1000),
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn watermarks_strictly_increase_and_end_with_the_final_one() {
        let mut s = spec();
        s.events = Some(20_000);
        s.out_of_order_fraction = 0.4;
        s.watermarks = WatermarkPolicy::Punctuated {
            every: 3,
            out_of_orderness: 10,
        };
        let mut source = SyntheticSource::new(s, 2).unwrap();
        let out: Vec<StreamElement> = source.by_ref().collect();
        let wms = watermarks(&out);
        assert!(wms.len() > 1000);
        assert!(wms.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(wms.last(), Some(&i64::MAX));
        assert_eq!(wms.iter().filter(|&&w| w == i64::MAX).count(), 1);
        assert_eq!(source.next(), None);
        assert_eq!(source.generated(), 20_000);
        // Each watermark is max seen − B − 1 at its position.
        let mut max = i64::MIN;
        for el in &out[..out.len() - 1] {
            match el {
                StreamElement::Event(e) => max = max.max(e.timestamp),
                StreamElement::Watermark(w) => assert_eq!(*w, max - 11),
            }
        }
    }

    #[test]
    fn periodic_watermarks_fire_at_event_time_boundaries() {
        let mut s = spec();
        s.gaps = GapDistributionSpec::Uniform {
            min: 0.0,
            max: 20.0,
        };
        s.events = Some(2_000);
        s.watermarks = WatermarkPolicy::Periodic {
            interval: 100,
            out_of_orderness: 50,
        };
        let out = run(s, 4);
        let mut max = i64::MIN;
        let mut prev_max = i64::MIN;
        let mut fired = 0;
        for el in &out[..out.len() - 1] {
            match el {
                StreamElement::Event(e) => {
                    prev_max = max;
                    max = max.max(e.timestamp);
                }
                StreamElement::Watermark(w) => {
                    fired += 1;
                    assert_eq!(*w, max - 51);
                    // The event just delivered crossed a multiple of the interval.
                    assert!(max.div_euclid(100) > prev_max.div_euclid(100));
                }
            }
        }
        // About (2000 · 10 ms) / 100 ms boundaries.
        assert!((180..=220).contains(&fired), "{fired}");
    }

    #[test]
    fn fractional_gaps_accumulate() {
        let mut s = spec();
        s.gaps = GapDistributionSpec::Constant(0.25);
        s.out_of_order_fraction = 0.0;
        s.events = Some(9);
        s.start_time = -2;
        s.watermarks = WatermarkPolicy::Punctuated {
            every: 1000,
            out_of_orderness: 0,
        };
        let out = run(s, 0);
        let ts: Vec<i64> = events(&out).iter().map(|e| e.timestamp).collect();
        assert_eq!(ts, vec![-2, -2, -2, -2, -1, -1, -1, -1, 0]);
    }

    #[test]
    fn empty_stream_has_only_the_final_watermark() {
        let mut s = spec();
        s.events = Some(0);
        assert_eq!(run(s, 0), vec![StreamElement::Watermark(i64::MAX)]);
    }

    #[test]
    fn join_inputs_split_the_same_events() {
        let mut s = spec();
        s.events = Some(4_000);
        let plain = run(s.clone(), 6);
        let joined: Vec<StreamElement> = SyntheticSource::new(s, 6)
            .unwrap()
            .with_join_inputs(0.25)
            .unwrap()
            .collect();
        assert_eq!(plain.len(), joined.len());
        let (a, b) = (events(&plain), events(&joined));
        let left = b.iter().filter(|e| e.input == 1).count() as f64 / b.len() as f64;
        assert!((left - 0.25).abs() < 0.03, "{left}");
        assert!(b.iter().all(|e| e.input == 1 || e.input == 2));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((&x.key, x.timestamp), (&y.key, y.timestamp));
        }
    }

    #[test]
    fn the_spec_is_validated() {
        let err = |f: fn(&mut SyntheticSpec)| {
            let mut s = spec();
            f(&mut s);
            SyntheticSource::new(s, 0).unwrap_err().to_string()
        };
        assert_eq!(
            err(|s| s.key_space = 0),
            "key_space must be in [1, 2^63], got 0"
        );
        assert_eq!(
            err(|s| s.out_of_order_fraction = 1.5),
            "out_of_order_fraction must be in [0, 1], got 1.5"
        );
        assert_eq!(
            err(|s| s.max_delay = 0),
            "max_delay must be >= 1 (ms) when out_of_order_fraction > 0, got 0"
        );
        assert_eq!(
            err(|s| {
                s.watermarks = WatermarkPolicy::Punctuated {
                    every: 0,
                    out_of_orderness: 1,
                }
            }),
            "punctuated watermark every must be >= 1 (events), got 0"
        );
        assert_eq!(
            err(|s| {
                s.watermarks = WatermarkPolicy::Periodic {
                    interval: 10,
                    out_of_orderness: -1,
                }
            }),
            "watermark out_of_orderness must be >= 0 (ms), got -1"
        );
        assert_eq!(
            err(|s| s.keys = KeyDistributionSpec::Zipf { s: -1.0 }),
            "zipf exponent s must be > 0, got -1"
        );
        assert_eq!(
            err(|s| s.gaps = GapDistributionSpec::Exponential { rate: -1.0 }),
            "exponential gap rate must be > 0 (events per ms), got -1"
        );
        assert!(SyntheticSource::new(spec(), 0)
            .unwrap()
            .with_join_inputs(2.0)
            .is_err());
    }
}
