//! The `[operator]` section, parsed by the parser of the config's engine
//! ([`crate::engine::flink::config`], [`crate::engine::kafka_streams::config`],
//! [`crate::engine::spark::config`]).

use super::OperatorConfig;
use crate::document::{ConfigError, Section};
use crate::engine::Engine;
use crate::timer::TimerService;

/// The operator of `engine` an `[operator]` section configures, its short name for reports,
/// and its timer service (Flink's `timers`; the other engines keep timers in RocksDB).
pub(super) fn parse_operator(
    s: &Section<'_>,
    engine: Engine,
) -> Result<(OperatorConfig, String, TimerService), ConfigError> {
    crate::engine::check_operator(s, engine)?;
    Ok(match engine {
        Engine::Flink => {
            let (op, name, timers) = crate::engine::flink::config::parse(s)?;
            (OperatorConfig::Flink(op), name, timers)
        }
        Engine::KafkaStreams => {
            let (spec, name) = crate::engine::kafka_streams::config::parse(s)?;
            (
                OperatorConfig::KafkaStreams(Box::new(spec)),
                name,
                TimerService::RocksDb,
            )
        }
        Engine::Spark => {
            let (spec, name) = crate::engine::spark::config::parse(s)?;
            (
                OperatorConfig::Spark(Box::new(spec)),
                name,
                TimerService::RocksDb,
            )
        }
    })
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
    fn an_application_takes_partitions_and_threads_which_the_test_driver_refuses() {
        let app = format!("{COUNT}runner = \"application\"\npartitions = 4\nthreads = 2\n");
        let c = Config::parse(&app, Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!((spec.partitions, spec.threads, spec.task), (4, 2, 0));
        let refused = |text: &str| {
            Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = refused(&format!("{COUNT}partitions = 2\n"));
        assert!(
            e.contains("partitions") && e.contains("runner = \"application\""),
            "{e}"
        );
        let e = refused(&format!("{COUNT}threads = 2\n"));
        assert!(e.contains("threads") && e.contains("application"), "{e}");
        let e = refused(&format!("{app}commit_every = 10\n"));
        assert!(
            e.contains("commit_every") && e.contains("partitions = 1"),
            "{e}"
        );
        let e = refused(&app.replace("partitions = 4", "partitions = 0"));
        assert!(e.contains("partitions"), "{e}");
        // a regrouped count: its tasks behind the repartition topic
        let c = Config::parse(&format!("{app}repartition = true\n"), Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert!(spec.repartition);
        let e = refused(&format!("{COUNT}repartition = true\n"));
        assert!(
            e.contains("repartition") && e.contains("application"),
            "{e}"
        );
        let windowed = app.replace("type = \"count\"", "type = \"tumbling-count\"\nsize = 1000");
        let e = refused(&format!("{windowed}repartition = true\n"));
        assert!(
            e.contains("repartition") && e.contains("tumbling-count"),
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
    fn a_spark_transform_with_state_names_its_state_variable() {
        let text = r#"
engine = "spark"
[source]
type = "file"
path = "x.csv"
key_column = 0
time_column = 1
[operator]
type = "transform-with-state"
state = "list"
gap = 30000
"#;
        let c = Config::parse(text, Path::new("c.toml")).unwrap();
        let OperatorConfig::Spark(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        use crate::engine::spark::{SparkQuery, StateVariable};
        assert_eq!(
            (spec.query, spec.size),
            (SparkQuery::TransformWithState(StateVariable::List), 30000)
        );
        // the state variable is required, and one of three
        let e = Config::parse(&text.replace("state = \"list\"\n", ""), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("state") && e.contains("value, list, map"), "{e}");
        let e = Config::parse(&text.replace("\"list\"", "\"set\""), Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("c.toml:10") && e.contains("value, list, map"),
            "{e}"
        );
        // no other operator has one
        let other = text.replace("transform-with-state", "flat-map-groups-with-state");
        let e = Config::parse(&other, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("state") && e.contains("unknown key"), "{e}");
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
                subtask: None,
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
        assert!(e.contains("stream threads"), "{e}");
    }

    #[test]
    fn an_applications_parallelism_is_its_stream_threads_each_a_subtask() {
        let app = format!("{COUNT}runner = \"application\"\npartitions = 5\n");
        let refused = |text: &str| {
            Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string()
        };
        let c = Config::parse(&format!("parallelism = 3\n{app}"), Path::new("c.toml")).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!((spec.threads, c.parallel.parallelism), (3, 3));
        assert_eq!(c.json["operator"]["threads"], 3);
        assert!(c.json.get("max_parallelism").is_none(), "{}", c.json);
        // each subtask is a thread, and holds its tasks
        let part = |i: u32| c.for_subtask(i).unwrap().subtask_part();
        assert_eq!(
            part(1),
            super::super::SubtaskPart::Tasks(vec!["0_1".into(), "0_4".into()])
        );
        assert_eq!(part(1).to_string(), "a stream thread: tasks 0_1, 0_4");
        // the flag sets the threads over the config's
        let mut c = Config::parse(&format!("{app}threads = 2\n"), Path::new("c.toml")).unwrap();
        c.set_parallelism(4).unwrap();
        let OperatorConfig::KafkaStreams(spec) = &c.operator else {
            panic!("{:?}", c.operator);
        };
        assert_eq!(spec.threads, 4);
        let e = c.set_parallelism(6).unwrap_err().to_string();
        assert!(e.contains("partitions = 5") && e.contains("raise"), "{e}");
        // a test driver has no threads; more threads than tasks; threads that disagree
        let e = refused(&format!("parallelism = 2\n{COUNT}"));
        assert!(
            e.contains("c.toml:") && e.contains("runner = \"application\""),
            "{e}"
        );
        let e = refused(&format!("parallelism = 6\n{app}"));
        assert!(e.contains("partitions = 5"), "{e}");
        let e = refused(&format!("parallelism = 2\n{app}threads = 3\n"));
        assert!(
            e.contains("threads = 3") && e.contains("parallelism 2"),
            "{e}"
        );
    }

    #[test]
    fn a_kafka_streams_or_spark_join_takes_one_source_not_left_and_right() {
        let source = "type = \"synthetic\"\nevents = 10\nkey_space = 5\n";
        for (engine, window) in [("kafka-streams", "window = 10"), ("spark", "window = 10")] {
            let text = format!(
                "engine = \"{engine}\"\n[left]\n{source}[right]\n{source}[operator]\n\
                 type = \"stream-join\"\n{window}\n"
            );
            let e = Config::parse(&text, Path::new("c.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("[left]") && e.contains("left_types") && e.contains("one [source]"),
                "{engine}: {e}"
            );
        }
    }

    #[test]
    fn a_spark_querys_subtasks_share_out_its_shuffle_partitions() {
        let query = |top: &str, partitions: u32| {
            let text = COUNT
                .replace(
                    "engine = \"kafka-streams\"",
                    &format!("{top}engine = \"spark\""),
                )
                .replace(
                    "type = \"count\"",
                    &format!("type = \"tumbling-count\"\nsize = 100\npartitions = {partitions}"),
                );
            Config::parse(&text, Path::new("c.toml")).map_err(|e| e.to_string())
        };
        let c = query("parallelism = 2\n", 5).unwrap();
        assert_eq!(c.parallel.parallelism, 2);
        assert!(c.json.get("max_parallelism").is_none(), "{}", c.json);
        let part = c.for_subtask(1).unwrap().subtask_part();
        assert_eq!(part, super::super::SubtaskPart::Partitions(vec![1, 3]));
        assert_eq!(part.to_string(), "shuffle partitions 1, 3");
        assert_eq!(c.for_subtask(1).unwrap().build_operator().states().len(), 2);
        let e = query("parallelism = 6\n", 5).unwrap_err();
        assert!(
            e.contains("c.toml:2") && e.contains("partitions = 5") && e.contains("raise"),
            "{e}"
        );
        let mut c = query("", 3).unwrap();
        let e = c.set_parallelism(4).unwrap_err().to_string();
        assert!(
            e.contains("--parallelism") && e.contains("partitions = 3"),
            "{e}"
        );
        c.set_parallelism(3).unwrap();
        assert_eq!(
            c.for_subtask(2).unwrap().subtask_part(),
            super::super::SubtaskPart::Partitions(vec![2])
        );
    }
}
