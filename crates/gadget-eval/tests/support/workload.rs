//! The small endless workload the driver's tests run: a keyed tumbling window over 1,000
//! uniform keys, one event per ms of event time, a watermark every 100 events.

/// The workload's config.
pub const ENDLESS_TUMBLING: &str = r#"
seed = 3
[source]
type = "synthetic"
key_space = 1000
[source.keys]
distribution = "uniform"
[source.gaps]
distribution = "constant"
value = 1
[source.watermarks]
type = "punctuated"
every = 100
[operator]
type = "tumbling"
size = 1000
timers = "heap"
"#;
