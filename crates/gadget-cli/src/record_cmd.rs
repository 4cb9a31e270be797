//! `gadget record flink`, `gadget record kafka-streams` and `gadget record spark`: run a
//! command with the recorder agent attached, then list the traces the agent wrote.
//!
//! The agent names a Flink task thread's trace after its task and subtask index, the index
//! before the extension as `gadget gen --subtask all` names a job's subtasks: subtask 2 of 4 of
//! `tumbling-incr -> Sink: discard` is `tumbling-incr_-_Sink_discard.2.gtrace`, and its header
//! records the task, subtask, parallelism and attempt.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use std::sync::atomic::{AtomicBool, Ordering};

use gadget::trace::{convert_with_progress, open_trace, TraceError, TraceFormat};

use crate::cli::{Format, RecordFlinkArgs, RecordKafkaStreamsArgs, RecordSparkArgs, Threads};
use crate::interrupt::INTERRUPTED;
use crate::progress;
use crate::stdout::outln;

/// Where `make recorder` puts the agent, relative to the project root.
const DEFAULT_AGENT: &str = "recorder/agent/target/gadget-recorder-flink.jar";

/// The agent writes one `<task>.<subtask>.trace.txt` per task thread, in Gadget's text
/// format; with `--format bin` Gadget converts each to `<task>.<subtask>.gtrace`.
fn trace_suffix(format: Format) -> &'static str {
    match format {
        Format::Bin => ".gtrace",
        Format::Text => AGENT_SUFFIX,
    }
}

/// The extension of the agent's traces: it writes Gadget's text format only, so that the
/// binary format is spelled once, by Gadget.
const AGENT_SUFFIX: &str = ".trace.txt";

/// `gadget record flink`. Each command tells the agent its engine (`engine=`), so that it
/// weaves only that engine's handlers: matching every class a JVM loads against the others'
/// (Flink's operator hierarchy above all) doubled a Spark query's time.
pub fn flink(args: RecordFlinkArgs) -> anyhow::Result<i32> {
    record(args, None, ",engine=flink")
}

/// `gadget record kafka-streams`: the agent names each store's column families by the
/// store's path below the state directory (its `root=` argument).
pub fn kafka_streams(args: RecordKafkaStreamsArgs) -> anyhow::Result<i32> {
    std::fs::create_dir_all(&args.state_dir).with_context(|| {
        format!(
            "cannot create the state directory {}",
            args.state_dir.display()
        )
    })?;
    let root = args.state_dir.canonicalize()?;
    let more = match args.threads {
        Threads::Each => ",engine=kafka-streams",
        Threads::One => ",threads=one,engine=kafka-streams",
    };
    record(args.record, Some(&root), more)
}

/// `gadget record spark`: the agent names each state store's RocksDB instance by its path
/// below the work directory (which holds `spark.local.dir`) and writes one trace of every
/// thread (`local[1]` runs each task on whichever executor thread is free), in text unless
/// `--format bin` asks otherwise.
pub fn spark(mut args: RecordSparkArgs) -> anyhow::Result<i32> {
    std::fs::create_dir_all(&args.work)
        .with_context(|| format!("cannot create the work directory {}", args.work.display()))?;
    let root = args.work.canonicalize()?;
    args.record.format.get_or_insert(Format::Text);
    record(args.record, Some(&root), ",threads=one,engine=spark")
}

/// Runs the command with the agent attached (`root`: where the stores' instances live;
/// `more`: further agent arguments, each after a comma) and lists the traces.
fn record(args: RecordFlinkArgs, root: Option<&Path>, more: &str) -> anyhow::Result<i32> {
    let format = args.format.unwrap_or(Format::Bin);
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
    for path in [Some(agent.as_path()), Some(out.as_path()), root]
        .into_iter()
        .flatten()
    {
        let text = path.to_string_lossy();
        if text.contains(',') || text.contains(char::is_whitespace) {
            bail!(
                "{text} has a comma or a space, which the JVM's agent options cannot carry; \
                 use a path without them"
            );
        }
    }
    let mut option = format!(
        "-javaagent:{}=out={},buffers={},format=text",
        agent.display(),
        out.display(),
        args.buffers,
    );
    if let Some(root) = root {
        option.push_str(&format!(",root={}", root.display()));
    }
    option.push_str(more);
    let tool_options = match std::env::var("JAVA_TOOL_OPTIONS") {
        Ok(existing) if !existing.trim().is_empty() => format!("{existing} {option}"),
        _ => option,
    };
    let (program, rest) = args
        .command
        .split_first()
        .context("give the command that runs the job after --")?;
    let before = agent_traces(&out)?;
    let stop = crate::interrupt::stop_flag();
    let child = Command::new(program)
        .args(rest)
        .env("JAVA_TOOL_OPTIONS", tool_options)
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let status = crate::interrupt::wait_forwarding(child, &stop)
        .with_context(|| format!("cannot wait for {program}"))?;
    if format == Format::Bin && !stop.load(Ordering::Relaxed) {
        to_binary(&out, &before, &stop)?;
    }
    if stop.load(Ordering::Relaxed) {
        let left: Vec<String> = written_since(&out, &before)?
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        eprintln!(
            "interrupted ({status}): the job was stopped, so its traces are partial; {} left \
             in text, which Gadget reads (`gadget trace convert --format bin` makes one \
             binary){}{}",
            left.len(),
            if left.is_empty() { "" } else { ":\n  " },
            left.join("\n  ")
        );
        return Ok(INTERRUPTED);
    }
    let traces = finish_traces(&out, format)?;
    if args.json {
        let list: Vec<serde_json::Value> = traces
            .iter()
            .map(|t| {
                let mut json = serde_json::json!({
                    "file": t.file,
                    "requests": t.requests,
                    "events": t.events,
                    "watermarks": t.watermarks,
                    "dropped_records": t.dropped,
                });
                if let Some(s) = &t.subtask {
                    json["task"] = s.task.clone().into();
                    json["subtask"] = s.index.into();
                    json["parallelism"] = s.parallelism.into();
                    json["attempt"] = s.attempt.into();
                }
                json
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        for t in &traces {
            outln!(
                "{}: {}{} requests, {} events, {} watermarks{}",
                t.file.display(),
                match &t.subtask {
                    Some(s) if s.parallelism > 1 => {
                        format!("subtask {} of {}, ", s.index, s.parallelism)
                    }
                    _ => String::new(),
                },
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

/// The agent's traces in `out` with their modification times: those there before the job ran
/// are not this command's to convert or remove.
fn agent_traces(out: &Path) -> anyhow::Result<Vec<(PathBuf, std::time::SystemTime)>> {
    let mut traces = Vec::new();
    for entry in std::fs::read_dir(out)
        .with_context(|| format!("cannot list the output folder {}", out.display()))?
    {
        let path = entry?.path();
        if path.to_string_lossy().ends_with(AGENT_SUFFIX) {
            let modified = std::fs::metadata(&path)?.modified()?;
            traces.push((path, modified));
        }
    }
    Ok(traces)
}

/// The agent's traces in `out` that this run wrote: absent from `before`, or rewritten since.
fn written_since(
    out: &Path,
    before: &[(PathBuf, std::time::SystemTime)],
) -> anyhow::Result<Vec<PathBuf>> {
    Ok(agent_traces(out)?
        .into_iter()
        .filter(|t| !before.contains(t))
        .map(|(path, _)| path)
        .collect())
}

/// Converts each text trace the agent wrote during this run (absent from `before`, or
/// rewritten since) into Gadget's binary format beside it (`<name>.gtrace`, written atomically)
/// and removes the text, which only this command made. A stop (Ctrl-C) ends the conversion
/// with the trace at hand left in text, its binary not begun.
fn to_binary(
    out: &Path,
    before: &[(PathBuf, std::time::SystemTime)],
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let todo = written_since(out, before)?;
    let bar = progress::spinner("converting");
    for (n, text) in todo.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let name = text.to_string_lossy();
        let binary = PathBuf::from(format!(
            "{}.gtrace",
            name.strip_suffix(AGENT_SUFFIX).unwrap_or(&name)
        ));
        let converted = convert_with_progress(text, &binary, TraceFormat::Binary, &mut |records| {
            bar.set_message(format!(
                "trace {} of {}: {records} records",
                n + 1,
                todo.len()
            ));
            crate::interrupt::go_on(stop)
        });
        match converted {
            Ok(_) => {}
            Err(TraceError::Stopped { .. }) => break,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "cannot convert the agent's {} into {}",
                        text.display(),
                        binary.display()
                    )
                })
            }
        }
        std::fs::remove_file(text)
            .with_context(|| format!("cannot remove the converted {}", text.display()))?;
    }
    bar.finish_and_clear();
    Ok(())
}

/// One recorded trace, as listed at the end.
#[derive(Debug)]
struct Recorded {
    file: PathBuf,
    requests: u64,
    events: u64,
    watermarks: u64,
    dropped: u64,
    /// The Flink subtask whose task thread it recorded, as the agent put it in the header.
    subtask: Option<Subtask>,
}

/// A Flink task thread's subtask: `<task> (<index + 1>/<parallelism>)#<attempt>`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subtask {
    task: String,
    /// From 0.
    index: u64,
    parallelism: u64,
    attempt: u64,
}

impl Subtask {
    /// The subtask the agent wrote into a trace header's `config` (`None` for a thread that is
    /// no Flink task, or a trace of an older agent).
    fn of_header(config: &serde_json::Value) -> Option<Subtask> {
        let number = |name: &str| config.get(name).and_then(serde_json::Value::as_u64);
        Some(Subtask {
            task: config.get("task")?.as_str()?.to_string(),
            index: number("subtask")?,
            parallelism: number("parallelism")?,
            attempt: number("attempt")?,
        })
    }
}

/// The traces in `out` of the given format: other threads' by name, then each task's subtasks
/// in index order.
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
        let subtask = reader.header().and_then(|h| Subtask::of_header(&h.config));
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
            subtask,
        });
    }
    // a job's subtasks in index order (`.10.` after `.9.`), other threads by name
    recorded.sort_by_cached_key(|r| {
        let s = r.subtask.as_ref();
        (
            s.map(|s| (s.task.clone(), s.attempt, s.index)),
            r.file.clone(),
        )
    });
    Ok(recorded)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text trace as the agent writes it, of thread `thread` (with the subtask fields of a
    /// Flink task when `subtask` is given) and `requests` puts.
    fn agent_trace(dir: &Path, name: &str, thread: &str, subtask: Option<(u64, u64)>, puts: u64) {
        let mut config = serde_json::json!({"recorder": "gadget-recorder-flink", "thread": thread});
        if let Some((index, parallelism)) = subtask {
            config["task"] = "op -> Sink: discard".into();
            config["subtask"] = index.into();
            config["parallelism"] = parallelism.into();
            config["attempt"] = 0.into();
        }
        let header = serde_json::json!({
            "gadget_version": "0.1.0",
            "state_names": ["s"],
            "seed": null,
            "config": config,
            "operator": thread,
        });
        let mut text = format!("#gadget-trace\ttext\t1\n#header\t{header}\n#ev\t\t\t0\n");
        for i in 0..puts {
            text.push_str(&format!("put\ts\t{i:02x}\t8\n"));
        }
        text.push_str(&format!(
            "#footer\t{{\"events\":1,\"watermarks\":0,\"requests\":{puts},\"truncated\":false,\
             \"requests_by_op\":{{\"put\":{puts}}},\"extra\":{{\"dropped_records\":0}}}}\n"
        ));
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn a_jobs_subtasks_are_listed_in_index_order_with_their_subtask() {
        let dir = tempfile::tempdir().unwrap();
        let p = 11;
        for i in [10, 2, 0] {
            let thread = format!("op -> Sink: discard ({}/{p})#0", i + 1);
            let name = format!("op_-_Sink_discard.{i}.trace.txt");
            agent_trace(dir.path(), &name, &thread, Some((i, p)), i + 1);
        }
        agent_trace(
            dir.path(),
            "ForSt-executor.trace.txt",
            "ForSt-executor",
            None,
            5,
        );
        let listed = finish_traces(dir.path(), Format::Text).unwrap();
        let names: Vec<String> = listed
            .iter()
            .map(|t| t.file.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        // by name, .10. would come before .2.
        assert_eq!(
            names,
            [
                "ForSt-executor.trace.txt",
                "op_-_Sink_discard.0.trace.txt",
                "op_-_Sink_discard.2.trace.txt",
                "op_-_Sink_discard.10.trace.txt",
            ]
        );
        assert_eq!(listed[0].subtask, None);
        assert_eq!(listed[0].requests, 5);
        for (t, i) in listed[1..].iter().zip([0, 2, 10]) {
            let expected = Subtask {
                task: "op -> Sink: discard".into(),
                index: i,
                parallelism: p,
                attempt: 0,
            };
            assert_eq!(t.subtask.as_ref(), Some(&expected));
            assert_eq!(t.requests, i + 1);
        }
    }

    #[test]
    fn format_bin_converts_the_traces_of_this_run_and_leaves_earlier_ones_alone() {
        let dir = tempfile::tempdir().unwrap();
        agent_trace(dir.path(), "earlier.trace.txt", "earlier", None, 2);
        let before = agent_traces(dir.path()).unwrap();
        let thread = "op -> Sink: discard (1/1)#0";
        agent_trace(dir.path(), "op.0.trace.txt", thread, Some((0, 1)), 3);
        to_binary(dir.path(), &before, &AtomicBool::new(false)).unwrap();
        assert!(
            dir.path().join("earlier.trace.txt").is_file(),
            "a trace this run did not write is not converted or removed"
        );
        assert!(
            !dir.path().join("op.0.trace.txt").exists(),
            "the converted text is gone"
        );
        let listed = finish_traces(dir.path(), Format::Bin).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].file, dir.path().join("op.0.gtrace"));
        assert_eq!((listed[0].requests, listed[0].events), (3, 1));
        assert_eq!(listed[0].subtask.as_ref().map(|s| s.index), Some(0));
        let reader = open_trace(&listed[0].file).unwrap();
        assert_eq!(reader.format(), TraceFormat::Binary);
    }

    #[test]
    fn a_stopped_conversion_leaves_the_text_traces_whole_and_makes_no_binary() {
        let dir = tempfile::tempdir().unwrap();
        let thread = "op -> Sink: discard (1/1)#0";
        agent_trace(dir.path(), "op.0.trace.txt", thread, Some((0, 1)), 3);
        to_binary(dir.path(), &[], &AtomicBool::new(true)).unwrap();
        assert!(dir.path().join("op.0.trace.txt").is_file());
        assert!(!dir.path().join("op.0.gtrace").exists());
        assert_eq!(finish_traces(dir.path(), Format::Text).unwrap().len(), 1);
    }
}
