//! Gadget's performance evaluator: drives real state stores with a state-access stream and
//! measures them honestly (open-loop arrivals, coordinated-omission-correct latency, HDR
//! histograms per op).
//!
//! - [`store`]: one interface, one file per store;
//! - [`workload`]: the request stream, produced ahead on its own thread from a trace or a config;
//! - [`arrival`]: when each request is meant to start;
//! - [`run`]: the driver, which issues requests on schedule and measures them;
//! - [`concurrent`]: several operator instances on their own threads, sharing a store or not;
//! - [`job`]: some subtasks of a parallel job as instances, on the job's one schedule;
//! - [`measure`]: HDR histograms, time series and the summary table;
//! - [`placed`]: latency and rate per state and per store;
//! - the results document of a run, the one type every writer and reader uses, is the
//!   `gadget-results` crate;
//! - [`merge`]: the results of a run's shards merged into one run's (histograms added bucket by
//!   bucket, time series on the wall clock);
//! - [`experiment`]: `gadget bench`'s plans, statistics across repetitions and comparisons;
//! - [`export`]: every output format (JSON, CSV, HDR log, Markdown, HTML, text), one file each,
//!   written atomically;
//! - [`remote`]: a "remote" store on this machine, in a network namespace of its own behind a
//!   rate-limited link and a delaying proxy.

pub mod arrival;
pub mod clock;
pub mod completion;
pub mod concurrent;
pub mod experiment;
pub mod export;
pub mod job;
pub mod measure;
pub mod merge;
pub mod placed;
pub mod reads;
pub mod remote;
pub mod run;
pub mod shard;
pub mod start;
pub mod store;
pub mod value;
pub mod workload;
