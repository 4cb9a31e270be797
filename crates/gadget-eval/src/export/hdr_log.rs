//! HDR interval logs: a run's per-interval latency histograms in HdrHistogram's standard
//! format, as its Java `HistogramLogWriter` writes them (format version 1.3: `StartTime` and
//! `BaseTime` headers, the legend, then one line per histogram), so that its tools read them
//! without options: `HistogramLogProcessor -i run.hlog` reports all requests (one untagged
//! histogram per interval), `-tag get` one op (one tagged histogram per op and interval).
//! Logs of several runs merge line by line.

use std::collections::BTreeMap;
use std::io::{self, Write};

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::Exporter;
use crate::measure::{LoggedInterval, Recorder};

/// A run's interval histograms, when the run's clock started, and why the run stopped early
/// if it did.
pub struct HdrIntervals<'a> {
    /// The run's recorder, created to keep its intervals.
    pub recorder: &'a Recorder,
    /// Set when the run is partial; the log's comments then say so.
    pub partial_reason: Option<&'a str>,
    /// The run's time zero on the wall clock, ns since the Unix epoch: the log's `StartTime`
    /// and `BaseTime`, from which its interval timestamps count. `None` leaves both out (the
    /// timestamps are then seconds from the run's time zero).
    pub zero_unix_ns: Option<u64>,
}

/// HdrHistogram's interval log (V2 compressed histograms), latencies in nanoseconds.
pub struct HdrLog;

/// The format version HdrHistogram 2.x's `HistogramLogWriter` writes.
const FORMAT_VERSION: &str = "1.3";

/// What `Interval_Max` is divided by, as HdrHistogram's writer does by default: ns to ms.
const MAX_VALUE_DIVISOR: f64 = 1e6;

impl Exporter<HdrIntervals<'_>> for HdrLog {
    fn export(&self, doc: &HdrIntervals<'_>, out: &mut dyn Write) -> io::Result<()> {
        let Some(log) = doc.recorder.logged_intervals() else {
            return Ok(());
        };
        writeln!(
            out,
            "#gadget latency (completion - intended start), ns (Interval_Max in ms); untagged: all requests, Tag=OP: one op"
        )?;
        if let Some(reason) = doc.partial_reason {
            writeln!(
                out,
                "#PARTIAL: {reason}; the intervals cover what ran before"
            )?;
        }
        writeln!(out, "#[Histogram log format version {FORMAT_VERSION}]")?;
        // whole milliseconds, as Java's writer keeps them; the rest goes into each timestamp
        let mut offset_ns = 0;
        if let Some(zero) = doc.zero_unix_ns {
            let base_ms = zero / 1_000_000;
            offset_ns = zero - base_ms * 1_000_000;
            let seconds = format!("{}.{:03}", base_ms / 1000, base_ms % 1000);
            writeln!(
                out,
                "#[StartTime: {seconds} (seconds since epoch), {}]",
                java_date(base_ms / 1000)
            )?;
            writeln!(out, "#[BaseTime: {seconds} (seconds since epoch)]")?;
        }
        writeln!(
            out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        let mut line = Line::default();
        for ((start_ns, end_ns), intervals) in by_interval(log) {
            let length_ns = end_ns - start_ns;
            let start_ns = start_ns + offset_ns;
            let mut all: Option<Histogram<u64>> = None;
            let mut ops: BTreeMap<usize, (&str, Histogram<u64>)> = BTreeMap::new();
            for i in intervals {
                add(&mut all, &i.latency);
                match ops.get_mut(&(i.op as usize)) {
                    Some((_, h)) => h.add(&i.latency).map_err(io::Error::other)?,
                    None => {
                        ops.insert(i.op as usize, (i.op.name(), i.latency.clone()));
                    }
                }
            }
            if let Some(all) = all {
                line.write(out, None, start_ns, length_ns, &all)?;
            }
            for (name, h) in ops.values() {
                line.write(out, Some(name), start_ns, length_ns, h)?;
            }
        }
        Ok(())
    }
}

/// The logged intervals grouped by their span, in time order (concurrent instances log the
/// same spans; their histograms add up).
fn by_interval(log: &[LoggedInterval]) -> BTreeMap<(u64, u64), Vec<&LoggedInterval>> {
    let mut spans: BTreeMap<(u64, u64), Vec<&LoggedInterval>> = BTreeMap::new();
    for i in log {
        spans.entry((i.start_ns, i.end_ns)).or_default().push(i);
    }
    spans
}

/// Adds `h` to the histogram `sum` (which it starts).
fn add(sum: &mut Option<Histogram<u64>>, h: &Histogram<u64>) {
    match sum {
        Some(s) => s
            .add(h)
            .expect("histograms of one recorder share their bounds"),
        None => *sum = Some(h.clone()),
    }
}

/// Writes histogram lines, reusing its buffers.
#[derive(Default)]
struct Line {
    serializer: V2DeflateSerializer,
    bytes: Vec<u8>,
    text: String,
}

impl Line {
    /// `[Tag=TAG,]START,LENGTH,MAX,HISTOGRAM`: seconds with three decimals, the maximum in ms,
    /// the histogram compressed and base64-encoded, as Java's `HistogramLogWriter` writes it.
    fn write(
        &mut self,
        out: &mut dyn Write,
        tag: Option<&str>,
        start_ns: u64,
        length_ns: u64,
        h: &Histogram<u64>,
    ) -> io::Result<()> {
        self.bytes.clear();
        self.text.clear();
        self.serializer
            .serialize(h, &mut self.bytes)
            .map_err(|e| io::Error::other(format!("{e:?}")))?;
        base64::engine::general_purpose::STANDARD.encode_string(&self.bytes, &mut self.text);
        if let Some(tag) = tag {
            write!(out, "Tag={tag},")?;
        }
        writeln!(
            out,
            "{:.3},{:.3},{:.3},{}",
            start_ns as f64 / 1e9,
            length_ns as f64 / 1e9,
            h.max() as f64 / MAX_VALUE_DIVISOR,
            self.text
        )
    }
}

/// `seconds` since the epoch as Java's `Date.toString()` writes it, in UTC:
/// `Sat Nov 28 18:59:09 UTC 2026`.
fn java_date(seconds: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (y, m, d) = gadget_results::context::civil_from_days(days as i64);
    format!(
        "{} {} {d:02} {:02}:{:02}:{:02} UTC {y}",
        DAYS[(days % 7) as usize],
        MONTHS[m as usize - 1],
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::render;
    use gadget::access::Op;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    /// A run of 1 s intervals: a get and a put in the first, a get in the fourth (and last).
    fn recorded() -> Recorder {
        let mut r = Recorder::new(1_000_000_000, true, false);
        r.start(0);
        r.record(Op::Get, 10, 5, 100_000_000);
        r.record(Op::Put, 20, 20, 900_000_000);
        r.record(Op::Get, 30, 30, 3_500_000_000);
        r.finish(3_600_000_000);
        r
    }

    #[test]
    fn each_op_is_a_tag_and_a_partial_run_says_so() {
        let r = recorded();
        let whole = HdrIntervals {
            recorder: &r,
            partial_reason: None,
            zero_unix_ns: None,
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
            zero_unix_ns: None,
        };
        let text = render(&HdrLog, &partial);
        assert!(text.contains("#PARTIAL: interrupted;"), "{text}");
    }

    /// `(start ms, tag, requests)` of every histogram of `doc`'s log, read back with the
    /// crate's own reader.
    fn histograms(doc: &HdrIntervals<'_>) -> Vec<(u128, Option<String>, u64)> {
        let text = render(&HdrLog, doc);
        let mut seen = Vec::new();
        for entry in IntervalLogIterator::new(text.as_bytes()) {
            if let Ok(LogEntry::Interval(h)) = entry {
                let decoded: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                    .deserialize(
                        &mut &base64::engine::general_purpose::STANDARD
                            .decode(h.encoded_histogram())
                            .unwrap()[..],
                    )
                    .unwrap();
                seen.push((
                    h.start_timestamp().as_millis(),
                    h.tag().map(|t| t.as_str().to_string()),
                    decoded.len(),
                ));
            }
        }
        seen
    }

    #[test]
    fn every_interval_has_an_untagged_histogram_of_all_requests() {
        let r = recorded();
        let doc = HdrIntervals {
            recorder: &r,
            partial_reason: None,
            zero_unix_ns: Some(1_795_892_749_172_270_997),
        };
        assert_eq!(
            histograms(&doc),
            [
                (0, None, 2),
                (0, Some("get".into()), 1),
                (0, Some("put".into()), 1),
                (3_000, None, 1),
                (3_000, Some("get".into()), 1),
            ]
        );
    }

    #[test]
    fn concurrent_instances_log_one_histogram_per_interval_and_tag() {
        let mut r = recorded();
        r.merge(&recorded(), 0);
        let doc = HdrIntervals {
            recorder: &r,
            partial_reason: None,
            zero_unix_ns: None,
        };
        assert_eq!(
            histograms(&doc),
            [
                (0, None, 4),
                (0, Some("get".into()), 2),
                (0, Some("put".into()), 2),
                (3_000, None, 2),
                (3_000, Some("get".into()), 2),
            ]
        );
    }

    #[test]
    fn headers_are_those_of_hdrhistograms_java_writer() {
        let r = recorded();
        let doc = HdrIntervals {
            recorder: &r,
            partial_reason: None,
            zero_unix_ns: Some(1_795_892_749_172_270_997),
        };
        let text = render(&HdrLog, &doc);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1..5],
            [
                "#[Histogram log format version 1.3]",
                "#[StartTime: 1795892749.172 (seconds since epoch), Sat Nov 28 19:05:49 UTC 2026]",
                "#[BaseTime: 1795892749.172 (seconds since epoch)]",
                "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"",
            ],
            "{text}"
        );
        assert!(lines[5].starts_with("0.000,1.000,0.000,HISTF"), "{text}");
        assert!(lines[8].starts_with("3.000,0.600,0.000,HISTF"), "{text}");
    }

    #[test]
    fn java_dates_name_the_weekday() {
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(java_date(951_782_400), "Tue Feb 29 00:00:00 UTC 2000");
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
            zero_unix_ns: None,
        };
        assert_eq!(render(&HdrLog, &doc), "");
    }
}
