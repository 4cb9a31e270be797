//! The Yahoo Streaming Benchmark's lookup-join, as seed 003's Flink job runs it: each ad event
//! is joined with its campaign by a `get` on an external table (`ad_id → campaign_id`, YSB's
//! Redis), counted in a keyed tumbling window on `campaign_id`, and each window's count is
//! written to an external sink state (`campaign_id:window_end → count`, as YSB writes to Redis).
//!
//! The window is Flink's `WindowOperator` itself ([`WindowOperator`], incremental, keyed by
//! the campaign id as a Java `String`), so its contents and timers cost exactly the requests
//! Flink issues; the table and the sink are raw keys, not Flink's key layout. Before the first
//! event ([`Operator::on_start`]) the table is loaded: one `put` per ad.

use std::collections::HashMap;
use std::io::Write as _;

use crate::access::{Access, AccessSink, Op, StateId};
use crate::key::Key;
use crate::source::element::Event;
use crate::source::ysb::{AdEventType, YsbIds, ID_BYTES};
use crate::timer::TimerService;

use super::{max_timestamp, Operator, WindowAssigner, WindowFunction, WindowOperator};

/// The lookup-join's parameters (the `[operator]` section).
#[derive(Debug, Clone, PartialEq)]
pub struct LookupJoinSpec {
    /// Window length, ms (YSB: 10 s).
    pub size: i64,
    /// The event types the job's filter lets through (YSB: `view`). The source applies it:
    /// events of other types never reach the operator.
    pub event_types: Vec<AdEventType>,
    /// Name of the external table state (`ad_id → campaign_id`).
    pub table_state: String,
    /// Name of the external sink state (`campaign_id:window_end → count`).
    pub sink_state: String,
    /// Bytes added to each table value beyond the campaign id.
    pub value_bytes: u32,
}

/// YSB's job: table lookup, tumbling count window per campaign, result to the sink.
#[derive(Debug)]
pub struct LookupJoin {
    ids: YsbIds,
    window: WindowOperator,
    assigner: WindowAssigner,
    window_states: Vec<String>,
    table_state: String,
    sink_state: String,
    table: StateId,
    sink: StateId,
    value_bytes: u32,
    /// Elements counted per open window: `(campaign, window end)`.
    counts: HashMap<(Key, i64), u64>,
    watermark: i64,
    sink_key: Vec<u8>,
}

impl LookupJoin {
    /// The job over the campaigns and ads of `ids`.
    pub fn new(
        spec: &LookupJoinSpec,
        ids: YsbIds,
        timers: TimerService,
        max_parallelism: u32,
    ) -> Self {
        let assigner = WindowAssigner::Tumbling {
            size: spec.size,
            offset: 0,
        };
        let window = WindowOperator::new(
            assigner,
            WindowFunction::Incremental,
            0,
            true,
            timers,
            max_parallelism,
        );
        let window_states = window.states();
        let table = window_states.len() as StateId;
        LookupJoin {
            ids,
            window,
            assigner,
            window_states,
            table_state: spec.table_state.clone(),
            sink_state: spec.sink_state.clone(),
            table,
            sink: table + 1,
            value_bytes: spec.value_bytes,
            counts: HashMap::new(),
            watermark: i64::MIN,
            sink_key: Vec::with_capacity(64),
        }
    }

    /// Requests of the table preload, issued before the first event: one `put` per ad
    /// (campaigns × ads per campaign).
    pub fn preload_requests(&self) -> u64 {
        self.ids.ads()
    }

    /// The ad an event names: its key's number (a long; other keys by their Java hash),
    /// modulo the ads.
    fn ad_of(&self, key: &Key) -> u64 {
        let n = match key {
            Key::Long(k) => *k,
            other => i64::from(other.java_hash()),
        };
        n.rem_euclid(self.ids.ads() as i64) as u64
    }
}

/// Decimal digits of `n`.
fn digits(n: u64) -> u32 {
    n.checked_ilog10().map_or(1, |d| d + 1)
}

impl Operator for LookupJoin {
    fn states(&self) -> Vec<String> {
        let mut states = self.window_states.clone();
        states.push(self.table_state.clone());
        states.push(self.sink_state.clone());
        states
    }

    fn on_start(&mut self, out: &mut dyn AccessSink) {
        // the window's timer service starts up, then the table is loaded
        self.window.on_start(out);
        let value_len = ID_BYTES as u32 + self.value_bytes;
        for ad in 0..self.ids.ads() {
            // up to 100,000,000 ads: a limit reached or a stop ends the preload here
            if out.stopped() {
                return;
            }
            let id = self.ids.ad_id(ad);
            out.access(Access {
                op: Op::Put,
                state: self.table,
                key: &id,
                value_len,
            });
        }
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let ad = self.ad_of(&event.key);
        out.access(Access {
            op: Op::Get,
            state: self.table,
            key: &self.ids.ad_id(ad),
            value_len: 0,
        });
        let campaign = self.ids.campaign(self.ids.campaign_of(ad)).clone();
        let mut end = 0;
        self.assigner
            .for_each_window(event.timestamp, |w| end = w.1);
        // the window drops a late element without touching state (no allowed lateness)
        if max_timestamp(end) > self.watermark {
            *self.counts.entry((campaign.clone(), end)).or_insert(0) += 1;
        }
        let keyed = Event {
            key: campaign,
            timestamp: event.timestamp,
            input: 0,
            closes: false,
            payload: 0,
        };
        self.window.on_event(&keyed, out);
    }

    fn on_watermark(&mut self, watermark: i64, out: &mut dyn AccessSink) {
        self.watermark = watermark;
        let (counts, sink_key, sink) = (&mut self.counts, &mut self.sink_key, self.sink);
        self.window
            .on_watermark_firing(watermark, out, |campaign, window, out| {
                let count = counts.remove(&(campaign.clone(), window.1)).unwrap_or(0);
                sink_key.clear();
                if let Key::Str(id) = campaign {
                    sink_key.extend_from_slice(id.as_bytes());
                }
                write!(sink_key, ":{}", window.1).expect("writing to a Vec");
                out.access(Access {
                    op: Op::Put,
                    state: sink,
                    key: sink_key,
                    value_len: digits(count),
                });
            });
    }

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        self.window.on_end(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};
    use crate::key::{KeyLayout, Namespace};
    use crate::source::StreamElement;

    fn spec() -> LookupJoinSpec {
        LookupJoinSpec {
            size: 10_000,
            event_types: vec![AdEventType::View],
            table_state: "ad-campaigns".into(),
            sink_state: "campaign-windows".into(),
            value_bytes: 0,
        }
    }

    fn ev(ad: i64, timestamp: i64) -> StreamElement {
        StreamElement::Event(Event {
            key: Key::Long(ad),
            timestamp,
            input: 0,
            closes: false,
            payload: 0,
        })
    }

    fn run(op: &mut dyn Operator, input: &[StreamElement]) -> Vec<TraceRecord> {
        let mut sink = VecSink::default();
        let stream: Vec<_> = input.iter().cloned().map(Ok).collect();
        crate::generate::generate(
            Box::new(stream.into_iter()),
            op,
            &mut sink,
            None,
            &mut |_| {},
        )
        .unwrap();
        sink.records
    }

    fn access(op: Op, state: StateId, key: &[u8], value_len: u32) -> TraceRecord {
        TraceRecord::Access {
            op,
            state,
            key: key.to_vec(),
            value_len,
        }
    }

    #[test]
    fn states_are_the_windows_then_the_table_and_the_sink() {
        let join = LookupJoin::new(&spec(), YsbIds::new(1, 2, 3), TimerService::RocksDb, 128);
        assert_eq!(
            join.states(),
            [
                "window-contents",
                "_timer_state/event_window-timers",
                "default",
                "_timer_state/processing_window-timers",
                "ad-campaigns",
                "campaign-windows"
            ]
        );
    }

    #[test]
    fn the_preload_puts_every_ad_once_before_the_first_event() {
        let ids = YsbIds::new(9, 4, 5);
        let mut s = spec();
        s.value_bytes = 100;
        let mut join = LookupJoin::new(&s, ids.clone(), TimerService::Heap, 128);
        assert_eq!(join.preload_requests(), 20);
        let records = run(&mut join, &[ev(0, 1)]);
        let expected: Vec<TraceRecord> = (0..20)
            .map(|ad| access(Op::Put, 1, &ids.ad_id(ad), 36 + 100))
            .collect();
        assert_eq!(records[..20], expected[..]);
        assert_eq!(records[20], TraceRecord::Event { input: 0 });
    }

    /// Heap timers: the requests are the table's, the window's, and the sink's alone.
    #[test]
    fn an_event_is_one_table_get_then_the_window_and_a_firing_writes_the_count() {
        let ids = YsbIds::new(3, 2, 10);
        let mut join = LookupJoin::new(&spec(), ids.clone(), TimerService::Heap, 128);
        let records = run(
            &mut join,
            &[
                ev(0, 1),
                ev(15, 2),
                ev(3, 3),
                ev(4, 10_005),
                StreamElement::Watermark(9_999),
                StreamElement::Watermark(i64::MAX),
            ],
        );
        let mut layout = KeyLayout::new(128);
        let mut window = |c: usize, start: i64| {
            let ns = Namespace::Window {
                start,
                end: start + 10_000,
            };
            layout.state_key(ids.campaign(c), ns).to_vec()
        };
        let (w0, w1, w0_next) = (window(0, 0), window(1, 0), window(0, 10_000));
        let Key::Str(c0) = ids.campaign(0) else {
            panic!()
        };
        let sink_key = |end: i64| format!("{c0}:{end}").into_bytes();
        let event = TraceRecord::Event { input: 0 };
        let expected = [
            event.clone(),
            access(Op::Get, 1, &ids.ad_id(0), 0),
            access(Op::Get, 0, &w0, 0),
            access(Op::Put, 0, &w0, 8),
            event.clone(),
            access(Op::Get, 1, &ids.ad_id(15), 0),
            access(Op::Get, 0, &w1, 0),
            access(Op::Put, 0, &w1, 8),
            event.clone(),
            access(Op::Get, 1, &ids.ad_id(3), 0),
            access(Op::Get, 0, &w0, 0),
            access(Op::Put, 0, &w0, 8),
            event,
            access(Op::Get, 1, &ids.ad_id(4), 0),
            access(Op::Get, 0, &w0_next, 0),
            access(Op::Put, 0, &w0_next, 8),
        ];
        assert_eq!(records[20..36], expected);
        assert_eq!(records[36], TraceRecord::Watermark { timestamp: 9_999 });
        // each firing: read the contents, write the count, delete the contents
        let fired: Vec<&[TraceRecord]> = records[37..43].chunks(3).collect();
        let c0_first = fired
            .iter()
            .position(|f| f[0] == access(Op::Get, 0, &w0, 0))
            .expect("campaign 0 fires");
        assert_eq!(
            fired[c0_first],
            [
                access(Op::Get, 0, &w0, 0),
                access(Op::Put, 2, &sink_key(10_000), 1),
                access(Op::Delete, 0, &w0, 0),
            ]
        );
        let other = &fired[1 - c0_first];
        assert_eq!(other[0], access(Op::Get, 0, &w1, 0));
        assert!(matches!(
            &other[1],
            TraceRecord::Access {
                op: Op::Put,
                state: 2,
                value_len: 1,
                ..
            }
        ));
        assert_eq!(other[2], access(Op::Delete, 0, &w1, 0));
        // the final watermark fires the last window, counted 1
        assert_eq!(
            records[43],
            TraceRecord::Watermark {
                timestamp: i64::MAX
            }
        );
        assert_eq!(
            records[44..],
            [
                access(Op::Get, 0, &w0_next, 0),
                access(Op::Put, 2, &sink_key(20_000), 1),
                access(Op::Delete, 0, &w0_next, 0),
            ]
        );
    }

    /// Without the table's and the sink's requests, the trace is the window operator's over
    /// the events keyed by campaign, timers included.
    #[test]
    fn the_window_requests_are_flinks_window_operators() {
        let ids = YsbIds::new(5, 7, 10);
        let mut input = Vec::new();
        for i in 0..3_000i64 {
            input.push(ev((i * 37) % 70, i * 13));
            if i % 50 == 49 {
                input.push(StreamElement::Watermark(i * 13 - 700));
            }
        }
        input.push(StreamElement::Watermark(i64::MAX));
        let mut join = LookupJoin::new(&spec(), ids.clone(), TimerService::RocksDb, 128);
        let joined = run(&mut join, &input);
        let keyed: Vec<StreamElement> = input
            .iter()
            .map(|e| match e {
                StreamElement::Event(e) => {
                    let Key::Long(ad) = e.key else { panic!() };
                    StreamElement::Event(Event {
                        key: ids.campaign(ids.campaign_of(ad as u64)).clone(),
                        ..e.clone()
                    })
                }
                w => w.clone(),
            })
            .collect();
        let mut window = WindowOperator::new(
            WindowAssigner::Tumbling {
                size: 10_000,
                offset: 0,
            },
            WindowFunction::Incremental,
            0,
            true,
            TimerService::RocksDb,
            128,
        );
        let expected = run(&mut window, &keyed);
        let is_external = |r: &TraceRecord| matches!(r, TraceRecord::Access { state, .. } if *state >= join.table);
        let windows_only: Vec<TraceRecord> =
            joined.iter().filter(|r| !is_external(r)).cloned().collect();
        assert_eq!(windows_only, expected);
        let count = |op: Op, state: StateId| {
            joined
                .iter()
                .filter(|r| matches!(r, TraceRecord::Access { op: o, state: s, .. } if *o == op && *s == state))
                .count()
        };
        let (table, sink) = (join.table, join.sink);
        assert_eq!(count(Op::Put, table), 70, "the preload");
        assert_eq!(count(Op::Get, table), 3_000, "one lookup per event");
        assert_eq!(
            count(Op::Put, sink),
            count(Op::Delete, 0),
            "one result per firing"
        );
        assert!(count(Op::Put, sink) > 7 * 3);
    }

    #[test]
    fn late_elements_are_looked_up_but_not_counted() {
        let ids = YsbIds::new(2, 1, 1);
        let mut join = LookupJoin::new(&spec(), ids, TimerService::Heap, 128);
        let records = run(
            &mut join,
            &[
                ev(0, 10_500),
                StreamElement::Watermark(10_000),
                ev(0, 5),
                ev(0, 10_600),
                StreamElement::Watermark(i64::MAX),
            ],
        );
        let sink_puts: Vec<u32> = records
            .iter()
            .filter_map(|r| match r {
                TraceRecord::Access {
                    op: Op::Put,
                    state: 2,
                    value_len,
                    ..
                } => Some(*value_len),
                _ => None,
            })
            .collect();
        assert_eq!(sink_puts, [1], "one window, counted 2 (one digit)");
        let lookups = records
            .iter()
            .filter(|r| {
                matches!(
                    r,
                    TraceRecord::Access {
                        op: Op::Get,
                        state: 1,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(lookups, 3);
        assert_eq!(digits(0), 1);
        assert_eq!(digits(9), 1);
        assert_eq!(digits(10), 2);
        assert_eq!(digits(u64::MAX), 20);
    }
}
