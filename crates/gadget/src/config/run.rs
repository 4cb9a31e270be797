//! The `[run]` section: how `gadget run` drives a store with the workload. Every key is
//! optional; `gadget run` flags override them.

use super::bounds::{parse_duration, Bounds};
use super::store_settings::{
    read_run_settings, store_setting, ConfigPlace, GivenSetting, SettingValue, StoreSetting,
    STORE_SETTINGS,
};
use super::ConfigError;
use crate::document::Section;

/// Requests per second of an open-loop arrival (one per 11.6 days up to 10^12).
pub const RATE: Bounds = Bounds {
    min: 1e-6,
    max: 1e12,
};
/// b-model bias: 0.5 is uniform; 1 would put everything in one instant.
pub const BIAS: Bounds = Bounds {
    min: 0.5,
    max: 0.999_999,
};
/// Diurnal period, seconds.
pub const PERIOD: Bounds = Bounds {
    min: 1e-6,
    max: 1e9,
};
/// Diurnal modulation depth.
pub const MODULATION: Bounds = Bounds {
    min: 0.0,
    max: 0.999_999,
};
/// Diurnal Pareto shape (above 1, so the mean exists).
pub const ALPHA: Bounds = Bounds {
    min: 1.000_001,
    max: 1e6,
};
/// Event-time seconds replayed per wall-clock second.
pub const SPEED: Bounds = Bounds {
    min: 1e-9,
    max: 1e12,
};
/// What written values compress to, as a fraction of their size (`db_bench
/// --compression_ratio`): 1 is incompressible; below 0.01 a value would repeat one byte.
pub const VALUE_COMPRESSION_RATIO: Bounds = Bounds {
    min: 0.01,
    max: 1.0,
};
/// Concurrent instances.
pub const INSTANCES: Bounds = Bounds {
    min: 1.0,
    max: 4096.0,
};
/// The shortest time-series interval, ns (1 ms): shorter ones cost more than they show.
pub const MIN_INTERVAL_NS: u64 = 1_000_000;

/// Parses a time-series interval (`1s`, `100ms`): at least [`MIN_INTERVAL_NS`].
pub fn parse_interval(text: &str) -> Option<u64> {
    parse_duration(text).filter(|&n| n >= MIN_INTERVAL_NS)
}

/// Arrival processes a config may name.
pub const ARRIVAL_NAMES: &[&str] = &[
    "closed",
    "constant",
    "poisson",
    "b-model",
    "diurnal",
    "event-time",
];

/// `[run.stores.NAME.remote]`: how far away the run puts the store; unset keys keep the
/// evaluator's defaults (a 10 Gb/s switch hop).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RemoteEntry {
    /// `delay`: added one-way delay, nanoseconds.
    pub delay_ns: Option<u64>,
    /// `jitter`, nanoseconds.
    pub jitter_ns: Option<u64>,
    /// `rate_mbit`: the link's rate, megabits per second.
    pub rate_mbit: Option<u64>,
}

/// `[run.stores.NAME]`: a store some states live in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreEntry {
    /// NAME.
    pub name: String,
    /// `kind`: which store (`rocksdb`, `redis-cluster`, ...), checked by the evaluator.
    pub kind: String,
    /// Its own `url`, `placement` and `pipeline` (for Redis, a Redis Cluster), over the
    /// run's `[run.redis]`: the store settings of [`ROUTE_SETTINGS`].
    pub settings: Vec<GivenSetting>,
    /// `[run.stores.NAME.remote]`: the run starts the store (a Redis server) in a network
    /// namespace of its own behind a link with this delay, jitter and rate; for a Redis
    /// Cluster, every node but an instance's own is reached across a link with this delay and
    /// jitter.
    pub remote: Option<RemoteEntry>,
    /// Where `kind` is set (`job.toml:12: `run.stores.table.kind``), for messages.
    pub origin: String,
}

/// The `[run]` section, validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSettings {
    /// `store`: which store to drive, as written; the evaluator checks it against the stores
    /// of its build (its one list), naming [`RunSettings::store_origin`].
    pub store: Option<String>,
    /// Where `store` is given (`job.toml:3: `run.store``), for messages.
    pub store_origin: Option<String>,
    /// `arrival`: the arrival process.
    pub arrival: Option<String>,
    /// `rate`: requests per second of an open-loop arrival.
    pub rate: Option<f64>,
    /// `bias`: b-model bias.
    pub bias: Option<f64>,
    /// `period`: diurnal period, seconds.
    pub period: Option<f64>,
    /// `modulation`: diurnal modulation depth.
    pub modulation: Option<f64>,
    /// `alpha`: diurnal Pareto shape.
    pub alpha: Option<f64>,
    /// `speed`: event-time speed factor.
    pub speed: Option<f64>,
    /// `warmup`: a request count or a duration (nanoseconds).
    pub warmup: Option<Warmup>,
    /// `value_compression_ratio`: what written values compress to.
    pub value_compression_ratio: Option<f64>,
    /// `interval`: time-series interval, nanoseconds.
    pub interval_ns: Option<u64>,
    /// `instances`: concurrent instances of the workload.
    pub instances: Option<usize>,
    /// `shared_store`: whether instances share one store.
    pub shared_store: Option<bool>,
    /// The store settings given (`[run.rocksdb]`, `[run.redis]`, `store_counters`, ...),
    /// each with where; the evaluator applies them and refuses those the store does not read.
    pub store_settings: Vec<GivenSetting>,
    /// `[run.stores.NAME]`: stores of their own for some states.
    pub stores: Vec<StoreEntry>,
    /// `[run.states]`: state name → the name of the store it lives in.
    pub states: Vec<(String, String)>,
}

/// A warm-up left out of the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmup {
    /// The first N requests.
    Requests(u64),
    /// Requests completed in the first N nanoseconds.
    Nanoseconds(u64),
}

/// An integer key within `bounds`.
fn int(s: &Section<'_>, key: &'static str, bounds: Bounds) -> Result<Option<i64>, ConfigError> {
    let (min, max) = bounds.ints();
    s.int(key, min, max)
}

/// The store settings a `[run.stores.NAME]` may give for its store alone, by the keys of
/// `[run.redis]`: `url`, `placement`, `pipeline`.
pub const ROUTE_SETTINGS: &[&str] = &["redis_url", "redis_placement", "redis_pipeline"];

/// Parses a `[run]` section.
pub(crate) fn parse_run(s: &Section<'_>) -> Result<RunSettings, ConfigError> {
    let mut r = RunSettings {
        store: s.string("store")?,
        arrival: s.choice("arrival", ARRIVAL_NAMES)?.map(str::to_string),
        rate: s.float("rate", RATE.min, RATE.max)?,
        bias: s.float("bias", BIAS.min, BIAS.max)?,
        period: s.float("period", PERIOD.min, PERIOD.max)?,
        modulation: s.float("modulation", MODULATION.min, MODULATION.max)?,
        alpha: s.float("alpha", ALPHA.min, ALPHA.max)?,
        speed: s.float("speed", SPEED.min, SPEED.max)?,
        value_compression_ratio: s.float(
            "value_compression_ratio",
            VALUE_COMPRESSION_RATIO.min,
            VALUE_COMPRESSION_RATIO.max,
        )?,
        instances: int(s, "instances", INSTANCES)?.map(|n| n as usize),
        shared_store: s.bool("shared_store")?,
        store_settings: read_run_settings(s)?,
        ..RunSettings::default()
    };
    if r.store.is_some() {
        r.store_origin = Some(s.origin("store"));
    }
    if let Some(w) = s.string_or_int("warmup")? {
        r.warmup = Some(match w {
            Ok(n) if n >= 0 => Warmup::Requests(n as u64),
            Ok(n) => return Err(s.error("warmup", format!("{n} is out of range; give a request count ≥ 0 or a time such as \"5s\""))),
            Err(text) => Warmup::Nanoseconds(parse_duration(&text).ok_or_else(|| {
                s.error("warmup", format!("`{text}` is not a time; give a request count (10000) or a time (\"5s\", \"500ms\")"))
            })?),
        });
    }
    if let Some(text) = s.string("interval")? {
        r.interval_ns = Some(parse_interval(&text).ok_or_else(|| {
            s.error(
                "interval",
                format!(
                    "`{text}` is not a time of at least 1ms; use for example \"1s\" or \"100ms\""
                ),
            )
        })?);
    }
    if r.arrival
        .as_deref()
        .is_some_and(|a| a != "closed" && a != "event-time")
        && r.rate.is_none()
    {
        return Err(s.missing(
            "rate",
            "requests per second of the open-loop arrival, e.g. 100000",
        ));
    }
    if let Some(stores) = s.table("stores")? {
        for (name, t) in stores.named_tables()? {
            let kind = t.string("kind")?.ok_or_else(|| {
                t.missing(
                    "kind",
                    "the store's kind, such as rocksdb, redis or redis-cluster",
                )
            })?;
            let mut settings = Vec::new();
            for key in ROUTE_SETTINGS {
                let setting = store_setting(key).expect("a route setting is a store setting");
                settings.extend(setting.read(&t, setting.config.key)?);
            }
            let entry = StoreEntry {
                origin: t.origin("kind"),
                name,
                kind,
                settings,
                remote: match t.table("remote")? {
                    None => None,
                    Some(remote) => {
                        let time = |key: &'static str| -> Result<Option<u64>, ConfigError> {
                            let Some(text) = remote.string(key)? else {
                                return Ok(None);
                            };
                            parse_duration(&text)
                                .filter(|&ns| ns <= 10_000_000_000)
                                .map(Some)
                                .ok_or_else(|| {
                                    remote.error(
                                        key,
                                        format!("`{text}` is not a time up to 10 s; give one such as \"200us\" or \"1ms\""),
                                    )
                                })
                        };
                        let entry = RemoteEntry {
                            delay_ns: time("delay")?,
                            jitter_ns: time("jitter")?,
                            rate_mbit: remote.int("rate_mbit", 1, 1_000_000)?.map(|n| n as u64),
                        };
                        remote.finish()?;
                        Some(entry)
                    }
                },
            };
            let cluster = entry.kind == "redis-cluster";
            if entry.remote.is_some() && entry.kind != "redis" && !cluster {
                return Err(t.error(
                    "remote",
                    format!("a remote store is started by the run, which starts Redis servers only (kind = \"redis\"), or delays the links to a Redis Cluster's nodes (kind = \"redis-cluster\"); give the `url` of a {} that runs elsewhere instead", entry.kind),
                ));
            }
            if cluster && entry.remote.as_ref().is_some_and(|r| r.rate_mbit.is_some()) {
                return Err(t.error(
                    "remote",
                    "a Redis Cluster's node links take `delay` and `jitter` only (its nodes run on this host's loopback, where no rate limit applies); drop `rate_mbit`",
                ));
            }
            let has_url = entry.settings.iter().any(|g| g.setting.key == "redis_url");
            if entry.remote.is_some() && has_url && !cluster {
                return Err(t.error(
                    "url",
                    "a remote store gets its URL from the run that starts it; drop `url`, or drop [remote] to use a server at this URL",
                ));
            }
            t.finish()?;
            r.stores.push(entry);
        }
        stores.finish()?;
    }
    if let Some(states) = s.table("states")? {
        for (state, store, _line) in states.text_entries(&[])? {
            if !r.stores.iter().any(|e| e.name == store) {
                let defined: Vec<&str> = r.stores.iter().map(|e| e.name.as_str()).collect();
                return Err(states.error(
                    &state,
                    format!(
                        "names the store `{store}`, which no [run.stores.{store}] defines; defined: {}",
                        if defined.is_empty() { "none".to_string() } else { defined.join(", ") }
                    ),
                ));
            }
            r.states.push((state, store));
        }
        states.finish()?;
    }
    Ok(r)
}

/// Settings of the whole run that a `[[store]]` may give too, for its runs (as `[run]` and
/// `gadget run`'s flags name them).
pub const RUN_SETTINGS: &[StoreSetting] = &[
    StoreSetting {
        key: "instances",
        config: ConfigPlace {
            table: None,
            key: "instances",
        },
        value: SettingValue::Int(INSTANCES),
        env: None,
        value_name: "N",
        doc: "Concurrent instances of every workload.",
    },
    StoreSetting {
        key: "shared_store",
        config: ConfigPlace {
            table: None,
            key: "shared_store",
        },
        value: SettingValue::Switch,
        env: None,
        value_name: "",
        doc: "Whether the instances share one store.",
    },
    StoreSetting {
        key: "value_compression_ratio",
        config: ConfigPlace {
            table: None,
            key: "value_compression_ratio",
        },
        value: SettingValue::Float(VALUE_COMPRESSION_RATIO),
        env: None,
        value_name: "RATIO",
        doc: "What written values compress to, as a fraction of their size.",
    },
];

/// Every setting a `[[store]]` may give: the store settings ([`STORE_SETTINGS`]), then
/// [`RUN_SETTINGS`].
pub fn experiment_store_settings() -> impl Iterator<Item = &'static StoreSetting> {
    STORE_SETTINGS.iter().chain(RUN_SETTINGS)
}

#[cfg(test)]
mod tests {
    use crate::config::bounds::parse_duration;
    use crate::config::store_settings::MAX_REDIS_TIMEOUT_NS;

    #[test]
    fn durations_have_units() {
        assert_eq!(parse_duration("5s"), Some(5_000_000_000));
        assert_eq!(parse_duration("500ms"), Some(500_000_000));
        assert_eq!(parse_duration("1.5us"), Some(1_500));
        assert_eq!(parse_duration("2m"), Some(120_000_000_000));
        assert_eq!(
            parse_duration("1h"),
            Some(MAX_REDIS_TIMEOUT_NS),
            "as messages say"
        );
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("5 parsecs"), None);
        assert_eq!(parse_duration("1e400s"), None);
    }
}
