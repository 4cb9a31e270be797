//! YCSB workloads as configs: a `[ycsb]` section of a TOML config, or YCSB's own
//! `.properties` workload file, either with `-p key=value` overrides.

use std::path::Path;

use super::reader::{Document, Section};
use super::{run, Config, ConfigError, OperatorConfig, SourceConfig};
use crate::baseline::properties::{Origin, Properties};
use crate::baseline::ycsb::YcsbSpec;

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
    let text = super::read_text(path)?;
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
