//! A custom operator in a few dozen lines: keyed de-duplication with a time-to-live.
//!
//! Flink job being simulated: `keyBy(id).process(Dedup)` where `Dedup` keeps a
//! `ValueState<Boolean> seen` per key, forwards an event only the first time its key is seen,
//! and registers an event-time timer at `timestamp + ttl` that clears the state.
//!
//! The three parts of paper §5.4 map onto the [`Operator`] trait: the event is assigned to its
//! state object (the key's `seen` value) and a small state machine decides the requests
//! (`on_event`); timers terminate state objects when the watermark passes them
//! (`on_watermark`); `states` names the column families.
//!
//! Run it on the Borg trace: `cargo run -p gadget --example custom_operator -- ../shared/data/borg-jobs.csv.gz`

use std::collections::HashSet;

use gadget::access::{Access, AccessSink, Op};
use gadget::key::{Key, KeyLayout, Namespace};
use gadget::operator::Operator;
use gadget::source::Event;
use gadget::timer::{Timer, TimerQueue, TimerService};

/// Keyed de-duplication: the first event of a key within `ttl` ms passes, the rest are dropped.
pub struct Dedup {
    ttl: i64,
    layout: KeyLayout,
    timers: TimerQueue<u8>,
    seen: HashSet<Key>,
}

const SEEN: u16 = 0;

impl Dedup {
    /// A de-duplicator with heap timers and Flink's default 128 key groups.
    pub fn new(ttl: i64) -> Self {
        Dedup {
            ttl,
            layout: KeyLayout::new(128),
            timers: TimerQueue::new(TimerService::Heap, 128, 1),
            seen: HashSet::new(),
        }
    }

    fn request(&mut self, op: Op, key: &Key, value_len: u32, out: &mut dyn AccessSink) {
        let key = self.layout.state_key(key, Namespace::Void);
        out.access(Access {
            op,
            state: SEEN,
            key,
            value_len,
        });
    }
}

impl Operator for Dedup {
    fn states(&self) -> Vec<String> {
        vec!["seen".to_string()]
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        self.request(Op::Get, &event.key, 0, out); // seen.value()
        if self.seen.insert(event.key.clone()) {
            self.request(Op::Put, &event.key, 1, out); // seen.update(true): one serialized Boolean
            let timer = Timer {
                timestamp: event.timestamp + self.ttl,
                key: event.key.clone(),
                namespace: 0,
            };
            self.timers.add(timer, out);
        }
    }

    fn on_watermark(&mut self, watermark: i64, out: &mut dyn AccessSink) {
        while let Some(timer) = self.timers.poll_due(watermark, out) {
            self.seen.remove(&timer.key);
            self.request(Op::Delete, &timer.key, 0, out); // seen.clear() in onTimer
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    use gadget::source::element::WatermarkPolicy;
    use gadget::source::file::{FileOrder, FileSource, FileSpec, KeyType, TimeUnit, TypeRouting};
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/data/borg-jobs.csv.gz".into());
    let source = FileSource::open(FileSpec {
        origin: "the first argument".into(),
        path: path.into(),
        delimiter: b',',
        header: false,
        key_column: 0,
        key_type: KeyType::Long,
        time_column: 1,
        time_unit: TimeUnit::Microseconds,
        type_column: None,
        payload_column: None,
        routing: TypeRouting::All,
        order: FileOrder::SortByTime,
        watermarks: WatermarkPolicy::Punctuated {
            every: 100,
            out_of_orderness: 0,
        },
        repeat: 1,
    })?;
    let mut op = Dedup::new(60_000);
    let mut counts = gadget::AccessCounts::default();
    gadget::generate::generate(Box::new(source), &mut op, &mut counts, None, &mut |_| {})?;
    println!("events {}, requests {}", counts.events, counts.requests());
    for o in Op::ALL.iter().filter(|o| counts.by_op[**o as usize] > 0) {
        println!("  {:<8}{}", o.name(), counts.by_op[*o as usize]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget::access::{TraceRecord, VecSink};
    use gadget::source::StreamElement;

    fn ops(input: Vec<StreamElement>) -> Vec<(Op, i64)> {
        let mut op = Dedup::new(10);
        let mut sink = VecSink::default();
        let stream = input.into_iter().map(Ok);
        gadget::generate::generate(Box::new(stream), &mut op, &mut sink, None, &mut |_| {})
            .unwrap();
        sink.records
            .into_iter()
            .filter_map(|r| match r {
                TraceRecord::Access { op, key, .. } => {
                    Some((op, i64::from_be_bytes(key[1..9].try_into().unwrap())))
                }
                _ => None,
            })
            .collect()
    }

    fn ev(k: i64, t: i64) -> StreamElement {
        StreamElement::Event(Event {
            key: Key::Long(k),
            timestamp: t,
            input: 0,
            closes: false,
            payload: 0,
        })
    }

    #[test]
    fn first_event_writes_duplicates_only_read_and_the_ttl_clears() {
        let got = ops(vec![
            ev(1, 0),
            ev(1, 5),
            ev(2, 6),
            StreamElement::Watermark(10),
            ev(1, 11),
        ]);
        assert_eq!(
            got,
            vec![
                (Op::Get, 1),
                (Op::Put, 1),
                (Op::Get, 1), // duplicate: read only
                (Op::Get, 2),
                (Op::Put, 2),
                (Op::Delete, 1), // ttl of key 1 expires at 10
                (Op::Get, 1),    // key 1 is new again
                (Op::Put, 1),
            ]
        );
    }
}
