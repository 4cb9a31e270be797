//! A scan stopped part way (Ctrl-C) analyzes what it read and says it is partial.

use std::ops::ControlFlow;

use gadget::access::{Access, AccessSink, Op};
use gadget::trace::{BinaryTraceWriter, TraceFooter, TraceHeader, TraceReader};
use gadget_analyze::{scan, AnalyzeOptions};

/// A binary trace of `n` puts over 1,000 keys.
fn trace(n: u32) -> Vec<u8> {
    let header = TraceHeader::new("test", vec!["s".to_string()], None, serde_json::json!({}));
    let mut w = BinaryTraceWriter::new(Vec::new(), &header).unwrap();
    for i in 0..n {
        w.access(Access {
            op: Op::Put,
            state: 0,
            key: &(i % 1000).to_be_bytes(),
            value_len: 8,
        });
    }
    w.finish(TraceFooter::new(false)).unwrap()
}

#[test]
fn a_stopped_scan_covers_the_records_read_and_is_marked_partial() {
    let bytes = trace((1 << 20) + 5_000);
    let options = AnalyzeOptions {
        max_sequence_len: 2,
        ..AnalyzeOptions::default()
    };

    let mut reader = TraceReader::from_reader(std::io::Cursor::new(bytes.clone())).unwrap();
    let whole = scan(&mut reader, &options, |_| ControlFlow::Continue(()))
        .unwrap()
        .analyze(&options);
    assert!(!whole.partial);
    assert_eq!(whole.requests, (1 << 20) + 5_000);

    let mut reader = TraceReader::from_reader(std::io::Cursor::new(bytes)).unwrap();
    let mut calls = Vec::new();
    let stopped = scan(&mut reader, &options, |n| {
        calls.push(n);
        ControlFlow::Break(())
    })
    .unwrap()
    .analyze(&options);
    assert!(stopped.partial);
    assert_eq!(stopped.requests, 1 << 20);
    assert_eq!(stopped.distinct_state_keys, 1000);
    assert_eq!(calls[0], 1 << 20);
}
