//! `gadget analyze` and `gadget compare`: traces, run results and workload configs.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use gadget::config::Config;
use gadget_analyze::differences::{differences, run_names};
use gadget_analyze::distance::popularity_distance;
use gadget_analyze::events::{analyze_event_stream, analyze_schedule};
use gadget_analyze::plot::{distinguishing, figures, overlay, rate_figures, write_figures, Figure};
use gadget_analyze::report::{comparison_table, thousands};
use gadget_analyze::results::{self as run_results, results_table};
use gadget_analyze::sampling::Sampling;
use gadget_analyze::{scan, Analysis, AnalyzeOptions};
use gadget_results::RunReport;

use crate::cli::{AnalysisOptions, AnalyzeArgs, CompareArgs, EvalArgs};
use crate::interrupt::INTERRUPTED;
use crate::progress::spinner;
use crate::stdout::{out, outln};

/// What a file given to `analyze` or `compare` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Trace,
    Results,
    Config,
    /// A `gadget bench` folder (with its `summary.json`).
    Experiment,
}

/// Tells traces, results (JSON) and configs (`.toml`) apart.
fn input_kind(path: &Path) -> anyhow::Result<Input> {
    if path.extension().is_some_and(|e| e == "toml") {
        return Ok(Input::Config);
    }
    if path.as_os_str() == "-" {
        // standard input: a trace (read once, as it streams)
        return Ok(Input::Trace);
    }
    if path.is_dir() {
        if path.join("summary.json").is_file() {
            return Ok(Input::Experiment);
        }
        bail!("{} is a folder without a summary.json: compare takes traces, results files, or gadget bench folders", path.display());
    }
    let mut first = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut first))
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(match first[..n].iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Input::Results,
        _ => Input::Trace,
    })
}

/// The analysis options for `traces`, their sampling chosen once for all of them (so that
/// they compare key for key).
fn options(o: &AnalysisOptions, traces: &[&Path]) -> anyhow::Result<AnalyzeOptions> {
    Ok(AnalyzeOptions {
        max_sequence_len: o.max_sequence_len as usize,
        shuffle_seed: o.seed,
        working_set_samples: o.working_set_samples,
        event_key_bytes: o.event_key_bytes,
        sampling: sampling(&o.sample, traces)?,
    })
}

/// The sampling `--sample` asks for: `auto` chooses by the largest trace's size and the
/// memory available (and says so on stderr when it samples); standard input is analysed
/// exactly unless told otherwise.
fn sampling(text: &str, traces: &[&Path]) -> anyhow::Result<Sampling> {
    if text != "auto" {
        return Ok(Sampling::parse(text)?);
    }
    let mut most = 0u64;
    for path in traces.iter().filter(|p| p.as_os_str() != "-") {
        let mut first = [0u8; 8];
        let mut file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let n = file.read(&mut first)?;
        let bytes = file.metadata()?.len();
        most = most.max(gadget_analyze::sampling::requests_at_most(
            bytes,
            &first[..n],
        ));
    }
    let (chosen, why) = gadget_analyze::sampling::auto(most);
    if let Some(why) = why {
        eprintln!("{why}");
    }
    Ok(chosen)
}

/// Reads and analyzes one trace, with a progress spinner; once `stop` is set (Ctrl-C), the
/// rest of the trace is left unread, the locality measures are left out, and the analysis is
/// marked partial.
fn analyze_trace(
    path: &Path,
    options: &AnalyzeOptions,
    stop: &AtomicBool,
) -> anyhow::Result<Analysis> {
    let mut reader = gadget::trace::open_trace(path)?;
    let bar = spinner(&format!("analyzing {}", path.display()));
    let scanned = scan(&mut reader, options, |records| {
        bar.set_message(format!("{records} records"));
        crate::interrupt::go_on(stop)
    })
    .with_context(|| format!("cannot analyze {}", path.display()))?;
    bar.set_message("stack distances and sequences");
    let analysis = scanned.analyze_until(options, stop);
    bar.finish_and_clear();
    Ok(analysis)
}

fn read_results(path: &Path) -> anyhow::Result<RunReport> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    run_results::from_json(&text).with_context(|| {
        format!(
            "{} is JSON but not gadget run/replay results (docs/results.schema.json)",
            path.display()
        )
    })
}

fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Fails before any work when an output flag names one of the inputs.
fn refuse_writing_over_inputs(
    outputs: &[(&str, &Option<PathBuf>)],
    inputs: &[&Path],
) -> anyhow::Result<()> {
    for (flag, path) in outputs {
        if let Some(path) = path {
            gadget::atomic::refuse_overwriting_an_input(flag, path, inputs)
                .map_err(anyhow::Error::msg)?;
        }
    }
    Ok(())
}

/// Writes the plots and the HTML report a command asked for; says where on stderr.
fn write_outputs(
    title: &str,
    sections: &[(String, String)],
    figures: &[Figure],
    plots: Option<&PathBuf>,
    report: Option<&PathBuf>,
) -> anyhow::Result<()> {
    if let Some(dir) = plots {
        let written = write_figures(dir, figures)?;
        eprintln!("wrote {} plot files to {}", written.len(), dir.display());
    }
    if let Some(path) = report {
        let html = gadget_analyze::html::page(title, sections, figures)?;
        gadget::atomic::write_atomically(path, |w| w.write_all(html.as_bytes()))
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
        eprintln!("wrote the report to {}", path.display());
    }
    Ok(())
}

fn write_json(path: &Path, json: &serde_json::Value) -> anyhow::Result<()> {
    gadget::atomic::write_atomically(path, |w| {
        serde_json::to_writer_pretty(&mut *w, json)?;
        w.write_all(b"\n")
    })
    .with_context(|| format!("cannot write the analysis to {}", path.display()))
}

/// `gadget analyze`; its exit status: 0, or [`INTERRUPTED`] when Ctrl-C cut a trace's
/// analysis short (its results are still printed and written, marked partial).
pub fn analyze(args: AnalyzeArgs) -> anyhow::Result<i32> {
    refuse_writing_over_inputs(
        &[("-o", &args.output), ("--report", &args.report)],
        &[&args.input],
    )?;
    let name = display_name(&args.input);
    let mut partial = false;
    let (json, text, figs) = match input_kind(&args.input)? {
        Input::Experiment => bail!(
            "{} is a gadget bench folder: its summary.md is its report; compare two with `gadget compare A B`",
            args.input.display()
        ),
        Input::Trace => {
            let stop = crate::interrupt::stop_flag();
            let options = options(&args.options, &[&args.input])?;
            let analysis = analyze_trace(&args.input, &options, &stop)?;
            partial = analysis.partial;
            let mut json = serde_json::to_value(&analysis)?;
            json["trace"] = args.input.display().to_string().into();
            let figs = figures(&analysis, &name);
            (json, analysis.to_text(&name), figs)
        }
        Input::Results => {
            let r = read_results(&args.input)?;
            let json = serde_json::from_str(&std::fs::read_to_string(&args.input)?)?;
            (json, run_results::to_text(&r, &name), run_results::figures(&r, &name, true))
        }
        Input::Config => {
            let stop = crate::interrupt::stop_flag();
            let (json, text, figs, stopped) =
                analyze_config(&args.input, &args.options, &name, &stop)?;
            partial = stopped;
            (json, text, figs)
        }
    };
    if let Some(out) = &args.output {
        write_json(out, &json)?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        out!("{text}");
    }
    write_outputs(
        &format!("Gadget analysis of {name}"),
        &[(name.clone(), text)],
        &figs,
        args.plots.as_ref(),
        args.report.as_ref(),
    )?;
    if partial {
        eprintln!("interrupted: the analysis covers the part of the trace read before Ctrl-C or SIGTERM (\"partial\": true)");
        return Ok(INTERRUPTED);
    }
    Ok(0)
}

/// A config's event stream, and its arrival schedule when `[run]` names an open-loop one.
///
/// Once `stop` is set (Ctrl-C) the rest of the stream is left unread; the result says so and
/// the last value returned is true.
fn analyze_config(
    path: &Path,
    o: &AnalysisOptions,
    name: &str,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(serde_json::Value, String, Vec<Figure>, bool)> {
    let config = Config::load(path)?;
    let bar = spinner(&format!("reading the event stream of {}", path.display()));
    let until = Arc::clone(stop);
    let source = Box::new(
        config
            .open_source()?
            .take_while(move |_| !until.load(Ordering::Relaxed)),
    );
    let events = analyze_event_stream(source, o.rate_bin_ms, Some(o.events))?;
    bar.finish_and_clear();
    let stopped = stop.load(Ordering::Relaxed);
    let cut = if events.events >= o.events {
        format!(" (the first {}: --events)", thousands(o.events))
    } else {
        String::new()
    };
    let st = &events.rate.statistics;
    let mut text = format!(
        "{name}: event stream\n  {} events{cut}, {} watermarks, {} distinct keys{}, {} out of order\n  event time {} .. {} ms\n  events per {} ms: mean {:.2}, cv {:.2}, Hurst {} (aggregate variance), {} (R/S)\n",
        thousands(events.events),
        thousands(events.watermarks),
        thousands(events.distinct_keys),
        if events.distinct_keys_exact { "" } else { " (estimate)" },
        thousands(events.out_of_order),
        events.first_ms,
        events.last_ms,
        events.rate.bin_ms,
        st.mean,
        st.cv,
        hurst(st.hurst_aggregate_variance),
        hurst(st.hurst_rescaled_range),
    );
    let mut figs = rate_figures("event-rate", "events", &events.rate, name);
    let mut json =
        serde_json::json!({ "config": path.display().to_string(), "event_stream": events });
    let no_flags = EvalArgs::default();
    let arrival = crate::eval_cmd::resolve_arrival(&no_flags, &config.run)?;
    if let Some(rate) = arrival.rate() {
        let mut schedule = arrival.schedule(config.seed);
        let starts: Vec<u64> = (0..o.schedule_requests)
            .map(|_| schedule.next_start())
            .collect();
        // about 100 requests per bin on average
        let bin_ns = ((100.0 / rate) * 1e9).max(1.0) as u64;
        let s = analyze_schedule(&arrival.describe(), &starts, bin_ns)?;
        let st = &s.rate.statistics;
        text.push_str(&format!(
            "\narrival schedule: {}\n  {} requests, mean rate {:.0}/s, inter-arrival cv {:.3}\n  requests per {} ms: cv {:.2}, Hurst {} (aggregate variance), {} (R/S)\n",
            s.process,
            thousands(s.requests),
            s.mean_rate,
            s.gap_cv,
            s.rate.bin_ms,
            st.cv,
            hurst(st.hurst_aggregate_variance),
            hurst(st.hurst_rescaled_range),
        ));
        figs.extend(rate_figures("arrival-rate", "requests", &s.rate, name));
        json["arrival_schedule"] = serde_json::to_value(&s)?;
    } else if !arrival.is_closed_loop() {
        text.push_str(
            "\narrival schedule: the workload's own event time (the event stream above)\n",
        );
    }
    if stopped {
        text.push_str("\n  PARTIAL: stopped by Ctrl-C or SIGTERM; the event stream above covers the events read until then\n");
        json["partial"] = true.into();
    }
    Ok((json, text, figs, stopped))
}

fn hurst(h: Option<f64>) -> String {
    h.map_or_else(|| "n/a (too few bins)".to_string(), |h| format!("{h:.2}"))
}

/// `gadget compare`; its exit status: 0, or [`INTERRUPTED`] when Ctrl-C cut the analyses
/// short (the comparison of what was read is still printed and written, marked partial).
pub fn compare(args: CompareArgs) -> anyhow::Result<i32> {
    let inputs: Vec<&Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    refuse_writing_over_inputs(&[("--report", &args.report)], &inputs)?;
    let kinds: Vec<Input> = args
        .inputs
        .iter()
        .map(|p| input_kind(p))
        .collect::<anyhow::Result<_>>()?;
    let names: Vec<String> = args.inputs.iter().map(|p| display_name(p)).collect();
    let title = format!("Gadget comparison of {}", names.join(", "));
    if kinds.iter().all(|k| *k == Input::Experiment) {
        return crate::bench_cmd::compare(
            &args.inputs,
            args.json,
            args.report.as_deref(),
            args.plots.as_deref(),
        );
    }
    if kinds.iter().all(|k| *k == Input::Results) {
        let runs: Vec<RunReport> = args
            .inputs
            .iter()
            .map(|p| read_results(p))
            .collect::<anyhow::Result<_>>()?;
        let run_refs: Vec<&RunReport> = runs.iter().collect();
        let names = run_names(&inputs, &run_refs);
        let differ = differences(&run_refs);
        if differ.len() > 1 {
            eprintln!(
                "warning: the runs differ in more than one setting ({}): the comparison mixes their effects",
                differ.join(", ")
            );
        }
        let title = format!("Gadget comparison of {}", names.join(", "));
        let results: Vec<(String, RunReport)> = names.into_iter().zip(runs).collect();
        let table = results_table(&results);
        if args.json {
            let items: Vec<serde_json::Value> = args
                .inputs
                .iter()
                .map(|p| -> anyhow::Result<serde_json::Value> {
                    Ok(serde_json::from_str(&std::fs::read_to_string(p)?)?)
                })
                .collect::<anyhow::Result<_>>()?;
            outln!("{}", serde_json::to_string_pretty(&items)?);
        } else {
            out!("{table}");
        }
        let legends = distinguishing(&results.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
        let figs = overlay(
            results
                .iter()
                .zip(&legends)
                .map(|((_, r), l)| run_results::figures(r, l, false))
                .collect(),
        );
        let mut sections = vec![("Side by side".to_string(), table)];
        sections.extend(
            results
                .iter()
                .map(|(n, r)| (n.clone(), run_results::to_text(r, n))),
        );
        write_outputs(
            &title,
            &sections,
            &figs,
            args.plots.as_ref(),
            args.report.as_ref(),
        )?;
        return Ok(0);
    }
    if let Some(i) = kinds.iter().position(|k| *k != Input::Trace) {
        bail!(
            "{} is not a trace; compare takes traces, or run/replay results files, not a mix (analyze a config on its own)",
            args.inputs[i].display()
        );
    }
    let paths: Vec<&Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    let options = options(&args.options, &paths)?;
    let stop = crate::interrupt::stop_flag();
    let mut traces = Vec::with_capacity(args.inputs.len());
    for (path, name) in args.inputs.iter().zip(&names) {
        traces.push((name.clone(), analyze_trace(path, &options, &stop)?));
    }
    let partial = traces.iter().any(|(_, a)| a.partial);
    let table = comparison_table(&traces);
    if args.json {
        let reference = &traces[0].1;
        let items: Vec<serde_json::Value> = args
            .inputs
            .iter()
            .zip(&traces)
            .map(|(path, (_, a))| {
                serde_json::json!({
                    "trace": path.display().to_string(),
                    "analysis": a,
                    "popularity_distance_to_first": popularity_distance(&reference.popularity, &a.popularity),
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&items)?);
    } else {
        out!("{table}");
    }
    let legends = distinguishing(&traces.iter().map(|t| t.0.clone()).collect::<Vec<_>>());
    let figs = overlay(
        traces
            .iter()
            .zip(&legends)
            .map(|((_, a), l)| figures(a, l))
            .collect(),
    );
    let mut sections = vec![("Side by side".to_string(), table)];
    sections.extend(traces.iter().map(|(n, a)| (n.clone(), a.to_text(n))));
    write_outputs(
        &title,
        &sections,
        &figs,
        args.plots.as_ref(),
        args.report.as_ref(),
    )?;
    if partial {
        eprintln!("interrupted: the comparison covers the parts of the traces read before Ctrl-C or SIGTERM (\"partial\": true)");
        return Ok(INTERRUPTED);
    }
    Ok(0)
}
