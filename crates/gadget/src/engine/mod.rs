//! Streaming engines beside Flink: each engine's operators, key layout, value sizes and
//! timing rules in a module of its own, over the same sources, sinks, traces and stores.
//! Flink's operators are [`crate::operator`]; `engine = "kafka-streams"` in a config selects
//! [`kafka_streams`], `engine = "spark"` [`spark`].

pub mod kafka_streams;
pub mod spark;

use std::fmt;

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
            Engine::Flink => &[
                "tumbling",
                "sliding",
                "session",
                "aggregation",
                "interval-join",
                "tumbling-join",
                "sliding-join",
                "continuous-join",
                "lookup-join",
            ],
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
