//! The full histograms a results document keeps beside its summary, and when its run measured
//! on the wall clock: what an exact merge of shards' results needs.

use gadget::access::Op;
use serde::{Deserialize, Serialize};

use super::hdr;
use crate::measure::Recorder;

/// A run's full histograms, kept in its results so that shards' results merge exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHistograms {
    /// How each `hdr` is written: [`hdr::ENCODING`] (HdrHistogram's V2 compressed encoding in
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
    /// The histogram, encoded ([`hdr::encode`]).
    pub hdr: String,
}

/// One state's latency histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateHistogram {
    /// The state's name.
    pub name: String,
    /// The store it lives in.
    pub store: String,
    /// The histogram, encoded ([`hdr::encode`]).
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

impl RunHistograms {
    /// The latency and service-time histograms of each op `recorder` recorded.
    pub fn of(recorder: &Recorder) -> RunHistograms {
        let mut latency = Vec::new();
        let mut service = Vec::new();
        for op in Op::ALL {
            if let Some(h) = recorder.op_histograms(op) {
                let op = op.name().to_string();
                latency.push(OpHistogram {
                    op: op.clone(),
                    hdr: hdr::encode(&h.latency),
                });
                service.push(OpHistogram {
                    op,
                    hdr: hdr::encode(&h.service),
                });
            }
        }
        RunHistograms {
            encoding: hdr::ENCODING.to_string(),
            latency,
            service,
            per_state: Vec::new(),
        }
    }

    /// Adds the latency histogram of each state `recorder` recorded: `states[i]` names state
    /// `i` and `stores[i]` the store it lives in (as [`crate::placed::parts`] takes them).
    pub fn with_states(
        mut self,
        recorder: &Recorder,
        states: &[String],
        stores: &[String],
    ) -> Self {
        self.per_state = states
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                Some(StateHistogram {
                    name: name.clone(),
                    store: stores.get(i).cloned().unwrap_or_default(),
                    hdr: hdr::encode(recorder.state_histogram(i)?),
                })
            })
            .collect();
        self
    }
}
