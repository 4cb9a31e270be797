//! `[operator]` of a Flink config: each operator type's keys, validated (docs/config.md).

use super::{FlinkOperator, OPERATORS};
use crate::document::{ConfigError, Section, MS_MAX};
use crate::engine::check_windows_per_event;
use crate::operator::{LookupJoinSpec, WindowAssigner, WindowFunction};
use crate::source::interleave::Interleaving;
use crate::source::ysb::AdEventType;
use crate::timer::TimerService;

fn parse_interleaving(s: &Section<'_>, default: &'static str) -> Result<Interleaving, ConfigError> {
    let choice = s
        .choice("interleave", &["round-robin", "source-order", "by-time"])?
        .unwrap_or(default);
    Ok(match choice {
        "source-order" => Interleaving::SourceOrder,
        "by-time" => Interleaving::ByTime,
        _ => Interleaving::RoundRobin,
    })
}

/// The `slide` of a sliding window of `size` ms: at most the size, at most
/// [`MAX_WINDOWS_PER_EVENT`](crate::engine::MAX_WINDOWS_PER_EVENT) windows per event.
fn parse_slide(s: &Section<'_>, size: i64) -> Result<i64, ConfigError> {
    let slide = s.require_int(
        "slide",
        1,
        MS_MAX,
        "the distance between window starts in ms, e.g. 1000",
    )?;
    if slide > size {
        return Err(s.error(
            "slide",
            format!("{slide} is larger than size {size}; a slide must be at most the window size"),
        ));
    }
    check_windows_per_event(s, "slide", size, slide)?;
    Ok(slide)
}

/// The largest `element_size`: the longest value a trace holds ([`crate::trace::MAX_VALUE_LEN`]).
const MAX_ELEMENT_SIZE: i64 = crate::trace::MAX_VALUE_LEN as i64;

fn parse_function(s: &Section<'_>) -> Result<WindowFunction, ConfigError> {
    let f = s
        .choice("function", &["incremental", "holistic"])?
        .unwrap_or("incremental");
    let element_size = s.int("element_size", 0, MAX_ELEMENT_SIZE)?.unwrap_or(24) as u32;
    Ok(match f {
        "holistic" => WindowFunction::Holistic { element_size },
        _ => WindowFunction::Incremental,
    })
}

/// States of the lookup-join's window (with either timer service): its table and sink must
/// be named otherwise.
const LOOKUP_JOIN_WINDOW_STATES: [&str; 3] = [
    "window-contents",
    "_timer_state/event_window-timers",
    "default",
];

/// `[operator] type = "lookup-join"` (see docs/config.md).
fn parse_lookup_join(s: &Section<'_>) -> Result<LookupJoinSpec, ConfigError> {
    let names: Vec<&str> = AdEventType::ALL.iter().map(|t| t.name()).collect();
    let event_types = match s.strings("event_types")? {
        None => vec![AdEventType::View],
        Some(list) => {
            let types = list
                .iter()
                .map(|name| {
                    AdEventType::from_name(name).ok_or_else(|| {
                        s.error(
                            "event_types",
                            format!(
                                "`{name}` is not a YSB event type; use some of: {}",
                                names.join(", ")
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if types.is_empty() {
                return Err(s.error(
                    "event_types",
                    format!(
                        "no event type passes the filter; list some of: {}",
                        names.join(", ")
                    ),
                ));
            }
            types
        }
    };
    let state = |key: &'static str, default: &str| -> Result<String, ConfigError> {
        let name = s.state_name(key)?.unwrap_or_else(|| default.to_string());
        if LOOKUP_JOIN_WINDOW_STATES.contains(&name.as_str()) {
            return Err(s.error(
                key,
                format!(
                    "`{name}` cannot name the state; use a non-empty name other than the window's {}",
                    LOOKUP_JOIN_WINDOW_STATES.join(", ")
                ),
            ));
        }
        Ok(name)
    };
    let table_state = state("table_state", "ad-campaigns")?;
    let sink_state = state("sink_state", "campaign-windows")?;
    if table_state == sink_state {
        return Err(s.error(
            "sink_state",
            format!("`{sink_state}` is also the table_state; give the table and the sink different names"),
        ));
    }
    Ok(LookupJoinSpec {
        size: s.int("size", 1, MS_MAX)?.unwrap_or(10_000),
        event_types,
        table_state,
        sink_state,
        value_bytes: s.int("value_bytes", 0, 1 << 20)?.unwrap_or(0) as u32,
    })
}

/// A Flink `[operator]` section: the operator, its short name for reports, and the timer
/// service (`timers`).
pub(crate) fn parse(s: &Section<'_>) -> Result<(FlinkOperator, String, TimerService), ConfigError> {
    let kind = s.require_choice("type", OPERATORS)?;
    let timers = match s
        .choice("timers", &["rocksdb", "heap"])?
        .unwrap_or("rocksdb")
    {
        "heap" => TimerService::Heap,
        _ => TimerService::RocksDb,
    };
    let lateness = |s: &Section<'_>| -> Result<i64, ConfigError> {
        Ok(s.int("allowed_lateness", 0, MS_MAX)?.unwrap_or(0))
    };
    let offset = |s: &Section<'_>| -> Result<i64, ConfigError> {
        Ok(s.int("offset", -MS_MAX, MS_MAX)?.unwrap_or(0))
    };
    let op = match kind {
        "tumbling" => {
            let size = s.require_int("size", 1, MS_MAX, "the window length in ms, e.g. 5000")?;
            let offset = offset(s)?;
            FlinkOperator::Window {
                assigner: WindowAssigner::Tumbling { size, offset },
                function: parse_function(s)?,
                allowed_lateness: lateness(s)?,
                keyed: s.bool("keyed")?.unwrap_or(true),
            }
        }
        "sliding" => {
            let size = s.require_int("size", 1, MS_MAX, "the window length in ms, e.g. 5000")?;
            let slide = parse_slide(s, size)?;
            let offset = offset(s)?;
            FlinkOperator::Window {
                assigner: WindowAssigner::Sliding {
                    size,
                    slide,
                    offset,
                },
                function: parse_function(s)?,
                allowed_lateness: lateness(s)?,
                keyed: s.bool("keyed")?.unwrap_or(true),
            }
        }
        "session" => FlinkOperator::Session {
            gap: s.require_int("gap", 1, MS_MAX, "the session gap in ms, e.g. 120000")?,
            function: parse_function(s)?,
            allowed_lateness: lateness(s)?,
        },
        "tumbling-join" | "sliding-join" => {
            let size = s.require_int("size", 1, MS_MAX, "the window length in ms, e.g. 5000")?;
            let assigner = if kind == "sliding-join" {
                let slide = parse_slide(s, size)?;
                WindowAssigner::Sliding {
                    size,
                    slide,
                    offset: offset(s)?,
                }
            } else {
                WindowAssigner::Tumbling {
                    size,
                    offset: offset(s)?,
                }
            };
            FlinkOperator::WindowJoin {
                assigner,
                element_size: s.int("element_size", 0, MAX_ELEMENT_SIZE)?.unwrap_or(24) as u32,
                allowed_lateness: lateness(s)?,
                interleaving: parse_interleaving(s, "source-order")?,
            }
        }
        "continuous-join" => FlinkOperator::ContinuousJoin {
            element_size: s.int("element_size", 0, MAX_ELEMENT_SIZE)?.unwrap_or(24) as u32,
            interleaving: parse_interleaving(s, "round-robin")?,
        },
        "lookup-join" => FlinkOperator::LookupJoin(parse_lookup_join(s)?),
        "aggregation" => FlinkOperator::Aggregation {
            state_name: s
                .state_name("state_name")?
                .unwrap_or_else(|| "running-sum".to_string()),
        },
        "interval-join" => {
            let lower = s.require_int(
                "lower_bound",
                -MS_MAX,
                MS_MAX,
                "the lower bound in ms, e.g. -120000",
            )?;
            let upper = s.require_int(
                "upper_bound",
                -MS_MAX,
                MS_MAX,
                "the upper bound in ms, e.g. 180000",
            )?;
            if lower > upper {
                return Err(s.error(
                    "lower_bound",
                    format!("{lower} is above upper_bound {upper}"),
                ));
            }
            FlinkOperator::IntervalJoin {
                lower,
                upper,
                element_size: s.int("element_size", 0, MAX_ELEMENT_SIZE)?.unwrap_or(24) as u32,
                interleaving: parse_interleaving(s, "round-robin")?,
            }
        }
        // a name listed in OPERATORS without an arm here: found by the test that
        // parses every listed operator
        other => {
            return Err(s.error(
                "type",
                format!(
                "`{other}` is a Flink operator this build lists but cannot parse; please report it"
            ),
            ))
        }
    };
    let name = match &op {
        FlinkOperator::Window { function, .. } | FlinkOperator::Session { function, .. } => {
            format!(
                "{kind}-{}",
                if matches!(function, WindowFunction::Holistic { .. }) {
                    "holistic"
                } else {
                    "incremental"
                }
            )
        }
        _ => kind.to_string(),
    };
    Ok((op, name, timers))
}
