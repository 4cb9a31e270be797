//! A Kafka Streams `[operator]` section, validated into a [`KafkaStreamsSpec`]
//! (docs/config.md).

use super::{AggregateBytes, JoinWindows, KafkaStreamsSpec, Runner, SessionWindows, TimeWindows};
use crate::document::{ConfigError, Section};
use crate::engine::DAY_MS;

/// A Kafka Streams `[operator]` section.
pub(crate) fn parse(s: &Section<'_>) -> Result<(KafkaStreamsSpec, String), ConfigError> {
    let kind = s.require_choice("type", super::OPERATORS)?;
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
    let (partitions, threads) = parse_tasks(s, runner)?;
    let repartition = parse_repartition(s, kind, runner)?;
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
        partitions,
        threads,
        task: 0,
        repartition,
    };
    Ok((spec, kind.to_string()))
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

/// The most partitions (and tasks) or stream threads a config may have.
const MAX_TASKS: i64 = 1024;

/// `partitions` (of each input topic: the tasks) and `threads` (`num.stream.threads`), 1 and
/// 1 unless set; more than one task only for an application, which commits when it closes.
fn parse_tasks(s: &Section<'_>, runner: Runner) -> Result<(u32, u32), ConfigError> {
    let partitions = s.int("partitions", 1, MAX_TASKS)?.unwrap_or(1) as u32;
    let threads = s.int("threads", 1, MAX_TASKS)?.unwrap_or(1) as u32;
    if partitions > 1 && runner == Runner::TestDriver {
        return Err(s.error(
            "partitions",
            "TopologyTestDriver runs a topology as one task whatever its topics' partitions; \
             several partitions (a task each) need `runner = \"application\"`",
        ));
    }
    if threads > 1 && runner == Runner::TestDriver {
        return Err(s.error(
            "threads",
            "TopologyTestDriver has no stream threads; `threads` needs `runner = \"application\"`",
        ));
    }
    if partitions > 1 && s.int("commit_every", 1, i64::MAX)?.is_some() {
        return Err(s.error(
            "commit_every",
            "a thread of an application over several partitions commits all its tasks at \
             once, on wall-clock time; Gadget models that over one partition only, so leave \
             `commit_every` out (the tasks commit when the application closes) or set \
             `partitions = 1`",
        ));
    }
    Ok((partitions, threads))
}

/// `repartition`: true for a count of records re-keyed (`groupBy`) through a repartition
/// topic, which an application runs (the recorded case: `count` only).
fn parse_repartition(s: &Section<'_>, kind: &str, runner: Runner) -> Result<bool, ConfigError> {
    let Some(true) = s.bool("repartition")? else {
        return Ok(false);
    };
    if kind != "count" {
        return Err(s.error(
            "repartition",
            format!(
                "a count re-keyed through a repartition topic (`groupBy(...).count()`) is \
                 recorded and reproduced; a `{kind}` behind one is not yet, so it is refused: \
                 use `type = \"count\"`"
            ),
        ));
    }
    if runner == Runner::TestDriver {
        return Err(s.error(
            "repartition",
            "a repartition topic is modelled as an application runs it (its tasks `1_<i>`); \
             set `runner = \"application\"`",
        ));
    }
    Ok(true)
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
        crate::engine::check_windows_per_event(s, "advance", size, advance)?;
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
