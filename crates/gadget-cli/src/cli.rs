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
    /// Work with trace files: convert between formats, compare two traces.
    Trace(TraceArgs),
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
