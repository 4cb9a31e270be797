//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The Flink 1.20 reference recordings in `../shared/reference-traces/flink-1.20/`, each with
/// its config in `examples/flink-reference/<name>.toml`.
pub const REFERENCE_TRACES: &[&str] = &[
    "tumbling-incr",
    "tumbling-hol",
    "sliding-incr",
    "sliding-hol",
    "session-incr",
    "session-hol",
    "aggregation",
    "interval-join",
    "tumbling-incr.rocksdb-timers",
];

/// The project's root folder.
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared` beside the checkout, or `None` (test skipped) when it is missing outside CI.
///
/// With `CI=true` a missing folder fails the test: CI always has it.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let dir = project_root().join("../shared");
    if dir.join("data").is_dir() && dir.join("reference-traces").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "{test}: {} is missing, but CI=true: CI must provide ../shared beside the checkout",
            dir.display()
        );
    }
    eprintln!(
        "skipping {test}: {} (the Borg trace and Flink's recordings) is not beside this checkout",
        dir.display()
    );
    None
}
