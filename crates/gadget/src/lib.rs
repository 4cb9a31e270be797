//! Gadget: faithful streaming state-access workloads.
//!
//! An [`source`] yields events and watermarks; an [`operator`] turns them into the exact
//! sequence of state accesses Apache Flink 1.20 issues to its RocksDB state backend; a
//! [`trace`] writer, a store or an analyzer consumes them through [`access::AccessSink`].
#![deny(missing_docs)]

pub mod access;
pub mod atomic;
pub mod baseline;
pub mod compare;
pub mod config;
pub mod document;
pub mod engine;
pub mod generate;
pub mod key;
pub mod nines;
pub mod operator;
pub mod palette;
pub mod parallel;
pub mod pipeline;
pub mod source;
pub mod summary;
pub mod timer;
pub mod trace;
pub mod units;

pub use access::{Access, AccessCounts, AccessSink, Op, StateId, TraceRecord, VecSink};

/// Elements, records or requests that long loops (generation, conversion, replay) handle
/// between two progress reports, where they also look for a stop request (Ctrl-C): often
/// enough for a live display and a prompt stop, rarely enough to cost nothing.
pub const PROGRESS_EVERY: u64 = 65_536;
