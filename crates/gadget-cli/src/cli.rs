//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Gadget simulates Apache Flink operators over an event stream and produces the exact
/// sequence of state-store requests (get, put, merge, delete, seek, next, write batches, range deletes and range queries)
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
    ///
    /// Ctrl-C (or SIGTERM) stops it cleanly: the trace so far is written, marked partial, and
    /// the exit status is 130.
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
    /// Characterize a trace as the Gadget paper does: composition, amplification, key and
    /// value sizes, temporal locality (exact LRU stack distances, the hit-ratio curve),
    /// spatial locality (unique key sequences), working set, key TTL, event-rate Hurst
    /// exponent. Each locality metric is shown next to the same trace shuffled.
    ///
    /// Example: gadget analyze ../shared/reference-traces/flink-1.20/tumbling-incr.tsv.gz
    Analyze(AnalyzeArgs),
    /// Compare traces, run results or bench experiments side by side; the first input is the
    /// reference.
    ///
    /// Traces: the metrics of `analyze` in one table, and how far each trace's key popularity
    /// is from the first one's (Kolmogorov–Smirnov, Wasserstein).
    /// Example: gadget compare flink.tsv.gz gadget.gtrace
    ///
    /// `gadget run`/`replay` results files (JSON): throughput and latency percentiles in one
    /// table, and the runs' plots overlaid.
    /// Example: gadget compare rocksdb.json lmdb.json --report compare.html
    ///
    /// `gadget bench` folders (experiments): each cell of the others against the same cell of
    /// the first, with a confidence interval and a verdict (docs/bench.md).
    /// Example: gadget compare out/stores out/stores2
    Compare(CompareArgs),
    /// Record the state accesses of a real stream processor job as Gadget traces.
    Record(RecordArgs),
    /// Run an experiment: every workload × store × arrival of an experiment file, each
    /// repeated, one fresh `gadget run`/`replay` per run in a recorded random order; then the
    /// mean, spread and 95% confidence interval of each cell (docs/bench.md).
    ///
    /// Example: gadget bench examples/experiments/stores.toml -o out/stores
    ///
    /// Writes DIR/runs/CELL.rN.json per run and DIR/summary.{json,csv,md}. Ctrl-C stops the
    /// run in progress and keeps every finished one (the summary says partial, exit status
    /// 130); `--resume` runs only what is missing.
    Bench(BenchArgs),
    /// Merge the results of one run's shards into one run's results: histograms added bucket
    /// by bucket (percentiles computed from the sums, never averaged), counts summed, time
    /// series lined up on the wall clock, each shard's results kept beside (docs/scale-out.md).
    ///
    /// Example: gadget merge shard-0.json shard-1.json shard-2.json -o merged.json
    Merge(crate::merge_cmd::MergeArgs),
    /// Start or stop a Redis Cluster of several `redis-server` nodes on loopback, for
    /// `--store redis-cluster` (docs/external-state.md); or run a run's shards on a Ray
    /// cluster and merge their results (docs/scale-out.md).
    ///
    /// Example: gadget cluster up --nodes 3; gadget run job.toml --store redis-cluster
    /// --redis-url redis://127.0.0.1:7000; gadget cluster down
    ///
    /// Example: gadget cluster ray --address 10.0.0.1:6379 --shards 3 workloada.toml -- --store rocksdb
    Cluster(ClusterArgs),
}

/// `gadget cluster`.
#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ClusterCommand,
}

/// `gadget cluster up`, `down` or `ray`.
#[derive(Debug, clap::Subcommand)]
pub enum ClusterCommand {
    /// Start N nodes (each an equal share of the 16384 slots, no replicas), form the cluster
    /// and wait until every node agrees; prints the URL to give --redis-url. The nodes keep
    /// running until `gadget cluster down`.
    #[cfg(feature = "redis")]
    Up {
        /// How many nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// The first node's port; the others follow (default: free ports). Each node also
        /// uses its port + 10000 for the cluster bus.
        #[arg(long)]
        port: Option<u16>,
        /// Where the nodes keep their files and the cluster's description (cluster.json).
        #[arg(long, default_value = ".gadget/redis-cluster")]
        dir: std::path::PathBuf,
    },
    /// Stop the nodes `gadget cluster up` started in DIR, each checked to be that node's
    /// redis-server before it is signalled, and remove what `up` made there: the node
    /// folders, cluster.json, and DIR itself when `up` made it and nothing else is in it.
    #[cfg(feature = "redis")]
    Down {
        /// The folder given to `up`.
        #[arg(long, default_value = ".gadget/redis-cluster")]
        dir: std::path::PathBuf,
    },
    /// Run the N shards of one run on a Ray cluster's nodes and merge their results.
    ///
    /// Ships this gadget binary and CONFIG to every shard through Ray, agrees a start --lead seconds
    /// ahead, runs `gadget run CONFIG --shard I/N --start-at T -o shard-I.json [RUN_ARGS]`
    /// everywhere, and writes the shards' results, launch.json and merged.json to --out.
    /// Needs Python 3 and Ray (`pip install ray==2.60.0`; GADGET_PYTHON names another
    /// Python); the launcher is launcher/ray (GADGET_RAY_LAUNCHER overrides where).
    ///
    /// Example: gadget cluster ray --address 10.0.0.1:6379 --shards 3
    /// examples/ycsb/workloada.toml -- --store rocksdb --arrival poisson --rate 200000
    Ray(crate::cluster_cmd::ray::RayArgs),
}

/// `gadget bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The experiment file (TOML: [experiment], [[workload]], [[store]], [[arrival]]).
    pub experiment: PathBuf,
    /// The folder for the runs' results and the summary.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// Finish an experiment in DIR: run only the runs without results.
    #[arg(long)]
    pub resume: bool,
    /// Print the summary as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// A quick try: this many runs per cell instead of the file's `repetitions` (the summary
    /// says it was overridden).
    #[arg(long, value_name = "N")]
    pub repetitions: Option<u32>,
    /// A quick try: every run's --limit (requests), over the
    /// file's `limit`s.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// A quick try: every run's --duration (2s), over the file's.
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,
}

/// `gadget record`: which engine.
#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(subcommand)]
    pub engine: RecordEngine,
}

/// The engines `gadget record` can attach to.
#[derive(Debug, Subcommand)]
pub enum RecordEngine {
    /// Run a Flink job with Gadget's recorder agent attached and collect one trace per task
    /// (subtask) thread: every RocksDB request of the job's RocksDB state backend, with event
    /// and watermark markers. The command is any command that starts the JVM running the job
    /// (the agent is passed through JAVA_TOOL_OPTIONS, so every JVM it starts records). To
    /// record a standalone cluster's task managers instead, see docs/recorder.md.
    ///
    /// Example: gadget record flink --out traces -- java -cp job.jar my.Job
    Flink(RecordFlinkArgs),
    /// Run a Kafka Streams application with the recorder agent attached: every RocksDB
    /// request of its stores, one trace per stream thread, each store's column families named
    /// by the store's path below the application's state directory, and an event marker per
    /// input record (docs/engines.md).
    ///
    /// Example: gadget record kafka-streams --state-dir /tmp/kafka-streams --out traces -- java -cp app.jar my.App
    KafkaStreams(RecordKafkaStreamsArgs),
    /// Run a Spark Structured Streaming query (local mode, the RocksDB state store provider)
    /// with the recorder agent attached: every RocksDB request of its state stores, each store
    /// named by its path below the work directory (which must hold `spark.local.dir`), its
    /// commits' flushes and checkpoints, in one text trace of every thread, `all-threads.trace.txt`
    /// (docs/engines.md). The command needs Java 17's --add-opens that Spark lists.
    ///
    /// Example: gadget record spark --work /tmp/spark-work --out traces -- java --add-opens=... -cp app.jar my.Query
    Spark(RecordSparkArgs),
}

/// Options of `gadget record spark`.
#[derive(Debug, Args)]
pub struct RecordSparkArgs {
    /// The directory below which the query's `spark.local.dir` lies: the RocksDB instances
    /// opened below it are the state stores, named in the trace by their path below it (with
    /// Spark's random `-<UUID>` parts left out).
    #[arg(long)]
    pub work: PathBuf,
    #[command(flatten)]
    pub record: RecordFlinkArgs,
}

/// Options of `gadget record kafka-streams`.
#[derive(Debug, Args)]
pub struct RecordKafkaStreamsArgs {
    /// The application's `state.dir`: the RocksDB instances opened below it are the stores,
    /// named in the trace by their path below it.
    #[arg(long)]
    pub state_dir: PathBuf,
    /// A trace per thread (`each`: under `TopologyTestDriver`, `main`) or one trace of every
    /// thread's requests in the order they were made, `all-threads` (`one`: a `KafkaStreams`
    /// application, whose stores its stream thread opens and uses and its state updater
    /// thread checkpoints after restoring them).
    #[arg(long, value_enum, default_value = "each")]
    pub threads: Threads,
    #[command(flatten)]
    pub record: RecordFlinkArgs,
}

/// Options of `gadget record flink` (and of the other engines').
#[derive(Debug, Args)]
pub struct RecordFlinkArgs {
    /// Directory for the traces: one `<task name>_<subtask>_<attempt>.gtrace` per task thread.
    #[arg(short, long, default_value = "gadget-traces")]
    pub out: PathBuf,
    /// The recorder agent jar (`make recorder` builds
    /// recorder/agent/target/gadget-recorder-flink.jar, the default when it exists).
    #[arg(long, env = "GADGET_RECORDER_JAR")]
    pub agent: Option<PathBuf>,
    /// Format of the traces: Gadget's binary format (the default; `gadget record spark`:
    /// text) or its text format. The agent writes text, which Gadget converts to binary
    /// after the job ends.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Record buffers (64 KiB each) in flight to the agent's writer thread; when all are in
    /// flight, records are dropped and counted, never blocking Flink.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(2..))]
    pub buffers: u32,
    /// Print the list of traces as JSON.
    #[arg(long)]
    pub json: bool,
    /// The command that runs the job, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Options of the trace analysis.
#[derive(Debug, Args)]
pub struct AnalysisOptions {
    /// Seed of the shuffled baseline.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Longest key sequence counted for spatial locality (the paper's ℓ).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub max_sequence_len: u64,
    /// Working-set samples over the trace.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub working_set_samples: u64,
    /// Which keys to analyse: `exact` (every one), `1/N` (SHARDS: one key in N, N a power of
    /// two, every access to it kept; distances, distinct keys and the working set estimated,
    /// with their error; key sequences not counted), or `auto`: exact when the analysis fits
    /// in the memory available, else the highest rate that fits (it says which on stderr).
    #[arg(long, default_value = "auto", value_name = "auto|exact|1/N")]
    pub sample: String,
    /// Bytes of a state key that identify the event's key (key-group prefix + serialized
    /// key), to count distinct event keys for key-space amplification. Default: 9 for Flink
    /// recordings (one key-group byte, a Java long); Gadget traces record the count.
    #[arg(long)]
    pub event_key_bytes: Option<usize>,
    /// For a config: the event-time bin of the event-rate series, in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(i64).range(1..))]
    pub rate_bin_ms: i64,
    /// For a config with an open-loop `[run]` arrival: how many request starts of its
    /// schedule to analyze.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(2..=100_000_000))]
    pub schedule_requests: u64,
    /// For a config: analyze at most this many events of its stream (synthetic streams can
    /// be endless).
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub events: u64,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// What to analyze: a trace (binary, text or a Flink recording; gzip is detected); a
    /// `gadget run`/`replay` results file (JSON); or a workload config (`.toml`): its event
    /// stream's rate over event time and, with an open-loop `[run]` arrival, its schedule.
    pub input: PathBuf,
    #[command(flatten)]
    pub options: AnalysisOptions,
    /// Print the analysis as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON analysis to this file (atomically).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Write the plots (SVG and PNG) into this folder.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Write one self-contained HTML report (tables and plots) to this file.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Traces, `gadget run`/`replay` results files, or `gadget bench` folders, all of one
    /// kind, to compare; the first is the reference the others are measured against.
    #[arg(required = true, num_args = 2..)]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub options: AnalysisOptions,
    /// Print the analyses and distances as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the overlaid plots (SVG and PNG) into this folder.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Write one self-contained HTML report (the table, each summary, the plots) to this file.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Workload config (TOML, see docs/config.md, or a YCSB workload file); several run as
    /// concurrent instances.
    #[arg(required = true, num_args = 1..)]
    pub config: Vec<PathBuf>,
    /// Override a YCSB workload property, as YCSB's own `-p` does (repeatable), e.g.
    /// -p recordcount=100000 -p requestdistribution=latest (docs/ycsb.md).
    #[arg(short = 'p', long = "property", value_name = "KEY=VALUE")]
    pub property: Vec<String>,
    /// Stop after this many state requests, not events (default: the config's `limit`, else
    /// the whole workload). The --warmup requests count in it; each of --instances has its
    /// own; a parallel job (no --subtask) stops after N requests of all its subtasks. A
    /// workload that goes 10 M events without a request before reaching it gets a warning:
    /// over an endless source it would never reach it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Play the workload's input file N times, each copy later in event time (overrides the
    /// file source's `repeat`; lengthens a short input such as the Borg trace). One run over
    /// a longer input, not N runs.
    #[arg(long, value_name = "N")]
    pub input_passes: Option<u32>,
    /// The old name of --input-passes (it never repeated the run).
    #[arg(long, value_name = "N", hide = true, conflicts_with = "input_passes")]
    pub repeat: Option<u32>,
    /// Run the keyed operator as N parallel subtasks (overrides the config's `parallelism`; a
    /// Kafka Streams application: N stream threads, each a subtask; a Spark query: N subtasks
    /// sharing its shuffle partitions): without --subtask every subtask runs, each with its own
    /// store, on the job's one arrival schedule (with --shard, the shard's range of subtasks).
    #[arg(long, value_name = "N")]
    pub parallelism: Option<u32>,
    /// Run one subtask of a parallel job alone, from 0, on a schedule of its own.
    #[arg(long, value_name = "I", value_parser = crate::subtask::parse)]
    pub subtask: Option<crate::subtask::SubtaskChoice>,
    #[command(flatten)]
    pub eval: EvalArgs,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Trace to replay (binary, text or a Flink recording; gzip is detected); several replay
    /// as concurrent instances; `-` reads a Gadget trace from standard input
    /// (`gadget gen job.toml -o - | gadget replay -`).
    #[arg(required = true, num_args = 1..)]
    pub trace: Vec<PathBuf>,
    /// Stop after this many requests of each trace (default: the whole trace); the --warmup
    /// requests count in it, watermarks and event markers do not.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Check, instead of measuring, that the store finds for every get what the trace says
    /// the engine's store found (a length, or nothing): recordings carry it, and traces of
    /// `gadget gen --reads`. The trace is replayed without timing; the first difference is an
    /// error naming the request, state and key. Takes --store, its settings, --dir and
    /// --limit.
    #[arg(long, conflicts_with_all = [
        "arrival", "rate", "bias", "period", "modulation", "alpha", "speed", "instances",
        "shared_store", "duration", "shard", "start_at", "warmup", "interval", "output", "csv",
        "hdr_log", "label",
    ])]
    pub check_reads: bool,
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
    /// The workload's own event time (from its watermarks), sped up by --speed.
    EventTime,
}

/// Store, pacing and measurement options shared by `run` and `replay`. For `run`, each
/// overrides the config's `[run]` section (docs/config.md); the defaults apply when neither
/// gives a value.
#[derive(Debug, Default, Args)]
pub struct EvalArgs {
    /// The store to drive, one of the stores of this build, which `--help` lists from their
    /// own declarations (docs/evaluation.md says how each is set up and which ops it emulates).
    #[arg(long, help = store_help(), long_help = store_help())]
    pub store: Option<String>,
    /// Arrival process (default closed, or constant with --rate). Open-loop processes
    /// measure latency from each request's intended start (coordinated-omission-correct);
    /// all but event-time need --rate.
    #[arg(long, value_enum)]
    pub arrival: Option<Arrival>,
    /// Target rate in requests per second (open loop); without --arrival, constant arrivals
    /// at this rate.
    #[arg(long)]
    pub rate: Option<f64>,
    /// b-model bias: share of requests in the busier half at every time scale, 0.5 to <1
    /// (default 0.75).
    #[arg(long)]
    pub bias: Option<f64>,
    /// Diurnal period in seconds (default 60).
    #[arg(long)]
    pub period: Option<f64>,
    /// Diurnal modulation depth, 0 to <1 (default 0.5).
    #[arg(long)]
    pub modulation: Option<f64>,
    /// Diurnal Pareto shape, > 1; smaller is burstier (default 2.5).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Event-time seconds replayed per wall-clock second with --arrival event-time (default 1).
    #[arg(long)]
    pub speed: Option<f64>,
    /// One seed for everything random in the run: the workload's (a config's `seed`, which
    /// it overrides), the arrival schedule's and the value bytes'. Instance i uses seed + i.
    /// Default: the config's seed; 0 for a trace.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A name for the run, kept in its results (`context.label`); `gadget compare` shows it
    /// instead of the file name.
    #[arg(long)]
    pub label: Option<String>,
    /// What the values written compress to, as a fraction of their size, from 0.01 to 1 (1:
    /// incompressible). Values are db_bench's: printable pseudo-random bytes, each 100-byte
    /// piece repeating a random prefix of this fraction (default 0.5, as db_bench's
    /// --compression_ratio).
    #[arg(long, value_name = "RATIO")]
    pub value_compression_ratio: Option<f64>,
    /// Run every workload this many times as concurrent instances, each on its own thread
    /// with its own seeds (the paper's concurrent operators; default 1).
    #[arg(long)]
    pub instances: Option<usize>,
    /// Let all instances share one store (each over its own keyspaces) instead of giving
    /// each its own (every store but memory; redis instances always share the server).
    #[arg(long)]
    pub shared_store: bool,
    /// Stop the run this long after it starts (10s, 2m), warm-up included; a run that
    /// reaches it is complete, not partial. Closed loop: checked every 256 requests; open
    /// loop: no request is scheduled after it.
    #[arg(long)]
    pub duration: Option<String>,
    /// Drive only shard INDEX of COUNT (0/4 .. 3/4): the requests whose key hashes to it, on
    /// the open-loop schedule of the whole workload (every shard draws every request's start
    /// and keeps its own), so that N shards on N machines together issue exactly the one
    /// client's requests at exactly its times; `gadget merge` adds their results up.
    /// YCSB/KVBench configs and traces split by key; a parallel Flink job by whole subtasks
    /// (--parallelism 8 --shard 1/2 runs subtasks 4 to 7 on the job's schedule).
    #[arg(long, value_name = "INDEX/COUNT")]
    pub shard: Option<String>,
    /// Start the schedule at this wall-clock instant, Unix seconds (1764150000.25), rather
    /// than as soon as the store is open: shards on several machines agree on one. A run not
    /// ready by then fails and says so. Example: --start-at $(( $(date +%s) + 10 )).
    #[arg(long, value_name = "UNIX_SECONDS")]
    pub start_at: Option<String>,
    /// Warm-up left out of the results: a request count (10000) or a time (5s, 500ms).
    #[arg(long)]
    pub warmup: Option<String>,
    /// Time-series interval, e.g. 1s (the default) or 100ms.
    #[arg(long)]
    pub interval: Option<String>,
    /// Store data directory (default: a fresh temporary directory, removed afterwards).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the temporary store directory and print where it is.
    #[arg(long)]
    pub keep: bool,
    /// The store settings (`--write-buffer-mb`, `--redis-url`, ...), one flag per entry of
    /// the one list of store settings, which configs and experiments read too.
    #[command(flatten)]
    pub store_settings: crate::store_flags::StoreFlags,
    /// Print the results as JSON on standard output instead of the summary table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON results to this file (atomically); `-` prints them on standard
    /// output instead, with the summary on standard error.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Write the time series as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write latency histograms per interval and op as a standard HDR interval log.
    #[arg(long)]
    pub hdr_log: Option<PathBuf>,
}

/// `--store`'s help: every store of this build with what it is.
fn store_help() -> String {
    format!(
        "The store to drive: {}. docs/evaluation.md says how each is set up and which ops it \
         emulates.",
        gadget_eval::store::StoreKind::described()
    )
}

/// Which threads' requests share a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Threads {
    /// A trace per thread.
    Each,
    /// One trace of every thread, in the order the requests were made.
    One,
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
    /// Workload config (TOML, see docs/config.md; the original Gadget's key = value files and
    /// YCSB's workload files, like YCSB's workloads/workloada, work too).
    pub config: PathBuf,
    /// Override a YCSB workload property, as YCSB's own `-p` does (repeatable), e.g.
    /// -p recordcount=100000 -p requestdistribution=latest (docs/ycsb.md).
    #[arg(short = 'p', long = "property", value_name = "KEY=VALUE")]
    pub property: Vec<String>,
    /// Where to write the trace; `-` writes to standard output.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Trace format.
    #[arg(long, value_enum, default_value_t = Format::Bin)]
    pub format: Format,
    /// Seed for every random choice (overrides the config's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Stop after this many state requests, not events (overrides the config's `limit`; the
    /// trace is marked truncated; open windows do not fire). With --subtask all, each
    /// subtask's trace stops at it. A workload that goes 10 M events without a request
    /// before reaching it gets a warning: over an endless source it would never reach it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Play the workload's input file N times, each copy later in event time (overrides the
    /// file source's `repeat`; lengthens a short input such as the Borg trace). One run over
    /// a longer input, not N runs.
    #[arg(long, value_name = "N")]
    pub input_passes: Option<u32>,
    /// The old name of --input-passes (it never repeated the run).
    #[arg(long, value_name = "N", hide = true, conflicts_with = "input_passes")]
    pub repeat: Option<u32>,
    /// Print the summary as JSON on standard output instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Run the keyed operator as N parallel subtasks, as Flink assigns them key groups; of a
    /// Kafka Streams application, N stream threads, each with its tasks (its share of
    /// `partitions`) and its share of the record cache; of a Spark query, N subtasks, subtask i
    /// holding shuffle partitions i, i + N, ... (overrides the config's `parallelism`;
    /// docs/scale-out.md).
    #[arg(long, value_name = "N")]
    pub parallelism: Option<u32>,
    /// The subtask whose trace to write, from 0; `all` writes one trace per subtask in one pass,
    /// the index before the extension of -o (out/t.gtrace: out/t.0.gtrace, out/t.1.gtrace, ...).
    /// Needed when the parallelism is above 1.
    #[arg(long, value_name = "I|all", value_parser = crate::subtask::parse)]
    pub subtask: Option<crate::subtask::SubtaskChoice>,
    /// Write into each get what it finds: the length of the value, or nothing, as the engine's
    /// store answers it, learned by replaying the requests into a memory store as they are
    /// written (memory for every live key). `gadget replay --check-reads` then holds a store
    /// to these answers (docs/trace-format.md).
    #[arg(long)]
    pub reads: bool,
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
    /// Both traces are normalized: from the first input event on (a trace without event
    /// markers from its first request), requests only, keys renamed by first appearance
    /// within their state, `next` by op and state only. Prints the match,
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
    /// Succeed when the match is at least this (default: identical sequences only); with
    /// --per-key, when at least this share of the state keys is identical. The diff then
    /// stops as soon as the match falls below it (`--min-match 1` stops at the first
    /// difference), so it reports a bound, not the exact figure, for traces that fail.
    #[arg(long)]
    pub min_match: Option<f64>,
    /// Give up the exact diff past this many differing requests (the match is then a bound).
    #[arg(long, default_value_t = 200_000)]
    pub max_distance: usize,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Compare each state key's requests alone (in order, with value sizes), whatever the
    /// interleaving of different keys': for engines whose network decides it, such as a
    /// Flink window join's two inputs. Succeeds when every key's are identical (or
    /// --min-match of the keys).
    #[arg(long)]
    pub per_key: bool,
    /// Compare each store instance's requests alone (states grouped by their name before the
    /// last `/`, an instance's column families), each from its first request, whatever the
    /// interleaving of different instances': for a Kafka Streams application over several
    /// partitions, whose tasks (`<application.id>/0_<i>/…`) run as its polls and threads
    /// decide. Succeeds when every instance's are identical (or --min-match of them).
    #[arg(long, conflicts_with_all = ["per_key", "from_start", "reads"])]
    pub per_instance: bool,
    /// Leave these ops out of the comparison, comma-separated (`open,drop`: the recorder does
    /// not see Kafka Streams open or delete a window segment's RocksDB instance, so a
    /// recording has neither).
    #[arg(long, value_delimiter = ',', value_parser = parse_op)]
    pub skip_ops: Vec<gadget::access::Op>,
    /// Compare from each trace's first request, the job's start-up before its first input
    /// event included (Flink's RocksDB timer service loads every key group then); by default
    /// a trace with event markers is compared from its first event. With --per-key, each
    /// key's requests from its first.
    #[arg(long)]
    pub from_start: bool,
    /// Also require every get to have found what the same get of the other trace found (a
    /// length, or nothing): both must say (recordings do, and traces of `gadget gen --reads`).
    /// Compared when the request sequences are identical; the first get that differs is
    /// named.
    #[arg(long, conflicts_with = "per_key")]
    pub reads: bool,
}

/// An op by its trace name, or an error listing them.
fn parse_op(name: &str) -> Result<gadget::access::Op, String> {
    gadget::access::Op::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = gadget::access::Op::ALL.iter().map(|o| o.name()).collect();
        format!("unknown op `{name}`; the ops are {}", names.join(", "))
    })
}

/// `--input-passes`, or its old name `--repeat` with a warning that says what it does.
pub fn input_passes(passes: Option<u32>, repeat: Option<u32>) -> Option<u32> {
    if repeat.is_some() {
        eprintln!(
            "warning: --repeat is now --input-passes: it plays the input file N times in one \
             run (it never repeated the run)"
        );
    }
    passes.or(repeat)
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::Arrival;

    #[test]
    fn the_arrival_flag_takes_exactly_the_arrivals_configs_and_experiments_name() {
        let flag: Vec<String> = Arrival::value_variants()
            .iter()
            .filter_map(|a| Some(a.to_possible_value()?.get_name().to_string()))
            .collect();
        assert_eq!(flag, gadget::config::run::ARRIVAL_NAMES);
    }

    #[test]
    fn the_store_flags_help_names_every_store_of_the_build() {
        use clap::CommandFactory;
        let cli = super::Cli::command();
        let run = cli.find_subcommand("run").expect("gadget run");
        let store = run
            .get_arguments()
            .find(|a| a.get_id() == "store")
            .expect("--store");
        let help = store
            .get_long_help()
            .or(store.get_help())
            .unwrap()
            .to_string();
        for kind in gadget_eval::store::StoreKind::all() {
            let named = help
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .any(|word| word == kind.name());
            assert!(named, "--store's help lacks {}: {help}", kind.name());
        }
    }
}
