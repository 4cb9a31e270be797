//! The results document of a run, `gadget run --json` and `-o`, as one type: what
//! `gadget run`/`replay` write, `gadget merge` combines, the exporters, `gadget bench`,
//! `gadget analyze` and `gadget compare` read, and `docs/results.schema.json` describes (a test
//! checks the schema against it). Its parts: each op's [summary](summary), the
//! [histograms](RunHistograms) and [wall clock](WallClock) that make results mergeable, their
//! [encoding](hdr), what ran ([context]) and on which machine ([host]), the [parts](PartSummary)
//! per state and store, and the [shards](Shard) of merged results.

pub mod context;
pub mod hdr;
mod histograms;
pub mod host;
mod part;
pub mod summary;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use context::{RunContext, WorkloadUsed};
pub use histograms::{OpHistogram, RunHistograms, StateHistogram, WallClock};
pub use host::Host;
pub use part::{per_stores, PartSummary};
use summary::{IntervalStats, OpSummary, Spectrum, MAX_INTERVALS};

/// What a run measured, as `--json` prints it (schema: `docs/results.schema.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Gadget's version.
    pub gadget_version: String,
    /// The store driven.
    pub store: String,
    /// The arrival process.
    pub arrival: String,
    /// True when requests were issued at intended start times (not in a closed loop).
    pub open_loop: bool,
    /// The target rate of an open-loop run, requests/s.
    pub target_rate: Option<f64>,
    /// Seed of the arrival schedule and the value bytes.
    pub seed: u64,
    /// What the values written compress to, as a fraction of their size (`None` in results
    /// of Gadget versions whose values were one repeated byte).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_compression_ratio: Option<f64>,
    /// True when the run stopped early (Ctrl-C, a signal, a failed store or workload);
    /// everything below covers what ran.
    pub partial: bool,
    /// Why a partial run stopped: an interrupt, or the error that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_reason: Option<String>,
    /// Requests issued in the warm-up and left out.
    pub warmup_requests: u64,
    /// Requests measured.
    pub requests: u64,
    /// Measured time, seconds.
    pub seconds: f64,
    /// Measured requests per second.
    pub throughput: f64,
    /// Whether an open-loop run kept up with its target rate (≥ 95 % of it).
    pub sustained: Option<bool>,
    /// Longest time a request started after its intended start, ns.
    pub max_start_lag_ns: u64,
    /// Times the driver found no request ready because generation fell behind.
    pub producer_stalls: u64,
    /// Time the driver waited for generation, ns.
    pub producer_stall_ns: u64,
    /// Ops the store does not have and emulated (those the run issued).
    pub emulated_ops: Vec<String>,
    /// Gets (and seeks and nexts) that found a value, and their bytes.
    pub reads_found: u64,
    /// Gets (and seeks and nexts) that found nothing.
    pub reads_empty: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Latency (completion − intended start) per op, then `all`.
    pub latency: Vec<OpSummary>,
    /// Service time (completion − actual start) per op, then `all`.
    pub service: Vec<OpSummary>,
    /// Latency per op, then `all`, as a percentile spectrum (from the full histograms).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_spectrum: Vec<Spectrum>,
    /// Throughput and latency per interval.
    pub time_series: Vec<IntervalStats>,
    /// True when the run had more intervals than the time series keeps (the first
    /// [`MAX_INTERVALS`] are kept; the totals cover the whole run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub time_series_truncated: bool,
    /// The store's own counters over the whole run, warm-up included, by name (with
    /// `--store-counters`, for stores that keep any; else empty). Summed over instances.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub store_counters: BTreeMap<String, u64>,
    /// Latency and rate per state of the workload, by its name and the store it lives in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_state: Vec<PartSummary>,
    /// The same per store, when the states live in more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_store: Vec<PartSummary>,
    /// For concurrent instances (this report then combines them): each instance's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<RunReport>,
    /// What ran: command line, workloads, store settings, machine, start time, label
    /// (written by `gadget run`/`replay`; absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<RunContext>,
    /// When the run measured, on the wall clock: its time zero, measured span and time-series
    /// interval (absent in results of older versions), which line shards up in a merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock: Option<WallClock>,
    /// The full latency and service-time histograms behind the tables above, which merge
    /// exactly (absent in results of older versions, and in each of `instances` and `shards`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<RunHistograms>,
    /// For merged results (`gadget merge`; this report then combines them): each shard's own,
    /// with the file it came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<Shard>,
}

impl RunReport {
    /// Warnings a reader must see: a target rate not sustained, generation that fell behind,
    /// a partial run.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.partial {
            w.push(format!(
                "PARTIAL: {}; results cover what ran before",
                self.partial_reason.as_deref().unwrap_or(INTERRUPTED_REASON)
            ));
        }
        if self.sustained == Some(false) {
            w.push(format!(
                "NOT SUSTAINED: the target was {:.0} requests/s but the store managed {:.0}; latencies include the growing backlog",
                self.target_rate.unwrap_or(0.0),
                self.throughput
            ));
        }
        if self.time_series_truncated {
            w.push(format!(
                "the time series keeps the first {MAX_INTERVALS} intervals only (the totals cover the whole run); a longer --interval covers it all"
            ));
        }
        if self.producer_stalls > 0 {
            w.push(format!(
                "generation fell behind {} times ({:.1} ms in all); {}",
                self.producer_stalls,
                self.producer_stall_ns as f64 / 1e6,
                if self.open_loop {
                    "requests due meanwhile started late, and their latencies include it"
                } else {
                    "those waits count in the measured time (throughput), in no request's latency"
                }
            ));
        }
        if self.requests == 0 && self.warmup_requests == 0 && !self.partial {
            w.push(
                "the workload issued no requests: its input is empty (a data file with no rows \
                 or only a header, an empty trace) or filters out every event"
                    .into(),
            );
        }
        if let Some(w2) = self.warmup_covered_the_run() {
            w.push(w2);
        }
        w
    }

    /// When the warm-up took every request of a run that went to its end: nothing was
    /// measured, and the message says so.
    pub fn warmup_covered_the_run(&self) -> Option<String> {
        (self.requests == 0 && self.warmup_requests > 0 && !self.partial).then(|| {
            format!(
                "the warm-up took all {} requests of the run: nothing was measured; give a \
                 shorter --warmup (or a longer workload)",
                self.warmup_requests
            )
        })
    }
}

/// The reason of a run stopped by Ctrl-C, SIGTERM or SIGHUP.
pub const INTERRUPTED_REASON: &str = "interrupted (Ctrl-C, SIGTERM or SIGHUP)";

/// One shard of merged results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shard {
    /// Its results file, as given to `gadget merge`.
    pub file: String,
    /// Its results, without their histograms (the merged ones hold them).
    pub results: RunReport,
}
