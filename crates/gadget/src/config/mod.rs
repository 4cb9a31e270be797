//! Workload configuration: a TOML file (documented in `docs/config.md`), validated key by key
//! into settings; [`crate::pipeline`] builds the source and operator they describe.

mod engine;
pub mod experiment;
mod kvbench;
mod legacy;
mod parallel;
pub mod properties;
mod reader;
pub mod run;
mod ycsb;

use std::path::{Path, PathBuf};

pub use parallel::Parallelism;
use reader::{Document, Section};

use crate::operator::{LookupJoinSpec, WindowAssigner, WindowFunction};
use crate::source::distribution::{GapDistributionSpec, KeyDistributionSpec};
use crate::source::element::WatermarkPolicy;
use crate::source::file::{FileOrder, FileSpec, KeyType, TimeUnit, TypeRouting};
use crate::source::interleave::Interleaving;
use crate::source::synthetic::{SyntheticSource, SyntheticSpec};
use crate::source::ysb::{AdEventType, YsbSpec};

/// The seed of a separate right source: derived, so both sides differ.
pub(crate) fn right_seed(seed: u64) -> u64 {
    seed ^ 0x9e37_79b9_7f4a_7c15
}

use crate::baseline::kvbench::KvbenchSpec;
use crate::baseline::ycsb::YcsbSpec;
use crate::timer::TimerService;
use properties::Properties;

/// Why a config cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Io {
        /// The config file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{path}:{line}: not valid TOML: {message}")]
    Syntax {
        /// The config file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// A key is unknown, missing or out of range.
    #[error("{path}:{line}: `{key}`: {message}")]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the key (or of its section when the key is missing).
        line: usize,
        /// The full key, like `operator.size`.
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The file is not UTF-8 text.
    #[error("{path}:{line}: byte {offset} is not UTF-8; configs are UTF-8 text (re-save the file as UTF-8)")]
    NotUtf8 {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// Offset of the first invalid byte from the start of the file.
        offset: usize,
    },
    /// The file is larger than a config can be (`/dev/zero`, a trace named as a config).
    #[error("{path} is over {MAX_CONFIG_BYTES} bytes, more than any config; is it the right file (a trace goes to `gadget replay`)?")]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A required key or section is absent (it has no line to point at).
    #[error("{path}: `{key}`: {message}")]
    Missing {
        /// The config file.
        path: PathBuf,
        /// The full key or section, like `operator.size` or `source`.
        key: String,
        /// What to add.
        message: String,
    },
    /// A command-line option that changes the config (such as `--input-passes`) does not apply.
    #[error("{flag}: {message}")]
    Option {
        /// The option.
        flag: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A `-p key=value` command-line override is malformed or invalid.
    #[error("-p {key}: {message}")]
    Override {
        /// The property.
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

/// Where events come from.
#[derive(Debug, Clone)]
pub enum SourceConfig {
    /// A CSV/TSV file.
    File(FileSpec),
    /// A seeded synthetic stream.
    Synthetic {
        /// Keys, gaps, disorder, watermarks.
        spec: SyntheticSpec,
        /// For two-input operators: the share of events on input 1.
        left_fraction: Option<f64>,
        /// For the continuous join: the share of left events that close their key.
        closing_fraction: Option<f64>,
    },
    /// Two-input operators: a source per input (`[left]` and `[right]`), each with its own
    /// watermarks.
    Separate {
        /// Input 1.
        left: Box<SourceConfig>,
        /// Input 2.
        right: Box<SourceConfig>,
    },
    /// A YCSB core workload: one event per YCSB operation (see [`crate::baseline::ycsb`]).
    Ycsb(Box<YcsbSpec>),
    /// A KVBench workload: one event per KVBench operation (see [`crate::baseline::kvbench`]).
    Kvbench(Box<KvbenchSpec>),
    /// YSB's ad events, for the lookup-join (see [`crate::source::ysb`]).
    Ysb(YsbSpec),
}

impl SourceConfig {
    /// True when the source never ends: a synthetic stream without `events` (alone, or as
    /// either input of two).
    pub fn is_endless(&self) -> bool {
        match self {
            SourceConfig::Synthetic { spec, .. } => spec.events.is_none(),
            SourceConfig::Ysb(spec) => spec.events.is_none(),
            SourceConfig::Separate { left, right } => left.is_endless() || right.is_endless(),
            SourceConfig::File(_) | SourceConfig::Ycsb(_) | SourceConfig::Kvbench(_) => false,
        }
    }
}

/// The operator to simulate.
#[derive(Debug, Clone, PartialEq)]
pub enum OperatorConfig {
    /// Tumbling or sliding windows (`keyed = false`: `windowAll`).
    Window {
        /// Window assignment.
        assigner: WindowAssigner,
        /// Incremental or holistic.
        function: WindowFunction,
        /// Allowed lateness, ms.
        allowed_lateness: i64,
        /// Keyed (`keyBy().window()`) or not (`windowAll`).
        keyed: bool,
    },
    /// Event-time session windows.
    Session {
        /// Session gap, ms.
        gap: i64,
        /// Incremental or holistic.
        function: WindowFunction,
        /// Allowed lateness, ms.
        allowed_lateness: i64,
    },
    /// A running aggregate per key in a `ValueState`.
    Aggregation {
        /// The state's name.
        state_name: String,
    },
    /// A window join (`join().where().equalTo().window()`): Flink runs it as a coGroup, a
    /// holistic window over the tagged union of both inputs.
    WindowJoin {
        /// Tumbling or sliding windows.
        assigner: WindowAssigner,
        /// Serialized size of one element (the union adds a one-byte tag).
        element_size: u32,
        /// Allowed lateness, ms.
        allowed_lateness: i64,
        /// How the two inputs are interleaved.
        interleaving: Interleaving,
    },
    /// The paper's continuous join (see `operator::ContinuousJoin`).
    ContinuousJoin {
        /// Serialized size of one element.
        element_size: u32,
        /// How the two inputs are interleaved.
        interleaving: Interleaving,
    },
    /// `intervalJoin(...).between(lower, upper)`.
    IntervalJoin {
        /// Lower bound, ms.
        lower: i64,
        /// Upper bound, ms.
        upper: i64,
        /// Serialized size of one buffered element.
        element_size: u32,
        /// How the two inputs are interleaved.
        interleaving: Interleaving,
    },
    /// A YCSB client issuing the core workload's operations to one state.
    Ycsb(Box<YcsbSpec>),
    /// A KVBench generator issuing its operations to one state.
    Kvbench(Box<KvbenchSpec>),
    /// A Kafka Streams operator (`engine = "kafka-streams"`; [`crate::engine::kafka_streams`]).
    KafkaStreams(Box<crate::engine::kafka_streams::KafkaStreamsSpec>),
    /// A Spark query (`engine = "spark"`; [`crate::engine::spark`]).
    Spark(Box<crate::engine::spark::SparkSpec>),
    /// YSB's lookup-join: a table lookup per event, a tumbling count window per campaign, a
    /// sink write per window (see [`LookupJoin`](crate::operator::LookupJoin)).
    LookupJoin(LookupJoinSpec),
}

/// The inputs an operator reads, which decide how a source routes its rows to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inputs {
    /// One input: every row (or those of `types`).
    One,
    /// Two inputs, the rows split by type (`left_types`, `right_types`).
    Two,
    /// Two inputs, and rows of `closing_types` that close a key (the continuous join).
    TwoClosing,
    /// Two inputs, and the rows of neither type kept on input 0: Spark's join, whose
    /// micro-batches count every row of the input files.
    TwoKeepingOthers,
}

impl OperatorConfig {
    /// The inputs this operator reads.
    pub fn inputs(&self) -> Inputs {
        match self {
            OperatorConfig::ContinuousJoin { .. } => Inputs::TwoClosing,
            OperatorConfig::IntervalJoin { .. } | OperatorConfig::WindowJoin { .. } => Inputs::Two,
            OperatorConfig::KafkaStreams(spec) if spec.join.is_some() => Inputs::Two,
            OperatorConfig::Spark(spec)
                if spec.query == crate::engine::spark::SparkQuery::StreamJoin =>
            {
                Inputs::TwoKeepingOthers
            }
            _ => Inputs::One,
        }
    }

    /// True for two-input operators.
    pub fn two_inputs(&self) -> bool {
        self.inputs() != Inputs::One
    }
}

/// A validated workload.
#[derive(Debug, Clone)]
pub struct Config {
    /// Seed of every random choice.
    pub seed: u64,
    /// Flink's max parallelism: the number of key groups.
    pub max_parallelism: u32,
    /// The keyed operator's parallelism and the subtask generated (`parallelism`,
    /// `--parallelism`, `--subtask`).
    pub parallel: Parallelism,
    /// Timers on the heap or in RocksDB.
    pub timers: TimerService,
    /// The event source.
    pub source: SourceConfig,
    /// The operator.
    pub operator: OperatorConfig,
    /// A short name of the operator for reports.
    pub operator_name: String,
    /// Stop after this many requests (`limit`; `gadget gen --limit` overrides it).
    pub limit: Option<u64>,
    /// Things the user should know that are not errors (ignored keys of original configs).
    pub warnings: Vec<String>,
    /// The `[run]` section: how `gadget run` drives a store.
    pub run: run::RunSettings,
    /// The config as JSON, for trace metadata.
    pub json: serde_json::Value,
}

const MS_MAX: i64 = i64::MAX / 4;
/// Most times a file source can be played (`repeat`).
pub const MAX_REPEAT: i64 = 100_000;

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Config::load_with_overrides(path, &[])
    }

    /// Reads and validates a config file, then applies YCSB `-p key=value` overrides (an
    /// error unless the file is a YCSB workload).
    pub fn load_with_overrides(path: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
        Config::parse_with_overrides(&read_text(path)?, path, overrides)
    }

    /// Validates config text; `path` names it in errors and anchors relative paths.
    ///
    /// The original Gadget's `key = value` files and YCSB's `.properties` workload files are
    /// recognized and mapped (docs/config.md, docs/ycsb.md).
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        Config::parse_with_overrides(text, path, &[])
    }

    /// [`Config::parse`] with YCSB `-p key=value` overrides, applied last.
    pub fn parse_with_overrides(
        text: &str,
        path: &Path,
        overrides: &[String],
    ) -> Result<Config, ConfigError> {
        if Properties::looks_like_ycsb(text) {
            return ycsb::from_properties_file(text, path, overrides);
        }
        let no_overrides = || match overrides.first() {
            Some(o) => Err(ConfigError::Override {
                key: o.clone(),
                message: format!(
                    "-p overrides YCSB properties; {} is not a YCSB workload (no [ycsb] section)",
                    path.display()
                ),
            }),
            None => Ok(()),
        };
        if legacy::looks_legacy(text) {
            no_overrides()?;
            return legacy::parse(text, path);
        }
        let doc = Document { path, text };
        let top = doc.top()?;
        let mut json = toml_to_json(top.as_table());
        let seed = top.int("seed", 0, i64::MAX)?.unwrap_or(0) as u64;
        let limit = top.int("limit", 1, i64::MAX)?.map(|n| n as u64);
        if let Some(y) = top.table("ycsb")? {
            return ycsb::from_section(&doc, top, y, seed, limit, overrides);
        }
        if let Some(k) = top.table("kvbench")? {
            no_overrides()?;
            return kvbench::from_section(top, k, seed, limit);
        }
        no_overrides()?;
        let parallelism = top
            .int(
                "parallelism",
                1,
                i64::from(crate::key::UPPER_BOUND_MAX_PARALLELISM),
            )?
            .unwrap_or(1) as u32;
        let parallelism_at = top.offset_of("parallelism");
        let given_max_parallelism = top
            .int(
                "max_parallelism",
                1,
                i64::from(crate::key::UPPER_BOUND_MAX_PARALLELISM),
            )?
            .map(|m| m as u32);
        // Flink's default depends on the parallelism: 128 up to parallelism 85
        let max_parallelism = given_max_parallelism
            .unwrap_or_else(|| crate::key::default_max_parallelism(parallelism));
        if parallelism > 1 && given_max_parallelism.is_none() {
            // the default taken, for the trace's header
            json["max_parallelism"] = max_parallelism.into();
        }
        let source_section = top.table("source")?;
        let left_section = top.table("left")?;
        let right_section = top.table("right")?;
        let run_section = top.table("run")?;
        let operator_section = top.table("operator")?.ok_or_else(|| {
            doc.error(
                None,
                "operator",
                "missing; add an [operator] section, or a [ycsb] or [kvbench] section for a baseline workload (see docs/config.md)",
            )
        })?;
        let engine = engine::parse_engine(&top)?;
        top.finish()?;

        engine::check_operator(&operator_section, engine)?;
        let (operator, operator_name, timers) = match engine {
            crate::engine::Engine::Flink => parse_operator(&operator_section)?,
            crate::engine::Engine::KafkaStreams => {
                let (op, name) = engine::parse_kafka_streams(&operator_section)?;
                (op, name, TimerService::RocksDb)
            }
            crate::engine::Engine::Spark => {
                let (op, name) = engine::parse_spark(&operator_section)?;
                (op, name, TimerService::RocksDb)
            }
        };
        operator_section.finish()?;
        if let Some(problem) = parallel::refusal(&operator, parallelism, max_parallelism) {
            return Err(doc.error(parallelism_at, "parallelism", problem));
        }
        for section in [&source_section, &left_section, &right_section]
            .into_iter()
            .flatten()
        {
            refuse_flink_watermarks(section, engine)?;
        }
        let source =
            match (source_section, left_section, right_section) {
                (Some(s), None, None) => {
                    let source = parse_source(&s, operator.inputs(), seed)?;
                    check_ysb_pairing(&s, &source, &operator)?;
                    s.finish()?;
                    source
                }
                (None, Some(l), Some(r)) if operator.two_inputs() => {
                    let left = parse_source(&l, Inputs::One, seed)?;
                    check_ysb_pairing(&l, &left, &operator)?;
                    l.finish()?;
                    let right = parse_source(&r, Inputs::One, right_seed(seed))?;
                    check_ysb_pairing(&r, &right, &operator)?;
                    r.finish()?;
                    SourceConfig::Separate {
                        left: Box::new(left),
                        right: Box::new(right),
                    }
                }
                (None, Some(l), Some(_)) => return Err(l.section_error(
                    "[left] and [right] sources are for two-input operators (joins); use [source]",
                )),
                (Some(_), Some(extra), _)
                | (Some(_), None, Some(extra))
                | (None, Some(extra), None)
                | (None, None, Some(extra)) => {
                    return Err(extra.section_error(
                        "give either one [source] or, for a join, both [left] and [right]",
                    ))
                }
                (None, None, None) => {
                    return Err(doc.error(
                        None,
                        "source",
                        "missing; add a [source] section (see docs/config.md)",
                    ))
                }
            };
        let mut run = run::RunSettings::default();
        if let Some(r) = run_section {
            run = run::parse_run(&r)?;
            if let (OperatorConfig::LookupJoin(_), Some(n)) = (&operator, run.instances) {
                if n > max_parallelism as usize {
                    return Err(r.error(
                        "instances",
                        format!("{n} instances split the lookup-join's campaigns by key group, and there are max_parallelism = {max_parallelism}; allowed: [1, {max_parallelism}] (or raise max_parallelism)"),
                    ));
                }
            }
            r.finish()?;
        }
        if let SourceConfig::Ysb(spec) = &source {
            // the table preload is the warm-up, unless the config says otherwise
            run.warmup.get_or_insert(run::Warmup::Requests(
                spec.campaigns * spec.ads_per_campaign,
            ));
        }

        Ok(Config {
            seed,
            max_parallelism,
            parallel: Parallelism {
                parallelism,
                subtask: None,
                max_parallelism_given: given_max_parallelism.is_some(),
            },
            timers,
            source,
            operator,
            operator_name,
            limit,
            warnings: Vec::new(),
            run,
            json,
        })
    }

    /// The seed the config was given (its `seed`, or `--seed`, as its JSON records it), before
    /// `gadget run` adds an instance's number to [`Config::seed`].
    pub fn configured_seed(&self) -> u64 {
        self.json.get("seed").and_then(|s| s.as_u64()).unwrap_or(0)
    }

    /// Which of the run's concurrent instances this config is, and of how many: `(i, n)`.
    ///
    /// `n` is `[run] instances` (1 without it). `gadget run` gives its i-th instance the seed
    /// `seed + i` and leaves [`Config::configured_seed`] as it was, so `i` is the difference
    /// (modulo `n`: instances beyond the config's `n`, from `--instances`, repeat the first
    /// ones). The lookup-join gives instance `i` its share of the campaigns.
    pub fn instance(&self) -> (u32, u32) {
        let n = self.run.instances.unwrap_or(1).max(1) as u64;
        let i = self.seed.wrapping_sub(self.configured_seed()) % n;
        (i as u32, n as u32)
    }

    /// Requests the workload issues before its first event, to be left out of measurements:
    /// the lookup-join's table preload (campaigns × ads per campaign, every instance the whole
    /// table); 0 for other workloads. `[run] warmup` defaults to it.
    pub fn preload_requests(&self) -> u64 {
        match &self.source {
            SourceConfig::Ysb(spec) => spec.campaigns * spec.ads_per_campaign,
            _ => 0,
        }
    }

    /// The warning for a generation that read no event: names the data files, which must be
    /// empty, hold only a header line, or have every row filtered out. `None` when `events` is
    /// not 0 or the workload reads no file.
    pub fn no_events_warning(&self, events: u64) -> Option<String> {
        fn files<'a>(source: &'a SourceConfig, out: &mut Vec<&'a FileSpec>) {
            match source {
                SourceConfig::File(spec) => out.push(spec),
                SourceConfig::Separate { left, right } => {
                    files(left, out);
                    files(right, out);
                }
                _ => {}
            }
        }
        let mut specs = Vec::new();
        files(&self.source, &mut specs);
        if events > 0 || specs.is_empty() {
            return None;
        }
        let names: Vec<String> = specs
            .iter()
            .map(|s| format!("{} ({})", s.path.display(), s.origin))
            .collect();
        Some(format!(
            "no events read from {}: the file is empty, holds only a header line, or every row \
             is filtered out (`types`); the trace has no requests",
            names.join(" and ")
        ))
    }

    /// Plays every file source `times` times (`gadget gen/run --input-passes`), as the key `repeat`
    /// of a file source does; an error when the workload reads no file.
    pub fn set_repeat(&mut self, times: u32) -> Result<(), ConfigError> {
        fn set(source: &mut SourceConfig, times: u32) -> bool {
            match source {
                SourceConfig::File(spec) => {
                    spec.repeat = times;
                    true
                }
                SourceConfig::Separate { left, right } => {
                    let l = set(left, times);
                    set(right, times) || l
                }
                _ => false,
            }
        }
        if !(1..=MAX_REPEAT).contains(&i64::from(times)) {
            return Err(ConfigError::Option {
                flag: "--input-passes".into(),
                message: format!("{times} is out of range; allowed: 1 to {MAX_REPEAT}"),
            });
        }
        if !set(&mut self.source, times) {
            return Err(ConfigError::Option {
                flag: "--input-passes".into(),
                message: "only a file source can be repeated; this workload reads no file".into(),
            });
        }
        for section in ["source", "left", "right"] {
            if let Some(table) = self.json.get_mut(section).and_then(|v| v.as_object_mut()) {
                if table.get("type").and_then(|t| t.as_str()) == Some("file") {
                    table.insert("repeat".into(), times.into());
                }
            }
        }
        Ok(())
    }

    /// The header of a trace of this workload whose operator has `states`: operator name,
    /// states, seed and the full config.
    pub fn trace_header(&self, states: Vec<String>) -> crate::trace::TraceHeader {
        crate::trace::TraceHeader::new(
            self.operator_name.clone(),
            states,
            Some(self.seed),
            self.json.clone(),
        )
    }
}

fn parse_interleaving(s: &Section<'_>, default: &'static str) -> Result<Interleaving, ConfigError> {
    let choice = s
        .choice("interleave", &["round-robin", "source-order", "by-time"])?
        .unwrap_or(default);
    Ok(match choice {
        "source-order" => Interleaving::SourceOrder,
        "by-time" => Interleaving::ByTime,
        _ => Interleaving::RoundRobin,
    })
}

/// Most windows one event may fall into (`size / slide` of Flink's sliding windows, `size /
/// advance` of Kafka Streams' hopping ones): Flink keeps them all in a list, and each costs
/// requests of its own.
pub(crate) const MAX_WINDOWS_PER_EVENT: i64 = 100_000;

/// Refuses windows of `size` ms starting every `step` ms (set by `key`: `slide`, `advance`)
/// that would put an event into more than [`MAX_WINDOWS_PER_EVENT`] windows.
pub(super) fn check_windows_per_event(
    s: &Section<'_>,
    key: &str,
    size: i64,
    step: i64,
) -> Result<(), ConfigError> {
    if size / step > MAX_WINDOWS_PER_EVENT {
        return Err(s.error(
            key,
            format!(
                "size {size} / {key} {step} puts every event into {} windows; at most {MAX_WINDOWS_PER_EVENT} are allowed, use a larger {key}",
                size / step
            ),
        ));
    }
    Ok(())
}

/// The `slide` of a sliding window of `size` ms: at most the size, at most
/// [`MAX_WINDOWS_PER_EVENT`] windows per event.
fn parse_slide(s: &Section<'_>, size: i64) -> Result<i64, ConfigError> {
    let slide = s.require_int(
        "slide",
        1,
        MS_MAX,
        "the distance between window starts in ms, e.g. 1000",
    )?;
    if slide > size {
        return Err(s.error(
            "slide",
            format!("{slide} is larger than size {size}; a slide must be at most the window size"),
        ));
    }
    check_windows_per_event(s, "slide", size, slide)?;
    Ok(slide)
}

/// The largest `element_size`: the longest value a trace holds ([`crate::trace::MAX_VALUE_LEN`]).
const MAX_ELEMENT_SIZE: i64 = crate::trace::MAX_VALUE_LEN as i64;

fn parse_function(s: &Section<'_>) -> Result<WindowFunction, ConfigError> {
    let f = s
        .choice("function", &["incremental", "holistic"])?
        .unwrap_or("incremental");
    let element_size = s.int("element_size", 0, MAX_ELEMENT_SIZE)?.unwrap_or(24) as u32;
    Ok(match f {
        "holistic" => WindowFunction::Holistic { element_size },
        _ => WindowFunction::Incremental,
    })
}

/// States of the lookup-join's window (with either timer service): its table and sink must
/// be named otherwise.
const LOOKUP_JOIN_WINDOW_STATES: [&str; 3] = [
    "window-contents",
    "_timer_state/event_window-timers",
    "default",
];

/// `[operator] type = "lookup-join"` (see docs/config.md).
fn parse_lookup_join(s: &Section<'_>) -> Result<LookupJoinSpec, ConfigError> {
    let names: Vec<&str> = AdEventType::ALL.iter().map(|t| t.name()).collect();
    let event_types = match s.strings("event_types")? {
        None => vec![AdEventType::View],
        Some(list) => {
            let types = list
                .iter()
                .map(|name| {
                    AdEventType::from_name(name).ok_or_else(|| {
                        s.error(
                            "event_types",
                            format!(
                                "`{name}` is not a YSB event type; use some of: {}",
                                names.join(", ")
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if types.is_empty() {
                return Err(s.error(
                    "event_types",
                    format!(
                        "no event type passes the filter; list some of: {}",
                        names.join(", ")
                    ),
                ));
            }
            types
        }
    };
    let state = |key: &'static str, default: &str| -> Result<String, ConfigError> {
        let name = s.state_name(key)?.unwrap_or_else(|| default.to_string());
        if LOOKUP_JOIN_WINDOW_STATES.contains(&name.as_str()) {
            return Err(s.error(
                key,
                format!(
                    "`{name}` cannot name the state; use a non-empty name other than the window's {}",
                    LOOKUP_JOIN_WINDOW_STATES.join(", ")
                ),
            ));
        }
        Ok(name)
    };
    let table_state = state("table_state", "ad-campaigns")?;
    let sink_state = state("sink_state", "campaign-windows")?;
    if table_state == sink_state {
        return Err(s.error(
            "sink_state",
            format!("`{sink_state}` is also the table_state; give the table and the sink different names"),
        ));
    }
    Ok(LookupJoinSpec {
        size: s.int("size", 1, MS_MAX)?.unwrap_or(10_000),
        event_types,
        table_state,
        sink_state,
        value_bytes: s.int("value_bytes", 0, 1 << 20)?.unwrap_or(0) as u32,
    })
}

fn parse_operator(s: &Section<'_>) -> Result<(OperatorConfig, String, TimerService), ConfigError> {
    let kind = s.require_choice("type", crate::engine::Engine::Flink.operators())?;
    let timers = match s
        .choice("timers", &["rocksdb", "heap"])?
        .unwrap_or("rocksdb")
    {
        "heap" => TimerService::Heap,
        _ => TimerService::RocksDb,
    };
    let lateness = |s: &Section<'_>| -> Result<i64, ConfigError> {
        Ok(s.int("allowed_lateness", 0, MS_MAX)?.unwrap_or(0))
    };
    let offset = |s: &Section<'_>| -> Result<i64, ConfigError> {
        Ok(s.int("offset", -MS_MAX, MS_MAX)?.unwrap_or(0))
    };
    let op = match kind {
        "tumbling" => {
            let size = s.require_int("size", 1, MS_MAX, "the window length in ms, e.g. 5000")?;
            let offset = offset(s)?;
            OperatorConfig::Window {
                assigner: WindowAssigner::Tumbling { size, offset },
                function: parse_function(s)?,
                allowed_lateness: lateness(s)?,
                keyed: s.bool("keyed")?.unwrap_or(true),
            }
        }
        "sliding" => {
            let size = s.require_int("size", 1, MS_MAX, "the window length in ms, e.g. 5000")?;
            let slide = parse_slide(s, size)?;
            let offset = offset(s)?;
            OperatorConfig::Window {
                assigner: WindowAssigner::Sliding {
                    size,
                    slide,
                    offset,
                },
                function: parse_function(s)?,
                allowed_lateness: lateness(s)?,
                keyed: s.bool("keyed")?.unwrap_or(true),
            }
        }
        "session" => OperatorConfig::Session {
            gap: s.require_int("gap", 1, MS_MAX, "the session gap in ms, e.g. 120000")?,
            function: parse_function(s)?,
            allowed_lateness: lateness(s)?,
        },
        "tumbling-join" | "sliding-join" => {
            let size = s.require_int("size", 1, MS_MAX, "the window length in ms, e.g. 5000")?;
            let assigner = if kind == "sliding-join" {
                let slide = parse_slide(s, size)?;
                WindowAssigner::Sliding {
                    size,
                    slide,
                    offset: offset(s)?,
                }
            } else {
                WindowAssigner::Tumbling {
                    size,
                    offset: offset(s)?,
                }
            };
            OperatorConfig::WindowJoin {
                assigner,
                element_size: s.int("element_size", 0, MAX_ELEMENT_SIZE)?.unwrap_or(24) as u32,
                allowed_lateness: lateness(s)?,
                interleaving: parse_interleaving(s, "source-order")?,
            }
        }
        "continuous-join" => OperatorConfig::ContinuousJoin {
            element_size: s.int("element_size", 0, MAX_ELEMENT_SIZE)?.unwrap_or(24) as u32,
            interleaving: parse_interleaving(s, "round-robin")?,
        },
        "lookup-join" => OperatorConfig::LookupJoin(parse_lookup_join(s)?),
        "aggregation" => OperatorConfig::Aggregation {
            state_name: s
                .state_name("state_name")?
                .unwrap_or_else(|| "running-sum".to_string()),
        },
        "interval-join" => {
            let lower = s.require_int(
                "lower_bound",
                -MS_MAX,
                MS_MAX,
                "the lower bound in ms, e.g. -120000",
            )?;
            let upper = s.require_int(
                "upper_bound",
                -MS_MAX,
                MS_MAX,
                "the upper bound in ms, e.g. 180000",
            )?;
            if lower > upper {
                return Err(s.error(
                    "lower_bound",
                    format!("{lower} is above upper_bound {upper}"),
                ));
            }
            OperatorConfig::IntervalJoin {
                lower,
                upper,
                element_size: s.int("element_size", 0, MAX_ELEMENT_SIZE)?.unwrap_or(24) as u32,
                interleaving: parse_interleaving(s, "round-robin")?,
            }
        }
        // a name listed in Engine::operators without an arm here: found by the test that
        // parses every listed operator
        other => {
            return Err(s.error(
                "type",
                format!(
                "`{other}` is a Flink operator this build lists but cannot parse; please report it"
            ),
            ))
        }
    };
    let name = match &op {
        OperatorConfig::Window { function, .. } | OperatorConfig::Session { function, .. } => {
            format!(
                "{kind}-{}",
                if matches!(function, WindowFunction::Holistic { .. }) {
                    "holistic"
                } else {
                    "incremental"
                }
            )
        }
        _ => kind.to_string(),
    };
    Ok((op, name, timers))
}

/// Refuses `[source.watermarks]` for an engine that does not read the source's watermarks,
/// naming the engine's own knob for lateness.
fn refuse_flink_watermarks(
    s: &Section<'_>,
    engine: crate::engine::Engine,
) -> Result<(), ConfigError> {
    use crate::engine::Engine;
    let Some(watermarks) = s.table("watermarks")? else {
        return Ok(());
    };
    let instead = match engine {
        Engine::Flink => return Ok(()),
        Engine::KafkaStreams => {
            "Kafka Streams has no watermarks: a window closes once stream time (the largest \
             record time seen) passes its end plus `[operator] grace`; drop this section and set \
             `grace`"
        }
        Engine::Spark => {
            "Spark computes its watermark itself, from the largest event time of a batch less \
             `[operator] delay` (withWatermark); drop this section and set `delay`"
        }
    };
    Err(watermarks.section_error(instead))
}

fn parse_watermarks(s: Option<Section<'_>>) -> Result<WatermarkPolicy, ConfigError> {
    let Some(s) = s else {
        return Ok(WatermarkPolicy::Punctuated {
            every: 100,
            out_of_orderness: 0,
        });
    };
    let kind = s
        .choice("type", &["punctuated", "periodic"])?
        .unwrap_or("punctuated");
    let out_of_orderness = s.int("out_of_orderness", 0, MS_MAX)?.unwrap_or(0);
    let policy = match kind {
        "periodic" => WatermarkPolicy::Periodic {
            interval: s.require_int(
                "interval",
                1,
                MS_MAX,
                "event time between watermarks in ms, e.g. 200",
            )?,
            out_of_orderness,
        },
        _ => WatermarkPolicy::Punctuated {
            every: s.int("every", 1, i64::MAX)?.unwrap_or(100) as u64,
            out_of_orderness,
        },
    };
    s.finish()?;
    Ok(policy)
}

fn parse_keys(s: Section<'_>) -> Result<KeyDistributionSpec, ConfigError> {
    const KINDS: &[&str] = &[
        "constant",
        "uniform",
        "zipf",
        "hotspot",
        "sequential",
        "latest",
        "normal",
        "empirical",
    ];
    let spec = match s.require_choice("distribution", KINDS)? {
        "constant" => KeyDistributionSpec::Constant(s.require_int(
            "key",
            0,
            i64::MAX,
            "the one key every event has",
        )? as u64),
        "uniform" => KeyDistributionSpec::Uniform,
        "zipf" => KeyDistributionSpec::Zipf {
            s: s.require_float("s", 1e-9, 1e3, "the Zipf exponent, e.g. 0.99")?,
        },
        "hotspot" => KeyDistributionSpec::Hotspot {
            hot_key_fraction: s.require_float(
                "hot_key_fraction",
                0.0,
                1.0,
                "share of keys that are hot, e.g. 0.2",
            )?,
            hot_operation_fraction: s.require_float(
                "hot_operation_fraction",
                0.0,
                1.0,
                "share of events on hot keys, e.g. 0.8",
            )?,
        },
        "sequential" => KeyDistributionSpec::Sequential,
        "latest" => KeyDistributionSpec::Latest {
            s: s.float("s", 1e-9, 1e3)?.unwrap_or(0.99),
            insert_fraction: s.float("insert_fraction", 1e-12, 1.0)?.unwrap_or(0.05),
        },
        "normal" => KeyDistributionSpec::Normal {
            mean: s.require_float("mean", -1e18, 1e18, "the mean key index")?,
            stddev: s.require_float("stddev", 0.0, 1e18, "the standard deviation in keys")?,
        },
        _ => KeyDistributionSpec::Empirical {
            path: s.path("path")?.ok_or_else(|| {
                s.error(
                    "path",
                    "missing; a file of `value,cumulative_probability` lines",
                )
            })?,
        },
    };
    s.finish()?;
    Ok(spec)
}

fn parse_gaps(s: Section<'_>) -> Result<GapDistributionSpec, ConfigError> {
    const KINDS: &[&str] = &["constant", "uniform", "exponential", "normal", "pareto"];
    let spec = match s.require_choice("distribution", KINDS)? {
        "constant" => GapDistributionSpec::Constant(s.require_float(
            "value",
            0.0,
            1e15,
            "the gap in ms, e.g. 0.5",
        )?),
        "uniform" => {
            let min = s.require_float("min", 0.0, 1e15, "the smallest gap in ms")?;
            let max = s.require_float("max", 0.0, 1e15, "the largest gap in ms")?;
            if min > max {
                return Err(s.error("min", format!("{min} is above max {max}")));
            }
            GapDistributionSpec::Uniform { min, max }
        }
        "exponential" => GapDistributionSpec::Exponential {
            rate: s.require_float(
                "rate",
                1e-12,
                1e12,
                "events per ms, e.g. 1.0 (mean gap 1/rate)",
            )?,
        },
        "normal" => GapDistributionSpec::Normal {
            mean: s.require_float("mean", 0.0, 1e15, "the mean gap in ms")?,
            stddev: s.require_float("stddev", 0.0, 1e15, "the standard deviation in ms")?,
        },
        _ => GapDistributionSpec::Pareto {
            scale: s.require_float("scale", 1e-12, 1e15, "the minimum gap x_m in ms")?,
            shape: s.require_float("shape", 1e-12, 1e6, "the tail index alpha, e.g. 1.5")?,
        },
    };
    s.finish()?;
    Ok(spec)
}

/// `[source.out_of_order]`: the share of late events and their largest delay, ms.
fn parse_out_of_order(s: &Section<'_>) -> Result<(f64, i64), ConfigError> {
    Ok(match s.table("out_of_order")? {
        None => (0.0, 0),
        Some(o) => {
            let f = o.require_float("fraction", 0.0, 1.0, "the share of events delivered late")?;
            if f >= 1.0 {
                return Err(o.error(
                    "fraction",
                    format!("{f} holds back every event, so none arrives on time to move the stream on; allowed: [0, 1)"),
                ));
            }
            let d = o.int("max_delay", 1, MS_MAX)?;
            let d = match (f > 0.0, d) {
                (true, None) => {
                    return Err(o.error(
                        "max_delay",
                        "missing; how late (ms) a late event may arrive, e.g. 1000",
                    ))
                }
                (_, d) => d.unwrap_or(0),
            };
            o.finish()?;
            (f, d)
        }
    })
}

fn parse_synthetic(
    s: &Section<'_>,
    two_inputs: bool,
    closing: bool,
    seed: u64,
) -> Result<SourceConfig, ConfigError> {
    let closing_fraction = s.float("closing_fraction", 0.0, 1.0)?;
    if closing_fraction.is_some() && !closing {
        return Err(s.error(
            "closing_fraction",
            "only the continuous join takes closing_fraction",
        ));
    }
    let key_space = s.require_int(
        "key_space",
        1,
        i64::MAX,
        "the number of distinct event keys, e.g. 10000",
    )? as u64;
    let events = s.int("events", 0, i64::MAX)?.map(|n| n as u64);
    let string_keys = s.choice("key_type", &["long", "string"])? == Some("string");
    let start_time = s.int("start_time", -MS_MAX, MS_MAX)?.unwrap_or(0);
    let left_fraction = s.float("left_fraction", 0.0, 1.0)?;
    if left_fraction.is_some() && !two_inputs {
        return Err(s.error(
            "left_fraction",
            "only two-input operators (joins) take left_fraction",
        ));
    }
    let keys = parse_keys(
        s.table("keys")?
            .ok_or_else(|| s.error("keys", "missing; add [source.keys] with a `distribution`"))?,
    )?;
    let gaps = parse_gaps(
        s.table("gaps")?
            .ok_or_else(|| s.error("gaps", "missing; add [source.gaps] with a `distribution`"))?,
    )?;
    let (fraction, max_delay) = parse_out_of_order(s)?;
    let spec = SyntheticSpec {
        key_space,
        keys,
        gaps,
        events,
        out_of_order_fraction: fraction,
        max_delay,
        watermarks: parse_watermarks(s.table("watermarks")?)?,
        string_keys,
        start_time,
    };
    // Build it once now, so a bad parameter is reported against this file.
    let check = SyntheticSource::new(spec.clone(), seed).and_then(|src| match left_fraction {
        Some(f) => src.with_join_inputs(f).map(|_| ()),
        None => Ok(()),
    });
    if let Err(e) = check {
        return Err(s.error("keys", e.to_string()));
    }
    let left_fraction = match (two_inputs, left_fraction) {
        (true, None) => Some(0.5),
        (_, f) => f,
    };
    Ok(SourceConfig::Synthetic {
        spec,
        left_fraction,
        closing_fraction,
    })
}

/// Most campaigns of a ysb source (YSB has 100); their ids are kept in memory.
const MAX_CAMPAIGNS: i64 = 1_000_000;
/// Most ads of a ysb source, all campaigns together (YSB has 1,000): each is one preload
/// request of the lookup-join.
const MAX_ADS: i64 = 100_000_000;

/// `[source] type = "ysb"`: YSB's ad events (see docs/config.md).
fn parse_ysb(s: &Section<'_>) -> Result<YsbSpec, ConfigError> {
    let campaigns = s.int("campaigns", 1, MAX_CAMPAIGNS)?.unwrap_or(100);
    let ads_per_campaign = s.int("ads_per_campaign", 1, MAX_ADS)?.unwrap_or(10);
    if campaigns.saturating_mul(ads_per_campaign) > MAX_ADS {
        return Err(s.error(
            "ads_per_campaign",
            format!("campaigns × ads_per_campaign = {campaigns} × {ads_per_campaign} ads is above the {MAX_ADS} allowed; use fewer campaigns or ads"),
        ));
    }
    let ads = match s.table("ads")? {
        Some(t) => parse_keys(t)?,
        None => KeyDistributionSpec::Uniform,
    };
    let (out_of_order_fraction, max_delay) = parse_out_of_order(s)?;
    let spec = YsbSpec {
        campaigns: campaigns as u64,
        ads_per_campaign: ads_per_campaign as u64,
        ads,
        events: s.int("events", 0, i64::MAX)?.map(|n| n as u64),
        events_per_second: s.float("events_per_second", 1e-3, 1e9)?.unwrap_or(1000.0),
        start_time: s.int("start_time", -MS_MAX, MS_MAX)?.unwrap_or(0),
        out_of_order_fraction,
        max_delay,
        watermarks: parse_watermarks(s.table("watermarks")?)?,
    };
    // Build it once now, so a bad parameter is reported against this file.
    if let Err(e) = spec.events_source(0) {
        return Err(s.error("ads", e.to_string()));
    }
    Ok(spec)
}

/// The lookup-join reads a ysb source, and a ysb source feeds only the lookup-join.
fn check_ysb_pairing(
    s: &Section<'_>,
    source: &SourceConfig,
    operator: &OperatorConfig,
) -> Result<(), ConfigError> {
    match (source, operator) {
        (SourceConfig::Ysb(_), OperatorConfig::LookupJoin(_)) => Ok(()),
        (SourceConfig::Ysb(_), _) => Err(s.error(
            "type",
            "a ysb source feeds the lookup-join; set [operator] type = \"lookup-join\", or use a synthetic source",
        )),
        (_, OperatorConfig::LookupJoin(_)) => Err(s.error(
            "type",
            "the lookup-join reads YSB's ad events; set type = \"ysb\" (see docs/config.md)",
        )),
        _ => Ok(()),
    }
}

fn parse_source(s: &Section<'_>, inputs: Inputs, seed: u64) -> Result<SourceConfig, ConfigError> {
    let two_inputs = inputs != Inputs::One;
    let closing = inputs == Inputs::TwoClosing;
    match s.require_choice("type", &["file", "synthetic", "ysb"])? {
        "synthetic" => return parse_synthetic(s, two_inputs, closing, seed),
        "ysb" => return parse_ysb(s).map(SourceConfig::Ysb),
        _ => {}
    }
    let closing_types = s.strings("closing_types")?;
    if closing_types.is_some() && !closing {
        return Err(s.error(
            "closing_types",
            "only the continuous join takes closing_types",
        ));
    }
    let path = s.path("path")?.ok_or_else(|| {
        s.error(
            "path",
            "missing; the event file, relative to this config file",
        )
    })?;
    let lower = path.to_string_lossy().to_lowercase();
    let default_delimiter = if lower.ends_with(".tsv") || lower.ends_with(".tsv.gz") {
        "\t"
    } else {
        ","
    };
    let delimiter = s
        .choice("delimiter", &[",", "\t", ";", "|"])?
        .unwrap_or(default_delimiter)
        .as_bytes()[0];
    let key_type = match s.choice("key_type", &["long", "string"])?.unwrap_or("long") {
        "string" => KeyType::String,
        _ => KeyType::Long,
    };
    let time_unit = match s
        .choice("time_unit", &["ns", "us", "ms", "s"])?
        .unwrap_or("ms")
    {
        "ns" => TimeUnit::Nanoseconds,
        "us" => TimeUnit::Microseconds,
        "s" => TimeUnit::Seconds,
        _ => TimeUnit::Milliseconds,
    };
    let order = match s
        .choice("order", &["by-time", "file"])?
        .unwrap_or("by-time")
    {
        "file" => FileOrder::AsIs,
        _ => FileOrder::SortByTime,
    };
    let type_column = s.int("type_column", 0, 10_000)?.map(|c| c as usize);
    let types = s.strings("types")?;
    let left = s.strings("left_types")?;
    let right = s.strings("right_types")?;
    let routing = match (two_inputs, types, left, right) {
        (false, _, Some(_), _) => return Err(s.error("left_types", "only two-input operators (the joins) take left_types/right_types; use `types` to filter")),
        (false, _, _, Some(_)) => return Err(s.error("right_types", "only two-input operators (the joins) take left_types/right_types; use `types` to filter")),
        (false, None, None, None) => TypeRouting::All,
        (false, Some(t), None, None) => TypeRouting::Accept(t),
        (true, Some(_), _, _) => return Err(s.error("types", "a two-input operator takes left_types and right_types instead")),
        (true, None, Some(l), Some(r)) => match (closing_types, inputs) {
            (Some(c), _) => TypeRouting::SplitClosing(l, r, c),
            (None, Inputs::TwoKeepingOthers) => TypeRouting::SplitKeepingOthers(l, r),
            (None, _) => TypeRouting::Split(l, r),
        },
        (true, None, _, _) => return Err(s.error("left_types", "missing; a two-input operator needs left_types and right_types, e.g. [\"SUBMIT\"] and [\"FINISH\"]")),
    };
    if routing != TypeRouting::All && type_column.is_none() {
        return Err(s.error(
            "type_column",
            "missing; filtering or splitting by type needs the type column",
        ));
    }
    let spec = FileSpec {
        origin: s.origin("path"),
        path,
        delimiter,
        header: s.bool("header")?.unwrap_or(false),
        key_column: s.require_int("key_column", 0, 10_000, "zero-based column of the key")?
            as usize,
        key_type,
        time_column: s.require_int(
            "time_column",
            0,
            10_000,
            "zero-based column of the event time",
        )? as usize,
        time_unit,
        type_column,
        routing,
        order,
        watermarks: parse_watermarks(s.table("watermarks")?)?,
        repeat: s.int("repeat", 1, MAX_REPEAT)?.unwrap_or(1) as u32,
    };
    Ok(SourceConfig::File(spec))
}

fn toml_to_json(table: &toml_edit::Table) -> serde_json::Value {
    fn value(v: &toml_edit::Value) -> serde_json::Value {
        use toml_edit::Value as V;
        match v {
            V::String(s) => serde_json::Value::String(s.value().clone()),
            V::Integer(i) => serde_json::json!(*i.value()),
            V::Float(f) => serde_json::json!(*f.value()),
            V::Boolean(b) => serde_json::json!(*b.value()),
            V::Datetime(d) => serde_json::Value::String(d.value().to_string()),
            V::Array(a) => serde_json::Value::Array(a.iter().map(value).collect()),
            V::InlineTable(t) => serde_json::Value::Object(
                t.iter().map(|(k, v)| (k.to_string(), value(v))).collect(),
            ),
        }
    }
    fn item(i: &toml_edit::Item) -> serde_json::Value {
        match i {
            toml_edit::Item::Value(v) => value(v),
            toml_edit::Item::Table(t) => toml_to_json(t),
            toml_edit::Item::ArrayOfTables(a) => {
                serde_json::Value::Array(a.iter().map(toml_to_json).collect())
            }
            toml_edit::Item::None => serde_json::Value::Null,
        }
    }
    serde_json::Value::Object(
        table
            .iter()
            .map(|(k, v)| (k.to_string(), item(v)))
            .collect(),
    )
}

/// The largest config or experiment file read: configs are hand-written text, and a bound
/// keeps `/dev/zero` or a trace given by mistake from filling memory.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// A config file's text, or why it cannot be read (missing, not UTF-8: with line and byte,
/// over [`MAX_CONFIG_BYTES`]).
pub(crate) fn read_text(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let io = |source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..offset];
        ConfigError::NotUtf8 {
            path: path.to_path_buf(),
            line: before.iter().filter(|b| **b == b'\n').count() + 1,
            offset,
        }
    })
}
