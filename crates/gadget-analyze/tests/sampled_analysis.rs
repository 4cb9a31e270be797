//! A sampled analysis (SHARDS) of every Flink reference recording against its exact analysis:
//! the estimates are within their stated errors, and the counts that need no sample are the
//! exact analysis's, number for number.

#[path = "../../gadget/tests/common.rs"]
mod common;

use std::ops::ControlFlow;

use gadget_analyze::sampling::{curve_difference, Sampling, MEASURED_HIT_RATIO_ERROR};
use gadget_analyze::{scan, Analysis, AnalyzeOptions};

fn analysis(path: &std::path::Path, sampling: Sampling) -> Analysis {
    let options = AnalyzeOptions {
        max_sequence_len: 2,
        sampling,
        ..AnalyzeOptions::default()
    };
    let mut reader = gadget::trace::open_trace(path).unwrap();
    scan(&mut reader, &options, |_| ControlFlow::Continue(()))
        .unwrap()
        .analyze(&options)
}

#[test]
fn a_sampled_analysis_of_each_reference_recording_is_within_its_stated_error() {
    let Some(shared) = common::shared_dir("sampled trace analysis") else {
        return;
    };
    let sampling = Sampling::parse("1/8").unwrap();
    let (mut report, mut failures) = (Vec::new(), Vec::new());
    for name in common::REFERENCE_TRACES {
        let path = shared.join(format!("reference-traces/flink-1.20/{name}.tsv.gz"));
        let exact = analysis(&path, Sampling::Exact);
        let sampled = analysis(&path, sampling);
        // what every request counts stays exact
        assert_eq!(sampled.requests, exact.requests, "{name}");
        assert_eq!(sampled.requests_by_op, exact.requests_by_op, "{name}");
        assert_eq!(sampled.key_size, exact.key_size, "{name}");
        assert_eq!(sampled.value_size, exact.value_size, "{name}");
        assert_eq!(sampled.distinct_event_keys, exact.distinct_event_keys);
        // the adjusted sample stands for every keyed request (in whole units of eight)
        assert_eq!(
            sampled.stack_distance.accesses,
            exact.stack_distance.accesses / 8 * 8,
            "{name}"
        );
        assert!(exact.sampling.is_none() && sampled.unique_sequences.is_empty());
        let s = sampled
            .sampling
            .as_ref()
            .expect("a sampled analysis says so");
        // distinct keys within four standard errors
        let keys_error =
            (sampled.distinct_state_keys as f64 / exact.distinct_state_keys as f64 - 1.0).abs();
        assert!(
            keys_error <= 4.0 * s.distinct_keys_relative_error,
            "{name}: distinct keys {} against {} (±{:.3})",
            sampled.distinct_state_keys,
            exact.distinct_state_keys,
            s.distinct_keys_relative_error
        );
        // the hit-ratio curves: within the error the results state as measured here
        for (label, a, b) in [
            ("trace", &sampled.stack_distance, &exact.stack_distance),
            (
                "shuffled",
                &sampled.stack_distance_shuffled,
                &exact.stack_distance_shuffled,
            ),
        ] {
            let measured = curve_difference(&a.hit_ratio_curve, &b.hit_ratio_curve);
            let noise = s.hit_ratio_noise.expect("both halves hold accesses");
            report.push(format!(
                "{name} {label}: hit-ratio error {measured:.4} (noise {noise:.4}); \
                 distinct keys {:+.2}% (±{:.2}%)",
                100.0
                    * (sampled.distinct_state_keys as f64 / exact.distinct_state_keys as f64 - 1.0),
                100.0 * s.distinct_keys_relative_error
            ));
            if measured > MEASURED_HIT_RATIO_ERROR {
                failures.push(format!(
                    "{name} {label}: hit-ratio curves differ by {measured:.4}, more than the \
                     {MEASURED_HIT_RATIO_ERROR} the results state"
                ));
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
