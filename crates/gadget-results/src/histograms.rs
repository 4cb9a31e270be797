//! The full histograms a results document keeps beside its summary, and when its run measured
//! on the wall clock: what an exact merge of shards' results needs.

use serde::{Deserialize, Serialize};

/// A run's full histograms, kept in its results so that shards' results merge exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHistograms {
    /// How each `hdr` is written: [`crate::hdr::ENCODING`] (HdrHistogram's V2 compressed encoding in
    /// base64, as its interval logs write histograms), nanoseconds.
    pub encoding: String,
    /// Latency (completion − intended start) of each op that occurred, in op order.
    pub latency: Vec<OpHistogram>,
    /// Service time (completion − actual start) of each op that occurred, in op order.
    pub service: Vec<OpHistogram>,
    /// Latency of each state's requests, by the state's name and the store it lives in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_state: Vec<StateHistogram>,
}

/// One op's histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpHistogram {
    /// The op's name.
    pub op: String,
    /// The histogram, encoded ([`crate::hdr::encode`]).
    pub hdr: String,
}

/// One state's latency histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateHistogram {
    /// The state's name.
    pub name: String,
    /// The store it lives in.
    pub store: String,
    /// The histogram, encoded ([`crate::hdr::encode`]).
    pub hdr: String,
}

/// When a run measured, on the wall clock: what lines shards' results up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WallClock {
    /// The instant the run's times count from (`time_series`' `start_s` and `end_s`, and the
    /// two below): nanoseconds since the Unix epoch, UTC. Concurrent instances share it.
    pub zero_unix_ns: u64,
    /// When measuring began (after the warm-up), ns after time zero.
    pub measure_start_ns: u64,
    /// When the run ended, ns after time zero.
    pub measure_end_ns: u64,
    /// The time series' interval, ns.
    pub interval_ns: u64,
}
