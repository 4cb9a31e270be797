//! The analysis of every Flink reference recording agrees with the counts Flink's own run
//! wrote beside it (`<name>.summary.json`), the gets that found nothing included.

#[path = "../../gadget/tests/common.rs"]
mod common;

use std::ops::ControlFlow;

use gadget_analyze::{scan, AnalyzeOptions};

#[test]
fn counts_agree_with_flinks_summaries() {
    let Some(shared) = common::shared_dir("reference trace analysis") else {
        return;
    };
    for name in common::REFERENCE_TRACES {
        let dir = shared.join("reference-traces/flink-1.20");
        let summary: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.join(format!("{name}.summary.json"))).unwrap(),
        )
        .unwrap();
        let mut reader = gadget::trace::open_trace(dir.join(format!("{name}.tsv.gz"))).unwrap();
        let options = AnalyzeOptions {
            max_sequence_len: 2,
            ..AnalyzeOptions::default()
        };
        let a = scan(&mut reader, &options, |_| ControlFlow::Continue(()))
            .unwrap()
            .analyze(&options);
        assert_eq!(a.events, summary["events_in"], "{name}: events");
        assert_eq!(
            a.distinct_event_keys.unwrap(),
            summary["distinct_user_keys(job ids)"],
            "{name}: distinct event keys"
        );
        // Flink's iter_new + iter_seek are one seek request
        let iterators = summary["ops"]
            .get("iter_new")
            .map_or(0, |v| v.as_u64().unwrap());
        assert_eq!(
            a.requests,
            summary["total_ops"].as_u64().unwrap() - iterators,
            "{name}: requests"
        );
        let state_keys = summary["distinct_rocksdb_keys"].as_u64().unwrap();
        if iterators == 0 {
            assert_eq!(
                a.distinct_state_keys, state_keys,
                "{name}: distinct state keys"
            );
        } else {
            // Flink counts the keys it stored; a seek's target is a key prefix of its own
            assert!(
                a.distinct_state_keys > state_keys,
                "{name}: distinct state keys"
            );
        }
        assert_eq!(
            a.stack_distance.accesses,
            a.stack_distance_shuffled.accesses
        );
        assert_eq!(a.unique_sequences[0], a.distinct_state_keys);
        // a recording says what every get found
        let reads = a
            .reads
            .as_ref()
            .expect("a recording says what its gets found");
        assert_eq!(
            Some(&reads.known),
            a.requests_by_op.get("get"),
            "{name}: gets"
        );
        assert_eq!(
            reads.found_nothing, summary["get_miss"],
            "{name}: gets that missed"
        );
    }
}
