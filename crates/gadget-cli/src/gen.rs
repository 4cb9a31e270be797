//! `gadget gen`: run a workload config and write its trace (of a parallel job: one subtask's,
//! or every subtask's in one pass).

use std::path::{Path, PathBuf};

use anyhow::Context;
use gadget::config::{Config, SubtaskPart};
use gadget::generate::{Generated, Silence};
use gadget::parallel::{AllSubtasks, JobProgress};
use gadget::summary::{KeyStats, Summary};
use gadget::trace::{TraceFileWriter, TraceFooter, TraceFormat};
use gadget_eval::reads::ReadLengths;

use crate::cli::{Format, GenArgs};
use crate::interrupt::INTERRUPTED;
use crate::progress;
use crate::stdout::{out, outln};
use crate::subtask::SubtaskChoice;

/// Runs `gadget gen`; its exit status: 0, or [`INTERRUPTED`] when Ctrl-C cut the trace short
/// (the trace is still written, complete up to that point and marked partial).
pub fn run(args: GenArgs) -> anyhow::Result<i32> {
    gadget::atomic::refuse_overwriting_an_input("-o", &args.output, &[&args.config])
        .map_err(anyhow::Error::msg)?;
    let mut config = Config::load_with_overrides(&args.config, &args.property)?;
    for w in &config.warnings {
        eprintln!("warning: {w}");
    }
    let limit = args.limit.or(config.limit);
    if limit.is_none() && config.source.is_endless() && args.output.as_os_str() != "-" {
        anyhow::bail!(
            "{}: the synthetic source has no `events`, so the trace would grow until the disk \
             is full; give --limit N (requests), `limit` in the config, or `events` in \
             [source] (a pipe, -o -, may take an endless stream)",
            args.config.display()
        );
    }
    if let Some(times) = crate::cli::input_passes(args.input_passes, args.repeat) {
        config.set_repeat(times)?;
    }
    if let Some(seed) = args.seed {
        config.seed = seed;
        config.json["seed"] = seed.into();
    }
    let format = match args.format {
        Format::Bin => TraceFormat::Binary,
        Format::Text => TraceFormat::Text,
    };
    match crate::subtask::apply(&mut config, args.parallelism, args.subtask, &args.config)? {
        SubtaskChoice::All => all_subtasks(&args, &config, format, limit),
        SubtaskChoice::One(_) => one(&args, &config, format, limit),
    }
}

/// Fails when the memory store that learns what the gets find refused a request (which a
/// generated trace never makes it do).
fn reads_learned(reads: ReadLengths<'_, TraceFileWriter>) -> anyhow::Result<()> {
    match reads.finish() {
        None => Ok(()),
        Some(e) => anyhow::bail!(
            "--reads: the memory store that learns what each get finds refused a request: {e}"
        ),
    }
}

/// Writes the trace of the config's subtask (of the only one at parallelism 1).
fn one(
    args: &GenArgs,
    config: &Config,
    format: TraceFormat,
    limit: Option<u64>,
) -> anyhow::Result<i32> {
    let mut operator = config.build_operator();
    let states = operator.states();
    let header = config.trace_header(states.clone());
    let source = config.open_source()?;
    // from here on Ctrl-C finishes the trace so far instead of leaving its temporary file
    let stop = crate::interrupt::stop_flag();
    let mut writer = TraceFileWriter::create(&args.output, format, &header)
        .with_context(|| format!("cannot write the trace to {}", args.output.display()))?;
    let bar = progress::spinner("generating");
    let started = std::time::Instant::now();
    let mut silence = Silence::watching(limit);
    let (generated, keys) = {
        let mut reads = ReadLengths::new(&mut writer, states.len(), args.reads);
        let mut sink = KeyStats::new(&mut reads);
        let generated = gadget::generate::generate_until(
            source,
            operator.as_mut(),
            &mut sink,
            limit,
            &mut |counts| {
                bar.set_message(format!(
                    "{} events, {} requests",
                    counts.events,
                    counts.requests()
                ));
                if let Some(said) = silence.notice(counts) {
                    bar.suspend(|| eprintln!("warning: {said}"));
                }
            },
            &stop,
        )?;
        let keys = sink.keys;
        reads_learned(reads)?;
        (generated, keys)
    };
    bar.finish_and_clear();
    writer
        .finish(footer(&generated))
        .with_context(|| format!("cannot write the trace to {}", args.output.display()))?;
    if !generated.interrupted && generated.counts.events == 0 {
        match config.parallel.subtask {
            Some(i) if config.parallel.parallelism > 1 => {
                let part = config.subtask_part();
                eprintln!(
                    "warning: subtask {i} received no event: no event of the job has a key in \
                     its {} {}",
                    part.heading(),
                    part.short()
                );
            }
            _ => {
                if let Some(w) = config.no_events_warning(0) {
                    eprintln!("warning: {w}");
                }
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let rate = generated.counts.requests() as f64 / elapsed.max(1e-9);

    let summary = Summary {
        states,
        counts: generated.counts,
        distinct_state_keys: keys.count(),
        distinct_event_keys: generated.event_keys.count(),
        truncated: generated.truncated,
        interrupted: generated.interrupted,
    };
    if args.json {
        let mut json = summary.to_json();
        json["output"] = args.output.display().to_string().into();
        json["format"] = format.name().into();
        json["operator"] = config.operator_name.clone().into();
        json["seed"] = config.seed.into();
        if config.parallel.parallelism > 1 {
            add_subtask(&mut json, config);
        }
        json["seconds"] = elapsed.into();
        json["requests_per_second"] = rate.into();
        if args.output.as_os_str() == "-" {
            // standard output holds the trace
            eprintln!("{}", serde_json::to_string_pretty(&json)?);
        } else {
            outln!("{}", serde_json::to_string_pretty(&json)?);
        }
    } else if args.output.as_os_str() != "-" {
        outln!(
            "{} ({}, seed {}{}) -> {} ({})\n",
            args.config.display(),
            config.operator_name,
            config.seed,
            subtask_label(config),
            args.output.display(),
            format.name()
        );
        out!("{}", summary.render());
        outln!("\ngenerated in {elapsed:.2} s: {rate:.0} requests/s");
    } else {
        eprint!("{}", summary.render());
        eprintln!("\ngenerated in {elapsed:.2} s: {rate:.0} requests/s");
    }
    if generated.interrupted {
        eprintln!(
            "interrupted: {} holds the requests generated until Ctrl-C (or SIGTERM), marked partial \
             (footer: truncated, interrupted); open windows were not fired",
            args.output.display()
        );
        return Ok(INTERRUPTED);
    }
    Ok(0)
}

/// `--subtask all`: every subtask's trace in one pass over the input, on the machine's cores.
fn all_subtasks(
    args: &GenArgs,
    config: &Config,
    format: TraceFormat,
    limit: Option<u64>,
) -> anyhow::Result<i32> {
    if args.output.as_os_str() == "-" {
        anyhow::bail!(
            "--subtask all writes one trace per subtask, to files: give -o a file name (-o \
             out/trace.gtrace writes out/trace.0.gtrace, out/trace.1.gtrace, ...), or one \
             subtask to standard output with --subtask I"
        );
    }
    let p = config.parallel.parallelism;
    let paths: Vec<PathBuf> = (0..p)
        .map(|i| crate::subtask::trace_path(&args.output, i))
        .collect();
    for path in &paths {
        gadget::atomic::refuse_overwriting_an_input("-o", path, &[&args.config])
            .map_err(anyhow::Error::msg)?;
    }
    let configs = (0..p)
        .map(|i| config.for_subtask(i))
        .collect::<Result<Vec<Config>, _>>()?;
    // each subtask's states: the same names for Flink's, a thread's own tasks' for Kafka Streams'
    let states: Vec<Vec<String>> = configs
        .iter()
        .map(|c| c.build_operator().states())
        .collect();
    let inputs = config.open_job_inputs()?;
    let stop = crate::interrupt::stop_flag();
    let mut writers = configs
        .iter()
        .zip(&paths)
        .zip(&states)
        .map(|((c, path), states)| {
            TraceFileWriter::create(path, format, &c.trace_header(states.clone()))
                .with_context(|| format!("cannot write the trace to {}", path.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let build = |i: u32| configs[i as usize].build_operator();
    let all = AllSubtasks {
        router: config.subtask_router(),
        build_operator: &build,
        limit,
        threads,
    };
    let bar = progress::spinner("generating");
    let started = std::time::Instant::now();
    let mut silence = Silence::watching(limit);
    let (generated, keys) = {
        let mut reads: Vec<ReadLengths<'_, TraceFileWriter>> = writers
            .iter_mut()
            .zip(&states)
            .map(|(w, states)| ReadLengths::new(w, states.len(), args.reads))
            .collect();
        let mut sinks: Vec<KeyStats<'_, ReadLengths<'_, TraceFileWriter>>> =
            reads.iter_mut().map(KeyStats::new).collect();
        let generated = all.generate(
            inputs,
            &mut sinks,
            &mut |at: JobProgress| {
                bar.set_message(format!(
                    "{} records read, {} requests, {p} subtasks",
                    at.read, at.requests
                ));
                if let Some(said) = silence.notice_at(at.read, at.requests) {
                    bar.suspend(|| eprintln!("warning: {said}"));
                }
            },
            &stop,
        )?;
        let keys: Vec<_> = sinks.into_iter().map(|s| s.keys).collect();
        for r in reads {
            reads_learned(r)?;
        }
        (generated, keys)
    };
    bar.finish_and_clear();
    for ((writer, g), path) in writers.into_iter().zip(&generated).zip(&paths) {
        writer
            .finish(footer(g))
            .with_context(|| format!("cannot write the trace to {}", path.display()))?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let interrupted = generated.iter().any(|g| g.interrupted);
    let events: u64 = generated.iter().map(|g| g.counts.events).sum();
    if !interrupted {
        if let Some(w) = config.no_events_warning(events) {
            eprintln!("warning: {w}");
        }
    }
    let requests: u64 = generated.iter().map(|g| g.counts.requests()).sum();
    let rate = requests as f64 / elapsed.max(1e-9);
    let summaries: Vec<Summary> = generated
        .into_iter()
        .zip(keys)
        .zip(states)
        .map(|((g, keys), states)| Summary {
            states,
            counts: g.counts,
            distinct_state_keys: keys.count(),
            distinct_event_keys: g.event_keys.count(),
            truncated: g.truncated,
            interrupted: g.interrupted,
        })
        .collect();
    let workers = threads.clamp(1, p as usize);
    if args.json {
        let subtasks: Vec<serde_json::Value> = summaries
            .iter()
            .zip(&configs)
            .zip(&paths)
            .map(|((summary, c), path)| {
                let mut json = summary.to_json();
                add_subtask(&mut json, c);
                json["output"] = path.display().to_string().into();
                json
            })
            .collect();
        let mut json = serde_json::json!({
            "operator": config.operator_name,
            "seed": config.seed,
            "format": format.name(),
            "parallelism": p,
            "events": events,
            "requests": requests,
            "truncated": summaries.iter().any(|s| s.truncated),
            "interrupted": interrupted,
            "threads": workers,
            "seconds": elapsed,
            "requests_per_second": rate,
            "subtasks": subtasks,
        });
        if let SubtaskPart::KeyGroups { of, .. } = config.subtask_part() {
            json["max_parallelism"] = of.into();
        }
        outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        let groups = match config.subtask_part() {
            SubtaskPart::KeyGroups { of, .. } => format!(", max parallelism {of}"),
            SubtaskPart::Tasks(_) | SubtaskPart::Partitions(_) => String::new(),
        };
        outln!(
            "{} ({}, seed {}, parallelism {p}{groups}) -> {} ({})\n",
            args.config.display(),
            config.operator_name,
            config.seed,
            crate::subtask::trace_paths(&args.output, p),
            format.name()
        );
        out!("{}", render_subtasks(&summaries, &configs, &paths));
        outln!(
            "\ngenerated in {elapsed:.2} s: {rate:.0} requests/s ({p} subtasks on {workers} \
             thread{})",
            if workers == 1 { "" } else { "s" }
        );
    }
    if interrupted {
        eprintln!(
            "interrupted: the traces hold the requests generated until Ctrl-C (or SIGTERM), \
             marked partial (footer: truncated, interrupted); open windows were not fired"
        );
        return Ok(INTERRUPTED);
    }
    Ok(0)
}

/// The footer of a generated trace: whether it is complete, and the distinct event keys (the
/// trace does not carry event keys, and `gadget analyze` needs them for key-space
/// amplification). No timings: the same config and seed must give a byte-identical file.
fn footer(generated: &Generated) -> TraceFooter {
    let mut footer = TraceFooter::new(generated.truncated);
    let (event_keys, exact) = generated.event_keys.count();
    footer
        .extra
        .insert("distinct_event_keys".into(), event_keys.into());
    footer
        .extra
        .insert("distinct_event_keys_exact".into(), exact.into());
    if generated.interrupted {
        footer.extra.insert("interrupted".into(), true.into());
    }
    footer
}

/// Adds the subtask of a parallel job to a summary's JSON: index, parallelism, and what it
/// holds (Flink's key groups and max parallelism, or a Kafka Streams thread's tasks).
fn add_subtask(json: &mut serde_json::Value, config: &Config) {
    json["subtask"] = config.parallel.subtask.into();
    json["parallelism"] = config.parallel.parallelism.into();
    let part = config.subtask_part();
    if let SubtaskPart::KeyGroups { of, .. } = part {
        json["max_parallelism"] = of.into();
    }
    if let (Some(json), serde_json::Value::Object(fields)) = (json.as_object_mut(), part.to_json())
    {
        json.extend(fields);
    }
}

/// `, subtask 2 of 4 (key groups 64-95 of 128)` for a subtask of a parallel job; empty
/// otherwise.
fn subtask_label(config: &Config) -> String {
    match config.parallel.subtask {
        Some(i) if config.parallel.parallelism > 1 => format!(
            ", subtask {i} of {} ({})",
            config.parallel.parallelism,
            config.subtask_part()
        ),
        _ => String::new(),
    }
}

/// One line per subtask, and their total.
fn render_subtasks(summaries: &[Summary], configs: &[Config], paths: &[PathBuf]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>7}  {:>11}  {:>12}  {:>10}  {:>12}  {:>10}  trace",
        "subtask",
        configs
            .first()
            .map_or("key groups", |c| c.subtask_part().heading()),
        "events",
        "watermarks",
        "requests",
        "req/event"
    );
    let mut total = (0u64, 0u64);
    for ((summary, config), path) in summaries.iter().zip(configs).zip(paths) {
        let c = &summary.counts;
        total.0 += c.events;
        total.1 += c.requests();
        let _ = writeln!(
            s,
            "{:>7}  {:>11}  {:>12}  {:>10}  {:>12}  {:>10.3}  {}{}",
            config.parallel.subtask.unwrap_or(0),
            config.subtask_part().short(),
            c.events,
            c.watermarks,
            c.requests(),
            summary.event_amplification(),
            file_name(path),
            if summary.interrupted {
                "  (PARTIAL)"
            } else if summary.truncated {
                "  (truncated by the request limit)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        s,
        "{:>7}  {:>11}  {:>12}  {:>10}  {:>12}  {:>10.3}",
        "total",
        "",
        total.0,
        summaries.first().map_or(0, |x| x.counts.watermarks),
        total.1,
        total.1 as f64 / total.0.max(1) as f64
    );
    s
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}
