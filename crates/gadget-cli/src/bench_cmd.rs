//! `gadget bench`: an experiment's runs, one `gadget run`/`replay` process each (a fresh store,
//! a fresh process: one RocksDB library per process, nothing carried over), in the recorded
//! order; then the summary across repetitions.
//!
//! One bench at a time owns a results folder: it holds a lock on `DIR/bench.lock`, and so does
//! each run it starts, which ends with it (a run whose bench is killed gets SIGTERM and stops
//! as at Ctrl-C), so no `--resume` can run a run twice at once.

use std::io::IsTerminal;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{bail, Context};
use gadget_eval::experiment::check;
use gadget_eval::experiment::compare::{BenchFolder, Comparison};
use gadget_eval::experiment::file::{Experiment, Overrides};
use gadget_eval::experiment::inputs::{Hashes, RunInputs};
use gadget_eval::experiment::plan::{Plan, PlannedRun};
use gadget_eval::experiment::summary::{ExperimentSummary, FailedRun};
use gadget_eval::export::{self, Csv, Html, Json, Markdown};
use gadget_results::RunReport;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::cli::BenchArgs;
use crate::interrupt::INTERRUPTED;
use crate::stdout::{out, outln};

/// `DIR/experiment.json`: the experiment last run into the folder.
#[derive(Debug, Serialize, PartialEq)]
struct Recorded {
    /// The experiment file's path.
    experiment: String,
    /// Its text.
    text: String,
    /// The runs, in order.
    order: Vec<String>,
}

pub fn bench(args: BenchArgs) -> anyhow::Result<i32> {
    let mut e = Experiment::load(&args.experiment)?;
    let overrides = e
        .override_with(&Overrides {
            repetitions: args.repetitions,
            limit: args.limit,
            duration: args.duration.clone(),
        })
        .map_err(anyhow::Error::msg)?;
    check::before_any_run(&e).map_err(anyhow::Error::msg)?;
    let plan = Plan::of(&e);
    let stop = crate::interrupt::stop_flag();
    // every file a run reads, read before the first run: a wrong path fails now, at its line
    let mut hashes = Hashes::default();
    let inputs: Vec<RunInputs> = plan
        .cells
        .iter()
        .map(|c| hashes.of_cell(&e, c, &stop))
        .collect::<Result<_, _>>()?;
    let text = std::fs::read_to_string(&args.experiment)?;
    let recorded = Recorded {
        experiment: args.experiment.display().to_string(),
        text,
        order: plan.runs.iter().map(|&r| plan.run_id(r)).collect(),
    };
    let runs_dir = args.output.join("runs");
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    let lock = FolderLock::take(&args.output)?;
    prepare(&args, &recorded, &runs_dir)?;
    let gadget = std::env::current_exe().context("cannot find the gadget executable")?;

    let changed = set_aside_changed(&plan, &inputs, &runs_dir);
    let done_before = plan
        .runs
        .iter()
        .filter(|&&r| complete(&runs_dir, &plan.run_id(r), &inputs[r.cell]).is_some())
        .count();
    if args.resume {
        eprintln!(
            "resuming {}: keeping {done_before} finished runs, running {}{}",
            args.output.display(),
            plan.runs.len() - done_before,
            if changed.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} again, as what they read changed since: {})",
                    changed.len(),
                    changed.join(", ")
                )
            }
        );
    }
    let bar = progress_bar(plan.runs.len(), done_before);
    let mut failures: Vec<FailedRun> = Vec::new();
    let mut interrupted = false;
    for &run in &plan.runs {
        let id = plan.run_id(run);
        let cell_inputs = &inputs[run.cell];
        if complete(&runs_dir, &id, cell_inputs).is_some() {
            continue;
        }
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        bar.set_message(id.clone());
        let output = runs_dir.join(format!("{id}.json"));
        let log = runs_dir.join(format!("{id}.log"));
        let mut fail = |reason: String| {
            bar.println(format!("run {id} failed: {reason}"));
            failures.push(FailedRun {
                id: id.clone(),
                reason,
                log: log.display().to_string(),
            });
        };
        let arguments = Plan::arguments(&e, &plan.cells[run.cell], &id, &output);
        let status = match start(&gadget, &arguments, &log, &lock) {
            Ok(child) => crate::interrupt::wait_forwarding(child, &stop)?,
            Err(why) => {
                fail(why);
                bar.inc(1);
                continue;
            }
        };
        // a run that finished before a stop reached it counts
        let finished = status.success() && finished(&runs_dir, &id, cell_inputs);
        if !finished && (stop.load(Ordering::Relaxed) || status.code() == Some(INTERRUPTED)) {
            interrupted = true;
            set_aside(&output, "partial");
            break;
        }
        if finished {
            let _ = std::fs::remove_file(&log);
        } else {
            set_aside(&output, "failed");
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            fail(failure_reason(&said, status));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();

    let done: Vec<(PlannedRun, RunReport)> = plan
        .runs
        .iter()
        .filter_map(|&r| Some((r, complete(&runs_dir, &plan.run_id(r), &inputs[r.cell])?)))
        .collect();
    let reason = if interrupted {
        Some("stopped by Ctrl-C (or SIGTERM, SIGHUP) before every run was done".to_string())
    } else if !failures.is_empty() {
        Some(format!("{} runs failed", failures.len()))
    } else {
        None
    };
    let failed_runs = failures.len();
    let mut summary = ExperimentSummary::of(&e, &plan, &done, failures, reason);
    summary.overrides = overrides;
    let unwritten = write_summary(&args.output, &summary);
    if args.json {
        out!("{}", export::render(&Json, &summary));
    } else {
        out!("{}", export::render(&Markdown, &summary));
        if unwritten.is_empty() {
            eprintln!(
                "wrote {}/summary.{{json,csv,md}}, report.html and one results file per run in {}",
                args.output.display(),
                runs_dir.display()
            );
        }
    }
    for e in &unwritten {
        eprintln!("error: {e}");
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
    if failed_runs > 0 {
        let listed: Vec<String> = summary
            .failed
            .iter()
            .map(|f| format!("{}: {} (see {})", f.id, f.reason, f.log))
            .collect();
        bail!(
            "{failed_runs} of {} runs failed:\n{}",
            plan.runs.len(),
            listed.join("\n")
        );
    }
    if !unwritten.is_empty() {
        bail!(
            "{} of the summary's files could not be written",
            unwritten.len()
        );
    }
    Ok(0)
}

/// The lock on a results folder, held by `gadget bench` and every run it starts.
struct FolderLock {
    file: std::fs::File,
}

impl FolderLock {
    /// Locks `DIR/bench.lock`, or says who holds it.
    fn take(dir: &Path) -> anyhow::Result<FolderLock> {
        use std::io::{Seek, Write};
        let path = dir.join("bench.lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        // SAFETY: flock(2) on a descriptor this function owns
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            bail!(
                "{} is in use by another `gadget bench` (pid {}) or a run it started; wait for it to end or stop it, or give another -o",
                dir.display(),
                holder.trim()
            );
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())?;
        Ok(FolderLock { file })
    }
}

/// Starts a run of `arguments`, its output to `log`; why it could not start.
fn start(
    gadget: &Path,
    arguments: &[std::ffi::OsString],
    log: &Path,
    lock: &FolderLock,
) -> Result<Child, String> {
    let log_file = std::fs::File::create(log)
        .map_err(|e| format!("cannot write its log {}: {e}", log.display()))?;
    let lock_fd = lock.file.as_raw_fd();
    let parent = std::process::id();
    let mut command = Command::new(gadget);
    command
        .args(arguments)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        // its own process group: Ctrl-C reaches bench, which stops the run cleanly
        .process_group(0);
    // SAFETY: between fork and exec only async-signal-safe calls (fcntl, prctl, getppid)
    unsafe {
        command.pre_exec(move || {
            // the run holds the folder's lock too, as long as it lives
            let flags = libc::fcntl(lock_fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(lock_fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // and stops (as at Ctrl-C) when bench ends, even by SIGKILL
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::other("gadget bench ended"));
            }
            Ok(())
        });
    }
    command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", gadget.display()))
}

/// What a failed run said: its error line, a crash's message, or the signal that killed it.
fn failure_reason(log: &str, status: ExitStatus) -> String {
    if let Some(signal) = status.signal() {
        let name = match signal {
            libc::SIGKILL => " (SIGKILL: the OOM killer, or `kill -9`)",
            libc::SIGSEGV => " (SIGSEGV: a crash in a store's library)",
            libc::SIGABRT => " (SIGABRT: an abort, such as a failed allocation)",
            libc::SIGTERM => " (SIGTERM)",
            _ => "",
        };
        return format!("killed by signal {signal}{name}");
    }
    let lines: Vec<&str> = log.lines().map(str::trim).collect();
    if let Some(at) = lines.iter().position(|l| l.contains("panicked at")) {
        let message = lines.get(at + 1).copied().unwrap_or_default();
        return format!("crashed: {message} ({})", lines[at]);
    }
    if let Some(error) = lines.iter().rev().find_map(|l| l.strip_prefix("error:")) {
        return error.trim().to_string();
    }
    match lines.iter().rev().find(|l| !l.is_empty()) {
        Some(last) => last.to_string(),
        None => format!(
            "exited with status {} without a message",
            status.code().unwrap_or(-1)
        ),
    }
}

/// Makes `DIR/runs` and records the experiment (`DIR/experiment.json`); a folder that holds
/// one already is refused without `--resume`. A resume goes by meaning, not by the file's
/// bytes: each run is kept or run again by what it would run ([`RunInputs`]), so comments,
/// formatting and added repetitions, stores, workloads or rates cost no finished run.
fn prepare(args: &BenchArgs, recorded: &Recorded, runs_dir: &Path) -> anyhow::Result<()> {
    let record = args.output.join("experiment.json");
    match std::fs::metadata(&record) {
        Ok(_) if !args.resume => {
            bail!(
                "{} holds an experiment already: add --resume to finish it (or to run what an edited experiment adds), or give another -o",
                args.output.display()
            );
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot read {}", record.display()));
        }
        _ => {}
    }
    std::fs::create_dir_all(runs_dir)
        .with_context(|| format!("cannot create {}", runs_dir.display()))?;
    export::to_file(&Json, recorded, &record)?;
    Ok(())
}

/// `runs/ID.inputs.json`: what run ID read.
fn inputs_file(runs_dir: &Path, id: &str) -> PathBuf {
    runs_dir.join(format!("{id}.inputs.json"))
}

/// The results of run `id` when it completed (written, not partial) on these very inputs.
fn complete(runs_dir: &Path, id: &str, inputs: &RunInputs) -> Option<RunReport> {
    let read: RunInputs =
        serde_json::from_slice(&std::fs::read(inputs_file(runs_dir, id)).ok()?).ok()?;
    if &read != inputs {
        return None;
    }
    let bytes = std::fs::read(runs_dir.join(format!("{id}.json"))).ok()?;
    let report: RunReport = serde_json::from_slice(&bytes).ok()?;
    (!report.partial).then_some(report)
}

/// Whether run `id` just completed; if so, records what it read beside its results.
fn finished(runs_dir: &Path, id: &str, inputs: &RunInputs) -> bool {
    let Ok(bytes) = std::fs::read(runs_dir.join(format!("{id}.json"))) else {
        return false;
    };
    let whole = serde_json::from_slice::<RunReport>(&bytes).is_ok_and(|r| !r.partial);
    whole && export::to_file(&Json, inputs, &inputs_file(runs_dir, id)).is_ok()
}

/// Sets aside (`ID.stale.json`) the results of runs whose inputs changed since they ran, so
/// that they run again; their names.
fn set_aside_changed(plan: &Plan, inputs: &[RunInputs], runs_dir: &Path) -> Vec<String> {
    let mut changed = Vec::new();
    for &run in &plan.runs {
        let id = plan.run_id(run);
        let output = runs_dir.join(format!("{id}.json"));
        if output.exists() && complete(runs_dir, &id, &inputs[run.cell]).is_none() {
            let was_whole = std::fs::read(&output)
                .ok()
                .and_then(|b| serde_json::from_slice::<RunReport>(&b).ok())
                .is_some_and(|r| !r.partial);
            if was_whole {
                set_aside(&output, "stale");
                let _ = std::fs::remove_file(inputs_file(runs_dir, &id));
                changed.push(id);
            }
        }
    }
    changed
}

/// Renames an incomplete run's results to `ID.WHY.json`, kept for a look but not counted.
fn set_aside(output: &Path, why: &str) {
    if output.exists() {
        let aside: PathBuf = output.with_extension(format!("{why}.json"));
        let _ = std::fs::rename(output, aside);
    }
}

/// Writes every file of the summary, each tried whatever happened to the others; what could
/// not be written (each error names the fallback file that holds its content).
fn write_summary(dir: &Path, summary: &ExperimentSummary) -> Vec<String> {
    let results = [
        export::to_file(&Json, summary, &dir.join("summary.json")),
        export::to_file(&Csv, summary, &dir.join("summary.csv")),
        export::to_file(&Markdown, summary, &dir.join("summary.md")),
        export::to_file(&Html, summary, &dir.join("report.html")),
    ];
    results
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect()
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

/// `gadget compare DIR…` of `gadget bench` folders: each against the first, cell by cell,
/// with the verdicts of one experiment's cells; `--report` and `--plots` as for runs.
pub fn compare(
    dirs: &[PathBuf],
    json: bool,
    report: Option<&Path>,
    plots: Option<&Path>,
) -> anyhow::Result<i32> {
    let folders: Vec<BenchFolder> = dirs
        .iter()
        .map(|d| BenchFolder::read(d).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()?;
    let name = |d: &PathBuf| d.display().to_string();
    let mut all = Vec::new();
    for (dir, other) in dirs.iter().zip(&folders).skip(1) {
        let comparison = Comparison::of(&name(&dirs[0]), &folders[0], &name(dir), other);
        if comparison.changes.is_empty() {
            eprintln!(
                "warning: {} and {} have no cell in common with 3 complete runs or more on each side",
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
    if let Some(dir) = plots {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (i, c) in all.iter().enumerate() {
            for measure in ["throughput", "p99"] {
                let path = dir.join(format!("compare-{}-{measure}.svg", i + 1));
                gadget::atomic::write_atomically(&path, |w| {
                    w.write_all(export::comparison_plot(c, measure).as_bytes())
                })
                .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        eprintln!("wrote the comparison's plots to {}", dir.display());
    }
    if let Some(path) = report {
        match all.as_slice() {
            [one] => export::to_file(&Html, one, path)?,
            _ => bail!("--report writes one comparison; give two folders"),
        }
        eprintln!("wrote {}", path.display());
    }
    Ok(0)
}
