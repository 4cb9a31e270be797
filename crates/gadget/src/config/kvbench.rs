//! KVBench workloads as configs: a `[kvbench]` section whose keys are KVBench's command-line
//! flags, one key per flag (docs/kvbench.md has the table), optionally on top of a preset.

use std::path::Path;
use std::sync::Arc;

use super::{run, Config, ConfigError, OperatorConfig, SourceConfig};
use crate::baseline::kvbench::{KvbenchSpec, Preload, Preset, PRESET_OPERATIONS};
use crate::baseline::kvbench_generators::{IndexDistribution, KeyArena};
use crate::baseline::ycsb::Phase;
use crate::document::Section;

/// Top-level keys of a streaming workload that a KVBench workload has no use for.
const STREAMING_ONLY: &[&str] = &[
    "max_parallelism",
    "parallelism",
    "source",
    "left",
    "right",
    "operator",
];

/// Largest normal standard deviation (a multiple of the candidates): wider normals are
/// uniform for all purposes, and redrawing until a draw lands among the candidates gets slow.
const MAX_NORMAL_STDDEV: f64 = 1000.0;

/// Largest count of one operation kind.
const MAX_COUNT: i64 = 1 << 40;

/// The keys of one operation's distribution (`--XD`, `--XD_NMP`, …).
struct DistributionKeys {
    distribution: &'static str,
    normal_mean: &'static str,
    normal_stddev: &'static str,
    beta_alpha: &'static str,
    beta_beta: &'static str,
    zipf_alpha: &'static str,
}

macro_rules! distribution_keys {
    ($prefix:literal) => {
        DistributionKeys {
            distribution: concat!($prefix, "_distribution"),
            normal_mean: concat!($prefix, "_normal_mean"),
            normal_stddev: concat!($prefix, "_normal_stddev"),
            beta_alpha: concat!($prefix, "_beta_alpha"),
            beta_beta: concat!($prefix, "_beta_beta"),
            zipf_alpha: concat!($prefix, "_zipf_alpha"),
        }
    };
}

/// Reads one operation's distribution; `current` is the preset's (or KVBench's default).
fn parse_distribution(
    s: &Section<'_>,
    keys: &DistributionKeys,
    current: IndexDistribution,
) -> Result<IndexDistribution, ConfigError> {
    let chosen = s.choice(keys.distribution, &["uniform", "normal", "beta", "zipfian"])?;
    let name = chosen.unwrap_or(current.name());
    let params: [(&'static str, &'static str); 5] = [
        (keys.normal_mean, "normal"),
        (keys.normal_stddev, "normal"),
        (keys.beta_alpha, "beta"),
        (keys.beta_beta, "beta"),
        (keys.zipf_alpha, "zipfian"),
    ];
    for (key, belongs) in params {
        if s.has(key) && belongs != name {
            return Err(s.error(
                key,
                format!(
                    "applies to {} = \"{belongs}\", but the distribution is \"{name}\"; remove it or set {} = \"{belongs}\"",
                    keys.distribution, keys.distribution
                ),
            ));
        }
    }
    // A preset's own parameters carry over unless the distribution is re-chosen.
    let keep = chosen.is_none() || chosen == Some(current.name());
    Ok(match name {
        "normal" => {
            let (m0, d0) = match current {
                IndexDistribution::Normal { mean, stddev } if keep => (mean, stddev),
                _ => (0.5, 1.0),
            };
            IndexDistribution::Normal {
                mean: s.float(keys.normal_mean, 0.0, 1.0)?.unwrap_or(m0),
                stddev: s
                    .float(keys.normal_stddev, f64::MIN_POSITIVE, MAX_NORMAL_STDDEV)?
                    .unwrap_or(d0),
            }
        }
        "beta" => {
            let (a0, b0) = match current {
                IndexDistribution::Beta { alpha, beta } if keep => (alpha, beta),
                _ => (1.0, 1.0),
            };
            IndexDistribution::Beta {
                alpha: s.float(keys.beta_alpha, 1e-6, 1e6)?.unwrap_or(a0),
                beta: s.float(keys.beta_beta, 1e-6, 1e6)?.unwrap_or(b0),
            }
        }
        "zipfian" => {
            let a0 = match current {
                IndexDistribution::Zipfian { alpha } if keep => alpha,
                _ => 1.0,
            };
            IndexDistribution::Zipfian {
                alpha: s.float(keys.zipf_alpha, 0.0, 1e6)?.unwrap_or(a0),
            }
        }
        _ => IndexDistribution::Uniform,
    })
}

/// Reads the keys of the `I` lines of a KVBench workload file (`I <key> <value>`), without
/// repeats, in file order (KVBench's `--PL`).
fn read_preload(path: &Path) -> Result<KeyArena, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut keys = KeyArena::new();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        if fields.next() != Some("I") {
            continue;
        }
        let Some(key) = fields.next() else {
            return Err(format!(
                "{}:{}: an `I` line without a key; KVBench writes `I <key> <value>`",
                path.display(),
                i + 1
            ));
        };
        if seen.insert(key) {
            keys.push(key.as_bytes());
        }
    }
    if keys.is_empty() {
        return Err(format!(
            "{} has no insert (`I <key> <value>` line); give a workload written by KVBench's `load_gen -I <n>`",
            path.display()
        ));
    }
    Ok(keys)
}

/// Reads a `[kvbench]` section into a spec.
fn parse_spec(s: &Section<'_>) -> Result<KvbenchSpec, ConfigError> {
    let preset = match s.string("preset")? {
        None => None,
        Some(name) => Some(Preset::from_name(&name).ok_or_else(|| {
            s.error(
                "preset",
                format!("`{name}` is not a KVBench preset; use one of: I, II, III, IV, V"),
            )
        })?),
    };
    let operations = s.int("operations", 1, MAX_COUNT)?;
    let mut spec = match preset {
        Some(p) => p.spec(operations.map_or(PRESET_OPERATIONS, |n| n as u64)),
        None => {
            if operations.is_some() {
                return Err(s.error(
                    "operations",
                    "scales a preset; without `preset` give the counts themselves (inserts, updates, point_queries, ...)",
                ));
            }
            KvbenchSpec::default()
        }
    };
    let count = |key: &'static str, current: u64| -> Result<u64, ConfigError> {
        Ok(s.int(key, 0, MAX_COUNT)?.map_or(current, |n| n as u64))
    };
    let fraction = |key: &'static str, current: f64| -> Result<f64, ConfigError> {
        Ok(s.float(key, 0.0, 1.0)?.unwrap_or(current))
    };
    spec.inserts = count("inserts", spec.inserts)?;
    spec.updates = count("updates", spec.updates)?;
    spec.point_deletes = count("point_deletes", spec.point_deletes)?;
    spec.range_deletes = count("range_deletes", spec.range_deletes)?;
    spec.range_delete_selectivity =
        fraction("range_delete_selectivity", spec.range_delete_selectivity)?;
    spec.point_queries = count("point_queries", spec.point_queries)?;
    spec.range_queries = count("range_queries", spec.range_queries)?;
    spec.range_query_selectivity =
        fraction("range_query_selectivity", spec.range_query_selectivity)?;
    spec.empty_query_fraction = fraction("empty_query_fraction", spec.empty_query_fraction)?;
    spec.empty_delete_fraction = fraction("empty_delete_fraction", spec.empty_delete_fraction)?;
    spec.unique_empty_query_fraction = fraction(
        "unique_empty_query_fraction",
        spec.unique_empty_query_fraction,
    )?;
    spec.unique_existing_query_fraction = fraction(
        "unique_existing_query_fraction",
        spec.unique_existing_query_fraction,
    )?;
    spec.entry_size = s
        .int("entry_size", 2, 1 << 20)?
        .map_or(spec.entry_size, |n| n as u32);
    spec.lambda = s.float("lambda", 1e-9, 1.0)?.unwrap_or(spec.lambda);
    if spec.key_size() < 2 {
        let key = if s.has("lambda") {
            "lambda"
        } else {
            "entry_size"
        };
        return Err(s.error(
            key,
            format!(
                "keys of ⌊lambda × entry_size⌋ = {} bytes; KVBench keys start with a 2-character prefix, so raise entry_size or lambda",
                spec.key_size()
            ),
        ));
    }
    spec.insert_distribution =
        parse_distribution(s, &distribution_keys!("insert"), spec.insert_distribution)?;
    spec.update_distribution =
        parse_distribution(s, &distribution_keys!("update"), spec.update_distribution)?;
    spec.existing_query_distribution = parse_distribution(
        s,
        &distribution_keys!("existing_query"),
        spec.existing_query_distribution,
    )?;
    spec.empty_query_distribution = parse_distribution(
        s,
        &distribution_keys!("empty_query"),
        spec.empty_query_distribution,
    )?;
    let t = &mut spec.thresholds;
    t.update = fraction("update_threshold", t.update)?;
    t.point_delete = fraction("point_delete_threshold", t.point_delete)?;
    t.range_delete = fraction("range_delete_threshold", t.range_delete)?;
    t.point_query = fraction("point_query_threshold", t.point_query)?;
    t.range_query = fraction("range_query_threshold", t.range_query)?;
    if s.has("preload") {
        spec.preload = match s.string_or_int("preload")? {
            Some(Ok(n)) if (0..=MAX_COUNT).contains(&n) => {
                if n == 0 {
                    Preload::None
                } else {
                    Preload::Generate(n as u64)
                }
            }
            Some(Ok(n)) => {
                return Err(s.error(
                    "preload",
                    format!("{n} is out of range; give a key count in [0, {MAX_COUNT}] or a KVBench workload file"),
                ))
            }
            Some(Err(_)) => {
                let path = s.path("preload")?.expect("a string");
                let keys = read_preload(&path).map_err(|m| s.error("preload", m))?;
                Preload::Keys {
                    path,
                    keys: Arc::new(keys),
                }
            }
            None => unreachable!("has the key"),
        };
    }
    spec.phase = match s.choice("phase", &["load", "run", "both"])? {
        Some("load") => Phase::Load,
        Some("run") => Phase::Run,
        Some(_) => Phase::Both,
        None => spec.phase,
    };
    check(s, &spec)?;
    Ok(spec)
}

/// Cross-key checks: the ones KVBench makes, and the ones without which it would loop forever.
fn check(s: &Section<'_>, spec: &KvbenchSpec) -> Result<(), ConfigError> {
    let preloaded = spec.preload.len();
    if spec.operations() == 0 && preloaded == 0 {
        return Err(s.missing(
            "inserts",
            "no operation; set counts (inserts, updates, point_deletes, range_deletes, point_queries, range_queries) or a preset",
        ));
    }
    if spec.phase == Phase::Load && preloaded == 0 {
        return Err(s.error(
            "phase",
            "\"load\" issues the preload's inserts, and there is no preload; set `preload` or use \"run\"",
        ));
    }
    let needs_keys = spec.updates + spec.point_deletes + spec.point_queries + spec.range_deletes;
    if needs_keys > 0 && spec.inserts + preloaded == 0 {
        return Err(s.missing(
            "inserts",
            "updates, deletes and queries need keys; set `inserts` or `preload` (KVBench: inserts or a non-empty preloaded workload must be specified)",
        ));
    }
    let deletable = spec.point_deletes as f64
        + spec.range_deletes as f64 * spec.range_delete_selectivity * spec.inserts as f64;
    if (spec.inserts + preloaded) as f64 > 0.0 && ((spec.inserts + preloaded) as f64) < deletable {
        return Err(s.error(
            "point_deletes",
            format!(
                "inserts + preload = {} is below point_deletes + range_deletes × range_delete_selectivity × inserts = {deletable}; KVBench refuses to delete more keys than it inserts",
                spec.inserts + preloaded
            ),
        ));
    }
    let universe = spec.inserts + preloaded + spec.empty_keys();
    if universe >= u32::MAX as u64 {
        return Err(s.error(
            "inserts",
            format!(
                "{universe} distinct keys; Gadget's KVBench keeps at most {} keys",
                u32::MAX - 1
            ),
        ));
    }
    let space = 62f64.powi(spec.key_size().min(40) as i32);
    if universe as f64 > space / 2.0 {
        let key = if s.has("entry_size") {
            "entry_size"
        } else {
            "lambda"
        };
        return Err(s.error(
            key,
            format!(
                "{universe} distinct keys need more than half of the 62^{} possible {}-byte keys; raise entry_size or lambda",
                spec.key_size(),
                spec.key_size()
            ),
        ));
    }
    Ok(())
}

/// A config from a TOML file with a `[kvbench]` section; `top` has had `seed` and `limit` read.
pub(super) fn from_section(
    top: Section<'_>,
    kvbench: Section<'_>,
    seed: u64,
    limit: Option<u64>,
) -> Result<Config, ConfigError> {
    for key in STREAMING_ONLY {
        if top.has(key) {
            return Err(top.error(
                key,
                "a [kvbench] workload has no source, operator or key groups; remove it, or move the [kvbench] section to a config of its own",
            ));
        }
    }
    if top.has("ycsb") {
        return Err(top.error(
            "ycsb",
            "a config is one workload; give [ycsb] and [kvbench] configs of their own",
        ));
    }
    let run_section = top.table("run")?;
    top.finish()?;
    let run = match run_section {
        Some(r) => {
            let settings = run::parse_run(&r)?;
            r.finish()?;
            settings
        }
        None => run::RunSettings::default(),
    };
    let spec = parse_spec(&kvbench)?;
    kvbench.finish()?;
    let mut warnings = Vec::new();
    if spec.empty_delete_fraction > 0.0 {
        warnings.push("kvbench.empty_delete_fraction (KVBench's -z) has no effect: KVBench's generator parses it and never uses it; every point delete targets an existing key".to_string());
    }
    if spec.unique_existing_query_fraction != 0.5 {
        warnings.push("kvbench.unique_existing_query_fraction (KVBench's --UE) has no effect: KVBench's generator parses it and never uses it".to_string());
    }
    let mut json = serde_json::json!({ "seed": seed, "kvbench": spec.to_json() });
    if let Some(l) = limit {
        json["limit"] = l.into();
    }
    let spec = Box::new(spec);
    Ok(Config {
        seed,
        max_parallelism: 128,
        parallel: super::Parallelism::default(),
        timers: crate::timer::TimerService::Heap,
        source: SourceConfig::Kvbench(spec.clone()),
        operator: OperatorConfig::Kvbench(spec),
        operator_name: "kvbench".to_string(),
        limit,
        warnings,
        run,
        json,
    })
}
