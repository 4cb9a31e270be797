//! The original C++ Gadget's `key = value` config files, mapped onto [`Config`].
//!
//! Differences from the original, on purpose: values keep their case and inner spaces (only
//! the ends are trimmed), unknown keys are errors with their line, `allowed.lateness = false`
//! really disables `lateness.length`, hot-spot parameters mean what their names say, and a
//! time unit of the original is one second of event time (1000 ms here).

use std::path::{Path, PathBuf};

use super::{Config, ConfigError, OperatorConfig, SourceConfig, MAX_WINDOWS_PER_EVENT, MS_MAX};
use crate::engine::flink::FlinkOperator;
use crate::operator::{WindowAssigner, WindowFunction};
use crate::source::distribution::{GapDistributionSpec, KeyDistributionSpec};
use crate::source::element::WatermarkPolicy;
use crate::source::file::{FileOrder, FileSpec, KeyType, TimeUnit, TypeRouting};
use crate::source::interleave::Interleaving;
use crate::source::synthetic::SyntheticSpec;
use crate::timer::TimerService;

/// Milliseconds per time unit of the original Gadget.
const UNIT_MS: f64 = 1000.0;

/// True when `text` looks like an original Gadget config rather than TOML.
pub(crate) fn looks_legacy(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        let Some((k, v)) = l.split_once('=') else {
            return false;
        };
        let (k, v) = (k.trim(), v.trim());
        (k == "operator.type"
            || k == "first.event.generator.type"
            || k == "expected.num.operations")
            && !v.starts_with('"')
    })
}

struct Entries<'a> {
    path: &'a Path,
    entries: Vec<(String, String, usize)>,
    used: Vec<bool>,
}

impl<'a> Entries<'a> {
    fn parse(text: &str, path: &'a Path) -> Result<Self, ConfigError> {
        let mut entries: Vec<(String, String, usize)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                let start: String = line.chars().take(40).collect();
                return Err(ConfigError::Invalid {
                    path: path.to_path_buf(),
                    line: i + 1,
                    key: start,
                    message: "not a `key = value` line; the original Gadget format has one \
                              `key = value` per line, and comments start with #"
                        .into(),
                });
            };
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
            if v.is_empty() {
                continue;
            }
            // a later duplicate overrides an earlier one, as in the original
            entries.retain(|e| e.0 != k);
            entries.push((k, v, i + 1));
        }
        let used = vec![false; entries.len()];
        Ok(Entries {
            path,
            entries,
            used,
        })
    }

    /// An error about `key` at its line (without a line if the file does not set it).
    fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        let (path, key, message) = (self.path.to_path_buf(), key.to_string(), message.into());
        match self.entries.iter().find(|e| e.0 == key) {
            Some(e) => ConfigError::Invalid {
                path,
                line: e.2,
                key,
                message,
            },
            None => ConfigError::Missing { path, key, message },
        }
    }

    fn get(&mut self, key: &str) -> Option<String> {
        let i = self.entries.iter().position(|e| e.0 == key)?;
        self.used[i] = true;
        Some(self.entries[i].1.clone())
    }

    /// Where `key` is set, as errors name it: `job.conf:7: `file.path``.
    fn origin(&self, key: &str) -> String {
        let line = self.entries.iter().find(|e| e.0 == key).map_or(0, |e| e.2);
        format!("{}:{line}: `{key}`", self.path.display())
    }

    /// A key the file does not set but must.
    fn missing(&self, key: &str, what: &str) -> ConfigError {
        ConfigError::Missing {
            path: self.path.to_path_buf(),
            key: key.to_string(),
            message: format!("missing; add `{key} = ...`: {what}"),
        }
    }

    fn require(&mut self, key: &str, what: &str) -> Result<String, ConfigError> {
        self.get(key).ok_or_else(|| self.missing(key, what))
    }

    fn number(&mut self, key: &str, min: f64, max: f64) -> Result<Option<f64>, ConfigError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let n: f64 = v
            .parse()
            .map_err(|_| self.error(key, format!("`{v}` is not a number")))?;
        if !(n >= min && n <= max) {
            return Err(self.error(key, format!("{n} is out of range; allowed: [{min}, {max}]")));
        }
        Ok(Some(n))
    }

    fn require_number(
        &mut self,
        key: &str,
        min: f64,
        max: f64,
        what: &str,
    ) -> Result<f64, ConfigError> {
        match self.number(key, min, max)? {
            Some(n) => Ok(n),
            None => Err(self.missing(key, what)),
        }
    }

    fn choice(&mut self, key: &str, allowed: &[&str], what: &str) -> Result<String, ConfigError> {
        let v = self.require(key, what)?;
        if allowed.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(self.error(
                key,
                format!("`{v}` is not allowed; use one of: {}", allowed.join(", ")),
            ))
        }
    }

    /// Marks keys that have no meaning here; returns a warning per family found.
    fn ignore(&mut self, prefix: &str, why: &str, warnings: &mut Vec<String>) {
        let mut found = false;
        for (i, e) in self.entries.iter().enumerate() {
            if e.0.starts_with(prefix) {
                self.used[i] = true;
                found = true;
            }
        }
        if found {
            warnings.push(format!(
                "{}: `{prefix}*` ignored: {why}",
                self.path.display()
            ));
        }
    }

    fn finish(&self) -> Result<(), ConfigError> {
        match self.entries.iter().zip(&self.used).find(|(_, used)| !**used) {
            None => Ok(()),
            Some((e, _)) => Err(ConfigError::Invalid {
                path: self.path.to_path_buf(),
                line: e.2,
                key: e.0.clone(),
                message: "unknown key of the original Gadget format (see docs/config.md, \"Original Gadget configs\")".into(),
            }),
        }
    }
}

fn ms(units: f64) -> i64 {
    (units * UNIT_MS).round() as i64
}

fn parse_generator(e: &mut Entries<'_>, p: &str, dir: &Path) -> Result<SourceConfig, ConfigError> {
    let kind = e.choice(
        &format!("{p}type"),
        &["gadget", "tracefile"],
        "the event source: gadget or tracefile",
    )?;
    let frequency = e.require_number(
        &format!("{p}watermark.frequency"),
        1.0,
        1e12,
        "time units between watermarks",
    )?;
    let watermarks = WatermarkPolicy::Periodic {
        interval: ms(frequency),
        out_of_orderness: 0,
    };
    e.ignore(
        &format!("{p}arrival.interarrival.distrib."),
        "arrival rates belong to the evaluator (gadget run), not to generation",
        &mut Vec::new(),
    );
    if kind == "tracefile" {
        let file = e.require(&format!("{p}file.path"), "the trace file")?;
        let origin = e.origin(&format!("{p}file.path"));
        let path = if Path::new(&file).is_absolute() {
            PathBuf::from(file)
        } else {
            dir.join(file)
        };
        let col = |e: &mut Entries<'_>, k: &str| -> Result<Option<usize>, ConfigError> {
            Ok(e.number(&format!("{p}{k}"), 0.0, 10_000.0)?
                .map(|n| n as usize))
        };
        let key_column = col(e, "key.index")?
            .ok_or_else(|| e.missing(&format!("{p}key.index"), "the key column"))?;
        let time_column = col(e, "event.time.index")?.ok_or_else(|| {
            e.missing(
                &format!("{p}event.time.index"),
                "the event-time column (µs)",
            )
        })?;
        let type_column = col(e, "event.type.index")?;
        return Ok(SourceConfig::File(FileSpec {
            origin,
            path,
            delimiter: b',',
            header: false,
            key_column,
            key_type: KeyType::String,
            time_column,
            time_unit: TimeUnit::Microseconds,
            type_column,
            payload_column: None,
            routing: TypeRouting::All,
            order: FileOrder::AsIs,
            watermarks,
            repeat: 1,
        }));
    }
    let key_space = e.require_number(
        &format!("{p}key.popularity.distrib.params.keyspacesize"),
        1.0,
        9.2e18,
        "the key space size",
    )? as u64;
    let kp = format!("{p}key.popularity.distrib.");
    let keys = match e
        .choice(
            &format!("{kp}type"),
            &["constant", "hotspot", "zipf", "sequential", "uniform"],
            "the key popularity",
        )?
        .as_str()
    {
        "constant" => {
            let k = e.require(&format!("{kp}params.constant"), "the constant key")?;
            let k: u64 = k.parse().map_err(|_| {
                e.error(
                    &format!("{kp}params.constant"),
                    format!("`{k}` is not a key number in [0, keyspacesize)"),
                )
            })?;
            KeyDistributionSpec::Constant(k)
        }
        "hotspot" => KeyDistributionSpec::Hotspot {
            hot_key_fraction: e.require_number(
                &format!("{kp}params.hotspotfraction"),
                0.0,
                1.0,
                "share of hot keys",
            )?,
            hot_operation_fraction: e.require_number(
                &format!("{kp}params.hotoperationfraction"),
                0.0,
                1.0,
                "share of events on hot keys",
            )?,
        },
        "zipf" => KeyDistributionSpec::Zipf {
            s: e.require_number(&format!("{kp}params.s"), 1e-9, 1e3, "the Zipf exponent")?,
        },
        "sequential" => KeyDistributionSpec::Sequential,
        _ => {
            // the original drew an integer in [a, b] modulo the key space; a = 0, b = N - 1 is uniform
            e.get(&format!("{kp}params.a"));
            e.get(&format!("{kp}params.b"));
            KeyDistributionSpec::Uniform
        }
    };
    let gp = format!("{p}event.occurrence.gap.distrib.");
    let gaps = match e
        .choice(
            &format!("{gp}type"),
            &["exponential", "normal", "constant", "uniform"],
            "the gap between events",
        )?
        .as_str()
    {
        "exponential" => GapDistributionSpec::Exponential {
            rate: e.require_number(
                &format!("{gp}params.lambda"),
                1e-12,
                1e12,
                "events per time unit",
            )? / UNIT_MS,
        },
        "normal" => GapDistributionSpec::Normal {
            mean: e.require_number(
                &format!("{gp}params.mean"),
                0.0,
                1e12,
                "mean gap in time units",
            )? * UNIT_MS,
            stddev: e.require_number(
                &format!("{gp}params.sd"),
                0.0,
                1e12,
                "standard deviation in time units",
            )? * UNIT_MS,
        },
        "constant" => GapDistributionSpec::Constant(
            e.require_number(
                &format!("{gp}params.constant"),
                0.0,
                1e12,
                "the gap in time units",
            )? * UNIT_MS,
        ),
        _ => GapDistributionSpec::Uniform {
            min: e.require_number(&format!("{gp}params.a"), 0.0, 1e12, "smallest gap")? * UNIT_MS,
            max: e.require_number(&format!("{gp}params.b"), 0.0, 1e12, "largest gap")? * UNIT_MS,
        },
    };
    let fraction = e
        .number(&format!("{p}outoforder.percentage"), 0.0, 99.999_999)?
        .unwrap_or(0.0)
        / 100.0;
    let threshold = e
        .number(&format!("{p}lateness.threshold"), 0.0, 1e12)?
        .unwrap_or(0.0);
    if fraction > 0.0 && threshold < 1.0 {
        return Err(e.error(
            &format!("{p}outoforder.percentage"),
            format!("needs {p}lateness.threshold >= 1 (time units a late event may be delayed)"),
        ));
    }
    Ok(SourceConfig::Synthetic {
        spec: SyntheticSpec {
            key_space,
            keys,
            gaps,
            events: None,
            out_of_order_fraction: fraction,
            max_delay: ms(threshold),
            watermarks,
            string_keys: false,
            start_time: 0,
        },
        left_fraction: None,
        closing_fraction: None,
    })
}

/// A slide must be at most the window and give at most [`MAX_WINDOWS_PER_EVENT`] windows.
fn check_slide(e: &Entries<'_>, size: i64, slide: i64) -> Result<(), ConfigError> {
    if slide > size {
        return Err(e.error("sliding.length", "the slide must be at most window.length"));
    }
    if size / slide > MAX_WINDOWS_PER_EVENT {
        return Err(e.error(
            "sliding.length",
            format!("window.length / sliding.length puts every event into {} windows; at most {MAX_WINDOWS_PER_EVENT} are allowed", size / slide),
        ));
    }
    Ok(())
}

/// Parses an original Gadget config.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let mut e = Entries::parse(text, path)?;
    let mut warnings = Vec::new();
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    const TYPES: &[&str] = &[
        "tumbling.all.incremental",
        "tumbling.all.holistic",
        "tumbling.keyed.incremental",
        "tumbling.keyed.holistic",
        "sliding.all.incremental",
        "sliding.all.holistic",
        "sliding.keyed.incremental",
        "sliding.keyed.holistic",
        "session.incremental",
        "session.holistic",
        "join.tumbling",
        "join.sliding",
        "join.interval",
        "continuous.join",
        "continuous.aggregation",
    ];
    let kind = e
        .get("operator.type")
        .ok_or_else(|| e.missing("operator.type", "the operator to simulate"))?;
    if kind == "flink.replayer" || kind == "ycsb.replayer" {
        return Err(e.error("operator.type", format!("`{kind}` replays a trace: use `gadget trace convert` and `gadget replay` instead; generators: {}", TYPES.join(", "))));
    }
    if !TYPES.contains(&kind.as_str()) {
        return Err(e.error(
            "operator.type",
            format!("`{kind}` is not allowed; use one of: {}", TYPES.join(", ")),
        ));
    }
    let limit = e
        .number("expected.num.operations", 1.0, 9.2e18)?
        .map(|n| n as u64);
    let element_size = match e.get("operator.value.size.distrib.type").as_deref() {
        Some("constant") => e
            .number(
                "operator.value.size.distrib.params.constant",
                0.0,
                f64::from(crate::trace::MAX_VALUE_LEN),
            )?
            .map(|n| n as u32),
        _ => None,
    }
    .unwrap_or(24);
    e.ignore(
        "operator.key.",
        "state keys are laid out as Flink lays them out (key group, key, namespace)",
        &mut warnings,
    );
    e.ignore(
        "operator.value.size.",
        "values are sized as Flink writes them (element_size from a constant value size)",
        &mut warnings,
    );
    e.ignore(
        "operator.service.time.",
        "the original never used it",
        &mut warnings,
    );
    e.ignore(
        "wrapper.",
        "stores are chosen when running a trace, not when generating it",
        &mut warnings,
    );
    let lateness = match e.get("allowed.lateness").as_deref() {
        Some("true") => ms(e.require_number(
            "lateness.length",
            0.0,
            1e12,
            "time units a window stays open after its end",
        )?),
        Some("false") | None => {
            e.get("lateness.length");
            0
        }
        Some(v) => {
            return Err(e.error(
                "allowed.lateness",
                format!("`{v}` is not allowed; use true or false"),
            ))
        }
    };
    let size = |e: &mut Entries<'_>| -> Result<i64, ConfigError> {
        Ok(ms(e.require_number(
            "window.length",
            1e-3,
            1e12,
            "the window length in time units",
        )?))
    };
    let slide = |e: &mut Entries<'_>| -> Result<i64, ConfigError> {
        Ok(ms(e.require_number(
            "sliding.length",
            1e-3,
            1e12,
            "the slide in time units",
        )?))
    };
    let function = if kind.ends_with("holistic") {
        WindowFunction::Holistic { element_size }
    } else {
        WindowFunction::Incremental
    };
    let operator = OperatorConfig::Flink(match kind.as_str() {
        k if k.starts_with("tumbling.") => FlinkOperator::Window {
            assigner: WindowAssigner::Tumbling {
                size: size(&mut e)?,
                offset: 0,
            },
            function,
            allowed_lateness: lateness,
            keyed: k.contains(".keyed."),
        },
        k if k.starts_with("sliding.") => {
            let size = size(&mut e)?;
            let slide = slide(&mut e)?;
            check_slide(&e, size, slide)?;
            FlinkOperator::Window {
                assigner: WindowAssigner::Sliding {
                    size,
                    slide,
                    offset: 0,
                },
                function,
                allowed_lateness: lateness,
                keyed: k.contains(".keyed."),
            }
        }
        k if k.starts_with("session.") => FlinkOperator::Session {
            gap: size(&mut e)?,
            function,
            allowed_lateness: lateness,
        },
        "join.tumbling" | "join.sliding" => {
            let size = size(&mut e)?;
            let assigner = if kind == "join.sliding" {
                let slide = slide(&mut e)?;
                check_slide(&e, size, slide)?;
                WindowAssigner::Sliding {
                    size,
                    slide,
                    offset: 0,
                }
            } else {
                WindowAssigner::Tumbling { size, offset: 0 }
            };
            FlinkOperator::WindowJoin {
                assigner,
                element_size,
                allowed_lateness: lateness,
                interleaving: Interleaving::RoundRobin,
            }
        }
        "join.interval" => {
            let lower = ms(e.require_number(
                "lower.bound",
                -(MS_MAX as f64) / UNIT_MS,
                MS_MAX as f64 / UNIT_MS,
                "the lower bound in time units",
            )?);
            let upper = ms(e.require_number(
                "upper.bound",
                -(MS_MAX as f64) / UNIT_MS,
                MS_MAX as f64 / UNIT_MS,
                "the upper bound in time units",
            )?);
            if lower > upper {
                return Err(e.error("lower.bound", "must not be above upper.bound"));
            }
            FlinkOperator::IntervalJoin {
                lower,
                upper,
                element_size,
                interleaving: Interleaving::RoundRobin,
            }
        }
        "continuous.join" => FlinkOperator::ContinuousJoin {
            element_size,
            interleaving: Interleaving::RoundRobin,
        },
        _ => FlinkOperator::Aggregation {
            state_name: "running-sum".into(),
        },
    });
    let left = parse_generator(&mut e, "first.event.generator.", &dir)?;
    let source = if operator.two_inputs() {
        let right = parse_generator(&mut e, "second.event.generator.", &dir)?;
        SourceConfig::Separate {
            left: Box::new(left),
            right: Box::new(right),
        }
    } else {
        e.ignore(
            "second.event.generator.",
            "only two-input operators read a second source",
            &mut warnings,
        );
        left
    };
    e.finish()?;
    let json = serde_json::Value::Object(
        e.entries
            .iter()
            .map(|(k, v, _)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    );
    let operator_name = kind.replace('.', "-");
    Ok(Config {
        seed: 0,
        max_parallelism: 128,
        parallel: super::Parallelism::default(),
        timers: TimerService::RocksDb,
        source,
        operator,
        operator_name,
        limit,
        warnings,
        run: super::run::RunSettings::default(),
        json: serde_json::json!({ "original_gadget_config": json }),
    })
}
