//! `gadget analyze` and `gadget compare`.

use std::path::Path;

use anyhow::Context;
use gadget_analyze::distance::popularity_distance;
use gadget_analyze::report::comparison_table;
use gadget_analyze::{scan, Analysis, AnalyzeOptions};

use crate::cli::{AnalysisOptions, AnalyzeArgs, CompareArgs};
use crate::progress::spinner;

fn options(o: &AnalysisOptions) -> AnalyzeOptions {
    AnalyzeOptions {
        max_sequence_len: o.max_sequence_len as usize,
        shuffle_seed: o.seed,
        working_set_samples: o.working_set_samples,
        event_key_bytes: o.event_key_bytes,
        rate_bin_ms: o.rate_bin_ms,
    }
}

/// Reads and analyzes one trace, with a progress spinner.
fn analyze_trace(path: &Path, options: &AnalyzeOptions) -> anyhow::Result<Analysis> {
    let mut reader = gadget::trace::open_trace(path)?;
    let bar = spinner(&format!("analyzing {}", path.display()));
    let scanned = scan(&mut reader, options, |records| {
        bar.set_message(format!("{records} records"))
    })
    .with_context(|| format!("cannot analyze {}", path.display()))?;
    bar.set_message("stack distances and sequences");
    let analysis = scanned.analyze(options);
    bar.finish_and_clear();
    Ok(analysis)
}

fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// `gadget analyze`.
pub fn analyze(args: AnalyzeArgs) -> anyhow::Result<()> {
    let options = options(&args.options);
    let analysis = analyze_trace(&args.trace, &options)?;
    let mut json = serde_json::to_value(&analysis)?;
    json["trace"] = args.trace.display().to_string().into();
    if let Some(out) = &args.output {
        gadget_eval::report::write_atomically(out, |w| {
            serde_json::to_writer_pretty(&mut *w, &json)?;
            w.write_all(b"\n")
        })
        .with_context(|| format!("cannot write the analysis to {}", out.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", analysis.to_text(&display_name(&args.trace)));
    }
    Ok(())
}

/// `gadget compare`.
pub fn compare(args: CompareArgs) -> anyhow::Result<()> {
    let options = options(&args.options);
    let mut traces = Vec::with_capacity(args.traces.len());
    for path in &args.traces {
        traces.push((display_name(path), analyze_trace(path, &options)?));
    }
    if args.json {
        let reference = &traces[0].1;
        let items: Vec<serde_json::Value> = args
            .traces
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
        println!("{}", serde_json::to_string_pretty(&items)?);
    } else {
        print!("{}", comparison_table(&traces));
    }
    Ok(())
}
