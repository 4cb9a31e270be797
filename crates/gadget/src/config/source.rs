//! `[source]` (or `[left]` and `[right]`): file, synthetic and YSB streams, their keys, gaps,
//! lateness and watermarks, validated (docs/config.md).

use super::{ConfigError, Inputs, OperatorConfig, SourceConfig, MAX_REPEAT, MS_MAX};
use crate::document::Section;
use crate::engine::flink::FlinkOperator;
use crate::operator::WindowFunction;
use crate::source::distribution::{GapDistributionSpec, KeyDistributionSpec};
use crate::source::element::WatermarkPolicy;
use crate::source::file::{FileOrder, FileSpec, KeyType, TimeUnit, TypeRouting};
use crate::source::synthetic::{SyntheticSource, SyntheticSpec};
use crate::source::ysb::YsbSpec;

/// Refuses `[source.watermarks]` for an engine that does not read the source's watermarks,
/// naming the engine's own knob for lateness.
pub(super) fn refuse_flink_watermarks(
    s: &Section<'_>,
    engine: crate::engine::Engine,
) -> Result<(), ConfigError> {
    use crate::engine::Engine;
    let Some(watermarks) = s.table("watermarks")? else {
        return Ok(());
    };
    let instead = match engine {
        Engine::Flink => return Ok(()),
        Engine::KafkaStreams => {
            "Kafka Streams has no watermarks: a window closes once stream time (the largest \
             record time seen) passes its end plus `[operator] grace`; drop this section and set \
             `grace`"
        }
        Engine::Spark => {
            "Spark computes its watermark itself, from the largest event time of a batch less \
             `[operator] delay` (withWatermark); drop this section and set `delay`"
        }
    };
    Err(watermarks.section_error(instead))
}

pub(super) fn parse_watermarks(s: Option<Section<'_>>) -> Result<WatermarkPolicy, ConfigError> {
    let Some(s) = s else {
        return Ok(WatermarkPolicy::Punctuated {
            every: 100,
            out_of_orderness: 0,
        });
    };
    let kind = s
        .choice("type", &["punctuated", "periodic"])?
        .unwrap_or("punctuated");
    let out_of_orderness = s.int("out_of_orderness", 0, MS_MAX)?.unwrap_or(0);
    let policy = match kind {
        "periodic" => WatermarkPolicy::Periodic {
            interval: s.require_int(
                "interval",
                1,
                MS_MAX,
                "event time between watermarks in ms, e.g. 200",
            )?,
            out_of_orderness,
        },
        _ => WatermarkPolicy::Punctuated {
            every: s.int("every", 1, i64::MAX)?.unwrap_or(100) as u64,
            out_of_orderness,
        },
    };
    s.finish()?;
    Ok(policy)
}

pub(super) fn parse_keys(s: Section<'_>) -> Result<KeyDistributionSpec, ConfigError> {
    const KINDS: &[&str] = &[
        "constant",
        "uniform",
        "zipf",
        "hotspot",
        "sequential",
        "latest",
        "normal",
        "empirical",
    ];
    let spec = match s.require_choice("distribution", KINDS)? {
        "constant" => KeyDistributionSpec::Constant(s.require_int(
            "key",
            0,
            i64::MAX,
            "the one key every event has",
        )? as u64),
        "uniform" => KeyDistributionSpec::Uniform,
        "zipf" => KeyDistributionSpec::Zipf {
            s: s.require_float("s", 1e-9, 1e3, "the Zipf exponent, e.g. 0.99")?,
        },
        "hotspot" => KeyDistributionSpec::Hotspot {
            hot_key_fraction: s.require_float(
                "hot_key_fraction",
                0.0,
                1.0,
                "share of keys that are hot, e.g. 0.2",
            )?,
            hot_operation_fraction: s.require_float(
                "hot_operation_fraction",
                0.0,
                1.0,
                "share of events on hot keys, e.g. 0.8",
            )?,
        },
        "sequential" => KeyDistributionSpec::Sequential,
        "latest" => KeyDistributionSpec::Latest {
            s: s.float("s", 1e-9, 1e3)?.unwrap_or(0.99),
            insert_fraction: s.float("insert_fraction", 1e-12, 1.0)?.unwrap_or(0.05),
        },
        "normal" => KeyDistributionSpec::Normal {
            mean: s.require_float("mean", -1e18, 1e18, "the mean key index")?,
            stddev: s.require_float("stddev", 0.0, 1e18, "the standard deviation in keys")?,
        },
        _ => KeyDistributionSpec::Empirical {
            path: s.path("path")?.ok_or_else(|| {
                s.error(
                    "path",
                    "missing; a file of `value,cumulative_probability` lines",
                )
            })?,
        },
    };
    s.finish()?;
    Ok(spec)
}

pub(super) fn parse_gaps(s: Section<'_>) -> Result<GapDistributionSpec, ConfigError> {
    const KINDS: &[&str] = &["constant", "uniform", "exponential", "normal", "pareto"];
    let spec = match s.require_choice("distribution", KINDS)? {
        "constant" => GapDistributionSpec::Constant(s.require_float(
            "value",
            0.0,
            1e15,
            "the gap in ms, e.g. 0.5",
        )?),
        "uniform" => {
            let min = s.require_float("min", 0.0, 1e15, "the smallest gap in ms")?;
            let max = s.require_float("max", 0.0, 1e15, "the largest gap in ms")?;
            if min > max {
                return Err(s.error("min", format!("{min} is above max {max}")));
            }
            GapDistributionSpec::Uniform { min, max }
        }
        "exponential" => GapDistributionSpec::Exponential {
            rate: s.require_float(
                "rate",
                1e-12,
                1e12,
                "events per ms, e.g. 1.0 (mean gap 1/rate)",
            )?,
        },
        "normal" => GapDistributionSpec::Normal {
            mean: s.require_float("mean", 0.0, 1e15, "the mean gap in ms")?,
            stddev: s.require_float("stddev", 0.0, 1e15, "the standard deviation in ms")?,
        },
        _ => GapDistributionSpec::Pareto {
            scale: s.require_float("scale", 1e-12, 1e15, "the minimum gap x_m in ms")?,
            shape: s.require_float("shape", 1e-12, 1e6, "the tail index alpha, e.g. 1.5")?,
        },
    };
    s.finish()?;
    Ok(spec)
}

/// `[source.out_of_order]`: the share of late events and their largest delay, ms.
pub(super) fn parse_out_of_order(s: &Section<'_>) -> Result<(f64, i64), ConfigError> {
    Ok(match s.table("out_of_order")? {
        None => (0.0, 0),
        Some(o) => {
            let f = o.require_float("fraction", 0.0, 1.0, "the share of events delivered late")?;
            if f >= 1.0 {
                return Err(o.error(
                    "fraction",
                    format!("{f} holds back every event, so none arrives on time to move the stream on; allowed: [0, 1)"),
                ));
            }
            let d = o.int("max_delay", 1, MS_MAX)?;
            let d = match (f > 0.0, d) {
                (true, None) => {
                    return Err(o.error(
                        "max_delay",
                        "missing; how late (ms) a late event may arrive, e.g. 1000",
                    ))
                }
                (_, d) => d.unwrap_or(0),
            };
            o.finish()?;
            (f, d)
        }
    })
}

pub(super) fn parse_synthetic(
    s: &Section<'_>,
    two_inputs: bool,
    closing: bool,
    seed: u64,
) -> Result<SourceConfig, ConfigError> {
    let closing_fraction = s.float("closing_fraction", 0.0, 1.0)?;
    if closing_fraction.is_some() && !closing {
        return Err(s.error(
            "closing_fraction",
            "only the continuous join takes closing_fraction",
        ));
    }
    let key_space = s.require_int(
        "key_space",
        1,
        i64::MAX,
        "the number of distinct event keys, e.g. 10000",
    )? as u64;
    let events = s.int("events", 0, i64::MAX)?.map(|n| n as u64);
    let string_keys = s.choice("key_type", &["long", "string"])? == Some("string");
    let start_time = s.int("start_time", -MS_MAX, MS_MAX)?.unwrap_or(0);
    let left_fraction = s.float("left_fraction", 0.0, 1.0)?;
    if left_fraction.is_some() && !two_inputs {
        return Err(s.error(
            "left_fraction",
            "only two-input operators (joins) take left_fraction",
        ));
    }
    let keys = parse_keys(
        s.table("keys")?
            .ok_or_else(|| s.error("keys", "missing; add [source.keys] with a `distribution`"))?,
    )?;
    let gaps = parse_gaps(
        s.table("gaps")?
            .ok_or_else(|| s.error("gaps", "missing; add [source.gaps] with a `distribution`"))?,
    )?;
    let (fraction, max_delay) = parse_out_of_order(s)?;
    let spec = SyntheticSpec {
        key_space,
        keys,
        gaps,
        events,
        out_of_order_fraction: fraction,
        max_delay,
        watermarks: parse_watermarks(s.table("watermarks")?)?,
        string_keys,
        start_time,
    };
    // Build it once now, so a bad parameter is reported against this file.
    let check = SyntheticSource::new(spec.clone(), seed).and_then(|src| match left_fraction {
        Some(f) => src.with_join_inputs(f).map(|_| ()),
        None => Ok(()),
    });
    if let Err(e) = check {
        return Err(s.error("keys", e.to_string()));
    }
    let left_fraction = match (two_inputs, left_fraction) {
        (true, None) => Some(0.5),
        (_, f) => f,
    };
    Ok(SourceConfig::Synthetic {
        spec,
        left_fraction,
        closing_fraction,
    })
}

/// Most campaigns of a ysb source (YSB has 100); their ids are kept in memory.
pub(super) const MAX_CAMPAIGNS: i64 = 1_000_000;
/// Most ads of a ysb source, all campaigns together (YSB has 1,000): each is one preload
/// request of the lookup-join.
pub(super) const MAX_ADS: i64 = 100_000_000;

/// `[source] type = "ysb"`: YSB's ad events (see docs/config.md).
pub(super) fn parse_ysb(s: &Section<'_>) -> Result<YsbSpec, ConfigError> {
    let campaigns = s.int("campaigns", 1, MAX_CAMPAIGNS)?.unwrap_or(100);
    let ads_per_campaign = s.int("ads_per_campaign", 1, MAX_ADS)?.unwrap_or(10);
    if campaigns.saturating_mul(ads_per_campaign) > MAX_ADS {
        return Err(s.error(
            "ads_per_campaign",
            format!("campaigns × ads_per_campaign = {campaigns} × {ads_per_campaign} ads is above the {MAX_ADS} allowed; use fewer campaigns or ads"),
        ));
    }
    let ads = match s.table("ads")? {
        Some(t) => parse_keys(t)?,
        None => KeyDistributionSpec::Uniform,
    };
    let (out_of_order_fraction, max_delay) = parse_out_of_order(s)?;
    let spec = YsbSpec {
        campaigns: campaigns as u64,
        ads_per_campaign: ads_per_campaign as u64,
        ads,
        events: s.int("events", 0, i64::MAX)?.map(|n| n as u64),
        events_per_second: s.float("events_per_second", 1e-3, 1e9)?.unwrap_or(1000.0),
        start_time: s.int("start_time", -MS_MAX, MS_MAX)?.unwrap_or(0),
        out_of_order_fraction,
        max_delay,
        watermarks: parse_watermarks(s.table("watermarks")?)?,
    };
    // Build it once now, so a bad parameter is reported against this file.
    if let Err(e) = spec.events_source(0) {
        return Err(s.error("ads", e.to_string()));
    }
    Ok(spec)
}

/// The lookup-join reads a ysb source, and a ysb source feeds only the lookup-join.
pub(super) fn check_ysb_pairing(
    s: &Section<'_>,
    source: &SourceConfig,
    operator: &OperatorConfig,
) -> Result<(), ConfigError> {
    match (source, operator) {
        (SourceConfig::Ysb(_), OperatorConfig::Flink(FlinkOperator::LookupJoin(_))) => Ok(()),
        (SourceConfig::Ysb(_), _) => Err(s.error(
            "type",
            "a ysb source feeds the lookup-join; set [operator] type = \"lookup-join\", or use a synthetic source",
        )),
        (_, OperatorConfig::Flink(FlinkOperator::LookupJoin(_))) => Err(s.error(
            "type",
            "the lookup-join reads YSB's ad events; set type = \"ysb\" (see docs/config.md)",
        )),
        _ => Ok(()),
    }
}

/// Refuses a `payload_column` the operator would not read: only holistic windows (and the
/// window joins, holistic windows over both inputs) keep an element's payload.
pub(super) fn check_payload(
    s: &Section<'_>,
    source: &SourceConfig,
    operator: &OperatorConfig,
) -> Result<(), ConfigError> {
    let SourceConfig::File(file) = source else {
        return Ok(());
    };
    if file.payload_column.is_none() {
        return Ok(());
    }
    let holistic = |f: &WindowFunction| matches!(f, WindowFunction::Holistic { .. });
    match operator {
        OperatorConfig::Flink(FlinkOperator::Window { function, .. })
        | OperatorConfig::Flink(FlinkOperator::Session { function, .. })
            if holistic(function) =>
        {
            Ok(())
        }
        OperatorConfig::Flink(FlinkOperator::WindowJoin { .. }) => Ok(()),
        _ => Err(s.error(
            "payload_column",
            "only holistic windows (function = \"holistic\") and the window joins keep an \
             element's payload; remove payload_column, or make the window holistic",
        )),
    }
}

pub(super) fn parse_source(
    s: &Section<'_>,
    inputs: Inputs,
    seed: u64,
) -> Result<SourceConfig, ConfigError> {
    let two_inputs = inputs != Inputs::One;
    let closing = inputs == Inputs::TwoClosing;
    match s.require_choice("type", &["file", "synthetic", "ysb"])? {
        "synthetic" => return parse_synthetic(s, two_inputs, closing, seed),
        "ysb" => return parse_ysb(s).map(SourceConfig::Ysb),
        _ => {}
    }
    let closing_types = s.strings("closing_types")?;
    if closing_types.is_some() && !closing {
        return Err(s.error(
            "closing_types",
            "only the continuous join takes closing_types",
        ));
    }
    let path = s.path("path")?.ok_or_else(|| {
        s.error(
            "path",
            "missing; the event file, relative to this config file",
        )
    })?;
    let lower = path.to_string_lossy().to_lowercase();
    let default_delimiter = if lower.ends_with(".tsv") || lower.ends_with(".tsv.gz") {
        "\t"
    } else {
        ","
    };
    let delimiter = s
        .choice("delimiter", &[",", "\t", ";", "|"])?
        .unwrap_or(default_delimiter)
        .as_bytes()[0];
    let key_type = match s.choice("key_type", &["long", "string"])?.unwrap_or("long") {
        "string" => KeyType::String,
        _ => KeyType::Long,
    };
    let time_unit = match s
        .choice("time_unit", &["ns", "us", "ms", "s"])?
        .unwrap_or("ms")
    {
        "ns" => TimeUnit::Nanoseconds,
        "us" => TimeUnit::Microseconds,
        "s" => TimeUnit::Seconds,
        _ => TimeUnit::Milliseconds,
    };
    let order = match s
        .choice("order", &["by-time", "file"])?
        .unwrap_or("by-time")
    {
        "file" => FileOrder::AsIs,
        _ => FileOrder::SortByTime,
    };
    let type_column = s.int("type_column", 0, 10_000)?.map(|c| c as usize);
    let types = s.strings("types")?;
    let left = s.strings("left_types")?;
    let right = s.strings("right_types")?;
    let routing = match (two_inputs, types, left, right) {
        (false, _, Some(_), _) => return Err(s.error("left_types", "only two-input operators (the joins) take left_types/right_types; use `types` to filter")),
        (false, _, _, Some(_)) => return Err(s.error("right_types", "only two-input operators (the joins) take left_types/right_types; use `types` to filter")),
        (false, None, None, None) => TypeRouting::All,
        (false, Some(t), None, None) => TypeRouting::Accept(t),
        (true, Some(_), _, _) => return Err(s.error("types", "a two-input operator takes left_types and right_types instead")),
        (true, None, Some(l), Some(r)) => match (closing_types, inputs) {
            (Some(c), _) => TypeRouting::SplitClosing(l, r, c),
            (None, Inputs::TwoKeepingOthers) => TypeRouting::SplitKeepingOthers(l, r),
            (None, _) => TypeRouting::Split(l, r),
        },
        (true, None, _, _) => return Err(s.error("left_types", "missing; a two-input operator needs left_types and right_types, e.g. [\"SUBMIT\"] and [\"FINISH\"]")),
    };
    if routing != TypeRouting::All && type_column.is_none() {
        return Err(s.error(
            "type_column",
            "missing; filtering or splitting by type needs the type column",
        ));
    }
    let spec = FileSpec {
        origin: s.origin("path"),
        path,
        delimiter,
        header: s.bool("header")?.unwrap_or(false),
        key_column: s.require_int("key_column", 0, 10_000, "zero-based column of the key")?
            as usize,
        key_type,
        time_column: s.require_int(
            "time_column",
            0,
            10_000,
            "zero-based column of the event time",
        )? as usize,
        time_unit,
        type_column,
        payload_column: s.int("payload_column", 0, 10_000)?.map(|c| c as usize),
        routing,
        order,
        watermarks: parse_watermarks(s.table("watermarks")?)?,
        repeat: s.int("repeat", 1, MAX_REPEAT)?.unwrap_or(1) as u32,
    };
    Ok(SourceConfig::File(spec))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;

    /// A config over `events.csv` in `dir`, with `payload_column = 2` and `operator`.
    fn with_payload(dir: &Path, operator: &str) -> Result<Config, String> {
        std::fs::write(dir.join("events.csv"), "1,10,SUBMIT\n").unwrap();
        let text = format!(
            "[source]\ntype = \"file\"\npath = \"events.csv\"\nkey_column = 0\n\
             time_column = 1\npayload_column = 2\n[operator]\n{operator}\n"
        );
        Config::parse(&text, &dir.join("p.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_payload_column_is_refused_where_no_holistic_window_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let holistic = "type = \"tumbling\"\nsize = 1000\nfunction = \"holistic\"";
        with_payload(dir.path(), holistic).unwrap();
        let session = "type = \"session\"\ngap = 1000\nfunction = \"holistic\"";
        with_payload(dir.path(), session).unwrap();
        for operator in ["type = \"tumbling\"\nsize = 1000", "type = \"aggregation\""] {
            let e = with_payload(dir.path(), operator).unwrap_err();
            assert!(
                e.contains("p.toml:6: `source.payload_column`") && e.contains("holistic"),
                "{e}"
            );
        }
    }
}
