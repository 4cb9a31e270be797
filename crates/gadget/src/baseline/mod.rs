//! Baseline workloads from key-value store benchmarks, generated into the same state-access
//! stream as the streaming operators, so they can be traced, replayed, run and compared
//! against streaming workloads with the same tools.
//!
//! - [`ycsb`]: YCSB's core workloads (A–F and any `CoreWorkload` properties), with YCSB's
//!   [number generators](ycsb_generators) and its `.properties` [files](properties).

pub mod properties;
pub mod ycsb;
pub mod ycsb_generators;
