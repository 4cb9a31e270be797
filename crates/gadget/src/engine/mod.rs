//! The streaming engines Gadget simulates, one room each: its operator list, the parsing of
//! its `[operator]` section and the building of its operators, over the same sources, sinks,
//! traces and stores. [`flink`] is the default (its operators themselves are
//! [`crate::operator`]); `engine = "kafka-streams"` in a config selects [`kafka_streams`],
//! `engine = "spark"` [`spark`], whose operators, key layouts, value sizes and timing rules
//! live in their rooms.

pub mod flink;
pub mod kafka_streams;
pub mod spark;

use std::fmt;

use crate::document::{ConfigError, Section};

/// The engine a config simulates (`engine`, Flink by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// Apache Flink 1.20 with the RocksDB state backend ([`crate::operator`]).
    #[default]
    Flink,
    /// Apache Kafka Streams 4.4 with its RocksDB stores ([`kafka_streams`]).
    KafkaStreams,
    /// Apache Spark Structured Streaming 4.1 with the RocksDB state store provider
    /// ([`spark`]).
    Spark,
}

impl Engine {
    /// The config names of the engines, in the order the documentation lists them.
    pub const NAMES: &'static [&'static str] = &["flink", "kafka-streams", "spark"];

    /// The engine of a config name.
    pub fn from_name(name: &str) -> Option<Engine> {
        match name {
            "flink" => Some(Engine::Flink),
            "kafka-streams" => Some(Engine::KafkaStreams),
            "spark" => Some(Engine::Spark),
            _ => None,
        }
    }

    /// The config name.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Flink => "flink",
            Engine::KafkaStreams => "kafka-streams",
            Engine::Spark => "spark",
        }
    }

    /// The operator types the engine has.
    pub fn operators(self) -> &'static [&'static str] {
        match self {
            Engine::Flink => flink::OPERATORS,
            Engine::KafkaStreams => kafka_streams::OPERATORS,
            Engine::Spark => spark::OPERATORS,
        }
    }

    /// This engine's closest operator to `other`, an operator of another engine it lacks.
    pub fn closest(self, other: &str) -> Option<&'static str> {
        let pairs: &[(&str, &str)] = match self {
            // Kafka Streams' count is Flink's running aggregate of a key's events
            Engine::KafkaStreams => &[
                ("aggregation", "count"),
                ("tumbling", "tumbling-count"),
                ("sliding", "hopping-count"),
                ("session", "session-count"),
                ("interval-join", "stream-join"),
                ("flat-map-groups-with-state", "session-count"),
                ("transform-with-state", "session-count"),
            ],
            Engine::Spark => &[
                ("tumbling", "tumbling-count"),
                ("aggregation", "tumbling-count"),
                ("count", "tumbling-count"),
                ("interval-join", "stream-join"),
                ("session", "session-count"),
            ],
            Engine::Flink => &[
                ("count", "aggregation"),
                ("tumbling-count", "tumbling"),
                ("hopping-count", "sliding"),
                ("session-count", "session"),
                ("stream-join", "interval-join"),
                ("flat-map-groups-with-state", "session"),
                ("transform-with-state", "session"),
            ],
        };
        pairs.iter().find(|(o, _)| *o == other).map(|(_, c)| *c)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Flink => "Flink",
            Engine::KafkaStreams => "Kafka Streams",
            Engine::Spark => "Spark",
        })
    }
}

/// The `engine` of a config's top level (Flink without one).
pub(crate) fn parse_engine(top: &Section<'_>) -> Result<Engine, ConfigError> {
    Ok(top
        .choice("engine", Engine::NAMES)?
        .and_then(Engine::from_name)
        .unwrap_or_default())
}

/// Refuses an `[operator] type` that `engine` lacks, naming the engine's closest operator.
pub(crate) fn check_operator(s: &Section<'_>, engine: Engine) -> Result<(), ConfigError> {
    let Some(kind) = s.string("type")? else {
        return Ok(());
    };
    if engine.operators().contains(&kind.as_str()) {
        return Ok(());
    }
    let others = Engine::NAMES
        .iter()
        .filter_map(|n| Engine::from_name(n))
        .find(|e| *e != engine && e.operators().contains(&kind.as_str()));
    let Some(other) = others else {
        // not any engine's: the usual error lists this engine's operators
        return Ok(());
    };
    let closest = match engine.closest(&kind) {
        Some(c) => format!("; its closest is `{c}`"),
        None => String::new(),
    };
    Err(s.error(
        "type",
        format!(
            "`{kind}` is a {other} operator, and this config's engine is {engine} (`engine = \"{}\"`){closest}; the operators of {engine}: {}",
            engine.name(),
            engine.operators().join(", ")
        ),
    ))
}

/// The longest window, gap or grace, in ms: a day keeps segment ids and window ends far from
/// i64's bounds.
pub(crate) const DAY_MS: i64 = 86_400_000;

/// Most windows one event may fall into (`size / slide` of Flink's sliding windows, `size /
/// advance` of Kafka Streams' hopping ones): Flink keeps them all in a list, and each costs
/// requests of its own.
pub(crate) const MAX_WINDOWS_PER_EVENT: i64 = 100_000;

/// Refuses windows of `size` ms starting every `step` ms (set by `key`: `slide`, `advance`)
/// that would put an event into more than [`MAX_WINDOWS_PER_EVENT`] windows.
pub(crate) fn check_windows_per_event(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_are_named_and_point_to_their_closest_operators() {
        for name in Engine::NAMES {
            assert_eq!(Engine::from_name(name).unwrap().name(), *name);
        }
        assert_eq!(Engine::default(), Engine::Flink);
        assert_eq!(Engine::KafkaStreams.closest("aggregation"), Some("count"));
        assert_eq!(Engine::Flink.closest("count"), Some("aggregation"));
        assert_eq!(
            Engine::KafkaStreams.closest("interval-join"),
            Some("stream-join")
        );
        assert_eq!(Engine::KafkaStreams.closest("lookup-join"), None);
    }
}
