//! `gadget merge`: the results of a run's shards as the results of one run.
//!
//! Every results file keeps what an exact merge needs beside its summary: its full histograms
//! ([`RunHistograms`], HdrHistogram's compressed encoding) and when it ran on the wall clock
//! ([`WallClock`]). Merging adds the histograms bucket by bucket and computes every percentile
//! from the sums (percentiles are never averaged), so the merged latency is, bucket for bucket,
//! what one process recording every request would have measured. Counts add up; the measured
//! time runs from the earliest shard's start to the latest one's end on the wall clock, and the
//! throughput is the requests over it; the time series line up on the wall clock
//! ([`series`]). Each shard's own results are kept beside, in `shards`.
//!
//! Only shards of one run merge: the same workloads, store and settings, each shard with seeds
//! of its own ([`merge`] says what is compared); anything else is refused with the two files
//! and the field that differs.

mod context;
mod histograms;
mod identity;
mod part;
mod series;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gadget::access::Op;
use hdrhistogram::Histogram;

use context::context;
use gadget_results::summary::histogram;
use gadget_results::{
    hdr, RunHistograms, RunReport, Shard, StateHistogram, WallClock, INTERRUPTED_REASON,
};
use histograms::{add, check_total, decode, encoded, parts, tables};
use identity::{difference, identity, seeds};
use part::Part;

/// Why results could not be merged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// Nothing was given.
    #[error("nothing to merge: give the results files of a run's shards")]
    Nothing,
    /// A file could not be read.
    #[error("cannot read {file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not results JSON.
    #[error(
        "{file} is not gadget run/replay results: {message} at byte {offset} (line {line}, \
         column {column}); give the JSON files `gadget run -o` or `gadget replay -o` wrote"
    )]
    NotResults {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
        /// Where, bytes from the file's start.
        offset: usize,
        /// Where, the line (from 1).
        line: usize,
        /// Where, the column (from 1).
        column: usize,
    },
    /// A field of a results file is damaged.
    #[error("{file}: `{field}` {message}")]
    BadField {
        /// The file.
        file: String,
        /// The field, as a path (`histograms.latency[0].hdr`).
        field: String,
        /// What is wrong with it, and what to do.
        message: String,
    },
    /// Results that lack what a merge needs, or are merged already.
    #[error("{file} cannot be merged: {why}")]
    NotMergeable {
        /// The file.
        file: String,
        /// Why, and what to do.
        why: String,
    },
    /// Two files are not shards of one run.
    #[error(
        "{a} and {b} are not shards of one run: their {field} differs ({a_value} against \
         {b_value}); merge only the results of one run's shards"
    )]
    DifferentRuns {
        /// The first file.
        a: String,
        /// The second file.
        b: String,
        /// The field that differs.
        field: String,
        /// Its value in `a`.
        a_value: String,
        /// Its value in `b`.
        b_value: String,
    },
    /// Two files are the same shard.
    #[error("{a} and {b} are the same shard: {why}; give each shard's results once")]
    Duplicate {
        /// The first file.
        a: String,
        /// The second file.
        b: String,
        /// How they are the same.
        why: String,
    },
}

/// How to label merged results.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// The merged run's name (`context.label`); by default the shards' own when they agree.
    pub label: Option<String>,
    /// The merging command's line (`context.command_line`).
    pub command_line: Vec<String>,
}

/// Reads a results file (`gadget run -o`, `gadget replay -o`, `gadget merge -o`); errors name
/// the file and the byte where it stopped being results.
pub fn read_results(path: &Path) -> Result<RunReport, MergeError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| MergeError::Read {
        file: file.clone(),
        source,
    })?;
    parse_results(&file, &bytes)
}

/// Parses a results file's bytes; `file` names it in errors.
pub fn parse_results(file: &str, bytes: &[u8]) -> Result<RunReport, MergeError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        let offset = if e.classify() == serde_json::error::Category::Eof {
            bytes.len()
        } else {
            byte_offset(bytes, line, column)
        };
        let message = e.to_string();
        // serde_json ends its message with the position, said here in bytes as well
        let message = match message.rfind(" at line ") {
            Some(at) => message[..at].to_string(),
            None => message,
        };
        MergeError::NotResults {
            file: file.to_string(),
            message,
            offset,
            line,
            column,
        }
    })
}

/// The byte offset of serde_json's 1-based `line` and `column`: a column counts the bytes of
/// its line read up to the one where parsing failed, that one included (column 0: the line
/// break before the line).
fn byte_offset(bytes: &[u8], line: usize, column: usize) -> usize {
    let line_start: usize = bytes
        .split(|&b| b == b'\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    (line_start + column).saturating_sub(1).min(bytes.len())
}

/// Reads and merges the results files `paths` (see [`merge`]); the same file twice is refused.
pub fn merge_files(paths: &[PathBuf], options: &MergeOptions) -> Result<RunReport, MergeError> {
    let mut seen: Vec<(PathBuf, String)> = Vec::new();
    let mut inputs = Vec::new();
    for path in paths {
        let file = path.display().to_string();
        let canonical = std::fs::canonicalize(path).map_err(|source| MergeError::Read {
            file: file.clone(),
            source,
        })?;
        if let Some((_, a)) = seen.iter().find(|(p, _)| *p == canonical) {
            return Err(MergeError::Duplicate {
                a: a.clone(),
                b: file,
                why: "they are one file".into(),
            });
        }
        seen.push((canonical, file.clone()));
        inputs.push((file, read_results(path)?));
    }
    merge(inputs, options)
}

/// A shard's histograms, decoded, and its wall clock.
struct Decoded {
    latency: Vec<(Op, Histogram<u64>)>,
    service: Vec<(Op, Histogram<u64>)>,
    states: Vec<(String, String, Histogram<u64>)>,
    clock: WallClock,
}

/// Merges the results of one run's shards, each named by its file: see the module's
/// documentation.
///
/// Shards of one run have the same Gadget version, store, arrival process, value compression,
/// time-series interval, workloads (each config's text and limit, each trace's name and size)
/// and store settings. A run is split in one of two ways, which its shards' command lines
/// (`context.command_line`) tell apart:
///
/// - into parts, by `--shard I/N` and/or `--subtask I`: every part runs the same seeds (one
///   workload and one schedule, split), the same N and `--parallelism`, and no part comes
///   twice; parts that are missing make the merge partial, and its `partial_reason` names them;
/// - into copies with seeds of their own (`--seed`; with `--instances`, seed + i): no seed
///   runs in two shards.
///
/// Inputs must carry histograms and a wall clock (results of this Gadget), and must not be
/// merged results themselves (merge the shards' files all at once).
pub fn merge(
    inputs: Vec<(String, RunReport)>,
    options: &MergeOptions,
) -> Result<RunReport, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::Nothing);
    }
    let decoded = inputs
        .iter()
        .map(|(file, r)| decode(file, r))
        .collect::<Result<Vec<_>, _>>()?;
    check_total(&inputs)?;
    let split: Vec<Part> = inputs
        .iter()
        .map(|(file, r)| Part::of(file, r))
        .collect::<Result<_, _>>()?;
    let (first_file, first) = &inputs[0];
    let first_identity = identity(first, &split[0]);
    for ((file, r), part) in inputs.iter().zip(&split).skip(1) {
        if let Some((field, a_value, b_value)) = difference(&first_identity, &identity(r, part)) {
            return Err(MergeError::DifferentRuns {
                a: first_file.clone(),
                b: file.clone(),
                field,
                a_value,
                b_value,
            });
        }
    }
    for (i, (a, ra)) in inputs.iter().enumerate() {
        for (j, (b, rb)) in inputs.iter().enumerate().skip(i + 1) {
            if split[i] != split[j] {
                continue;
            }
            let theirs = seeds(rb);
            if let Some(seed) = seeds(ra).into_iter().find(|s| theirs.contains(s)) {
                let why = if split[i].is_split() {
                    format!("both are {} of seed {seed}", split[i])
                } else {
                    format!(
                        "both ran seed {seed}; each shard of a run has seeds of its own \
                         (--seed), or a part of its own (--shard I/N, --subtask I), so one \
                         shard was given twice or run twice"
                    )
                };
                return Err(MergeError::Duplicate {
                    a: a.clone(),
                    b: b.clone(),
                    why,
                });
            }
        }
    }
    let missing = Part::missing(&split);

    // the histograms, bucket by bucket
    let mut latency: BTreeMap<Op, Histogram<u64>> = BTreeMap::new();
    let mut service: BTreeMap<Op, Histogram<u64>> = BTreeMap::new();
    let mut states: Vec<(String, String, Histogram<u64>)> = Vec::new();
    for d in &decoded {
        for (into, from) in [(&mut latency, &d.latency), (&mut service, &d.service)] {
            for (op, h) in from {
                add(into.entry(*op).or_insert_with(histogram), h);
            }
        }
        for (name, store, h) in &d.states {
            match states.iter_mut().find(|s| s.0 == *name && s.1 == *store) {
                Some(s) => add(&mut s.2, h),
                None => states.push((name.clone(), store.clone(), h.clone())),
            }
        }
    }

    // in state order (the workloads'), as one run reports them
    let order: Vec<&String> = inputs
        .iter()
        .filter_map(|(_, r)| r.context.as_ref())
        .flat_map(|c| c.workloads.iter().flat_map(|w| w.states.iter()))
        .collect();
    states.sort_by_key(|s| order.iter().position(|o| **o == s.0).unwrap_or(usize::MAX));

    // the wall clock: from the earliest time zero, the earliest start to the latest end
    let zero = decoded
        .iter()
        .map(|d| d.clock.zero_unix_ns)
        .min()
        .unwrap_or(0);
    let offset = |d: &Decoded| d.clock.zero_unix_ns - zero;
    let measure_start_ns = decoded
        .iter()
        .map(|d| offset(d).saturating_add(d.clock.measure_start_ns))
        .min()
        .unwrap_or(0);
    let measure_end_ns = decoded
        .iter()
        .map(|d| offset(d).saturating_add(d.clock.measure_end_ns))
        .max()
        .unwrap_or(0)
        .max(measure_start_ns);
    let interval_ns = decoded[0].clock.interval_ns;
    let seconds = (measure_end_ns - measure_start_ns) as f64 / 1e9;
    let shard_series: Vec<series::ShardSeries<'_>> = decoded
        .iter()
        .zip(&inputs)
        .map(|(d, (_, r))| series::ShardSeries {
            offset_ns: offset(d),
            series: &r.time_series,
        })
        .collect();
    let (time_series, cut) = series::merge_series(&shard_series, interval_ns);

    let reports: Vec<&RunReport> = inputs.iter().map(|(_, r)| r).collect();
    // saturating: a damaged file's counts must not overflow
    let sum = |f: fn(&RunReport) -> u64| {
        reports
            .iter()
            .fold(0u64, |total, r| total.saturating_add(f(r)))
    };
    let requests = sum(|r| r.requests);
    let throughput = if seconds > 0.0 {
        requests as f64 / seconds
    } else {
        0.0
    };
    let n = inputs.len();
    let target_rate = reports.iter().map(|r| r.target_rate).sum::<Option<f64>>();
    let mut partial_reason: Vec<String> = inputs
        .iter()
        .filter(|(_, r)| r.partial)
        .map(|(file, r)| {
            format!(
                "{file}: {}",
                r.partial_reason.as_deref().unwrap_or(INTERRUPTED_REASON)
            )
        })
        .collect();
    if !missing.is_empty() {
        partial_reason.push(format!(
            "{} missing: the merge covers part of the run only",
            missing.join(", ")
        ));
    }
    let mut store_counters: BTreeMap<String, u64> = BTreeMap::new();
    for r in &reports {
        for (name, value) in &r.store_counters {
            let total = store_counters.entry(name.clone()).or_default();
            *total = total.saturating_add(*value);
        }
    }
    let (latency_rows, service_rows, latency_spectrum) = tables(&latency, &service, seconds);
    let (per_state, per_store) = parts(&states, seconds);
    let wall_clock = WallClock {
        zero_unix_ns: zero,
        measure_start_ns,
        measure_end_ns,
        interval_ns,
    };
    let histograms = RunHistograms {
        encoding: hdr::ENCODING.to_string(),
        latency: encoded(&latency),
        service: encoded(&service),
        per_state: states
            .iter()
            .map(|(name, store, h)| StateHistogram {
                name: name.clone(),
                store: store.clone(),
                hdr: hdr::encode(h),
            })
            .collect(),
    };
    let shards = inputs
        .iter()
        .map(|(file, r)| Shard {
            file: file.clone(),
            results: RunReport {
                histograms: None,
                ..r.clone()
            },
        })
        .collect();
    Ok(RunReport {
        gadget_version: first.gadget_version.clone(),
        store: first.store.clone(),
        arrival: if n == 1 {
            first.arrival.clone()
        } else {
            format!("{n} shards, each {}", first.arrival)
        },
        open_loop: first.open_loop,
        target_rate,
        seed: reports.iter().map(|r| r.seed).min().unwrap_or(0),
        value_compression_ratio: first.value_compression_ratio,
        partial: !partial_reason.is_empty(),
        partial_reason: (!partial_reason.is_empty()).then(|| partial_reason.join("; ")),
        warmup_requests: sum(|r| r.warmup_requests),
        requests,
        seconds,
        throughput,
        sustained: target_rate
            .filter(|_| requests > 0)
            .map(|rate| throughput >= 0.95 * rate),
        max_start_lag_ns: reports
            .iter()
            .map(|r| r.max_start_lag_ns)
            .max()
            .unwrap_or(0),
        producer_stalls: sum(|r| r.producer_stalls),
        producer_stall_ns: sum(|r| r.producer_stall_ns),
        emulated_ops: Op::ALL
            .iter()
            .map(|op| op.name())
            .filter(|name| {
                reports
                    .iter()
                    .any(|r| r.emulated_ops.iter().any(|o| o == name))
            })
            .map(str::to_string)
            .collect(),
        reads_found: sum(|r| r.reads_found),
        reads_empty: sum(|r| r.reads_empty),
        bytes_read: sum(|r| r.bytes_read),
        latency: latency_rows,
        service: service_rows,
        latency_spectrum,
        time_series,
        time_series_truncated: cut || reports.iter().any(|r| r.time_series_truncated),
        store_counters,
        per_state,
        per_store,
        instances: Vec::new(),
        context: context(&reports, options),
        wall_clock: Some(wall_clock),
        histograms: Some(histograms),
        shards,
    })
}

#[cfg(test)]
mod tests;
