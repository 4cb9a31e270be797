//! YCSB workloads as configs: a `[ycsb]` section of a TOML config, or YCSB's own
//! `.properties` workload file, either with `-p key=value` overrides.

use std::path::Path;

use super::properties::{Origin, Properties, Property};
use super::{run, Config, ConfigError, OperatorConfig, SourceConfig};
use crate::baseline::ycsb::{LengthDistribution, Phase, RequestDistribution, YcsbSpec};
use crate::document::{Document, Section};
use crate::trace::MAX_VALUE_LEN;

/// Top-level keys of a streaming workload that a YCSB workload has no use for.
const STREAMING_ONLY: &[&str] = &[
    "max_parallelism",
    "parallelism",
    "source",
    "left",
    "right",
    "operator",
];

/// Applies `-p key=value` overrides on top of `props`.
fn apply_overrides(props: &mut Properties, overrides: &[String]) -> Result<(), ConfigError> {
    for o in overrides {
        let (key, value) = Properties::parse_override(o)?;
        props.set(&key, &value, Origin::CommandLine);
    }
    Ok(())
}

/// Reads a YCSB `.properties` file.
fn read_properties(path: &Path) -> Result<Properties, ConfigError> {
    let text = crate::document::read_text(path)?;
    Ok(Properties::parse_file(&text, path))
}

/// A config from a YCSB workload file as YCSB ships it (`workloads/workloada`).
pub(super) fn from_properties_file(
    text: &str,
    path: &Path,
    overrides: &[String],
) -> Result<Config, ConfigError> {
    let mut props = Properties::parse_file(text, path);
    apply_overrides(&mut props, overrides)?;
    build(props, 0, None, run::RunSettings::default())
}

/// A config from a TOML file with a `[ycsb]` section; `top` has had `seed` and `limit` read.
pub(super) fn from_section(
    doc: &Document<'_>,
    top: Section<'_>,
    ycsb: Section<'_>,
    seed: u64,
    limit: Option<u64>,
    overrides: &[String],
) -> Result<Config, ConfigError> {
    for key in STREAMING_ONLY {
        if top.has(key) {
            return Err(top.error(
                key,
                "a [ycsb] workload has no source, operator or key groups; remove it, or move the [ycsb] section to a config of its own",
            ));
        }
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
    let mut props = match ycsb.path("properties")? {
        Some(file) => read_properties(&file).map_err(|e| match e {
            ConfigError::Io { source, .. } => ycsb.error(
                "properties",
                format!("cannot read {}: {source}", file.display()),
            ),
            other => other,
        })?,
        None => Properties::new(),
    };
    for (key, value, line) in ycsb.text_entries(&["properties"])? {
        props.set(
            &key,
            &value,
            Origin::File {
                path: doc.path.to_path_buf(),
                line,
            },
        );
    }
    ycsb.finish()?;
    apply_overrides(&mut props, overrides)?;
    build(props, seed, limit, run)
}

fn build(
    props: Properties,
    seed: u64,
    limit: Option<u64>,
    run: run::RunSettings,
) -> Result<Config, ConfigError> {
    let (spec, warnings) = YcsbSpec::from_properties(&props)?;
    let effective: serde_json::Map<String, serde_json::Value> = props
        .iter()
        .map(|p| (p.key.clone(), p.value.clone().into()))
        .collect();
    let mut json = serde_json::json!({ "seed": seed, "ycsb": effective });
    if let Some(l) = limit {
        json["limit"] = l.into();
    }
    let spec = Box::new(spec);
    Ok(Config {
        seed,
        max_parallelism: 128,
        parallel: super::Parallelism::default(),
        timers: crate::timer::TimerService::Heap,
        source: SourceConfig::Ycsb(spec.clone()),
        operator: OperatorConfig::Ycsb(spec),
        operator_name: "ycsb".to_string(),
        limit,
        warnings,
        run,
        json,
    })
}

/// YCSB properties that shape the stream (and Gadget's `phase`).
pub const PROPERTIES: &[&str] = &[
    "workload",
    "table",
    "recordcount",
    "operationcount",
    "insertstart",
    "insertcount",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "requestdistribution",
    "insertorder",
    "zeropadding",
    "fieldcount",
    "fieldlength",
    "minfieldlength",
    "fieldlengthdistribution",
    "readallfields",
    "writeallfields",
    "minscanlength",
    "maxscanlength",
    "scanlengthdistribution",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "exponential.percentile",
    "exponential.frac",
    "target",
    "phase",
];

/// YCSB properties that do not change the state accesses (measurement, threads, retries,
/// value contents, DB choice): accepted and listed in a warning.
pub const IGNORED_PROPERTIES: &[&str] = &[
    "threadcount",
    "db",
    "measurementtype",
    "measurement.interval",
    "measurement.trackjvm",
    "histogram.buckets",
    "hdrhistogram.percentiles",
    "hdrhistogram.fileoutput",
    "hdrhistogram.output.path",
    "timeseries.granularity",
    "exporter",
    "exportfile",
    "status.interval",
    "maxexecutiontime",
    "dataintegrity",
    "fieldnameprefix",
    "fieldlengthhistogram",
    "readallfieldsbyname",
    "maxscanrate",
    "scanoptimelimit",
    "discardscannedrecord",
    "core_workload_insertion_retry_limit",
    "core_workload_insertion_retry_interval",
    "core_workload_insertion_keep_going_on_error",
];

/// Largest record count: YCSB keeps record numbers in a Java `int`.
const MAX_RECORDS: u64 = i32::MAX as u64;

/// Typed access to properties, with YCSB's defaults.
struct Reader<'a> {
    props: &'a Properties,
}

impl Reader<'_> {
    fn get(&self, key: &str) -> Option<&Property> {
        self.props.get(key)
    }

    fn int(&self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
        let Some(p) = self.get(key) else {
            return Ok(default);
        };
        let n: u64 = p.value.parse().map_err(|_| {
            p.error(format!(
                "`{}` is not a whole number; allowed: [{min}, {max}]",
                p.value
            ))
        })?;
        if n < min || n > max {
            return Err(p.error(format!("{n} is out of range; allowed: [{min}, {max}]")));
        }
        Ok(n)
    }

    fn float(&self, key: &str, default: f64, min: f64, max: f64) -> Result<f64, ConfigError> {
        let Some(p) = self.get(key) else {
            return Ok(default);
        };
        let x: f64 = p.value.parse().map_err(|_| {
            p.error(format!(
                "`{}` is not a number; allowed: [{min}, {max}]",
                p.value
            ))
        })?;
        if !(x >= min && x <= max) {
            return Err(p.error(format!("{x} is out of range; allowed: [{min}, {max}]")));
        }
        Ok(x)
    }

    fn bool(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        let Some(p) = self.get(key) else {
            return Ok(default);
        };
        match p.value.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            v => Err(p.error(format!("`{v}` is not allowed; use true or false"))),
        }
    }

    fn choice(
        &self,
        key: &str,
        default: &'static str,
        allowed: &[&'static str],
    ) -> Result<&'static str, ConfigError> {
        let Some(p) = self.get(key) else {
            return Ok(default);
        };
        allowed
            .iter()
            .find(|a| **a == p.value)
            .copied()
            .ok_or_else(|| {
                p.error(format!(
                    "`{}` is not allowed; use one of: {}",
                    p.value,
                    allowed.join(", ")
                ))
            })
    }
}

impl YcsbSpec {
    /// Validates YCSB properties; also returns warnings about ignored properties.
    ///
    /// Defaults are YCSB's (`CoreWorkload` and `Client`), except `recordcount` and
    /// `operationcount`, which YCSB's own workload files always set: 1000 here.
    pub fn from_properties(props: &Properties) -> Result<(YcsbSpec, Vec<String>), ConfigError> {
        let mut warnings = Vec::new();
        for p in props.iter() {
            if PROPERTIES.contains(&p.key.as_str()) {
                continue;
            }
            if IGNORED_PROPERTIES.contains(&p.key.as_str()) {
                warnings.push(format!(
                    "YCSB property `{}` does not change the state accesses; ignored",
                    p.key
                ));
                continue;
            }
            return Err(p.error(format!(
                "unknown YCSB property (DB-binding properties have no meaning here); known: {}",
                PROPERTIES.join(", ")
            )));
        }
        let r = Reader { props };
        if let Some(p) = r.get("workload") {
            if !p.value.ends_with("workloads.CoreWorkload") {
                return Err(p.error(format!(
                    "`{}` is not supported; Gadget implements site.ycsb.workloads.CoreWorkload",
                    p.value
                )));
            }
        }
        let table = match r.get("table") {
            Some(p) if p.value.is_empty() => return Err(p.error("the table name is empty")),
            Some(p) => p.value.clone(),
            None => "usertable".to_string(),
        };
        let record_count = r.int("recordcount", 1000, 1, MAX_RECORDS)?;
        let operation_count = r.int("operationcount", 1000, 0, 1 << 40)?;
        let insert_start = r.int("insertstart", 0, 0, record_count - 1)?;
        let insert_count = r.int(
            "insertcount",
            record_count - insert_start,
            1,
            record_count - insert_start,
        )?;
        let mut proportions = [0.0; 5];
        for (i, (key, default)) in [
            ("readproportion", 0.95),
            ("updateproportion", 0.05),
            ("insertproportion", 0.0),
            ("scanproportion", 0.0),
            ("readmodifywriteproportion", 0.0),
        ]
        .into_iter()
        .enumerate()
        {
            proportions[i] = r.float(key, default, 0.0, 1e9)?;
        }
        if proportions.iter().sum::<f64>() <= 0.0 && operation_count > 0 {
            // readproportion defaults to 0.95, so it was set to 0 for the sum to be 0
            let p = r.get("readproportion").expect("set to 0");
            return Err(p.error("every operation proportion is 0; give at least one of readproportion, updateproportion, insertproportion, scanproportion, readmodifywriteproportion a positive value"));
        }
        let request_distribution = match r.choice(
            "requestdistribution",
            "uniform",
            &[
                "uniform",
                "zipfian",
                "latest",
                "hotspot",
                "sequential",
                "exponential",
            ],
        )? {
            "zipfian" => RequestDistribution::Zipfian,
            "latest" => {
                if record_count < 2 {
                    let p = r.get("requestdistribution").expect("chosen, so set");
                    return Err(p.error("latest needs recordcount of at least 2"));
                }
                RequestDistribution::Latest
            }
            "hotspot" => RequestDistribution::Hotspot {
                data_fraction: r.float("hotspotdatafraction", 0.2, 0.0, 1.0)?,
                operation_fraction: r.float("hotspotopnfraction", 0.8, 0.0, 1.0)?,
            },
            "sequential" => RequestDistribution::Sequential,
            "exponential" => RequestDistribution::Exponential {
                percentile: r.float("exponential.percentile", 95.0, 1e-9, 100.0 - 1e-9)?,
                fraction: r.float("exponential.frac", 0.857_142_857_1, 1e-12, 1e6)?,
            },
            _ => RequestDistribution::Uniform,
        };
        let ordered_inserts =
            r.choice("insertorder", "hashed", &["hashed", "ordered"])? == "ordered";
        let zero_padding = r.int("zeropadding", 1, 1, 32)? as usize;
        let field_count = r.int("fieldcount", 10, 1, 100_000)?;
        let field_length = r.int("fieldlength", 100, 1, u64::from(MAX_VALUE_LEN))?;
        let field_length_distribution = match r.choice(
            "fieldlengthdistribution",
            "constant",
            &["constant", "uniform", "zipfian"],
        )? {
            "uniform" => LengthDistribution::Uniform,
            "zipfian" => LengthDistribution::Zipfian,
            _ => LengthDistribution::Constant,
        };
        let min_field_length = r.int("minfieldlength", 1, 1, field_length)?;
        if field_count * field_length > u64::from(MAX_VALUE_LEN) {
            let p = r
                .get("fieldlength")
                .or_else(|| r.get("fieldcount"))
                .expect("a default record is 1000 bytes, so one of them is set");
            return Err(p.error(format!(
                "a record of fieldcount × fieldlength = {} bytes is above the {MAX_VALUE_LEN} \
                 bytes (64 MiB) a value may have",
                field_count * field_length
            )));
        }
        r.bool("readallfields", true)?;
        r.bool("writeallfields", false)?;
        let max_scan_length = r.int("maxscanlength", 1000, 1, 1 << 24)?;
        let min_scan_length = r.int("minscanlength", 1, 1, max_scan_length)?;
        let scan_length_distribution =
            match r.choice("scanlengthdistribution", "uniform", &["uniform", "zipfian"])? {
                "zipfian" => LengthDistribution::Zipfian,
                _ => LengthDistribution::Uniform,
            };
        let phase = match r.choice("phase", "both", &["load", "run", "both"])? {
            "load" => Phase::Load,
            "run" => Phase::Run,
            _ => Phase::Both,
        };
        let target = r.float("target", 0.0, 0.0, 1e12)?;
        Ok((
            YcsbSpec {
                table,
                record_count,
                operation_count,
                insert_start,
                insert_count,
                proportions,
                request_distribution,
                ordered_inserts,
                zero_padding,
                field_count,
                field_length,
                min_field_length,
                field_length_distribution,
                min_scan_length,
                max_scan_length,
                scan_length_distribution,
                phase,
                target: (target > 0.0).then_some(target),
            },
            warnings,
        ))
    }
}
