//! Baseline workloads from key-value store benchmarks, generated into the same state-access
//! stream as the streaming operators, so they can be traced, replayed, run and compared
//! against streaming workloads with the same tools.
//!
//! - [`ycsb`]: YCSB's core workloads (A–F and any `CoreWorkload` properties), with YCSB's
//!   [number generators](ycsb_generators); its `.properties` files are read by the config
//!   (`crate::config::properties`).
//! - [`kvbench`]: KVBench's workloads (inserts, updates, point and range deletes, empty and
//!   non-empty point queries, range queries, per-operation distributions, thresholds,
//!   preloading, the five presets), with its [distributions and bookkeeping](kvbench_generators).

pub mod kvbench;
pub mod kvbench_generators;
pub mod ycsb;
pub mod ycsb_generators;
