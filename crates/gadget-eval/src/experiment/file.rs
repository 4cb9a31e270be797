//! Experiment files for `gadget bench`: which workloads, stores (with their settings) and
//! arrival processes to cross, how many repetitions, and how long each run lasts
//! (docs/bench.md).

use std::path::{Path, PathBuf};

use gadget::config::bounds::parse_duration;
pub use gadget::config::run::{experiment_store_settings, RUN_SETTINGS};
use gadget::config::run::{ARRIVAL_NAMES, RATE};
pub use gadget::config::store_settings::{
    ConfigPlace, GivenSetting, SettingValue, StoreSetting, STORE_SETTINGS,
};
use gadget::document::{file_path, read_text, ConfigError, Document, Section};

use crate::store::StoreKind;

/// The most runs an experiment may plan (cells × repetitions): each is a process that opens
/// a fresh store, so even 100,000 runs of a second each take more than a day.
pub const MAX_RUNS: u64 = 100_000;

/// The longest name of a workload or store: names make file names (`NAME.store.arrival.r1.json`),
/// which the file system limits to 255 bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The most repetitions of a cell.
pub const MAX_REPETITIONS: i64 = 1000;

/// In which order the runs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOrder {
    /// In blocks (the default): block r runs every cell's repetition r, in an order the seed
    /// shuffles anew for each block, so that a drift of the machine hits the cells of a block
    /// alike and cells compare within blocks.
    Blocks,
    /// Every run shuffled by the experiment's seed, so drift over time spreads over every
    /// cell (but cells do not share blocks).
    Random,
    /// As listed: workloads, then stores, then arrivals, repetitions innermost.
    Listed,
}

/// What a workload is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadFile {
    /// Workload configs (Gadget TOML, YCSB properties): `gadget run`; several run at once as
    /// co-located operators (the paper's Figure 14), sharing the store with `shared_store`.
    Config(Vec<PathBuf>),
    /// A trace: `gadget replay`.
    Trace(PathBuf),
}

/// A `[[workload]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentWorkload {
    /// Its name in cell names and tables (default: the file's stem).
    pub name: String,
    /// Its file, relative paths resolved against the experiment file's folder.
    pub file: WorkloadFile,
    /// YCSB properties to override (`-p KEY=VALUE`), in file order.
    pub properties: Vec<(String, String)>,
    /// `--input-passes`: how often a config's input file is played.
    pub input_passes: Option<u64>,
    /// `--limit` of this workload's runs, over the experiment's.
    pub limit: Option<u64>,
    /// Where its file is given (`exp.toml:7: `workload.config``), for messages.
    pub origin: String,
}

/// A `[[store]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentStore {
    /// Its name in cell names and tables (default: the kind).
    pub name: String,
    /// The store kind (`--store`), one of this build's stores.
    pub kind: StoreKind,
    /// Settings as `(flag, value)`: `("--write-buffer-mb", "64")`; a `true` switch has no
    /// value.
    pub flags: Vec<(String, Option<String>)>,
    /// Every setting given (switches set to false too), with where: `(key, "exp.toml:7:
    /// `store.wal`")`, for the evaluator to check against what the store reads.
    pub given: Vec<(String, String)>,
    /// The settings given with their values, for the evaluator to check that the store opens
    /// with them.
    pub settings: Vec<GivenSetting>,
}

/// One arrival process at one rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentArrival {
    /// The process (`closed`, `poisson`, ...).
    pub process: String,
    /// Its rate, requests per second (open loop only).
    pub rate: Option<f64>,
}

impl ExperimentArrival {
    /// Its name in cell names: `closed`, `poisson-20000`.
    pub fn name(&self) -> String {
        match self.rate {
            Some(r) => format!("{}-{}", self.process, gadget::document::number(r)),
            None => self.process.clone(),
        }
    }
}

/// What an experiment compares every cell with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    /// The dimension it names.
    pub dimension: Dimension,
    /// Its index among that dimension's entries.
    pub index: usize,
    /// Its name.
    pub name: String,
}

/// One of the three things an experiment crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// A `[[workload]]`.
    Workload,
    /// A `[[store]]`.
    Store,
    /// An `[[arrival]]` at one rate.
    Arrival,
}

/// The default of `noise_threshold`.
pub const DEFAULT_NOISE_THRESHOLD: f64 = 0.02;

/// A validated experiment file.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// The file.
    pub path: PathBuf,
    /// Seeds the run order (and nothing else: each workload keeps its own seed).
    pub seed: u64,
    /// Runs per cell.
    pub repetitions: u32,
    /// The run order.
    pub order: RunOrder,
    /// `--limit` of every run.
    pub limit: Option<u64>,
    /// `--duration` of every run, as written (`"10s"`).
    pub duration: Option<String>,
    /// `--warmup` of every run, as written (`"2s"` or a request count).
    pub warmup: Option<String>,
    /// The latency a rate must stay within to count as sustained, ns (`latency_bound`).
    pub latency_bound_ns: Option<u64>,
    /// The percentile held to that bound: `p50`, `p99` (the default) or `p999`.
    pub latency_percentile: String,
    /// What every other cell is compared with (`baseline`: a store's, workload's or
    /// arrival's name).
    pub baseline: Option<Baseline>,
    /// A ratio within this of 1 (0.02: ±2%) is no difference worth a verdict.
    pub noise_threshold: f64,
    /// The workloads.
    pub workloads: Vec<ExperimentWorkload>,
    /// The stores.
    pub stores: Vec<ExperimentStore>,
    /// The arrival processes, one entry per rate.
    pub arrivals: Vec<ExperimentArrival>,
}

/// A quick try's changes to an experiment: `gadget bench --repetitions`, `--limit`,
/// `--duration`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Runs per cell.
    pub repetitions: Option<u32>,
    /// `--limit` of every run (each workload's own `limit` too).
    pub limit: Option<u64>,
    /// `--duration` of every run.
    pub duration: Option<String>,
}

impl Experiment {
    /// Applies a quick try's `overrides`; what they changed, as flags (`--repetitions 1`),
    /// for the summary to say.
    pub fn override_with(&mut self, overrides: &Overrides) -> Result<Vec<String>, String> {
        let mut said = Vec::new();
        if let Some(n) = overrides.repetitions {
            if n == 0 || i64::from(n) > MAX_REPETITIONS {
                return Err(format!(
                    "--repetitions {n} is out of range; allowed: [1, {MAX_REPETITIONS}]"
                ));
            }
            self.repetitions = n;
            said.push(format!("--repetitions {n}"));
        }
        if let Some(n) = overrides.limit {
            if n == 0 {
                return Err("--limit 0 would run nothing; give 1 or more".into());
            }
            self.limit = Some(n);
            for w in &mut self.workloads {
                w.limit = None;
            }
            said.push(format!("--limit {n}"));
        }
        if let Some(d) = &overrides.duration {
            if parse_duration(d).is_none_or(|ns| ns < 1_000_000) {
                return Err(format!(
                    "--duration {d:?} is not a time of at least 1ms; give one such as 2s"
                ));
            }
            self.duration = Some(d.clone());
            said.push(format!("--duration {d}"));
        }
        self.check_size()?;
        Ok(said)
    }

    /// At most [`MAX_RUNS`] runs.
    fn check_size(&self) -> Result<(), String> {
        let cells = (self.workloads.len() * self.stores.len() * self.arrivals.len()) as u64;
        let runs = cells.saturating_mul(u64::from(self.repetitions));
        if runs > MAX_RUNS {
            return Err(format!(
                "plans {runs} runs ({cells} cells × {} repetitions), over the {MAX_RUNS} an experiment may run (each is a process with a fresh store); split it, or drop {} runs",
                self.repetitions,
                runs - MAX_RUNS
            ));
        }
        Ok(())
    }

    /// Reads and validates an experiment file.
    pub fn load(path: &Path) -> Result<Experiment, ConfigError> {
        Experiment::parse(&read_text(path)?, path)
    }

    /// Validates experiment text; `path` names it in errors and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Experiment, ConfigError> {
        let doc = Document { path, text };
        let top = doc.top()?;
        let mut baseline_name = None;
        let mut e = Experiment {
            path: path.to_path_buf(),
            seed: 0,
            repetitions: 3,
            order: RunOrder::Random,
            limit: None,
            duration: None,
            warmup: None,
            latency_bound_ns: None,
            latency_percentile: "p99".into(),
            baseline: None,
            noise_threshold: DEFAULT_NOISE_THRESHOLD,
            workloads: Vec::new(),
            stores: Vec::new(),
            arrivals: Vec::new(),
        };
        if let Some(s) = top.table("experiment")? {
            e.seed = s.int("seed", 0, i64::MAX)?.unwrap_or(0) as u64;
            e.repetitions = s.int("repetitions", 1, MAX_REPETITIONS)?.unwrap_or(3) as u32;
            e.order = match s.choice("order", &["blocks", "random", "listed"])? {
                Some("listed") => RunOrder::Listed,
                Some("random") => RunOrder::Random,
                _ => RunOrder::Blocks,
            };
            baseline_name = s.string("baseline")?.map(|b| (b, s.offset_of("baseline")));
            e.noise_threshold = s
                .float("noise_threshold", 0.0, 0.5)?
                .unwrap_or(DEFAULT_NOISE_THRESHOLD);
            e.limit = s.int("limit", 1, i64::MAX)?.map(|n| n as u64);
            if let Some(d) = s.string("duration")? {
                if parse_duration(&d).is_none_or(|ns| ns < 1_000_000) {
                    return Err(s.error(
                        "duration",
                        format!("`{d}` is not a time of at least 1ms; give one such as \"10s\""),
                    ));
                }
                e.duration = Some(d);
            }
            e.warmup = match s.string_or_int("warmup")? {
                None => None,
                Some(Ok(n)) if n >= 0 => Some(n.to_string()),
                Some(Ok(n)) => {
                    return Err(s.error(
                        "warmup",
                        format!(
                        "{n} is out of range; give a request count ≥ 0 or a time such as \"2s\""
                    ),
                    ))
                }
                Some(Err(t)) if parse_duration(&t).is_some() => Some(t),
                Some(Err(t)) => {
                    return Err(s.error(
                        "warmup",
                        format!(
                            "`{t}` is not a time; give a request count (10000) or a time (\"2s\")"
                        ),
                    ))
                }
            };
            if let Some(b) = s.string("latency_bound")? {
                e.latency_bound_ns =
                    Some(parse_duration(&b).filter(|&ns| ns > 0).ok_or_else(|| {
                        s.error(
                            "latency_bound",
                            format!("`{b}` is not a time; give one such as \"1ms\" or \"500us\""),
                        )
                    })?);
            }
            if let Some(p) = s.choice("latency_percentile", &["p50", "p99", "p999"])? {
                e.latency_percentile = p.into();
            }
            s.finish()?;
        }
        for w in top.tables("workload")? {
            e.workloads.push(workload(&w)?);
            w.finish()?;
        }
        for s in top.tables("store")? {
            e.stores.push(store(&s)?);
            s.finish()?;
        }
        for a in top.tables("arrival")? {
            let process = a.choice("process", ARRIVAL_NAMES)?.ok_or_else(|| {
                a.missing(
                    "process",
                    "the arrival process: closed, constant, poisson, b-model or diurnal",
                )
            })?;
            let rates = if a.is_table("rates") {
                a.table("rates")?.map(rate_range).transpose()?
            } else {
                a.floats("rates", RATE.min, RATE.max)?
            };
            let before = e.arrivals.len();
            match (process, rates) {
                ("closed", None) => e.arrivals.push(ExperimentArrival {
                    process: process.into(),
                    rate: None,
                }),
                ("closed", Some(_)) => return Err(a.error("rates", "a closed loop has no rate; drop `rates`")),
                ("event-time", _) => return Err(a.error("process", "event-time arrivals replay a workload's own event times; bench takes closed, constant, poisson, b-model or diurnal")),
                (_, Some(rates)) if !rates.is_empty() => {
                    e.arrivals.extend(rates.into_iter().map(|r| ExperimentArrival {
                        process: process.into(),
                        rate: Some(r),
                    }));
                }
                (_, _) => return Err(a.missing("rates", "the open-loop rates to run, requests per second, like [1000, 10000]")),
            }
            // two runs of one cell name would share their results files
            for i in before..e.arrivals.len() {
                let name = e.arrivals[i].name();
                if e.arrivals[..i].iter().any(|x| x.name() == name) {
                    let key = if process == "closed" {
                        "process"
                    } else {
                        "rates"
                    };
                    return Err(a.error(
                        key,
                        format!("`{name}` is listed already (two rates the same, or a rate sweep whose steps round to one rate); each arrival and rate once"),
                    ));
                }
            }
            a.finish()?;
        }
        if e.workloads.is_empty() {
            return Err(top.missing(
                "workload",
                "at least one [[workload]] with `config = \"...\"` or `trace = \"...\"`",
            ));
        }
        if e.stores.is_empty() {
            return Err(top.missing(
                "store",
                "at least one [[store]] with `kind = \"rocksdb\"` (or another store)",
            ));
        }
        if e.arrivals.is_empty() {
            e.arrivals.push(ExperimentArrival {
                process: "closed".into(),
                rate: None,
            });
        }
        unique(&top, "workload", e.workloads.iter().map(|w| &w.name))?;
        unique(&top, "store", e.stores.iter().map(|s| &s.name))?;
        if let Some((name, at)) = baseline_name {
            e.baseline =
                Some(baseline(&e, &name).map_err(|m| doc.error(at, "experiment.baseline", m))?);
        }
        e.check_size().map_err(|m| top.section_error(m))?;
        top.finish()?;
        Ok(e)
    }
}

/// The baseline `name` names: one store, workload or arrival (`poisson-20000`), of a
/// dimension with two entries or more; else what is wrong.
fn baseline(e: &Experiment, name: &str) -> Result<Baseline, String> {
    let names = [
        (
            Dimension::Workload,
            e.workloads
                .iter()
                .map(|w| w.name.clone())
                .collect::<Vec<_>>(),
        ),
        (
            Dimension::Store,
            e.stores.iter().map(|s| s.name.clone()).collect(),
        ),
        (
            Dimension::Arrival,
            e.arrivals.iter().map(ExperimentArrival::name).collect(),
        ),
    ];
    let found: Vec<(Dimension, usize, usize)> = names
        .iter()
        .filter_map(|(d, list)| Some((*d, list.iter().position(|n| n == name)?, list.len())))
        .collect();
    match found.as_slice() {
        [(dimension, index, others)] if *others >= 2 => Ok(Baseline {
            dimension: *dimension,
            index: *index,
            name: name.to_string(),
        }),
        [_] => Err(format!(
            "`{name}` is the only one of its kind; a baseline needs others of its kind to compare with it"
        )),
        [] => {
            let all: Vec<&str> = names
                .iter()
                .flat_map(|(_, l)| l.iter().map(String::as_str))
                .collect();
            Err(format!(
                "`{name}` names no store, workload or arrival of this experiment; one of: {}",
                all.join(", ")
            ))
        }
        _ => Err(format!(
            "`{name}` names a store and a workload (or an arrival) alike; give one of them another `name`"
        )),
    }
}

/// `rates = { from = 1000, to = 100000, steps = 8, spacing = "log" }`: `steps` rates from
/// `from` to `to`, evenly spaced (`linear`, the default) or by a constant factor (`log`).
fn rate_range(t: Section<'_>) -> Result<Vec<f64>, ConfigError> {
    let from = t
        .float("from", RATE.min, RATE.max)?
        .ok_or_else(|| t.missing("from", "the lowest rate, requests per second"))?;
    let to = t
        .float("to", RATE.min, RATE.max)?
        .ok_or_else(|| t.missing("to", "the highest rate, requests per second"))?;
    let steps = t
        .int("steps", 2, 1000)?
        .ok_or_else(|| t.missing("steps", "how many rates from `from` to `to`, both included"))?
        as usize;
    let log = t.choice("spacing", &["linear", "log"])? == Some("log");
    if to <= from {
        return Err(t.error(
            "to",
            format!("must be above `from` ({})", gadget::document::number(from)),
        ));
    }
    t.finish()?;
    Ok((0..steps)
        .map(|i| {
            let f = i as f64 / (steps - 1) as f64;
            let r = if log {
                from * (to / from).powf(f)
            } else {
                from + (to - from) * f
            };
            // rates people read: whole requests per second, unless they are below ten
            if from >= 10.0 {
                r.round()
            } else {
                r
            }
        })
        .collect())
}

fn workload(w: &Section<'_>) -> Result<ExperimentWorkload, ConfigError> {
    let configs = match w.strings("configs")? {
        Some(list) if list.len() < 2 => {
            return Err(w.error(
                "configs",
                "list two configs or more to run at once; one is `config = \"...\"`",
            ))
        }
        Some(list) => Some(
            list.iter()
                .map(|p| relative_to(w, "configs", p))
                .collect::<Result<_, _>>()?,
        ),
        None => match w.string("config")? {
            Some(c) => Some(vec![relative_to(w, "config", &c)?]),
            None => None,
        },
    };
    let trace = match w.string("trace")? {
        Some(t) => Some(relative_to(w, "trace", &t)?),
        None => None,
    };
    let file = match (configs, trace) {
        (Some(c), None) => WorkloadFile::Config(c),
        (None, Some(t)) => WorkloadFile::Trace(t),
        (Some(_), Some(_)) => {
            return Err(w.error("trace", "give `config` (or `configs`) or `trace`, not both"))
        }
        (None, None) => {
            return Err(w.missing(
                "config",
                "the workload's config, `configs = [...]` for co-located ones, or `trace = \"...\"` for a trace file",
            ))
        }
    };
    let stems: Vec<String> = match &file {
        WorkloadFile::Config(ps) => ps.iter().map(|p| default_name(p)).collect(),
        WorkloadFile::Trace(p) => vec![default_name(p)],
    };
    let name = w.string("name")?.unwrap_or_else(|| stems.join("+"));
    check_name(w, "name", &name)?;
    let properties = match w.table("properties")? {
        Some(t) => {
            let entries = t.text_entries(&[])?;
            for (k, v, _) in &entries {
                if k.chars().chain(v.chars()).any(char::is_control) {
                    return Err(t.error(
                        k,
                        "holds a control character (a NUL, a tab, a line break), which a run's command line cannot carry; remove it",
                    ));
                }
            }
            entries.into_iter().map(|(k, v, _)| (k, v)).collect()
        }
        None => Vec::new(),
    };
    let input_passes = w.int("input_passes", 1, 100_000)?.map(|n| n as u64);
    let limit = w.int("limit", 1, i64::MAX)?.map(|n| n as u64);
    if matches!(file, WorkloadFile::Trace(_)) {
        for (key, set) in [
            ("properties", !properties.is_empty()),
            ("input_passes", input_passes.is_some()),
        ] {
            if set {
                return Err(w.error(key, "applies to configs, not to a trace"));
            }
        }
    }
    let origin = match &file {
        WorkloadFile::Trace(_) => w.origin("trace"),
        WorkloadFile::Config(_) if w.has("configs") => w.origin("configs"),
        WorkloadFile::Config(_) => w.origin("config"),
    };
    Ok(ExperimentWorkload {
        name,
        file,
        origin,
        properties,
        input_passes,
        limit,
    })
}

/// `path` as written at `key` of `w`'s file: relative to that file's folder, and never read
/// as a flag by the run it is given to (`-dash.gtrace` becomes `./-dash.gtrace`).
fn relative_to(w: &Section<'_>, key: &str, path: &str) -> Result<PathBuf, ConfigError> {
    file_path(w.folder(), path).map_err(|message| w.error(key, message))
}

/// A file's name without its extension.
fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn store(s: &Section<'_>) -> Result<ExperimentStore, ConfigError> {
    let kind = s.string("kind")?.ok_or_else(|| {
        s.missing(
            "kind",
            "the store, such as rocksdb, lmdb or redis-cluster (`gadget run --help` lists them)",
        )
    })?;
    let kind = StoreKind::from_name(&kind).ok_or_else(|| {
        s.error(
            "kind",
            format!(
                "the {kind:?} store is not in this build of gadget; it has {}",
                StoreKind::names()
            ),
        )
    })?;
    let name = s.string("name")?.unwrap_or_else(|| kind.name().to_string());
    check_name(s, "name", &name)?;
    let mut flags = Vec::new();
    let mut given = Vec::new();
    let mut settings = Vec::new();
    // in file order, each read by its type: an error names the line and what is allowed
    for (key, _, _) in s.text_entries(&["kind", "name"])? {
        given.push((key.clone(), s.origin(&key)));
        let Some(setting) = experiment_store_settings().find(|d| d.key == key) else {
            let keys: Vec<&str> = experiment_store_settings().map(|d| d.key).collect();
            return Err(s.error(
                &key,
                format!(
                    "unknown store setting; allowed: kind, name, {}",
                    keys.join(", ")
                ),
            ));
        };
        if let Some(value) = setting.read(s, setting.key)? {
            if let Some(text) = value.value.as_flag() {
                flags.push((setting.flag(), text));
            }
            settings.push(value);
        }
    }
    Ok(ExperimentStore {
        name,
        kind,
        flags,
        given,
        settings,
    })
}

/// Names become file names and, joined by `.`, cell names: letters, digits, `_`, `-` and
/// `+` only, not starting with `-`, at most [`MAX_NAME_LEN`] characters.
fn check_name(s: &Section<'_>, key: &str, name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+'));
    if !ok {
        return Err(s.error(key, format!("`{}` cannot name cells and files; use letters, digits, '_', '-' and '+', not starting with '-' ('.' joins the names of a cell: set `name = \"...\"`)", name.escape_debug())));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(s.error(
            key,
            format!(
                "`{}…` is {} characters long; names make file names: at most {MAX_NAME_LEN} (set `name = \"...\"`)",
                &name[..MAX_NAME_LEN / 2],
                name.len()
            ),
        ));
    }
    Ok(())
}

/// A file's stem as a default name: its dots (`x.spark` of `x.spark.toml`), which join the
/// names of a cell, become `_`, and leading dashes (`-x.gtrace`) go.
fn default_name(p: &Path) -> String {
    stem(p)
        .replace('.', "_")
        .trim_start_matches('-')
        .to_string()
}

fn unique<'n>(
    top: &Section<'_>,
    what: &str,
    names: impl Iterator<Item = &'n String>,
) -> Result<(), ConfigError> {
    let mut seen: Vec<&String> = Vec::new();
    for n in names {
        if seen.contains(&n) {
            return Err(top.section_error(format!(
                "two [[{what}]] sections are named `{n}`; give each a `name = \"...\"` of its own"
            )));
        }
        seen.push(n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Experiment, ConfigError> {
        Experiment::parse(text, Path::new("dir/exp.toml"))
    }

    /// A store's flags as `(flag, value)` pairs of strings.
    fn flags_of(store: &ExperimentStore) -> Vec<(&str, Option<&str>)> {
        store
            .flags
            .iter()
            .map(|(f, v)| (f.as_str(), v.as_deref()))
            .collect()
    }

    #[test]
    fn an_experiment_crosses_workloads_stores_and_rates() {
        let e = parse(
            r#"
[experiment]
seed = 7
repetitions = 2
duration = "5s"
warmup = 1000

[[workload]]
config = "ycsb/workloada.toml"
[[workload]]
name = "tumbling"
trace = "/t/tumbling.gtrace"

[[store]]
kind = "rocksdb"
name = "rocksdb-current"
rocksdb_lib = "current"
write_buffer_mb = 64
wal = true
store_counters = false

[[arrival]]
process = "closed"
[[arrival]]
process = "poisson"
rates = [1000, 2500.5]
"#,
        )
        .unwrap();
        assert_eq!((e.seed, e.repetitions, e.order), (7, 2, RunOrder::Blocks));
        assert_eq!(
            (e.duration.as_deref(), e.warmup.as_deref()),
            (Some("5s"), Some("1000"))
        );
        assert_eq!(e.workloads[0].name, "workloada");
        assert_eq!(
            e.workloads[0].file,
            WorkloadFile::Config(vec!["dir/ycsb/workloada.toml".into()])
        );
        assert_eq!(
            e.workloads[1].file,
            WorkloadFile::Trace("/t/tumbling.gtrace".into())
        );
        let flags = flags_of(&e.stores[0]);
        assert_eq!(
            flags,
            [
                ("--rocksdb-lib", Some("current")),
                ("--write-buffer-mb", Some("64")),
                ("--wal", None)
            ]
        );
        let arrivals: Vec<String> = e.arrivals.iter().map(ExperimentArrival::name).collect();
        assert_eq!(arrivals, ["closed", "poisson-1000", "poisson-2500.5"]);
    }

    #[test]
    fn mistakes_name_the_line_and_what_is_allowed() {
        let base = "[[workload]]\nconfig = \"a.toml\"\n";
        let cases = [
            (
                format!("{base}[[store]]\nkind = \"rocksdb\"\nblock_cache = 1\n"),
                ":5:",
                "allowed: kind, name, rocksdb_lib",
            ),
            (
                format!("{base}[[store]]\nkind = \"memory\"\n[[arrival]]\nprocess = \"poisson\"\n"),
                "arrival[1].rates",
                "rates to run",
            ),
            (
                format!("{base}[[store]]\nkind = \"memory\"\n[[store]]\nkind = \"memory\"\n"),
                "named `memory`",
                "name = ",
            ),
            (
                format!("{base}[[store]]\nkind = \"memory\"\nname = \"a/b\"\n"),
                ":5:",
                "cannot name cells and files",
            ),
            (
                format!("{base}[experiment]\nduration = \"soon\"\n[[store]]\nkind = \"memory\"\n"),
                ":4:",
                "at least 1ms",
            ),
            (
                "[[store]]\nkind = \"memory\"\n".to_string(),
                "workload",
                "at least one [[workload]]",
            ),
            (
                format!("{base}[[store]]\nkind = \"rocks\"\n"),
                ":4: `store[1].kind`",
                "the \"rocks\" store is not in this build of gadget; it has memory",
            ),
            (
                format!("{base}[[store]]\nname = \"m\"\nkind = \"x\\u0000y\"\n"),
                ":5: `store[1].kind`",
                "the \"x\\0y\" store is not in this build",
            ),
        ];
        for (text, at, says) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(at) && e.contains(says), "{text}\n=> {e}");
        }
    }

    #[test]
    fn store_settings_are_typed_and_paths_never_look_like_flags() {
        let e = Experiment::parse(
            "[[workload]]\ntrace = \"-x.gtrace\"\n[[store]]\nkind = \"rocksdb\"\n\
             rocksdb_lib = \"lib/librocksdb.so\"\nredis_timeout = \"2s\"\n\
             value_compression_ratio = 1\nstore_counters = false\n",
            Path::new("e.toml"),
        )
        .unwrap();
        assert_eq!(
            e.workloads[0].file,
            WorkloadFile::Trace("./-x.gtrace".into())
        );
        assert_eq!(e.workloads[0].name, "x");
        let flags = flags_of(&e.stores[0]);
        assert_eq!(
            flags,
            [
                ("--rocksdb-lib", Some("lib/librocksdb.so")),
                ("--redis-timeout", Some("2s")),
                ("--value-compression-ratio", Some("1")),
            ]
        );
        for (setting, says) in [
            ("store_counters = \"/x.gtrace\"", "must be true or false"),
            ("write_buffers = 0", "out of range"),
            ("redis_timeout = \"2 days\"", "from 1ms to 1h"),
            ("redis_url = \"--help\"", "not a Redis URL"),
            ("rocksdb_lib = \"--help\"", "not a RocksDB library"),
        ] {
            let text =
                format!("[[workload]]\ntrace = \"t\"\n[[store]]\nkind = \"rocksdb\"\n{setting}\n");
            let err = parse(&text).unwrap_err().to_string();
            assert!(
                err.contains(":5:") && err.contains(says),
                "{setting} => {err}"
            );
        }
    }

    #[test]
    fn a_rate_sweep_is_spaced_evenly_or_by_a_constant_factor() {
        let e = parse(
            "[experiment]\nlatency_bound = \"1ms\"\nlatency_percentile = \"p999\"\n\
             [[workload]]\ntrace = \"t.gtrace\"\n[[store]]\nkind = \"memory\"\n\
             [[arrival]]\nprocess = \"constant\"\nrates = { from = 1000, to = 4000, steps = 4 }\n\
             [[arrival]]\nprocess = \"poisson\"\nrates = { from = 100, to = 10000, steps = 3, spacing = \"log\" }\n",
        )
        .unwrap();
        let rates: Vec<f64> = e.arrivals.iter().filter_map(|a| a.rate).collect();
        assert_eq!(
            rates,
            [1000.0, 2000.0, 3000.0, 4000.0, 100.0, 1000.0, 10000.0]
        );
        assert_eq!(
            (e.latency_bound_ns, e.latency_percentile.as_str()),
            (Some(1_000_000), "p999")
        );
        let bad = "[[workload]]\ntrace = \"t\"\n[[store]]\nkind = \"memory\"\n[[arrival]]\nprocess = \"constant\"\nrates = { from = 10, to = 5, steps = 2 }\n";
        let e = parse(bad).unwrap_err().to_string();
        assert!(
            e.contains(":7:") && e.contains("must be above `from`"),
            "{e}"
        );
    }

    #[test]
    fn co_located_configs_properties_and_passes_belong_to_a_workload() {
        let e = parse(
            "[[workload]]\nconfigs = [\"a.toml\", \"/b.toml\"]\ninput_passes = 3\nlimit = 9\n\
             [workload.properties]\nrecordcount = 1000\nrequestdistribution = \"zipfian\"\n\
             [[store]]\nkind = \"rocksdb\"\nshared_store = true\n",
        )
        .unwrap();
        let w = &e.workloads[0];
        assert_eq!(w.name, "a+b");
        assert_eq!(
            w.file,
            WorkloadFile::Config(vec!["dir/a.toml".into(), "/b.toml".into()])
        );
        let props: Vec<(&str, &str)> = w
            .properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            props,
            [("recordcount", "1000"), ("requestdistribution", "zipfian")]
        );
        assert_eq!((w.input_passes, w.limit), (Some(3), Some(9)));
        let e =
            parse("[[workload]]\ntrace = \"t\"\ninput_passes = 2\n[[store]]\nkind = \"memory\"\n")
                .unwrap_err();
        assert!(e.to_string().contains("applies to configs"), "{e}");
    }

    #[test]
    fn arrivals_default_to_a_closed_loop() {
        let e =
            parse("[[workload]]\ntrace = \"t.gtrace\"\n[[store]]\nkind = \"memory\"\n").unwrap();
        assert_eq!(
            e.arrivals,
            [ExperimentArrival {
                process: "closed".into(),
                rate: None
            }]
        );
        assert_eq!(e.repetitions, 3);
    }
}
