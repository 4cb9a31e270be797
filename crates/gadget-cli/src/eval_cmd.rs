//! `gadget run` and `gadget replay`: drive a real store and measure it.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::ValueEnum;
use gadget::atomic::{refuse_overwriting_an_input, AtomicFile, OutputFailure};
use gadget::config::bounds::{parse_duration, Bounds};
use gadget::config::run::{
    parse_interval, RunSettings, Warmup as ConfigWarmup, ALPHA, BIAS, INSTANCES, MODULATION,
    PERIOD, RATE, SPEED, VALUE_COMPRESSION_RATIO,
};
use gadget::config::Config;
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::concurrent::{run_instances, InstancesOutcome, Sharing};
use gadget_eval::export::{self, Csv, HdrIntervals, HdrLog, Json, Text};
use gadget_eval::job::JobSubtasks;
use gadget_eval::run::{Measured, RunError, RunOptions, Warmup};
use gadget_eval::store::choice::{CommandLine, StoreChoice};
use gadget_eval::store::far::FarStores;
use gadget_eval::store::{StoreError, StoreKind, StoreSettings};
use gadget_eval::value::DEFAULT_COMPRESSION_RATIO;
use gadget_eval::workload::WorkloadSource;
use gadget_results::context::WorkloadUsed;
use gadget_results::RunReport;

use crate::cli::{Arrival, EvalArgs, ReplayArgs, RunArgs};
use crate::interrupt::INTERRUPTED;
use crate::progress;
use crate::run_context;
use crate::stdout::out;
use crate::store_dir::StoreDir;
use crate::subtask::RunPart;

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let mut configs = Vec::new();
    for path in &args.config {
        let mut config = Config::load_with_overrides(path, &args.property)?;
        if let Some(times) = crate::cli::input_passes(args.input_passes, args.repeat) {
            config.set_repeat(times)?;
        }
        for w in &config.warnings {
            eprintln!("warning: {w}");
        }
        // one seed for everything: the workload's, the arrivals' and the values'
        if let Some(seed) = args.eval.seed {
            config.seed = seed;
            config.json["seed"] = seed.into();
        }
        let shard = args.eval.shard.as_deref().map(str::parse).transpose()?;
        let part = crate::subtask::apply_for_run(
            &mut config,
            args.parallelism,
            args.subtask,
            shard,
            path,
        )?;
        configs.push((config, part));
    }
    if let [(config, RunPart::Subtasks(subtasks))] = configs.as_slice() {
        return run_job(config, subtasks.clone(), &args);
    }
    if configs
        .iter()
        .any(|(_, part)| matches!(part, RunPart::Subtasks(_)))
    {
        bail!(
            "a parallel job (parallelism above 1 without --subtask) runs alone: give its \
             config by itself, or --subtask I to run one subtask beside other configs"
        );
    }
    let configs: Vec<Config> = configs.into_iter().map(|(c, _)| c).collect();
    // the first config's [run] section applies; flags override it
    let run_settings = configs[0].run.clone();
    if configs.iter().skip(1).any(|c| c.run != run_settings) {
        eprintln!(
            "warning: the configs' [run] sections differ; the first one's ({}) applies",
            args.config[0].display()
        );
    }
    let plan = Plan::resolve(&args.eval, &run_settings, configs[0].seed)?;
    let mut sources = Vec::new();
    let mut workloads = Vec::new();
    for replica in 0..plan.instances {
        for (config, path) in configs.iter().zip(&args.config) {
            let mut config = config.clone();
            // replicas of one config get their own seeds
            config.seed = config.seed.wrapping_add(replica as u64);
            let limit = args.limit.or(config.limit);
            workloads.push(run_context::config_workload(path, &config, limit));
            sources.push(WorkloadSource::Generate {
                config: Box::new(config),
                limit,
            });
        }
    }
    let inputs: Vec<&Path> = args.config.iter().map(PathBuf::as_path).collect();
    evaluate(sources, workloads, &inputs, &args.eval, &plan)
}

/// `gadget run` of a parallel job: `subtasks` of it (every one, or a shard's range), each an
/// instance with its own store, all on the job's one schedule ([`gadget_eval::job`]).
fn run_job(config: &Config, subtasks: Range<u32>, args: &RunArgs) -> anyhow::Result<i32> {
    let path = &args.config[0];
    let run_settings = &config.run;
    let mut plan = Plan::resolve(&args.eval, run_settings, config.seed)?;
    if plan.instances > 1 {
        bail!(
            "--instances {}: the instances of a parallel job are its subtasks (--parallelism \
             {}); leave --instances out, or give --subtask I to run copies of one subtask",
            plan.instances,
            config.parallel.parallelism
        );
    }
    plan.job = Some(JobSubtasks {
        parallelism: config.parallel.parallelism,
        first: subtasks.start,
    });
    // the shard is the range of subtasks: no request of theirs is left to another shard
    plan.shard = None;
    let limit = args.limit.or(config.limit);
    let sources = subtasks
        .map(|s| {
            Ok(WorkloadSource::JobSubtask {
                config: Box::new(config.for_subtask(s)?),
                limit,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let workloads = vec![run_context::config_workload(path, config, limit)];
    evaluate(sources, workloads, &[path.as_path()], &args.eval, &plan)
}

pub fn replay(args: ReplayArgs) -> anyhow::Result<i32> {
    let plan = Plan::resolve(&args.eval, &RunSettings::default(), 0)?;
    if args.check_reads {
        return crate::reads_cmd::check(&args, plan.kind, plan.settings);
    }
    let from_stdin = args.trace.iter().filter(|p| p.as_os_str() == "-").count();
    if from_stdin > 1 || (from_stdin == 1 && plan.instances > 1) {
        bail!("standard input (`-`) can be replayed once: give `-` once, and without --instances");
    }
    let mut sources = Vec::new();
    let mut workloads = Vec::new();
    for _ in 0..plan.instances {
        sources.extend(args.trace.iter().map(|path| WorkloadSource::Trace {
            path: path.clone(),
            limit: args.limit,
        }));
        workloads.extend(args.trace.iter().map(run_context::trace_workload));
    }
    let inputs: Vec<&Path> = args.trace.iter().map(PathBuf::as_path).collect();
    evaluate(sources, workloads, &inputs, &args.eval, &plan)
}

/// The arrival process: the flags over the config's `[run]` section over closed loop.
pub fn resolve_arrival(a: &EvalArgs, r: &RunSettings) -> anyhow::Result<ArrivalProcess> {
    let arrival = match (a.arrival, r.arrival.as_deref()) {
        (Some(x), _) => x,
        (None, Some(name)) => {
            Arrival::from_str(name, false).map_err(|e| anyhow::anyhow!("arrival {name:?}: {e}"))?
        }
        // a rate alone asks for an open loop at that rate: constant arrivals, as wrk2's -R
        (None, None) if a.rate.or(r.rate).is_some() => Arrival::Constant,
        (None, None) => Arrival::Closed,
    };
    arrival_process(
        arrival,
        a.rate.or(r.rate),
        Shape {
            bias: a.bias.or(r.bias).unwrap_or(0.75),
            period: a.period.or(r.period).unwrap_or(60.0),
            modulation: a.modulation.or(r.modulation).unwrap_or(0.5),
            alpha: a.alpha.or(r.alpha).unwrap_or(2.5),
            speed: a.speed.or(r.speed).unwrap_or(1.0),
        },
    )
}

/// `--start-at`: Unix seconds, possibly with a fraction.
fn parse_start_at(text: &str) -> anyhow::Result<std::time::SystemTime> {
    let seconds: f64 = text
        .trim()
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s < 1e11)
        .with_context(|| {
            format!("--start-at {text:?}: give Unix seconds, such as $(( $(date +%s) + 10 ))")
        })?;
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(seconds))
}

/// What to run: the flags over the config's `[run]` section over the defaults.
struct Plan {
    kind: StoreKind,
    /// The seed of the arrivals and values (instance i: seed + i).
    seed: u64,
    arrival: ArrivalProcess,
    value_compression_ratio: f64,
    warmup: Warmup,
    interval_ns: u64,
    duration_ns: Option<u64>,
    shard: Option<gadget_eval::shard::Shard>,
    /// The instances are subtasks of one parallel job.
    job: Option<JobSubtasks>,
    start_at: Option<std::time::SystemTime>,
    instances: usize,
    sharing: Sharing,
    settings: StoreSettings,
}

impl Plan {
    /// `seed` is the workload's (a config's), the default of `--seed`.
    fn resolve(a: &EvalArgs, r: &RunSettings, seed: u64) -> anyhow::Result<Plan> {
        let flags = CommandLine {
            store: a.store.as_deref(),
            settings: &a.store_settings.given,
            from_env: &a.store_settings.from_env,
        };
        let StoreChoice {
            kind,
            settings,
            warnings,
        } = StoreChoice::resolve(flags, r)?;
        for warning in warnings {
            eprintln!("warning: {warning}");
        }
        let arrival = resolve_arrival(a, r)?;
        let value_compression_ratio = match a.value_compression_ratio {
            Some(v) => check(VALUE_COMPRESSION_RATIO, "--value-compression-ratio", v)?,
            None => r
                .value_compression_ratio
                .unwrap_or(DEFAULT_COMPRESSION_RATIO),
        };
        let warmup = match (&a.warmup, r.warmup) {
            (Some(w), _) => match w.parse::<u64>() {
                Ok(n) => Warmup::Requests(n),
                Err(_) => parse_duration(w).map(Warmup::Duration).with_context(|| {
                    format!("--warmup {w:?}: give a request count (10000) or a time (5s, 500ms)")
                })?,
            },
            (None, Some(ConfigWarmup::Requests(n))) => Warmup::Requests(n),
            (None, Some(ConfigWarmup::Nanoseconds(n))) => Warmup::Duration(n),
            (None, None) => Warmup::None,
        };
        let interval_ns = match &a.interval {
            Some(i) => parse_interval(i).with_context(|| {
                format!("--interval {i:?}: give a time of at least 1ms (1s, 100ms)")
            })?,
            None => r.interval_ns.unwrap_or(1_000_000_000),
        };
        let duration_ns = match &a.duration {
            Some(d) => Some(
                parse_duration(d)
                    .filter(|&ns| ns >= 1_000_000)
                    .with_context(|| {
                        format!("--duration {d:?}: give a time of at least 1ms (10s, 2m)")
                    })?,
            ),
            None => None,
        };
        let instances = a.instances.or(r.instances).unwrap_or(1);
        check(INSTANCES, "--instances", instances as f64)?;
        let sharing = if a.shared_store || r.shared_store.unwrap_or(false) {
            Sharing::Shared
        } else {
            Sharing::PerInstance
        };
        if !settings.routes.is_empty() && matches!(sharing, Sharing::Shared) {
            bail!("[run.states] places states in stores of their own, a set per instance; drop --shared-store");
        }
        Ok(Plan {
            kind,
            seed: a.seed.unwrap_or(seed),
            arrival,
            value_compression_ratio,
            warmup,
            interval_ns,
            duration_ns,
            shard: a.shard.as_deref().map(str::parse).transpose()?,
            start_at: a.start_at.as_deref().map(parse_start_at).transpose()?,
            job: None,
            instances,
            sharing,
            settings,
        })
    }
}

/// Parameters of the arrival processes other than the rate.
struct Shape {
    bias: f64,
    period: f64,
    modulation: f64,
    alpha: f64,
    speed: f64,
}

fn arrival_process(
    arrival: Arrival,
    rate: Option<f64>,
    shape: Shape,
) -> anyhow::Result<ArrivalProcess> {
    let rate = |what: &str| -> anyhow::Result<f64> {
        match rate {
            Some(r) => check(RATE, "--rate", r),
            None => {
                bail!("--arrival {what} needs --rate (requests per second), e.g. --rate 100000")
            }
        }
    };
    let Shape {
        bias,
        period,
        modulation,
        alpha,
        speed,
    } = shape;
    Ok(match arrival {
        Arrival::Closed => ArrivalProcess::ClosedLoop,
        Arrival::Constant => ArrivalProcess::Constant {
            rate: rate("constant")?,
        },
        Arrival::Poisson => ArrivalProcess::Poisson {
            rate: rate("poisson")?,
        },
        Arrival::BModel => ArrivalProcess::BModel {
            bias: check(BIAS, "--bias", bias)?,
            rate: rate("b-model")?,
            bin_ns: 1_000_000,
            levels: 12,
        },
        Arrival::EventTime => ArrivalProcess::EventTime {
            speed: check(SPEED, "--speed", speed)?,
        },
        Arrival::Diurnal => {
            let modulation = check(MODULATION, "--modulation", modulation)?;
            let alpha = check(ALPHA, "--alpha", alpha)?;
            let period = check(PERIOD, "--period", period)?;
            ArrivalProcess::Diurnal {
                rate: rate("diurnal")?,
                period_ns: (period * 1e9) as u64,
                modulation,
                alpha,
            }
        }
    })
}

/// `value` of `flag` when it is within `bounds` (those of its config key too).
fn check(bounds: Bounds, flag: &str, value: f64) -> anyhow::Result<f64> {
    bounds.check(flag, value).map_err(anyhow::Error::msg)
}

/// Runs `sources` (read from `inputs`) as `plan` says and reports; the exit status.
fn evaluate(
    sources: Vec<WorkloadSource>,
    mut workloads: Vec<WorkloadUsed>,
    inputs: &[&Path],
    a: &EvalArgs,
    plan: &Plan,
) -> anyhow::Result<i32> {
    let started = (
        std::time::SystemTime::now(),
        gadget_results::host::CpuTimes::now(),
    );
    let outputs = RunOutputs::prepare(a, inputs)?;
    let dir = StoreDir::of(a)?;

    let stop = crate::interrupt::stop_flag();
    // remote stores are started before the run, so that their start is not measured; they
    // live until the run is reported, and their namespaces go when they are dropped
    let mut settings = plan.settings.clone();
    // everything that waits on a store, the run and what is asked of it after, ends on a stop
    settings.stop = stop.clone();
    let (_far, said) = FarStores::start(&mut settings.routes, stop.clone())?;
    for line in said {
        eprintln!("{line}");
    }
    let options = RunOptions {
        arrival: plan.arrival,
        seed: plan.seed,
        warmup: plan.warmup,
        interval_ns: plan.interval_ns,
        keep_intervals: a.hdr_log.is_some(),
        stop: stop.clone(),
        value_compression_ratio: plan.value_compression_ratio,
        duration_ns: plan.duration_ns,
        shard: plan.shard,
        start_at: plan.start_at,
        job: plan.job,
    };

    let bar = progress::spinner(&format!("driving {}", plan.kind.name()));
    let outcome = run_instances(
        plan.kind,
        dir.path(),
        sources,
        plan.sharing,
        &settings,
        &options,
        &|p| {
            let secs = p.elapsed.as_secs_f64().max(1e-9);
            bar.set_message(format!(
                "{} requests, {:.0} requests/s",
                p.requests,
                p.requests as f64 / secs
            ));
        },
    );
    bar.finish_and_clear();
    let InstancesOutcome {
        mut report,
        measured,
        failure,
        states,
    } = match outcome {
        Err(RunError::Store(StoreError::Interrupted { store })) => {
            eprintln!("stopped while the {store} store was opening: nothing was measured");
            return Ok(INTERRUPTED);
        }
        outcome => outcome?,
    };
    if plan.settings.counters && report.store_counters.is_empty() {
        eprintln!(
            "warning: store {} keeps no counters of its own; --store-counters reports nothing for it (rocksdb does)",
            plan.kind.name()
        );
    }

    for (w, states) in workloads.iter_mut().zip(states) {
        w.states = states;
    }
    report.context = Some(run_context::context(
        a.label.clone(),
        started,
        workloads,
        plan.kind,
        &settings,
        dir.path(),
    ));
    let failures = outputs.write(&report, &measured);
    print_results(&report, a)?;
    dir.keep_if(a.keep);
    if !failures.is_empty() {
        let said: Vec<String> = failures.iter().map(ToString::to_string).collect();
        bail!("{}", said.join("\n"));
    }
    if let Some(e) = failure {
        bail!("{e}; what was measured before it is printed and written, marked partial");
    }
    if let Some(e) = report.warmup_covered_the_run() {
        bail!("{e}");
    }
    Ok(if report.partial { INTERRUPTED } else { 0 })
}

/// The output files of a run, prepared before it starts: each one's temporary file exists, so
/// an unwritable destination fails before any work instead of after the run.
struct RunOutputs {
    json: Option<AtomicFile>,
    csv: Option<AtomicFile>,
    hdr_log: Option<AtomicFile>,
}

impl RunOutputs {
    /// Prepares `-o`, `--csv` and `--hdr-log`, refusing any that names an input or another
    /// output.
    fn prepare(a: &EvalArgs, inputs: &[&Path]) -> anyhow::Result<RunOutputs> {
        let mut taken: Vec<&Path> = inputs.to_vec();
        let mut prepared = Vec::new();
        for (flag, path) in [
            // `-o -` is standard output, printed by print_results
            ("-o", &a.output.clone().filter(|o| o.as_os_str() != "-")),
            ("--csv", &a.csv),
            ("--hdr-log", &a.hdr_log),
        ] {
            let Some(path) = path else {
                prepared.push(None);
                continue;
            };
            refuse_overwriting_an_input(flag, path, &taken).map_err(anyhow::Error::msg)?;
            let out = AtomicFile::create(path).with_context(|| {
                format!(
                    "{flag} {}: cannot write there, so the run does not start",
                    path.display()
                )
            })?;
            if prepared
                .iter()
                .flatten()
                .any(|p: &AtomicFile| p.dest() == out.dest())
            {
                bail!(
                    "{flag} {} is also another output; give each output a path of its own",
                    path.display()
                );
            }
            taken.push(path);
            prepared.push(Some(out));
        }
        let mut prepared = prepared.into_iter();
        let mut next = || prepared.next().flatten();
        Ok(RunOutputs {
            json: next(),
            csv: next(),
            hdr_log: next(),
        })
    }

    /// Writes every prepared output; the ones that failed (written to fallback files instead).
    fn write(self, report: &RunReport, measured: &Measured) -> Vec<OutputFailure> {
        let intervals = HdrIntervals {
            recorder: &measured.recorder,
            partial_reason: report.partial_reason.as_deref(),
            zero_unix_ns: report.wall_clock.as_ref().map(|w| w.zero_unix_ns),
        };
        [
            self.json.map(|out| export::to_prepared(&Json, report, out)),
            self.csv.map(|out| export::to_prepared(&Csv, report, out)),
            self.hdr_log
                .map(|out| export::to_prepared(&HdrLog, &intervals, out)),
        ]
        .into_iter()
        .flatten()
        .filter_map(Result::err)
        .collect()
    }
}

/// Prints the results: the summary, or JSON with `--json` (warnings then on stderr).
///
/// With `-o -` the JSON goes to standard output and the summary to standard error, so that
/// a pipe gets the results alone.
fn print_results(report: &RunReport, a: &EvalArgs) -> anyhow::Result<()> {
    let to_stdout = a.output.as_ref().is_some_and(|o| o.as_os_str() == "-");
    if a.json || to_stdout {
        out!("{}", export::render(&Json, report));
        if to_stdout && !a.json {
            eprint!("{}", export::render(&Text, report));
        } else {
            for w in report.warnings() {
                eprintln!("warning: {w}");
            }
        }
    } else {
        out!("{}", export::render(&Text, report));
    }
    Ok(())
}
