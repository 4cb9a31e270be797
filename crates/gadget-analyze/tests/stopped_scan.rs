//! A scan stopped part way (Ctrl-C) analyzes what it read and says it is partial.

use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;

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

#[test]
fn a_stop_after_the_scan_leaves_out_the_locality_measures_and_keeps_the_rest() {
    let bytes = trace(200_000);
    let options = AnalyzeOptions {
        max_sequence_len: 4,
        ..AnalyzeOptions::default()
    };
    let scanned = || {
        let mut reader = TraceReader::from_reader(std::io::Cursor::new(bytes.clone())).unwrap();
        scan(&mut reader, &options, |_| ControlFlow::Continue(())).unwrap()
    };
    let whole = scanned().analyze_until(&options, &AtomicBool::new(false));
    assert!(whole.locality_computed && !whole.partial);
    assert_eq!(whole.unique_sequences.len(), 4);

    let stopped = scanned().analyze_until(&options, &AtomicBool::new(true));
    assert!(stopped.partial && !stopped.locality_computed);
    assert!(stopped.unique_sequences.is_empty());
    assert_eq!(stopped.stack_distance.cold, 0);
    // everything the scan measured is kept
    assert_eq!(stopped.requests, 200_000);
    assert_eq!(stopped.distinct_state_keys, 1000);
    assert_eq!(stopped.working_set, whole.working_set);
    let text = stopped.to_text("t");
    assert!(text.contains("locality      not computed"), "{text}");
    assert!(!text.contains("temporal locality"), "{text}");
}

#[test]
fn stack_distances_and_sequences_give_up_at_once_when_stopped() {
    use gadget_analyze::locality::StackDistances;
    use gadget_analyze::sequences::unique_sequences_until;
    let ids: Vec<u32> = (0..1_000_000u32).map(|i| i % 5000).collect();
    let stop = AtomicBool::new(true);
    let s = StackDistances::of_until(&ids, 5000, &stop);
    assert_eq!(s.cold + s.reuses(), 0, "no access measured after the stop");
    assert_eq!(
        unique_sequences_until(&ids, 5000, 3, &stop),
        Vec::<u64>::new(),
        "no length counted after the stop"
    );
    let go_on = AtomicBool::new(false);
    let s = StackDistances::of_until(&ids, 5000, &go_on);
    assert_eq!(s.cold + s.reuses(), 1_000_000);
    assert_eq!(
        unique_sequences_until(&ids, 5000, 3, &go_on),
        vec![5000, 5000, 5000]
    );
}
