//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Gadget simulates Apache Flink operators over an event stream and produces the exact
/// sequence of state-store requests (get, put, merge, delete, seek, next, write batches)
/// that Flink 1.20 would send to RocksDB.
#[derive(Debug, Parser)]
#[command(name = "gadget", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate a state-access trace from a workload config.
    ///
    /// Example: gadget gen examples/flink-reference/tumbling-incr.toml -o tumbling.gtrace
    Gen(GenArgs),
    /// Generate a workload on the fly and drive a real store with it, measuring every request.
    ///
    /// Generation runs ahead on its own thread, so its cost never shows up as store latency.
    /// Example: gadget run examples/flink-reference/tumbling-incr.toml --arrival poisson --rate 200000
    Run(RunArgs),
    /// Drive a real store with the requests of a trace file, measuring every request.
    ///
    /// Example: gadget replay tumbling.gtrace --store rocksdb --json > results.json
    Replay(ReplayArgs),
    /// Work with trace files: convert between formats, compare two traces.
    Trace(TraceArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Workload config (TOML, see docs/config.md).
    pub config: PathBuf,
    /// Stop after this many requests (default: the config's `limit`, else the whole workload).
    #[arg(long)]
    pub limit: Option<u64>,
    #[command(flatten)]
    pub eval: EvalArgs,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Trace to replay (binary, text or a Flink recording; gzip is detected).
    pub trace: PathBuf,
    #[command(flatten)]
    pub eval: EvalArgs,
}

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Arrival {
    /// Each request as soon as the previous one completed (measures capacity, not latency).
    Closed,
    /// Evenly spaced at --rate.
    Constant,
    /// Exponential inter-arrivals at mean --rate.
    Poisson,
    /// Self-similar bursts at mean --rate with bias --bias (seed 004's b-model).
    BModel,
    /// A sine envelope over --period with depth --modulation, Pareto(--alpha) inter-arrivals.
    Diurnal,
}

/// Store, pacing and measurement options shared by `run` and `replay`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The store to drive: rocksdb (embedded, as Flink uses it), memory (the upper bound),
    /// lmdb, redb, fjall or sqlite (whichever this build has; docs/evaluation.md says how each
    /// is set up and which ops it emulates).
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// Arrival process. Open-loop processes measure latency from each request's intended
    /// start (coordinated-omission-correct) and need --rate.
    #[arg(long, value_enum, default_value_t = Arrival::Closed)]
    pub arrival: Arrival,
    /// Target rate in requests per second (open loop).
    #[arg(long)]
    pub rate: Option<f64>,
    /// b-model bias: share of requests in the busier half at every time scale, 0.5 to <1.
    #[arg(long, default_value_t = 0.75)]
    pub bias: f64,
    /// Diurnal period in seconds.
    #[arg(long, default_value_t = 60.0)]
    pub period: f64,
    /// Diurnal modulation depth, 0 to <1.
    #[arg(long, default_value_t = 0.5)]
    pub modulation: f64,
    /// Diurnal Pareto shape (> 1; smaller is burstier).
    #[arg(long, default_value_t = 2.5)]
    pub alpha: f64,
    /// Seed of the arrival schedule.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Warm-up left out of the results: a request count (10000) or a time (5s, 500ms).
    #[arg(long)]
    pub warmup: Option<String>,
    /// Time-series interval (1s, 100ms).
    #[arg(long, default_value = "1s")]
    pub interval: String,
    /// Store data directory (default: a fresh temporary directory, removed afterwards).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the temporary store directory and print where it is.
    #[arg(long)]
    pub keep: bool,
    /// RocksDB write buffer size in MiB (two of them by default, as in the paper). Also
    /// fjall's memtable size; redb and SQLite get a cache of all write buffers plus the block
    /// cache, RocksDB's memory budget.
    #[arg(long, default_value_t = 128)]
    pub write_buffer_mb: usize,
    /// RocksDB number of write buffers.
    #[arg(long, default_value_t = 2)]
    pub write_buffers: i32,
    /// RocksDB block cache in MiB (also fjall's).
    #[arg(long, default_value_t = 64)]
    pub block_cache_mb: usize,
    /// Turn RocksDB's write-ahead log on (Flink runs with it off).
    #[arg(long)]
    pub wal: bool,
    /// LMDB map size in GiB: the most an lmdb store can hold (sparse on disk).
    #[arg(long, default_value_t = 16)]
    pub lmdb_map_gb: usize,
    /// Print the results as JSON on standard output instead of the summary table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON results to this file (atomically).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Write the time series as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write latency histograms per interval and op as a standard HDR interval log.
    #[arg(long)]
    pub hdr_log: Option<PathBuf>,
}

/// Output format of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Compact, versioned, checksummed binary (docs/trace-format.md).
    Bin,
    /// One request per line: op, state, key in hex, value length (tab-separated).
    Text,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Workload config (TOML, see docs/config.md; the original Gadget's key = value files work too).
    pub config: PathBuf,
    /// Where to write the trace; `-` writes to standard output.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Trace format.
    #[arg(long, value_enum, default_value_t = Format::Bin)]
    pub format: Format,
    /// Seed for every random choice (overrides the config's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Stop after this many requests (the trace is marked truncated; open windows do not fire).
    #[arg(long)]
    pub limit: Option<u64>,
    /// Print the summary as JSON on standard output instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Convert a trace between the binary and the text format (written atomically).
    Convert(ConvertArgs),
    /// Compare two traces request by request (Gadget's, Flink recordings, text or binary).
    ///
    /// Both traces are normalized: from the first input event on, requests only, keys renamed
    /// by first appearance within their state, `next` by op and state only. Prints the match,
    /// 1 - (requests only on one side of a minimal diff) / (both lengths), and the first
    /// difference. Exits with 1 when the traces differ (or the match is below --min-match).
    Diff(DiffArgs),
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input trace (binary, text or a Flink recording; gzip is detected).
    pub input: PathBuf,
    /// Output trace.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// First trace (for example a Flink recording).
    pub a: PathBuf,
    /// Second trace (for example Gadget's).
    pub b: PathBuf,
    /// Succeed when the match is at least this (default: identical sequences only).
    #[arg(long)]
    pub min_match: Option<f64>,
    /// Give up the exact diff past this many differing requests (the match is then a bound).
    #[arg(long, default_value_t = 200_000)]
    pub max_distance: usize,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}
