//! `gadget run` and `gadget replay`: drive a real store and measure it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use gadget::config::Config;
use gadget_eval::arrival::ArrivalProcess;
use gadget_eval::report::{render_summary, write_atomically, write_time_series_csv};
use gadget_eval::run::{drive, RunOptions, RunReport, Warmup};
use gadget_eval::store::{open_store, StoreKind, StoreSettings};
use gadget_eval::workload::{RequestStream, WorkloadSource};

use crate::cli::{Arrival, EvalArgs, ReplayArgs, RunArgs};
use crate::progress;

/// Exit status of a run stopped by Ctrl-C (128 + SIGINT), after its partial results are written.
const INTERRUPTED: i32 = 130;

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let config = Config::load(&args.config)?;
    for w in &config.warnings {
        eprintln!("warning: {w}");
    }
    let limit = args.limit.or(config.limit);
    evaluate(
        WorkloadSource::Generate {
            config: Box::new(config),
            limit,
        },
        &args.eval,
    )
}

pub fn replay(args: ReplayArgs) -> anyhow::Result<i32> {
    evaluate(WorkloadSource::Trace(args.trace), &args.eval)
}

/// Parses `5s`, `500ms`, `250us`, `2m` into nanoseconds.
fn parse_duration(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = t.split_at(split);
    let n: f64 = number.parse().ok()?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        _ => return None,
    };
    (n >= 0.0).then_some((n * scale) as u64)
}

fn arrival_process(a: &EvalArgs) -> anyhow::Result<ArrivalProcess> {
    let rate = |what: &str| -> anyhow::Result<f64> {
        match a.rate {
            Some(r) if r.is_finite() && r > 0.0 => Ok(r),
            Some(r) => {
                bail!("--rate {r} is out of range; give a positive number of requests per second")
            }
            None => {
                bail!("--arrival {what} needs --rate (requests per second), e.g. --rate 100000")
            }
        }
    };
    Ok(match a.arrival {
        Arrival::Closed => {
            if a.rate.is_some() {
                bail!(
                    "--rate needs an open-loop --arrival (constant, poisson, b-model or diurnal)"
                );
            }
            ArrivalProcess::ClosedLoop
        }
        Arrival::Constant => ArrivalProcess::Constant {
            rate: rate("constant")?,
        },
        Arrival::Poisson => ArrivalProcess::Poisson {
            rate: rate("poisson")?,
        },
        Arrival::BModel => {
            if !(0.5..1.0).contains(&a.bias) {
                bail!(
                    "--bias {} is out of range; allowed: 0.5 (uniform) up to but not including 1",
                    a.bias
                );
            }
            ArrivalProcess::BModel {
                rate: rate("b-model")?,
                bias: a.bias,
                bin_ns: 1_000_000,
                levels: 12,
            }
        }
        Arrival::Diurnal => {
            if !(0.0..1.0).contains(&a.modulation) {
                bail!(
                    "--modulation {} is out of range; allowed: 0 up to but not including 1",
                    a.modulation
                );
            }
            if !(a.alpha > 1.0 && a.alpha.is_finite()) {
                bail!(
                    "--alpha {} is out of range; the Pareto shape must be above 1",
                    a.alpha
                );
            }
            if !(a.period > 0.0 && a.period.is_finite()) {
                bail!(
                    "--period {} is out of range; give a positive number of seconds",
                    a.period
                );
            }
            ArrivalProcess::Diurnal {
                rate: rate("diurnal")?,
                period_ns: (a.period * 1e9) as u64,
                modulation: a.modulation,
                alpha: a.alpha,
            }
        }
    })
}

fn warmup(a: &EvalArgs) -> anyhow::Result<Warmup> {
    let Some(w) = a.warmup.as_deref() else {
        return Ok(Warmup::None);
    };
    if let Ok(n) = w.parse::<u64>() {
        return Ok(Warmup::Requests(n));
    }
    parse_duration(w).map(Warmup::Duration).with_context(|| {
        format!("--warmup {w:?}: give a request count (10000) or a time (5s, 500ms)")
    })
}

/// The store's directory: the user's, or a fresh temporary one (removed unless `--keep`).
enum StoreDir {
    User(PathBuf),
    Temporary(tempfile::TempDir),
}

impl StoreDir {
    fn path(&self) -> &Path {
        match self {
            StoreDir::User(p) => p,
            StoreDir::Temporary(t) => t.path(),
        }
    }
}

fn evaluate(source: WorkloadSource, a: &EvalArgs) -> anyhow::Result<i32> {
    let kind = StoreKind::from_name(&a.store).with_context(|| {
        format!(
            "--store {:?} is not a store of this build; use one of: {}",
            a.store,
            StoreKind::names()
        )
    })?;
    let arrival = arrival_process(a)?;
    let warmup = warmup(a)?;
    let interval_ns = parse_duration(&a.interval)
        .filter(|&n| n > 0)
        .with_context(|| {
            format!(
                "--interval {:?}: give a positive time (1s, 100ms)",
                a.interval
            )
        })?;
    let settings = StoreSettings {
        write_buffer_size: a.write_buffer_mb << 20,
        max_write_buffers: a.write_buffers,
        block_cache: a.block_cache_mb << 20,
        wal: a.wal,
        lmdb_map_size: a.lmdb_map_gb.saturating_mul(1 << 30),
    };

    let dir = match &a.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .with_context(|| format!("cannot create the store directory {}", d.display()))?;
            StoreDir::User(d.clone())
        }
        None => StoreDir::Temporary(
            tempfile::Builder::new()
                .prefix("gadget-store-")
                .tempdir()
                .context("cannot create a temporary store directory (set TMPDIR or use --dir)")?,
        ),
    };

    let mut stream = RequestStream::start(source)?;
    let mut store = open_store(kind, dir.path(), &stream.state_names, &settings)?;

    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = stop.clone();
    // the first Ctrl-C stops cleanly and keeps partial results; a second one exits at once
    let _ = ctrlc::set_handler(move || {
        if handler_stop.swap(true, Ordering::SeqCst) {
            std::process::exit(INTERRUPTED);
        }
    });
    let options = RunOptions {
        arrival,
        seed: a.seed,
        warmup,
        interval_ns,
        keep_intervals: a.hdr_log.is_some(),
        stop: stop.clone(),
    };

    let bar = progress::spinner(&format!("driving {}", store.name()));
    let measured = drive(store.as_mut(), &mut stream, &options, &mut |p| {
        let secs = p.elapsed.as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "{} requests, {:.0} requests/s",
            p.requests,
            p.requests as f64 / secs
        ));
    });
    bar.finish_and_clear();
    let measured = measured?;
    let producer = stream.finish();
    let emulated = store.emulated();
    let report = measured.report(store.name(), emulated, &options);
    drop(store);
    // a producer error after a stop is the stop's doing; otherwise it is the user's to see
    if !report.partial {
        producer?;
    }

    write_outputs(&report, &measured, a)?;
    match dir {
        StoreDir::Temporary(t) if a.keep => {
            eprintln!("store data kept in {}", t.keep().display());
        }
        _ => {}
    }
    Ok(if report.partial { INTERRUPTED } else { 0 })
}

fn write_outputs(
    report: &RunReport,
    measured: &gadget_eval::run::Measured,
    a: &EvalArgs,
) -> anyhow::Result<()> {
    if let Some(path) = &a.output {
        write_atomically(path, |w| {
            serde_json::to_writer_pretty(&mut *w, report)?;
            writeln!(w)
        })
        .with_context(|| format!("cannot write the results to {}", path.display()))?;
    }
    if let Some(path) = &a.csv {
        write_atomically(path, |w| write_time_series_csv(report, w))
            .with_context(|| format!("cannot write the time series to {}", path.display()))?;
    }
    if let Some(path) = &a.hdr_log {
        write_atomically(path, |mut w| measured.recorder.write_hdr_log(&mut w))
            .with_context(|| format!("cannot write the HDR log to {}", path.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(report)?);
        for w in report.warnings() {
            eprintln!("warning: {w}");
        }
    } else {
        print!("{}", render_summary(report));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_have_units() {
        assert_eq!(parse_duration("5s"), Some(5_000_000_000));
        assert_eq!(parse_duration("500ms"), Some(500_000_000));
        assert_eq!(parse_duration("1.5us"), Some(1_500));
        assert_eq!(parse_duration("2m"), Some(120_000_000_000));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("5 parsecs"), None);
    }
}
