//! Workload configuration: a TOML file (documented in `docs/config.md`), validated key by key
//! into settings; [`crate::pipeline`] builds the source and operator they describe.

pub mod bounds;
mod engine;
mod kvbench;
mod legacy;
mod parallel;
pub mod properties;
pub mod run;
mod source;
pub mod store_settings;
mod ycsb;

use crate::document::MS_MAX;
use crate::engine::flink::FlinkOperator;
use crate::engine::MAX_WINDOWS_PER_EVENT;
use source::{check_payload, check_ysb_pairing, parse_source, refuse_flink_watermarks};

use std::path::Path;

use crate::document::{read_text, Document};
use crate::parallel::split::JobSplit;
pub use crate::parallel::split::SubtaskPart;
pub use parallel::Parallelism;

pub use crate::document::{ConfigError, MAX_CONFIG_BYTES};

use crate::source::file::FileSpec;
use crate::source::synthetic::SyntheticSpec;
use crate::source::ysb::YsbSpec;

/// The seed of a separate right source: derived, so both sides differ.
pub(crate) fn right_seed(seed: u64) -> u64 {
    seed ^ 0x9e37_79b9_7f4a_7c15
}

use crate::baseline::kvbench::KvbenchSpec;
use crate::baseline::ycsb::YcsbSpec;
use crate::timer::TimerService;
use properties::Properties;

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

/// The operator to simulate: an engine's, or a baseline client's.
#[derive(Debug, Clone, PartialEq)]
pub enum OperatorConfig {
    /// A Flink operator (the default engine; [`crate::engine::flink`]).
    Flink(FlinkOperator),
    /// A YCSB client issuing the core workload's operations to one state.
    Ycsb(Box<YcsbSpec>),
    /// A KVBench generator issuing its operations to one state.
    Kvbench(Box<KvbenchSpec>),
    /// A Kafka Streams operator (`engine = "kafka-streams"`; [`crate::engine::kafka_streams`]).
    KafkaStreams(Box<crate::engine::kafka_streams::KafkaStreamsSpec>),
    /// A Spark query (`engine = "spark"`; [`crate::engine::spark`]).
    Spark(Box<crate::engine::spark::SparkSpec>),
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
            OperatorConfig::Flink(FlinkOperator::ContinuousJoin { .. }) => Inputs::TwoClosing,
            OperatorConfig::Flink(
                FlinkOperator::IntervalJoin { .. } | FlinkOperator::WindowJoin { .. },
            ) => Inputs::Two,
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

    /// How its engine runs it as a parallel job.
    pub fn split(&self) -> &dyn JobSplit {
        match self {
            OperatorConfig::Flink(operator) => operator,
            OperatorConfig::Ycsb(spec) => spec.as_ref(),
            OperatorConfig::Kvbench(spec) => spec.as_ref(),
            OperatorConfig::KafkaStreams(spec) => spec.as_ref(),
            OperatorConfig::Spark(spec) => spec.as_ref(),
        }
    }

    /// [`OperatorConfig::split`], to take a parallelism into the operator's settings.
    fn split_mut(&mut self) -> &mut dyn JobSplit {
        match self {
            OperatorConfig::Flink(operator) => operator,
            OperatorConfig::Ycsb(spec) => spec.as_mut(),
            OperatorConfig::Kvbench(spec) => spec.as_mut(),
            OperatorConfig::KafkaStreams(spec) => spec.as_mut(),
            OperatorConfig::Spark(spec) => spec.as_mut(),
        }
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
        let engine = crate::engine::parse_engine(&top)?;
        top.finish()?;

        let (mut operator, operator_name, timers) =
            engine::parse_operator(&operator_section, engine)?;
        operator_section.finish()?;
        if parallelism > 1 {
            let split = operator.split();
            if let Some(problem) = split
                .refusal(parallelism, max_parallelism)
                .or_else(|| split.disagreement(parallelism))
            {
                return Err(doc.error(parallelism_at, "parallelism", problem));
            }
        }
        let split = operator.split_mut();
        split.take_parallelism(parallelism, &mut json);
        if split.owns_key_groups() && parallelism > 1 && given_max_parallelism.is_none() {
            // Flink's default taken, for the trace's header
            json["max_parallelism"] = max_parallelism.into();
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
                    check_payload(&s, &source, &operator)?;
                    s.finish()?;
                    source
                }
                (None, Some(l), Some(r))
                    if operator.two_inputs() && matches!(operator, OperatorConfig::Flink(_)) =>
                {
                    let left = parse_source(&l, Inputs::One, seed)?;
                    check_ysb_pairing(&l, &left, &operator)?;
                    check_payload(&l, &left, &operator)?;
                    l.finish()?;
                    let right = parse_source(&r, Inputs::One, right_seed(seed))?;
                    check_ysb_pairing(&r, &right, &operator)?;
                    check_payload(&r, &right, &operator)?;
                    r.finish()?;
                    SourceConfig::Separate {
                        left: Box::new(left),
                        right: Box::new(right),
                    }
                }
                (None, Some(l), Some(_)) if operator.two_inputs() => return Err(l.section_error(
                    "[left] and [right] sources are for Flink's joins; a Kafka Streams or Spark \
                     join reads its two inputs from one [source], split by `left_types` and \
                     `right_types` (a file's type column) or by `left_fraction`",
                )),
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
            if let (OperatorConfig::Flink(FlinkOperator::LookupJoin(_)), Some(n)) =
                (&operator, run.instances)
            {
                if n > max_parallelism as usize {
                    return Err(r.error(
                        "instances",
                        format!("{n} instances split the lookup-join's campaigns by key group, and there are max_parallelism = {max_parallelism}; allowed: [1, {max_parallelism}] (or raise max_parallelism)"),
                    ));
                }
            }
            r.finish()?;
        }
        let mut config = Config {
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
        };
        if let SourceConfig::Ysb(_) = &config.source {
            // the start-up and table preload are the warm-up, unless the config says otherwise
            let preload = config.preload_requests();
            config
                .run
                .warmup
                .get_or_insert(run::Warmup::Requests(preload));
        }
        Ok(config)
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

    /// Requests the lookup-join issues before its first event, to be left out of
    /// measurements: its window's timer service starting up (RocksDB timers: a commit and a
    /// seek per key group in each of two queues) and its table preload (campaigns × ads per
    /// campaign, every instance the whole table); 0 for other workloads, whose timer start-up
    /// (a few hundred requests) is measured with the rest. `[run] warmup` defaults to it.
    pub fn preload_requests(&self) -> u64 {
        match &self.source {
            SourceConfig::Ysb(spec) => {
                let all = crate::key::KeyGroupRange::all(self.max_parallelism);
                crate::timer::start_up_requests(self.timers, all)
                    + spec.campaigns * spec.ads_per_campaign
            }
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
