//! HDR interval logs: a run's per-interval latency histograms in HdrHistogram's standard
//! format (one tag per op), readable by its tools (`HistogramLogProcessor`, HdrHistogram
//! plotters) and mergeable across runs.

use std::io::{self, Write};
use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use super::Exporter;
use crate::measure::Recorder;

/// A run's interval histograms, and why the run stopped early if it did.
pub struct HdrIntervals<'a> {
    /// The run's recorder, created to keep its intervals.
    pub recorder: &'a Recorder,
    /// Set when the run is partial; the log's comments then say so.
    pub partial_reason: Option<&'a str>,
}

/// HdrHistogram's interval log (V2, compressed), latencies in nanoseconds.
pub struct HdrLog;

impl Exporter<HdrIntervals<'_>> for HdrLog {
    fn export(&self, doc: &HdrIntervals<'_>, out: &mut dyn Write) -> io::Result<()> {
        let Some(log) = doc.recorder.logged_intervals() else {
            return Ok(());
        };
        let mut serializer = V2DeflateSerializer::new();
        let mut builder = IntervalLogWriterBuilder::new();
        builder.add_comment("gadget latency (completion - intended start), ns");
        if let Some(reason) = doc.partial_reason {
            builder.add_comment(&format!(
                "PARTIAL: {reason}; the intervals cover what ran before"
            ));
        }
        let mut out = out;
        let mut writer = builder
            .with_max_value_divisor(1e6)
            .begin_log_with(&mut out, &mut serializer)
            .map_err(|e| io::Error::other(format!("{e:?}")))?;
        for i in log {
            let start = Duration::from_nanos(i.start_ns);
            let length = Duration::from_nanos(i.end_ns - i.start_ns);
            writer
                .write_histogram(&i.latency, start, length, Tag::new(i.op.name()))
                .map_err(|e| io::Error::other(format!("{e:?}")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::render;
    use gadget::access::Op;

    #[test]
    fn each_op_is_a_tag_and_a_partial_run_says_so() {
        let mut r = Recorder::new(1_000, true, false);
        r.start(0);
        r.record(Op::Get, 10, 5, 100);
        r.record(Op::Put, 20, 20, 900);
        r.record(Op::Get, 30, 30, 3_500);
        r.finish(3_600);
        let whole = HdrIntervals {
            recorder: &r,
            partial_reason: None,
        };
        let text = render(&HdrLog, &whole);
        assert!(
            text.contains("Tag=get") && text.contains("Tag=put"),
            "{text}"
        );
        assert!(!text.contains("PARTIAL"), "{text}");
        let partial = HdrIntervals {
            recorder: &r,
            partial_reason: Some("interrupted"),
        };
        let text = render(&HdrLog, &partial);
        assert!(text.contains("#PARTIAL: interrupted;"), "{text}");
    }

    #[test]
    fn a_recorder_that_kept_no_intervals_writes_nothing() {
        let mut r = Recorder::new(1_000, false, false);
        r.start(0);
        r.record(Op::Get, 10, 5, 100);
        r.finish(200);
        let doc = HdrIntervals {
            recorder: &r,
            partial_reason: None,
        };
        assert_eq!(render(&HdrLog, &doc), "");
    }
}
