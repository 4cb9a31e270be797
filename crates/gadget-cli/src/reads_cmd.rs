//! `gadget replay --check-reads`: replay traces into a store without timing them, requiring
//! every get to find what the trace says the engine's store found.

use anyhow::bail;
use gadget_eval::reads::{check_reads, ReadCheck, ReadCheckError};
use gadget_eval::store::{StoreKind, StoreSettings};
use gadget_eval::workload::{RequestStream, WorkloadSource};

use crate::cli::ReplayArgs;
use crate::interrupt::INTERRUPTED;
use crate::progress;
use crate::stdout::outln;
use crate::store_dir::StoreDir;

/// Checks each trace of `args` in turn, each in a fresh `kind` store; the exit status.
pub fn check(args: &ReplayArgs, kind: StoreKind, settings: StoreSettings) -> anyhow::Result<i32> {
    let stop = crate::interrupt::stop_flag();
    let settings = StoreSettings {
        stop: stop.clone(),
        ..settings
    };
    let mut results = Vec::new();
    for (i, path) in args.trace.iter().enumerate() {
        let stream = RequestStream::start(WorkloadSource::Trace {
            path: path.clone(),
            limit: args.limit,
        })?;
        let dir = StoreDir::of(&args.eval)?;
        let sub = if args.trace.len() == 1 {
            dir.path().to_path_buf()
        } else {
            dir.path().join(format!("trace-{i}"))
        };
        std::fs::create_dir_all(&sub)?;
        let mut store =
            gadget_eval::store::routed::open(kind, &sub, &stream.state_names, &settings)?;
        let bar = progress::spinner(&format!("checking reads in {}", kind.name()));
        let checked = check_reads(store.as_mut(), stream, &stop, &mut |n| {
            bar.set_message(format!("{n} requests"))
        });
        bar.finish_and_clear();
        drop(store);
        dir.keep_if(args.eval.keep);
        let c = match checked {
            Ok(c) => c,
            Err(ReadCheckError::Differs(d)) => {
                eprintln!("{}", said(&path.display().to_string(), kind, &d.so_far));
                bail!("{}: {d}", path.display());
            }
            Err(e) => bail!("{}: {e}", path.display()),
        };
        if c.gets > 0 && c.checked == 0 && !c.interrupted {
            bail!(
                "{}: its {} gets say nothing about what they found, so there is nothing to \
                 check: record the engine with `gadget record`, or generate the trace with \
                 `gadget gen --reads`",
                path.display(),
                c.gets
            );
        }
        results.push((path.display().to_string(), c));
        if c.interrupted {
            break;
        }
    }
    if args.eval.json {
        let json: Vec<serde_json::Value> = results
            .iter()
            .map(|(trace, c)| {
                serde_json::json!({
                    "trace": trace,
                    "store": kind.name(),
                    "requests": c.requests,
                    "gets": c.gets,
                    "checked": c.checked,
                    "found": c.found,
                    "found_nothing": c.checked - c.found,
                    "interrupted": c.interrupted,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        for (trace, c) in &results {
            outln!("{}", said(trace, kind, c));
        }
    }
    if results.iter().any(|(_, c)| c.interrupted) {
        eprintln!("interrupted: the reads above were checked before Ctrl-C (or SIGTERM)");
        return Ok(INTERRUPTED);
    }
    Ok(0)
}

/// One trace's check in a sentence.
fn said(trace: &str, kind: StoreKind, c: &ReadCheck) -> String {
    let unknown = c.gets - c.checked;
    format!(
        "{trace} in {}: {} requests, {} gets; {} found what the trace says ({} a value, {} \
         nothing){}",
        kind.name(),
        c.requests,
        c.gets,
        c.checked,
        c.found,
        c.checked - c.found,
        if unknown > 0 {
            format!("; {unknown} say nothing about what they found and were not checked")
        } else {
            String::new()
        }
    )
}
