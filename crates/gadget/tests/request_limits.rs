//! A request limit cuts the request stream exactly where it says, also between the requests
//! an operator issues on one key at once (an incremental window's get and put).

use gadget::access::{TraceRecord, VecSink};
use gadget::key::Key;
use gadget::operator::{Operator, WindowAssigner, WindowFunction, WindowOperator};
use gadget::source::{Event, StreamElement};
use gadget::timer::TimerService;

fn input() -> Vec<StreamElement> {
    let mut elements = Vec::new();
    for t in 0..40 {
        elements.push(StreamElement::Event(Event {
            key: Key::Long(t % 7),
            timestamp: t * 3,
            input: 0,
            closes: false,
            payload: 0,
        }));
        if t % 5 == 4 {
            elements.push(StreamElement::Watermark(t * 3 - 1));
        }
    }
    elements.push(StreamElement::Watermark(i64::MAX));
    elements
}

fn requests(limit: Option<u64>) -> Vec<TraceRecord> {
    let mut op = WindowOperator::new(
        WindowAssigner::Sliding {
            size: 20,
            slide: 10,
            offset: 0,
        },
        WindowFunction::Incremental,
        0,
        true,
        TimerService::RocksDb,
        128,
    );
    let stream: Vec<_> = input().into_iter().map(Ok).collect();
    let mut sink = VecSink::default();
    let generated = gadget::generate::generate(
        Box::new(stream.into_iter()),
        &mut op as &mut dyn Operator,
        &mut sink,
        limit,
        &mut |_| {},
    )
    .expect("in-memory input");
    let requests: Vec<_> = sink
        .records
        .into_iter()
        .filter(|r| matches!(r, TraceRecord::Access { .. }))
        .collect();
    assert_eq!(generated.counts.requests(), requests.len() as u64);
    requests
}

#[test]
fn every_limit_keeps_exactly_the_first_requests() {
    let all = requests(None);
    assert!(all.len() > 100, "{} requests", all.len());
    for limit in 0..=all.len() as u64 + 1 {
        let cut = requests(Some(limit));
        let expected = &all[..(limit as usize).min(all.len())];
        assert_eq!(cut.as_slice(), expected, "limit {limit}");
    }
}
