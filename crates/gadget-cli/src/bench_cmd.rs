//! `gadget bench`: an experiment's runs, one `gadget run`/`replay` process each (a fresh store,
//! a fresh process: one RocksDB library per process, nothing carried over), in the recorded
//! order; then the summary across repetitions.

use std::io::IsTerminal;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context};
use gadget::config::experiment::Experiment;
use gadget_eval::experiment::compare::Comparison;
use gadget_eval::experiment::plan::Plan;
use gadget_eval::experiment::summary::ExperimentSummary;
use gadget_eval::export::{self, Csv, Html, Json, Markdown};
use gadget_eval::run::RunReport;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::cli::BenchArgs;
use crate::interrupt::INTERRUPTED;
use crate::stdout::{out, outln};

/// `DIR/experiment.json`: what `--resume` must find unchanged.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Recorded {
    /// The experiment file's path.
    experiment: String,
    /// Its text.
    text: String,
    /// The runs, in order.
    order: Vec<String>,
}

/// How often a wait for a run looks at Ctrl-C.
const POLL: Duration = Duration::from_millis(50);

pub fn bench(args: BenchArgs) -> anyhow::Result<i32> {
    let e = Experiment::load(&args.experiment)?;
    let plan = Plan::of(&e);
    let text = std::fs::read_to_string(&args.experiment)?;
    let recorded = Recorded {
        experiment: args.experiment.display().to_string(),
        text,
        order: plan.runs.iter().map(|&r| plan.run_id(r)).collect(),
    };
    let runs_dir = args.output.join("runs");
    prepare(&args, &recorded, &runs_dir)?;
    let gadget = std::env::current_exe().context("cannot find the gadget executable")?;
    let stop = crate::interrupt::stop_flag();

    let done_before = plan
        .runs
        .iter()
        .filter(|&&r| complete(&runs_dir, &plan.run_id(r)).is_some())
        .count();
    let bar = progress_bar(plan.runs.len(), done_before);
    let mut failures: Vec<String> = Vec::new();
    let mut interrupted = false;
    for &run in &plan.runs {
        let id = plan.run_id(run);
        if complete(&runs_dir, &id).is_some() {
            continue;
        }
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        bar.set_message(id.clone());
        let output = runs_dir.join(format!("{id}.json"));
        let log = runs_dir.join(format!("{id}.log"));
        let child = Command::new(&gadget)
            .args(Plan::arguments(&e, &plan.cells[run.cell], &id, &output))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(&log)
                    .with_context(|| format!("cannot write {}", log.display()))?,
            )
            // its own process group: Ctrl-C reaches bench, which stops the run cleanly
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", gadget.display()))?;
        let status = wait(child, &stop)?;
        // a run that finished before a stop reached it counts
        let finished = status == Some(0) && complete(&runs_dir, &id).is_some();
        if !finished && (stop.load(Ordering::Relaxed) || status == Some(INTERRUPTED)) {
            interrupted = true;
            set_aside(&output, "partial");
            break;
        }
        if !finished {
            set_aside(&output, "failed");
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            let last = said
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no message");
            failures.push(format!("{id}: {last} (see {})", log.display()));
            bar.println(format!("run {id} failed: {last}"));
        } else {
            let _ = std::fs::remove_file(&log);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();

    let done: Vec<(usize, RunReport)> = plan
        .runs
        .iter()
        .filter_map(|&r| Some((r.cell, complete(&runs_dir, &plan.run_id(r))?)))
        .collect();
    let reason = if interrupted {
        Some("stopped by Ctrl-C (or SIGTERM, SIGHUP) before every run was done".to_string())
    } else if !failures.is_empty() {
        Some(format!("{} runs failed", failures.len()))
    } else {
        None
    };
    let summary = ExperimentSummary::of(&e, &plan, &done, reason);
    write_summary(&args.output, &summary)?;
    if args.json {
        out!("{}", export::render(&Json, &summary));
    } else {
        out!("{}", export::render(&Markdown, &summary));
        eprintln!(
            "wrote {}/summary.{{json,csv,md}}, report.html and one results file per run in {}",
            args.output.display(),
            runs_dir.display()
        );
    }
    if interrupted {
        eprintln!(
            "stopped: {} of {} runs done; `gadget bench {} -o {} --resume` runs the rest",
            done.len(),
            plan.runs.len(),
            args.experiment.display(),
            args.output.display()
        );
        return Ok(INTERRUPTED);
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} runs failed:\n{}",
            failures.len(),
            plan.runs.len(),
            failures.join("\n")
        );
    }
    Ok(0)
}

/// Makes `DIR` and `DIR/runs`, recording the experiment; with `--resume`, checks that DIR
/// holds this very experiment.
fn prepare(args: &BenchArgs, recorded: &Recorded, runs_dir: &Path) -> anyhow::Result<()> {
    let record = args.output.join("experiment.json");
    match std::fs::read(&record) {
        Ok(bytes) => {
            if !args.resume {
                bail!(
                    "{} holds an experiment already: add --resume to finish it, or give another -o",
                    args.output.display()
                );
            }
            let before: Recorded = serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not an experiment record", record.display()))?;
            if before.text != recorded.text || before.order != recorded.order {
                bail!("{} holds another experiment (its file or order changed since); give another -o to run this one", args.output.display());
            }
            return Ok(());
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot read {}", record.display()));
        }
        Err(_) => {}
    }
    std::fs::create_dir_all(runs_dir)
        .with_context(|| format!("cannot create {}", runs_dir.display()))?;
    export::to_file(&Json, recorded, &record)?;
    Ok(())
}

/// The results of run `id` when it completed (written, and not partial).
fn complete(runs_dir: &Path, id: &str) -> Option<RunReport> {
    let bytes = std::fs::read(runs_dir.join(format!("{id}.json"))).ok()?;
    let report: RunReport = serde_json::from_slice(&bytes).ok()?;
    (!report.partial).then_some(report)
}

/// Renames an incomplete run's results to `ID.WHY.json`, kept for a look but not counted.
fn set_aside(output: &Path, why: &str) {
    if output.exists() {
        let aside: PathBuf = output.with_extension(format!("{why}.json"));
        let _ = std::fs::rename(output, aside);
    }
}

/// Waits for a run, forwarding a stop to it as SIGINT (so it stops cleanly and its store
/// directory is removed); its exit status (`None` when killed by a signal).
fn wait(mut child: Child, stop: &AtomicBool) -> anyhow::Result<Option<i32>> {
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.code());
        }
        if stop.load(Ordering::Relaxed) && !forwarded {
            // SAFETY: kill(2) on our own child's pid has no memory effects.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            forwarded = true;
        }
        std::thread::sleep(POLL);
    }
}

fn write_summary(dir: &Path, summary: &ExperimentSummary) -> anyhow::Result<()> {
    export::to_file(&Json, summary, &dir.join("summary.json"))?;
    export::to_file(&Csv, summary, &dir.join("summary.csv"))?;
    export::to_file(&Markdown, summary, &dir.join("summary.md"))?;
    export::to_file(&Html, summary, &dir.join("report.html"))?;
    Ok(())
}

/// Runs done of all, the current run and the time left; hidden when stderr is no terminal.
fn progress_bar(total: usize, done: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs, ETA {eta} [{elapsed_precise}] {msg}",
        )
        .expect("valid progress template"),
    );
    bar.set_position(done as u64);
    bar.reset_eta();
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// `gadget compare DIR…` of `gadget bench` folders: each against the first, cell by cell.
pub fn compare(dirs: &[PathBuf], json: bool) -> anyhow::Result<i32> {
    let summaries: Vec<ExperimentSummary> = dirs
        .iter()
        .map(|d| -> anyhow::Result<ExperimentSummary> {
            let path = d.join("summary.json");
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not a gadget bench summary", path.display()))
        })
        .collect::<anyhow::Result<_>>()?;
    let name = |d: &PathBuf| d.display().to_string();
    let mut all = Vec::new();
    for (dir, other) in dirs.iter().zip(&summaries).skip(1) {
        let comparison = Comparison::of(&name(&dirs[0]), &summaries[0], &name(dir), other);
        if comparison.changes.is_empty() {
            eprintln!(
                "warning: {} and {} have no cell in common",
                name(&dirs[0]),
                name(dir)
            );
        }
        if !json {
            outln!("{}", export::render(&Markdown, &comparison));
        }
        all.push(comparison);
    }
    if json {
        out!("{}", export::render(&Json, &all));
    }
    Ok(0)
}
