//! `gadget record flink`: runs a command with the recorder agent attached, then lists the
//! per-thread traces the agent wrote.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use gadget::trace::open_trace;

use crate::cli::{Format, RecordFlinkArgs};
use crate::stdout::outln;

/// Where `make recorder` puts the agent, relative to the project root.
const DEFAULT_AGENT: &str = "recorder/flink/agent/target/gadget-recorder-flink.jar";

/// The agent writes one `<thread>.gtrace` (binary) or `<thread>.trace.txt` (text) per task
/// thread.
fn trace_suffix(format: Format) -> &'static str {
    match format {
        Format::Bin => ".gtrace",
        Format::Text => ".trace.txt",
    }
}

pub fn flink(args: RecordFlinkArgs) -> anyhow::Result<i32> {
    let agent = match &args.agent {
        Some(a) => a.clone(),
        None if Path::new(DEFAULT_AGENT).is_file() => PathBuf::from(DEFAULT_AGENT),
        None => bail!(
            "no recorder agent: build it with `make recorder` (it lands in {DEFAULT_AGENT}) and \
             run from the project folder, or give --agent JAR (or GADGET_RECORDER_JAR)"
        ),
    };
    let agent = agent
        .canonicalize()
        .with_context(|| format!("the recorder agent {} is not there", agent.display()))?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the output folder {}", args.out.display()))?;
    let out = args.out.canonicalize()?;
    for path in [&agent, &out] {
        let text = path.to_string_lossy();
        if text.contains(',') || text.contains(char::is_whitespace) {
            bail!(
                "{text} has a comma or a space, which the JVM's agent options cannot carry; \
                 use a path without them"
            );
        }
    }
    let option = format!(
        "-javaagent:{}=out={},buffers={},format={}",
        agent.display(),
        out.display(),
        args.buffers,
        match args.format {
            Format::Bin => "binary",
            Format::Text => "text",
        }
    );
    let tool_options = match std::env::var("JAVA_TOOL_OPTIONS") {
        Ok(existing) if !existing.trim().is_empty() => format!("{existing} {option}"),
        _ => option,
    };
    let (program, rest) = args
        .command
        .split_first()
        .context("give the command that runs the job after --")?;
    let status = Command::new(program)
        .args(rest)
        .env("JAVA_TOOL_OPTIONS", tool_options)
        .status()
        .with_context(|| format!("cannot start {program}"))?;

    let traces = finish_traces(&out, args.format)?;
    if args.json {
        let list: Vec<serde_json::Value> = traces
            .iter()
            .map(|t| {
                serde_json::json!({
                    "file": t.file,
                    "requests": t.requests,
                    "events": t.events,
                    "watermarks": t.watermarks,
                    "dropped_records": t.dropped,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        for t in &traces {
            outln!(
                "{}: {} requests, {} events, {} watermarks{}",
                t.file.display(),
                t.requests,
                t.events,
                t.watermarks,
                if t.dropped > 0 {
                    format!(", {} records DROPPED (raise --buffers)", t.dropped)
                } else {
                    String::new()
                }
            );
        }
        if traces.is_empty() {
            eprintln!(
                "no trace was recorded: the job issued no RocksDB request (is its state backend \
                 RocksDB?)"
            );
        }
    }
    if !status.success() {
        eprintln!("the job failed ({status}); the traces hold what it did until then");
        return Ok(status.code().unwrap_or(1).max(1));
    }
    Ok(0)
}

/// One recorded trace, as listed at the end.
#[derive(Debug)]
struct Recorded {
    file: PathBuf,
    requests: u64,
    events: u64,
    watermarks: u64,
    dropped: u64,
}

/// The traces in `out` of the given format, in name order.
fn finish_traces(out: &Path, format: Format) -> anyhow::Result<Vec<Recorded>> {
    let suffix = trace_suffix(format);
    let mut files: Vec<PathBuf> = std::fs::read_dir(out)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    let mut recorded = Vec::with_capacity(files.len());
    for file in files {
        let mut reader = open_trace(&file)?;
        while reader.next_record()?.is_some() {}
        let footer = reader
            .footer()
            .cloned()
            .with_context(|| format!("{} has no footer", file.display()))?;
        recorded.push(Recorded {
            file,
            requests: footer.requests,
            events: footer.events,
            watermarks: footer.watermarks,
            dropped: footer
                .extra
                .get("dropped_records")
                .and_then(|v| v.as_u64())
                .unwrap_or(0),
        });
    }
    Ok(recorded)
}
