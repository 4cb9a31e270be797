//! `engine = "..."`: which engine's operators the `[operator]` section names, and the
//! operators of engines other than Flink ([`crate::engine`]).

use super::reader::Section;
use super::{ConfigError, OperatorConfig};
use crate::engine::kafka_streams::{
    AggregateBytes, JoinWindows, KafkaStreamsSpec, Runner, SessionWindows, TimeWindows,
};
use crate::engine::spark::{BatchArrival, JoinType, OutputMode, SparkQuery, SparkSpec, Trigger};
use crate::engine::Engine;

/// The `engine` of a config's top level (Flink without one).
pub(super) fn parse_engine(top: &Section<'_>) -> Result<Engine, ConfigError> {
    Ok(top
        .choice("engine", Engine::NAMES)?
        .and_then(Engine::from_name)
        .unwrap_or_default())
}

/// Refuses an `[operator] type` that `engine` lacks, naming the engine's closest operator.
pub(super) fn check_operator(s: &Section<'_>, engine: Engine) -> Result<(), ConfigError> {
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
const DAY_MS: i64 = 86_400_000;

/// A Kafka Streams `[operator]` section.
pub(super) fn parse_kafka_streams(
    s: &Section<'_>,
) -> Result<(OperatorConfig, String), ConfigError> {
    let kind = s.require_choice("type", crate::engine::kafka_streams::OPERATORS)?;
    let d = KafkaStreamsSpec::default();
    let windows = parse_windows(s, kind)?;
    let sessions = parse_sessions(s, kind)?;
    let join = parse_join(s, kind)?;
    // the reference job's default names, so that a config without `store` matches it
    let default_store = match (windows, sessions, join) {
        (Some(_), _, _) => "window-counts".to_string(),
        (None, Some(_), _) => "session-counts".to_string(),
        (None, None, Some(_)) => "joined".to_string(),
        (None, None, None) if kind == "aggregate" => "aggregates".to_string(),
        (None, None, None) => d.store,
    };
    if join.is_none() && s.string("right_topic")?.is_some() {
        return Err(s.error(
            "right_topic",
            "names a join's second input; only `stream-join` has one",
        ));
    }
    let runner = match s.choice("runner", &["test-driver", "application"])? {
        Some("application") => Runner::Application,
        _ => Runner::TestDriver,
    };
    let spec = KafkaStreamsSpec {
        application_id: kafka_name(s, "application_id")?.unwrap_or(d.application_id),
        store: kafka_name(s, "store")?.unwrap_or(default_store),
        topic: kafka_name(s, "topic")?.unwrap_or(d.topic),
        cache_bytes: s
            .int("cache_bytes", 0, i64::MAX)?
            .map_or(d.cache_bytes, |b| b as u64),
        commit_every: s
            .int("commit_every", 1, i64::MAX)?
            .map_or(default_commit_every(runner), |n| n as u64),
        runner,
        suppress: parse_suppress(s, windows.is_some() || sessions.is_some())?,
        aggregate: parse_aggregate(s, kind)?,
        windows,
        sessions,
        join,
        right_topic: kafka_name(s, "right_topic")?.unwrap_or(d.right_topic),
    };
    Ok((
        OperatorConfig::KafkaStreams(Box::new(spec)),
        kind.to_string(),
    ))
}

/// The longest name Kafka takes for a topic or a store (`Topic.validate`, `Named.validate`).
const KAFKA_NAME_MAX: usize = 249;

/// A name of Kafka's (`application_id`, `store`, `topic`, `right_topic`): ASCII letters,
/// digits, `.`, `_` and `-`, at most [`KAFKA_NAME_MAX`] of them, neither `.` nor `..`, as Kafka
/// requires of topic and store names (the application id prefixes the changelog topics'). The
/// names become paths in the trace's state names
/// (`<application_id>/0_0/<store>/<store>.<segment start>/<column family>`), which these
/// rules keep free of `/`, tabs and line breaks and within a trace's 1 KiB.
fn kafka_name(s: &Section<'_>, key: &'static str) -> Result<Option<String>, ConfigError> {
    let Some(name) = s.string(key)? else {
        return Ok(None);
    };
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let why = if name.is_empty() || name == "." || name == ".." {
        format!("{name:?} is not a name")
    } else if let Some(c) = name.chars().find(|&c| !legal(c)) {
        format!("{c:?} cannot be in a name")
    } else if name.len() > KAFKA_NAME_MAX {
        format!("the name is {} characters long", name.len())
    } else {
        return Ok(Some(name));
    };
    Err(s.error(
        key,
        format!(
            "{why}: Kafka's names (topics, stores, the application id its topics start with) are \
             1 to {KAFKA_NAME_MAX} ASCII letters, digits, `.`, `_` or `-`, and not `.` or `..`"
        ),
    ))
}

/// Records between commits unless `commit_every` says: 1 under the test driver (a commit per
/// record), none but the closing one for an application (its commits come every
/// `commit.interval.ms` of wall-clock time, 30 s, after a short run's records).
fn default_commit_every(runner: Runner) -> u64 {
    match runner {
        Runner::TestDriver => 1,
        Runner::Application => u64::MAX,
    }
}

/// The aggregate's size of an `aggregate` (`initial_bytes`, `bytes_per_record`); `None` for
/// other operators.
fn parse_aggregate(s: &Section<'_>, kind: &str) -> Result<Option<AggregateBytes>, ConfigError> {
    if kind != "aggregate" {
        return Ok(None);
    }
    let initial = s.int("initial_bytes", 0, 1 << 20)?.unwrap_or(0) as u32;
    let per_record = s.int("bytes_per_record", 0, 1 << 16)?.unwrap_or(8) as u32;
    Ok(Some(AggregateBytes {
        initial,
        per_record,
    }))
}

/// The windows of a `tumbling-count` (`size`, `grace`) or `hopping-count` (and `advance`),
/// in ms; `None` for a plain count.
/// `suppress`: `"none"` or, for a windowed count, `"until-window-closes"`.
fn parse_suppress(s: &Section<'_>, windowed: bool) -> Result<bool, ConfigError> {
    match s.choice("suppress", &["none", "until-window-closes"])? {
        None | Some("none") => Ok(false),
        Some(_) if windowed => Ok(true),
        Some(_) => Err(s.error(
            "suppress",
            "applies to windowed counts (`tumbling-count`, `hopping-count`, \
             `session-count`); a plain count has no window to close",
        )),
    }
}

/// The most records a micro-batch may hold: a batch keeps its distinct groups (keys and
/// windows) in memory until it ends, and an endless synthetic source would fill memory before
/// a batch of `i64::MAX` records ended.
const MAX_TRIGGER_EVENTS: i64 = 10_000_000;

/// A Spark `[operator]` section.
pub(super) fn parse_spark(s: &Section<'_>) -> Result<(OperatorConfig, String), ConfigError> {
    let kind = s.require_choice("type", crate::engine::spark::OPERATORS)?;
    let d = SparkSpec::default();
    let (query, size) = match kind {
        "tumbling-count" => {
            let size = s.require_int("size", 1, DAY_MS, "the window length in ms")?;
            (SparkQuery::TumblingCount, size)
        }
        "stream-join" => {
            let window = s.require_int(
                "window",
                0,
                DAY_MS,
                "the most ms a left and a right record may be apart",
            )?;
            (SparkQuery::StreamJoin, window)
        }
        "flat-map-groups-with-state" | "session-count" => {
            let gap = s.require_int(
                "gap",
                1,
                DAY_MS,
                "the ms of event time without a record after which a key's session times out",
            )?;
            let query = if kind == "session-count" {
                SparkQuery::SessionCount
            } else {
                SparkQuery::FlatMapGroupsWithState
            };
            (query, gap)
        }
        // the deduplication has no window: `size` stays an unknown key
        _ => (SparkQuery::DropDuplicatesWithinWatermark, d.size),
    };
    let delay = s.int("delay", 0, DAY_MS)?.unwrap_or(d.delay);
    // a stream-stream inner join runs in append mode only: `mode` stays an unknown key
    let mode = if query == SparkQuery::StreamJoin {
        None
    } else {
        s.choice("mode", &["append", "update"])?
    };
    let mode = match mode {
        Some("update") if query == SparkQuery::SessionCount => {
            return Err(s.error(
                "mode",
                "Spark refuses update mode for session window aggregations \
                 (STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION): use \"append\"",
            ))
        }
        Some("update") => OutputMode::Update,
        _ => OutputMode::Append,
    };
    let trigger = match (
        s.int("trigger_events", 1, MAX_TRIGGER_EVENTS)?,
        s.int("trigger_ms", 1, DAY_MS)?,
    ) {
        (Some(_), Some(_)) => {
            return Err(s.error(
                "trigger_ms",
                "a micro-batch is cut by `trigger_events` or by `trigger_ms`, not both: \
                 remove one",
            ))
        }
        (Some(n), None) => Trigger::Events(n as u64),
        (None, Some(ms)) => Trigger::EventTime(ms),
        (None, None) => d.trigger,
    };
    let partitions = parse_partitions(s, query)?.unwrap_or(d.partitions);
    // only a join has a type: `join_type` stays an unknown key elsewhere
    let join_type = if query == SparkQuery::StreamJoin {
        match s.choice(
            "join_type",
            &["inner", "left-outer", "right-outer", "full-outer"],
        )? {
            Some("left-outer") => JoinType::LeftOuter,
            Some("right-outer") => JoinType::RightOuter,
            Some("full-outer") => JoinType::FullOuter,
            _ => JoinType::Inner,
        }
    } else {
        d.join_type
    };
    let arrival = match s.choice("trigger", &["available-now", "processing-time"])? {
        Some("processing-time") => BatchArrival::ProcessingTime,
        _ => BatchArrival::AvailableNow,
    };
    let no_data_batches = s.bool("no_data_batches")?.unwrap_or(d.no_data_batches);
    let spec = SparkSpec {
        query,
        size,
        delay,
        mode,
        trigger,
        partitions,
        join_type,
        arrival,
        no_data_batches,
    };
    Ok((OperatorConfig::Spark(Box::new(spec)), kind.to_string()))
}

/// `partitions`: at most [`MAX_STATE_STORES`](crate::engine::spark::MAX_STATE_STORES) state
/// stores in all, each partition having `query`'s stores.
fn parse_partitions(s: &Section<'_>, query: SparkQuery) -> Result<Option<u32>, ConfigError> {
    use crate::engine::spark::MAX_STATE_STORES;
    let stores = query.stores_per_partition();
    let max = MAX_STATE_STORES / stores;
    let Some(n) = s.int("partitions", 1, i64::MAX)? else {
        return Ok(None);
    };
    if n > i64::from(max) {
        let each = match stores {
            1 => "a state store each".to_string(),
            k => format!("{k} state stores each (a join's)"),
        };
        return Err(s.error(
            "partitions",
            format!(
                "{n} is out of range; allowed: [1, {max}]: partitions have {each}, and a query \
                 has at most {MAX_STATE_STORES} state stores, as opening each in RocksDB (a \
                 column family) costs time that grows with the number open (docs/config.md)"
            ),
        ));
    }
    Ok(Some(n as u32))
}

/// The sessions of a `session-count` (`gap`, `grace`), in ms; `None` for other operators.
fn parse_sessions(s: &Section<'_>, kind: &str) -> Result<Option<SessionWindows>, ConfigError> {
    if kind != "session-count" {
        return Ok(None);
    }
    let gap = s.require_int(
        "gap",
        1,
        DAY_MS,
        "the inactivity gap in ms that closes a session",
    )?;
    let grace = s.int("grace", 0, DAY_MS)?.unwrap_or(0);
    Ok(Some(SessionWindows { gap, grace }))
}

/// The window of a `stream-join` (`window`: the time difference, `grace`), in ms; `None`
/// for other operators.
fn parse_join(s: &Section<'_>, kind: &str) -> Result<Option<JoinWindows>, ConfigError> {
    if kind != "stream-join" {
        return Ok(None);
    }
    let difference = s.require_int(
        "window",
        0,
        DAY_MS,
        "the time difference in ms within which records of the two sides join",
    )?;
    let grace = s.int("grace", 0, DAY_MS)?.unwrap_or(0);
    Ok(Some(JoinWindows::of_time_difference(difference, grace)))
}

fn parse_windows(s: &Section<'_>, kind: &str) -> Result<Option<TimeWindows>, ConfigError> {
    let (tumbling, hopping) = (kind == "tumbling-count", kind == "hopping-count");
    if !tumbling && !hopping {
        return Ok(None);
    }
    let size = s.require_int("size", 1, DAY_MS, "the window length in ms")?;
    let advance = if hopping {
        let advance = s.require_int(
            "advance",
            1,
            size,
            "the distance between window starts in ms (at most `size`)",
        )?;
        if advance == size {
            return Err(s.error(
                "advance",
                "equals `size`: that is a tumbling window; use `type = \"tumbling-count\"`",
            ));
        }
        super::check_windows_per_event(s, "advance", size, advance)?;
        advance
    } else {
        size
    };
    let grace = s.int("grace", 0, DAY_MS)?.unwrap_or(0);
    Ok(Some(TimeWindows {
        size,
        advance,
        grace,
    }))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::{Config, OperatorConfig};
    use crate::engine::kafka_streams::{JoinWindows, SessionWindows, TimeWindows};

    const COUNT: &str = r#"
engine = "kafka-streams"
[source]
type = "synthetic"
events = 100
key_space = 10
[source.keys]
distribution = "uniform"
[source.gaps]
distribution = "constant"
value = 1
[operator]
type = "count"
"#;

    #[test]
    fn flinks_watermark_settings_are_refused_with_the_engines_own_knob() {
        let watermarks = "[source.watermarks]\nout_of_orderness = 1000\n";
        let with = |text: &str| text.replace("[operator]", &format!("{watermarks}[operator]"));
        let e = Config::parse(&with(COUNT), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("c.toml:12: `source.watermarks`") && e.contains("set `grace`"),
            "{e}"
        );
        let spark = COUNT
            .replace("kafka-streams", "spark")
            .replace("type = \"count\"", "type = \"tumbling-count\"\nsize = 1000");
        Config::parse(&spark, Path::new("s.toml")).unwrap();
        let e = Config::parse(&with(&spark), Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`source.watermarks`") && e.contains("set `delay`"),
            "{e}"
        );
        let flink = COUNT
            .replace("engine = \"kafka-streams\"\n", "")
            .replace("type = \"count\"", "type = \"aggregation\"");
        Config::parse(&with(&flink), Path::new("f.toml")).unwrap();
    }

    #[test]
    fn a_kafka_streams_aggregate_takes_its_sizes_which_a_count_refuses() {
        let text = COUNT.replace("type = \"count\"", "type = \"aggregate\"");
        let c = Config::parse(&text, Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            (spec.aggregate, spec.store.as_str()),
            (
                Some(crate::engine::kafka_streams::AggregateBytes {
                    initial: 0,
                    per_record: 8
                }),
                "aggregates"
            )
        );
        let fixed = format!("{text}initial_bytes = 32\nbytes_per_record = 0\n");
        let c = Config::parse(&fixed, Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            spec.aggregate,
            Some(crate::engine::kafka_streams::AggregateBytes {
                initial: 32,
                per_record: 0
            })
        );
        let e = Config::parse(
            &format!("{COUNT}bytes_per_record = 8\n"),
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("bytes_per_record") && e.contains("unknown key"),
            "{e}"
        );
        let e = Config::parse(
            &format!("{text}bytes_per_record = -1\n"),
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bytes_per_record"), "{e}");
    }

    #[test]
    fn a_kafka_streams_application_commits_only_when_it_closes_unless_told() {
        let app = format!("{COUNT}runner = \"application\"\n");
        let c = Config::parse(&app, Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            (spec.runner, spec.commit_every),
            (crate::engine::kafka_streams::Runner::Application, u64::MAX)
        );
        let c = Config::parse(&format!("{app}commit_every = 500\n"), Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(spec.commit_every, 500);
        let e = Config::parse(
            &format!("{COUNT}runner = \"broker\"\n"),
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("test-driver") && e.contains("application"),
            "{e}"
        );
    }

    #[test]
    fn a_kafka_streams_count_takes_its_defaults_and_its_settings() {
        let c = Config::parse(COUNT, Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(**spec, Default::default());
        assert_eq!(c.operator_name, "count");
        let text = COUNT.replace(
            "type = \"count\"",
            "type = \"count\"\ncache_bytes = 0\nstore = \"s\"\ncommit_every = 10",
        );
        let c = Config::parse(&text, Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!();
        };
        assert_eq!(
            (spec.cache_bytes, spec.store.as_str(), spec.commit_every),
            (0, "s", 10)
        );
    }

    #[test]
    fn windowed_counts_take_their_windows_and_the_reference_jobs_store_name() {
        let spec = |operator: &str| {
            let text = COUNT.replace("type = \"count\"", operator);
            let c = Config::parse(&text, Path::new("c.toml")).unwrap();
            let OperatorConfig::KafkaStreams(spec) = c.operator else {
                panic!("{:?}", c.operator);
            };
            spec
        };
        let tumbling = spec("type = \"tumbling-count\"\nsize = 5000");
        assert_eq!(tumbling.store, "window-counts");
        assert_eq!(
            tumbling.windows,
            Some(TimeWindows {
                size: 5000,
                advance: 5000,
                grace: 0
            })
        );
        let hopping =
            spec("type = \"hopping-count\"\nsize = 10\nadvance = 4\ngrace = 7\nstore = \"w\"");
        assert_eq!(hopping.store, "w");
        assert_eq!(
            hopping.windows,
            Some(TimeWindows {
                size: 10,
                advance: 4,
                grace: 7
            })
        );
        assert_eq!(spec("type = \"count\"").windows, None);
        assert!(!tumbling.suppress);
        assert!(
            spec("type = \"tumbling-count\"\nsize = 10\nsuppress = \"until-window-closes\"")
                .suppress
        );
    }

    #[test]
    fn a_session_count_takes_its_gap_and_grace_and_the_reference_jobs_store_name() {
        let text = COUNT.replace(
            "type = \"count\"",
            "type = \"session-count\"\ngap = 30000\ngrace = 5\nsuppress = \"until-window-closes\"",
        );
        let c = Config::parse(&text, Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(spec.store, "session-counts");
        assert_eq!(
            spec.sessions,
            Some(SessionWindows {
                gap: 30000,
                grace: 5
            })
        );
        assert_eq!(spec.windows, None);
        assert!(spec.suppress);
        let text = COUNT.replace("type = \"count\"", "type = \"session-count\"");
        let e = Config::parse(&text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gap") && e.contains("inactivity"), "{e}");
    }

    #[test]
    fn a_stream_join_takes_its_window_two_topics_and_the_left_and_right_types() {
        let text = r#"
engine = "kafka-streams"
[source]
type = "file"
path = "x.csv"
key_column = 0
time_column = 1
type_column = 2
left_types = ["SUBMIT"]
right_types = ["FINISH"]
[operator]
type = "stream-join"
window = 5000
grace = 10
right_topic = "ends"
"#;
        let c = Config::parse(text, Path::new("c.toml")).unwrap();
        assert!(c.operator.two_inputs());
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            spec.join,
            Some(JoinWindows {
                before: 5000,
                after: 5000,
                grace: 10
            })
        );
        assert_eq!(
            (spec.store.as_str(), spec.right_topic.as_str()),
            ("joined", "ends")
        );
        let e = Config::parse(&text.replace("window = 5000\n", ""), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("window") && e.contains("time difference"), "{e}");
        let e = Config::parse(
            &text.replace("left_types = [\"SUBMIT\"]\n", ""),
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("left_types"), "{e}");
        let count = COUNT.replace("type = \"count\"", "type = \"count\"\nright_topic = \"x\"");
        let e = Config::parse(&count, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("right_topic") && e.contains("stream-join"),
            "{e}"
        );
    }

    #[test]
    fn a_spark_join_takes_its_window_keeps_other_rows_and_has_no_output_mode() {
        let text = r#"
engine = "spark"
[source]
type = "file"
path = "x.csv"
key_column = 0
time_column = 1
type_column = 2
left_types = ["SUBMIT"]
right_types = ["FINISH"]
[operator]
type = "stream-join"
window = 5000
delay = 100
"#;
        let c = Config::parse(text, Path::new("c.toml")).unwrap();
        assert_eq!(c.operator.inputs(), crate::config::Inputs::TwoKeepingOthers);
        let OperatorConfig::Spark(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            (spec.query, spec.size, spec.delay),
            (crate::engine::spark::SparkQuery::StreamJoin, 5000, 100)
        );
        let crate::config::SourceConfig::File(file) = &c.source else {
            panic!("{:?}", c.source);
        };
        assert!(matches!(
            file.routing,
            crate::source::file::TypeRouting::SplitKeepingOthers(..)
        ));
        let e = Config::parse(&text.replace("window = 5000\n", ""), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("window"), "{e}");
        let e = Config::parse(&format!("{text}mode = \"update\"\n"), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mode") && e.contains("unknown key"), "{e}");
        let outer = format!("{text}join_type = \"full-outer\"\n");
        let c = Config::parse(&outer, Path::new("c.toml")).unwrap();
        let OperatorConfig::Spark(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(spec.join_type, crate::engine::spark::JoinType::FullOuter);
        let e = Config::parse(
            &format!("{text}join_type = \"cross\"\n"),
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("join_type") && e.contains("left-outer"), "{e}");
    }

    #[test]
    fn a_spark_session_count_needs_its_gap_and_refuses_update_mode() {
        let text = r#"
engine = "spark"
[source]
type = "file"
path = "x.csv"
key_column = 0
time_column = 1
[operator]
type = "session-count"
gap = 30000
"#;
        let c = Config::parse(text, Path::new("c.toml")).unwrap();
        let OperatorConfig::Spark(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            (spec.query, spec.size),
            (crate::engine::spark::SparkQuery::SessionCount, 30000)
        );
        let e = Config::parse(&format!("{text}mode = \"update\"\n"), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mode") && e.contains("append"), "{e}");
        let e = Config::parse(&text.replace("gap = 30000\n", ""), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gap"), "{e}");
    }

    #[test]
    fn a_spark_flat_map_groups_with_state_needs_its_gap_and_has_no_window() {
        let text = r#"
engine = "spark"
[source]
type = "file"
path = "x.csv"
key_column = 0
time_column = 1
[operator]
type = "flat-map-groups-with-state"
gap = 30000
delay = 100
mode = "update"
"#;
        let c = Config::parse(text, Path::new("c.toml")).unwrap();
        let OperatorConfig::Spark(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            (spec.query, spec.size, spec.delay, spec.mode),
            (
                crate::engine::spark::SparkQuery::FlatMapGroupsWithState,
                30000,
                100,
                crate::engine::spark::OutputMode::Update
            )
        );
        let e = Config::parse(&text.replace("gap = 30000\n", ""), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gap") && e.contains("times out"), "{e}");
        let e = Config::parse(&format!("{text}size = 5000\n"), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("size") && e.contains("unknown key"), "{e}");
        // Flink's session window names Spark's session count as the closest operator
        let flink = text.replace("flat-map-groups-with-state", "session");
        let e = Config::parse(&flink, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("closest is `session-count`"), "{e}");
    }

    #[test]
    fn a_spark_count_takes_its_window_watermark_mode_and_trigger() {
        let text = COUNT
            .replace("engine = \"kafka-streams\"", "engine = \"spark\"")
            .replace(
                "type = \"count\"",
                "type = \"tumbling-count\"\nsize = 5000\ndelay = 30\nmode = \"update\"\ntrigger_events = 7",
            );
        let c = Config::parse(&text, Path::new("c.toml")).unwrap();
        let OperatorConfig::Spark(spec) = c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            *spec,
            crate::engine::spark::SparkSpec {
                query: crate::engine::spark::SparkQuery::TumblingCount,
                size: 5000,
                delay: 30,
                mode: crate::engine::spark::OutputMode::Update,
                trigger: crate::engine::spark::Trigger::Events(7),
                partitions: 1,
                join_type: crate::engine::spark::JoinType::Inner,
                arrival: crate::engine::spark::BatchArrival::AvailableNow,
                no_data_batches: true,
            }
        );
        let e = Config::parse(&text.replace("size = 5000\n", ""), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("size"), "{e}");
        let e = Config::parse(
            &text.replace("mode = \"update\"", "mode = \"complete\""),
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("append") && e.contains("update"), "{e}");
        // Flink's tumbling window names Spark's closest operator
        let e = Config::parse(
            &text.replace("type = \"tumbling-count\"", "type = \"tumbling\""),
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("tumbling-count") && e.contains("Spark"), "{e}");
        // the deduplication takes the watermark and the trigger, and has no window
        let dedup = text.replace(
            "type = \"tumbling-count\"",
            "type = \"drop-duplicates-within-watermark\"",
        );
        let e = Config::parse(&dedup, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("size") && e.contains("unknown key"), "{e}");
        let c = Config::parse(&dedup.replace("size = 5000\n", ""), Path::new("c.toml")).unwrap();
        let OperatorConfig::Spark(spec) = c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(
            (spec.query, spec.delay, spec.trigger),
            (
                crate::engine::spark::SparkQuery::DropDuplicatesWithinWatermark,
                30,
                crate::engine::spark::Trigger::Events(7)
            )
        );
        // a trigger by event time, or by events, not both
        let by_time = dedup
            .replace("size = 5000\n", "")
            .replace("trigger_events = 7", "trigger_ms = 2000");
        let c = Config::parse(&by_time, Path::new("c.toml")).unwrap();
        let OperatorConfig::Spark(spec) = c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(spec.trigger, crate::engine::spark::Trigger::EventTime(2000));
        let both = by_time.replace("trigger_ms = 2000", "trigger_ms = 2000\ntrigger_events = 7");
        let e = Config::parse(&both, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("trigger_ms") && e.contains("not both"), "{e}");
        // a batch's groups stay in memory until it ends: an endless batch is refused
        let endless = dedup
            .replace("size = 5000\n", "")
            .replace("trigger_events = 7", "trigger_events = 9223372036854775807");
        let e = Config::parse(&endless, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("trigger_events") && e.contains("10000000"),
            "{e}"
        );
    }

    #[test]
    fn a_windowed_count_without_its_size_or_with_a_hop_of_its_size_says_what_to_set() {
        let said = |operator: &str| {
            let text = COUNT.replace("type = \"count\"", operator);
            Config::parse(&text, Path::new("c.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = said("type = \"tumbling-count\"");
        assert!(e.contains("size") && e.contains("window length"), "{e}");
        let e = said("type = \"hopping-count\"\nsize = 10");
        assert!(e.contains("advance"), "{e}");
        let e = said("type = \"hopping-count\"\nsize = 10\nadvance = 10");
        assert!(e.contains("tumbling-count"), "{e}");
        let e = said("type = \"hopping-count\"\nsize = 10\nadvance = 11");
        assert!(e.contains("advance") && e.contains("c.toml:"), "{e}");
        let e = said("type = \"tumbling-count\"\nsize = 0");
        assert!(e.contains("size"), "{e}");
        let e = said("type = \"tumbling-count\"\nsize = 10\ngrace = -1");
        assert!(e.contains("grace"), "{e}");
        let e = said("type = \"count\"\nsuppress = \"until-window-closes\"");
        assert!(e.contains("suppress") && e.contains("windowed"), "{e}");
        let e = said("type = \"tumbling-count\"\nsize = 10\nsuppress = \"yes\"");
        assert!(e.contains("until-window-closes"), "{e}");
    }

    #[test]
    fn a_hopping_count_putting_a_record_into_over_100000_windows_is_refused_at_its_advance() {
        let hopping = |size: i64, advance: i64| {
            let operator = format!("type = \"hopping-count\"\nsize = {size}\nadvance = {advance}");
            Config::parse(
                &COUNT.replace("type = \"count\"", &operator),
                Path::new("c.toml"),
            )
        };
        // each record would fall in 86.4 million windows, a request or two each
        let e = hopping(86_400_000, 1).unwrap_err().to_string();
        assert!(
            e.contains("c.toml:15: `operator.advance`")
                && e.contains("86400000 windows")
                && e.contains("at most 100000"),
            "{e}"
        );
        // the bound is Flink's sliding windows' (one constant)
        assert!(hopping(86_400_000, 864).is_ok());
        assert!(hopping(86_400_000, 863).is_err());
    }

    #[test]
    fn kafka_names_are_what_kafka_takes_so_that_every_trace_reader_reads_their_states() {
        let with = |key: &str, value: &str| {
            let text = format!("{COUNT}{key} = {value}\n");
            Config::parse(&text, Path::new("c.toml"))
        };
        let longest = "x".repeat(249);
        for key in ["application_id", "store", "topic"] {
            for (value, said) in [
                ("\"a\\tb\"".to_string(), "'\\t' cannot be in a name"),
                ("\"a\\nb\"".to_string(), "'\\n' cannot be in a name"),
                ("\"a b\"".to_string(), "' ' cannot be in a name"),
                ("\"..\"".to_string(), "\"..\" is not a name"),
                ("\"\"".to_string(), "\"\" is not a name"),
                (format!("\"{longest}y\""), "250 characters long"),
                (format!("\"{}\"", "x".repeat(1100)), "1100 characters long"),
            ] {
                let e = with(key, &value).unwrap_err().to_string();
                assert!(
                    e.contains(&format!("c.toml:14: `operator.{key}`"))
                        && e.contains(said)
                        && e.contains("1 to 249 ASCII letters, digits, `.`, `_` or `-`"),
                    "{key} = {value}: {e}"
                );
            }
            let c = with(key, &format!("\"{longest}\"")).unwrap();
            let OperatorConfig::KafkaStreams(spec) = c.operator else {
                panic!("{:?}", c.operator);
            };
            let name = match key {
                "application_id" => &spec.application_id,
                "store" => &spec.store,
                _ => &spec.topic,
            };
            assert_eq!(name, &longest);
        }
    }

    #[test]
    fn spark_partitions_are_bounded_by_the_state_stores_they_open() {
        let spark = |operator: &str, partitions: u32| {
            let text = COUNT
                .replace("engine = \"kafka-streams\"", "engine = \"spark\"")
                .replace(
                    "type = \"count\"",
                    &format!("{operator}\npartitions = {partitions}"),
                );
            Config::parse(&text, Path::new("c.toml")).map_err(|e| e.to_string())
        };
        let count = "type = \"tumbling-count\"\nsize = 5000";
        assert!(spark(count, 200).is_ok());
        let e = spark(count, 201).unwrap_err();
        assert!(
            e.contains("`operator.partitions`: 201 is out of range; allowed: [1, 200]")
                && e.contains("at most 200 state stores")
                && e.contains("docs/config.md"),
            "{e}"
        );
        let e = spark(count, 1000).unwrap_err();
        assert!(e.contains("[1, 200]"), "{e}");
        // a join has four state stores per partition
        let join = |partitions: u32| {
            let text = format!(
                "engine = \"spark\"\n[source]\ntype = \"file\"\npath = \"x.csv\"\n\
                 key_column = 0\ntime_column = 1\ntype_column = 2\nleft_types = [\"S\"]\n\
                 right_types = [\"F\"]\n[operator]\ntype = \"stream-join\"\nwindow = 5000\n\
                 partitions = {partitions}\n"
            );
            Config::parse(&text, Path::new("c.toml")).map_err(|e| e.to_string())
        };
        assert!(join(50).is_ok());
        let e = join(51).unwrap_err();
        assert!(
            e.contains("c.toml:13")
                && e.contains("allowed: [1, 50]")
                && e.contains("4 state stores each"),
            "{e}"
        );
    }

    #[test]
    fn an_operator_of_another_engine_names_the_closest_one_and_bad_settings_say_why() {
        let said = |text: &str| {
            Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = said(&COUNT.replace("\"count\"", "\"aggregation\""));
        assert!(
            e.contains("closest is `count`") && e.contains("c.toml:"),
            "{e}"
        );
        let e = said(&COUNT.replace("engine = \"kafka-streams\"\n", ""));
        assert!(e.contains("closest is `aggregation`"), "{e}");
        let e = said(&COUNT.replace("kafka-streams", "storm"));
        assert!(
            e.contains("flink") && e.contains("kafka-streams") && e.contains("spark"),
            "{e}"
        );
        let e = said(&COUNT.replace("type = \"count\"", "type = \"count\"\nstore = \"a/b\""));
        assert!(e.contains("'/' cannot be in a name"), "{e}");
        let e = said(&COUNT.replace("type = \"count\"", "type = \"count\"\ntimers = \"heap\""));
        assert!(e.contains("timers"), "{e}");
        let e = said(&format!("parallelism = 2\n{COUNT}"));
        assert!(e.contains("Kafka Streams splits a topology"), "{e}");
    }
}
