//! Concurrent operators (the paper's §6.4): several operator instances, each with its own
//! workload and seeds on its own thread, sharing one store or each with its own.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use gadget::access::{Op, StateId};

use crate::clock::calibrate_clock;
use crate::placed::parts;
use crate::run::{Driver, Measured, Progress, RunError, RunOptions};
use crate::start::StartLine;
use crate::store::{open_shared_store, Store, StoreError, StoreKind, StoreSettings};
use crate::workload::{Production, RequestStream, WorkloadError, WorkloadSource};
use gadget_results::RunReport;

/// How instances use the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Each instance opens its own store (in its own subdirectory).
    PerInstance,
    /// All instances share one store, each over its own keyspaces.
    Shared,
}

/// The results of a run of one or more instances.
#[derive(Debug)]
pub struct InstancesOutcome {
    /// The combined report; with several instances, `instances` holds each one's.
    pub report: RunReport,
    /// The combined measurements (for HDR logs).
    pub measured: Measured,
    /// The error that ended the run early (the first instance's to fail), if one did; the
    /// report then covers what ran before it and says so.
    pub failure: Option<RunError>,
    /// Each instance's states, in state-id order.
    pub states: Vec<Vec<String>>,
}

/// What one instance's thread returns: its measurements, the store's name, the ops it
/// emulated and its counters.
/// What an instance's thread hands back: its measurements, its store's name, the ops the store
/// emulated, its counters, and the store each of its states lived in.
type InstanceResult = Result<
    (
        Measured,
        &'static str,
        Vec<Op>,
        Vec<(&'static str, u64)>,
        Vec<String>,
    ),
    RunError,
>;

/// Opens the store of instance `i` (the first argument) over its states (the second).
pub type StoreOpener<'a> =
    dyn Fn(usize, &[String]) -> Result<Box<dyn Store>, StoreError> + Sync + 'a;

/// Runs every source as its own instance on its own thread against `kind` under `dir`.
///
/// Instance `i` uses the arrival seed `options.seed + i`; its workload carries its own seed.
/// `progress` sees the total requests issued by all instances.
pub fn run_instances(
    kind: StoreKind,
    dir: &Path,
    sources: Vec<WorkloadSource>,
    sharing: Sharing,
    settings: &StoreSettings,
    options: &RunOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<InstancesOutcome, RunError> {
    let n = sources.len();
    let settings = &StoreSettings {
        stop: options.stop.clone(),
        ..settings.clone()
    };
    let production = Production {
        event_times: options.arrival.uses_event_time(),
        shard: options.shard,
    };
    let streams = sources
        .into_iter()
        .map(|s| RequestStream::start_with(s, production))
        .collect::<Result<Vec<_>, WorkloadError>>()?;
    let shared = match sharing {
        Sharing::Shared => {
            let states: Vec<Vec<String>> = streams.iter().map(|s| s.state_names.clone()).collect();
            Some(open_shared_store(kind, dir, &states, settings)?)
        }
        Sharing::PerInstance => None,
    };
    let open = |i: usize, states: &[String]| -> Result<Box<dyn Store>, StoreError> {
        if let Some(s) = &shared {
            return s.attach(i);
        }
        let sub = if n == 1 {
            dir.to_path_buf()
        } else {
            dir.join(format!("instance-{i}"))
        };
        std::fs::create_dir_all(&sub).map_err(|e| StoreError::Open {
            store: kind.name(),
            path: sub.clone(),
            message: e.to_string(),
        })?;
        let placed = StoreSettings {
            instance: i,
            ..settings.clone()
        };
        crate::store::routed::open(kind, &sub, states, &placed)
    };
    let stores = match sharing {
        Sharing::Shared => "one shared store",
        Sharing::PerInstance => "a store each",
    };
    run_streams(streams, &open, stores, options, progress)
}

/// Instance `i`'s options: its own arrival seed (seed + i), or the job's when the instances
/// are subtasks of one job.
fn instance_options(options: &RunOptions, i: usize) -> RunOptions {
    let mut o = options.clone();
    if o.job.is_none() {
        o.seed = o.seed.wrapping_add(i as u64);
    }
    o
}

/// Runs every stream as its own instance on its own thread, each against the store `open`
/// gives it; `stores` says how they share stores, for the report.
///
/// The instances start together ([`StartLine`]): once every store is open and every stream
/// has its first requests ready, so that neither is charged to any request's latency or to
/// the throughput.
pub fn run_streams(
    streams: Vec<RequestStream>,
    open: &StoreOpener<'_>,
    stores: &str,
    options: &RunOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<InstancesOutcome, RunError> {
    let n = streams.len();
    let states: Vec<Vec<String>> = streams.iter().map(|s| s.state_names.clone()).collect();
    let issued: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let start_line = StartLine::new(n).at(options.start_at);
    let results: Vec<InstanceResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(i, mut stream)| {
                let issued = &issued;
                let start_line = &start_line;
                let options = instance_options(options, i);
                std::thread::Builder::new()
                    .name(format!("gadget-instance-{i}"))
                    .spawn_scoped(scope, move || -> InstanceResult {
                        let opened = open(i, &stream.state_names);
                        let mut store = match opened {
                            Ok(store) => store,
                            Err(e) => {
                                start_line.abandon();
                                return Err(e.into());
                            }
                        };
                        calibrate_clock();
                        let driver = Driver::new(&options);
                        let ready = stream.wait_for_first_block(&options.stop);
                        let mut measured = match start_line.arrive(&options.stop) {
                            Some(epoch) if ready => driver.drive(
                                store.as_mut(),
                                &mut stream,
                                &options,
                                epoch,
                                &mut |p| {
                                    issued[i].store(p.requests, Ordering::Relaxed);
                                    let total =
                                        issued.iter().map(|c| c.load(Ordering::Relaxed)).sum();
                                    progress(Progress {
                                        requests: total,
                                        elapsed: p.elapsed,
                                    });
                                },
                            ),
                            // stopped, or another instance could not start
                            _ => Measured::stopped_before_start(options.interval_ns),
                        };
                        let homes = (0..stream.state_names.len())
                            .map(|s| store.store_of(s as StateId).to_string())
                            .collect();
                        let producer = stream.finish();
                        if let Err(e) = producer {
                            // an interrupted run may cut its producer short: only a run that
                            // went on to the end has lost requests to a workload error
                            if !measured.is_partial() {
                                measured.fail(e);
                            }
                        }
                        if measured.is_partial() {
                            // a failure ends the other instances' runs too
                            options.stop.store(true, Ordering::SeqCst);
                        }
                        // counters are read here: RocksDB keeps them per thread
                        Ok((
                            measured,
                            store.name(),
                            store.emulated().to_vec(),
                            store.counters(),
                            homes,
                        ))
                    })
                    .expect("spawning a thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    if let Some(late) = start_line.missed() {
        return Err(RunError::MissedStart { late });
    }
    let mut measured = Vec::with_capacity(n);
    let mut reports = Vec::with_capacity(n);
    let mut homes: Vec<Vec<String>> = Vec::with_capacity(n);
    let mut failure = None;
    for (i, r) in results.into_iter().enumerate() {
        let (mut m, store, emulated, counters, state_homes) = r?;
        let o = instance_options(options, i);
        let mut report = m.report(store, &emulated, &o);
        if let Some(job) = options.job {
            report.arrival = format!(
                "subtask {} of {}: its requests' starts in the job's {}",
                job.subtask(i),
                job.parallelism,
                options.arrival.describe()
            );
        }
        let encode = report.histograms.is_some();
        let placed = parts(
            &m.recorder,
            report.seconds,
            &states[i],
            &state_homes,
            encode,
        );
        (report.per_state, report.per_store) = (placed.per_state, placed.per_store);
        if let Some(h) = &mut report.histograms {
            h.per_state = placed.histograms;
        }
        homes.push(state_homes);
        report.store_counters = counters
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect();
        if let Some(e) = m.take_failure() {
            failure.get_or_insert(e);
        }
        reports.push(report);
        measured.push(m);
    }
    // a job's subtasks are listed even when one runs here, as a shard of the job
    if n == 1 && options.job.is_none() {
        let report = reports.pop().expect("one instance");
        let measured = measured.pop().expect("one instance");
        return Ok(InstancesOutcome {
            report,
            measured,
            failure,
            states,
        });
    }
    // instances of the same workload share their states (state i is the same state in each);
    // instances with states of their own (a Kafka Streams application's threads) list them
    // one after another
    let shared_states = states.iter().all(|s| *s == states[0]);
    let (first_states, names, placed_in): (Vec<usize>, Vec<String>, Vec<String>) = if shared_states
    {
        (vec![0; n], states[0].clone(), homes[0].clone())
    } else {
        let firsts = states
            .iter()
            .scan(0, |next, s| {
                let first = *next;
                *next += s.len();
                Some(first)
            })
            .collect();
        (firsts, states.concat(), homes.concat())
    };
    let combined = Measured::combine(
        &measured,
        &first_states,
        options.interval_ns,
        options.keep_intervals,
    );
    // each op once, in op order, if any instance emulated it
    let emulated: Vec<Op> = Op::ALL
        .into_iter()
        .filter(|op| {
            reports
                .iter()
                .any(|r| r.emulated_ops.iter().any(|o| o == op.name()))
        })
        .collect();
    let mut report = combined.report(&reports[0].store, &emulated, options);
    let encode = report.histograms.is_some();
    let placed = parts(
        &combined.recorder,
        report.seconds,
        &names,
        &placed_in,
        encode,
    );
    (report.per_state, report.per_store) = (placed.per_state, placed.per_store);
    if let Some(h) = &mut report.histograms {
        h.per_state = placed.histograms;
    }
    // the combined histograms hold the instances' requests; each instance keeps its summary
    for instance in &mut reports {
        instance.histograms = None;
    }
    if let Some(e) = &failure {
        report.partial_reason = Some(e.to_string());
    }
    match options.job {
        Some(job) => {
            // the job's one schedule: each subtask's target is its share of it
            report.arrival = format!("{job} ({stores}), one {}", options.arrival.describe());
            report.target_rate = options
                .arrival
                .rate()
                .map(|_| reports.iter().filter_map(|r| r.target_rate).sum());
        }
        None => {
            report.arrival = format!(
                "{n} instances ({stores}), each {}",
                options.arrival.describe()
            );
            report.target_rate = options.arrival.rate().map(|r| r * n as f64);
        }
    }
    report.sustained = report
        .target_rate
        .filter(|_| report.requests > 0)
        .map(|r| report.throughput >= 0.95 * r);
    for instance in &reports {
        for (name, value) in &instance.store_counters {
            *report.store_counters.entry(name.clone()).or_default() += value;
        }
    }
    report.instances = reports;
    Ok(InstancesOutcome {
        report,
        measured: combined,
        failure,
        states,
    })
}
