//! The input side: an event stream's rate over event time and an arrival schedule's rate over
//! wall-clock time, with their autocorrelation and Hurst exponent (self-similarity).

use serde::Serialize;

use gadget::source::{ElementStream, SourceError, StreamElement};
use gadget::summary::EventKeyCounter;

use crate::series::SeriesSummary;

/// Most bins a rate series may have.
pub const MAX_BINS: usize = 10_000_000;

/// A rate series and its statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateSeries {
    /// Bin width, milliseconds (event time for streams, wall-clock for schedules).
    pub bin_ms: f64,
    /// Items per bin.
    pub counts: Vec<f64>,
    /// Mean, coefficient of variation, autocorrelation and Hurst estimates of `counts`.
    pub statistics: SeriesSummary,
}

/// What an event stream looks like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventStreamAnalysis {
    /// Input events.
    pub events: u64,
    /// Watermarks.
    pub watermarks: u64,
    /// Distinct event keys.
    pub distinct_keys: u64,
    /// Whether `distinct_keys` is exact (else a ±1% estimate).
    pub distinct_keys_exact: bool,
    /// Events with a timestamp below one seen before them.
    pub out_of_order: u64,
    /// Earliest event time, ms.
    pub first_ms: i64,
    /// Latest event time, ms.
    pub last_ms: i64,
    /// Events per bin of event time.
    pub rate: RateSeries,
}

/// Why a rate series cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// The source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The bins would not fit in memory.
    #[error("{bins} bins of {bin_ms} ms over the stream's time span is too many (at most {MAX_BINS}); choose a wider bin (--rate-bin-ms)")]
    TooManyBins {
        /// Bins needed.
        bins: u64,
        /// The bin width asked for.
        bin_ms: f64,
    },
}

/// Reads up to `limit` events of `stream` and bins them by event time (`bin_ms` wide).
pub fn analyze_event_stream(
    stream: ElementStream,
    bin_ms: i64,
    limit: Option<u64>,
) -> Result<EventStreamAnalysis, EventsError> {
    let bin_ms = bin_ms.max(1);
    let mut times: Vec<i64> = Vec::new();
    let (mut watermarks, mut out_of_order) = (0u64, 0u64);
    let mut max_seen = i64::MIN;
    let mut keys = EventKeyCounter::default();
    let mut key_bytes = Vec::new();
    for element in stream {
        match element? {
            StreamElement::Event(e) => {
                if e.timestamp < max_seen {
                    out_of_order += 1;
                }
                max_seen = max_seen.max(e.timestamp);
                keys.add(&e.key, &mut key_bytes);
                times.push(e.timestamp);
                if limit.is_some_and(|l| times.len() as u64 >= l) {
                    break;
                }
            }
            StreamElement::Watermark(_) => watermarks += 1,
        }
    }
    let (first, last) = (
        times.iter().copied().min().unwrap_or(0),
        times.iter().copied().max().unwrap_or(0),
    );
    let bins = ((last - first) / bin_ms) as u64 + 1;
    if bins > MAX_BINS as u64 {
        return Err(EventsError::TooManyBins {
            bins,
            bin_ms: bin_ms as f64,
        });
    }
    let mut counts = vec![0.0; if times.is_empty() { 0 } else { bins as usize }];
    for t in &times {
        counts[((t - first) / bin_ms) as usize] += 1.0;
    }
    let (distinct_keys, distinct_keys_exact) = keys.count();
    Ok(EventStreamAnalysis {
        events: times.len() as u64,
        watermarks,
        distinct_keys,
        distinct_keys_exact,
        out_of_order,
        first_ms: first,
        last_ms: last,
        rate: RateSeries {
            bin_ms: bin_ms as f64,
            statistics: SeriesSummary::of(&counts),
            counts,
        },
    })
}

/// What an arrival schedule looks like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleAnalysis {
    /// The arrival process.
    pub process: String,
    /// Requests scheduled.
    pub requests: u64,
    /// Mean rate, requests per second.
    pub mean_rate: f64,
    /// Coefficient of variation of the inter-arrival gaps (1 for Poisson).
    pub gap_cv: f64,
    /// Requests per bin of wall-clock time.
    pub rate: RateSeries,
}

/// Bins the intended start times `starts` (ns, non-decreasing) `bin_ns` wide.
pub fn analyze_schedule(
    process: &str,
    starts: &[u64],
    bin_ns: u64,
) -> Result<ScheduleAnalysis, EventsError> {
    let bin_ns = bin_ns.max(1);
    let span = starts.last().copied().unwrap_or(0);
    let bins = span / bin_ns + 1;
    if bins > MAX_BINS as u64 {
        return Err(EventsError::TooManyBins {
            bins,
            bin_ms: bin_ns as f64 / 1e6,
        });
    }
    let mut counts = vec![0.0; if starts.is_empty() { 0 } else { bins as usize }];
    for s in starts {
        counts[(s / bin_ns) as usize] += 1.0;
    }
    let gaps: Vec<f64> = starts.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len().max(1) as f64;
    Ok(ScheduleAnalysis {
        process: process.to_string(),
        requests: starts.len() as u64,
        mean_rate: if span > 0 {
            (starts.len() - 1) as f64 / (span as f64 / 1e9)
        } else {
            0.0
        },
        gap_cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        rate: RateSeries {
            bin_ms: bin_ns as f64 / 1e6,
            statistics: SeriesSummary::of(&counts),
            counts,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget::key::Key;
    use gadget::source::Event;

    fn stream(times: &[i64]) -> ElementStream {
        let items: Vec<Result<StreamElement, SourceError>> = times
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                Ok(StreamElement::Event(Event {
                    key: Key::Long(i as i64 % 3),
                    timestamp: t,
                    input: 0,
                    closes: false,
                    payload: 0,
                }))
            })
            .chain(std::iter::once(Ok(StreamElement::Watermark(i64::MAX))))
            .collect();
        Box::new(items.into_iter())
    }

    #[test]
    fn events_are_binned_by_event_time() {
        let a = analyze_event_stream(stream(&[0, 10, 5, 1000, 2500, 2999]), 1000, None).unwrap();
        assert_eq!(a.events, 6);
        assert_eq!(a.watermarks, 1);
        assert_eq!(a.out_of_order, 1);
        assert_eq!(a.distinct_keys, 3);
        assert_eq!(a.rate.counts, vec![3.0, 1.0, 2.0]);
        let a = analyze_event_stream(stream(&[0, 10, 5, 1000]), 1000, Some(2)).unwrap();
        assert_eq!(a.events, 2);
    }

    #[test]
    fn schedules_are_binned_by_start_time() {
        let s = analyze_schedule("constant", &[0, 250, 500, 750, 1000], 500).unwrap();
        assert_eq!(s.rate.counts, vec![2.0, 2.0, 1.0]);
        assert_eq!(s.gap_cv, 0.0);
        assert!((s.mean_rate - 4e9 / 1000.0).abs() < 1e-6);
    }

    #[test]
    fn absurd_bins_are_refused() {
        let e = analyze_event_stream(stream(&[0, i64::MAX / 2]), 1, None).unwrap_err();
        assert!(e.to_string().contains("--rate-bin-ms"), "{e}");
    }
}
