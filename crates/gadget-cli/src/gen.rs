//! `gadget gen`: run a workload config and write its trace.

use anyhow::Context;
use gadget::config::Config;
use gadget::summary::{KeyStats, Summary};
use gadget::trace::{TraceFileWriter, TraceFooter, TraceFormat};

use crate::cli::{Format, GenArgs};
use crate::interrupt::INTERRUPTED;
use crate::progress;
use crate::stdout::{out, outln};

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
    let mut operator = config.build_operator();
    let states = operator.states();
    let header = config.trace_header(states.clone());
    let format = match args.format {
        Format::Bin => TraceFormat::Binary,
        Format::Text => TraceFormat::Text,
    };
    let source = config.open_source()?;
    // from here on Ctrl-C finishes the trace so far instead of leaving its temporary file
    let stop = crate::interrupt::stop_flag();
    let mut writer = TraceFileWriter::create(&args.output, format, &header)
        .with_context(|| format!("cannot write the trace to {}", args.output.display()))?;
    let bar = progress::spinner("generating");
    let started = std::time::Instant::now();
    let (generated, keys) = {
        let mut sink = KeyStats::new(&mut writer);
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
                ))
            },
            &stop,
        )?;
        (generated, sink.keys)
    };
    bar.finish_and_clear();
    // No timings in the trace: the same config and seed must give a byte-identical file.
    // The distinct event keys go in the footer: the trace itself does not carry event keys,
    // and `gadget analyze` needs them for key-space amplification.
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
    writer
        .finish(footer)
        .with_context(|| format!("cannot write the trace to {}", args.output.display()))?;
    if !generated.interrupted {
        if let Some(w) = config.no_events_warning(generated.counts.events) {
            eprintln!("warning: {w}");
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
            "{} ({}, seed {}) -> {} ({})\n",
            args.config.display(),
            config.operator_name,
            config.seed,
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
