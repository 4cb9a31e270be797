//! A Spark `[operator]` section, validated into a [`SparkSpec`] (docs/config.md).

use super::{BatchArrival, JoinType, OutputMode, SparkQuery, SparkSpec, Trigger};
use crate::document::{ConfigError, Section};
use crate::engine::DAY_MS;

/// The most records a micro-batch may hold: a batch keeps its distinct groups (keys and
/// windows) in memory until it ends, and an endless synthetic source would fill memory before
/// a batch of `i64::MAX` records ended.
const MAX_TRIGGER_EVENTS: i64 = 10_000_000;

/// A Spark `[operator]` section.
pub(crate) fn parse(s: &Section<'_>) -> Result<(SparkSpec, String), ConfigError> {
    let kind = s.require_choice("type", super::OPERATORS)?;
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
        "flat-map-groups-with-state" | "session-count" | "transform-with-state" => {
            let gap = s.require_int(
                "gap",
                1,
                DAY_MS,
                "the ms of event time without a record after which a key's session times out",
            )?;
            let query = match kind {
                "session-count" => SparkQuery::SessionCount,
                "transform-with-state" => SparkQuery::TransformWithState(
                    s.require_named("state", super::STATE_VARIABLES)?,
                ),
                _ => SparkQuery::FlatMapGroupsWithState,
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
        subtask: None,
    };
    Ok((spec, kind.to_string()))
}

/// `partitions`: at most [`MAX_STATE_STORES`](crate::engine::spark::MAX_STATE_STORES) state
/// stores in all, each partition having `query`'s stores.
fn parse_partitions(s: &Section<'_>, query: SparkQuery) -> Result<Option<u32>, ConfigError> {
    use super::MAX_STATE_STORES;
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
