//! `gadget bench`: an experiment of 2 workloads × 3 stores × 3 repetitions runs every cell,
//! summarizes each with its spread and confidence interval, in an order its seed decides;
//! Ctrl-C keeps finished runs and `--resume` runs only the missing ones.

mod browser;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::Command;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An experiment file in `dir`: workloads `a` and `c` (under `examples/`) on memory, rocksdb
/// and lmdb, three repetitions, `extra` in `[experiment]`.
fn experiment(dir: &Path, seed: u64, extra: &str, [a, c]: [&str; 2]) -> PathBuf {
    let examples = project_root().join("examples");
    let text = format!(
        "[experiment]\nseed = {seed}\nrepetitions = 3\n{extra}\n\
         [[workload]]\nconfig = \"{a}\"\n[[workload]]\nconfig = \"{c}\"\n\
         [[store]]\nkind = \"memory\"\n[[store]]\nkind = \"rocksdb\"\nwrite_buffer_mb = 4\n\
         [[store]]\nkind = \"lmdb\"\nlmdb_map_gb = 1\n",
        a = examples.join(a).display(),
        c = examples.join(c).display(),
    );
    let path = dir.join(format!("exp-{seed}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Two small YCSB workloads (A and C).
const YCSB: [&str; 2] = ["ycsb/workloada.toml", "ycsb/workloadc.toml"];

/// Two endless synthetic windowed workloads.
const ENDLESS: [&str; 2] = [
    "bench/tumbling-incr-zipf.toml",
    "bench/sliding-incr-zipf.toml",
];

fn bench(experiment: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::cargo_bin("gadget")
        .unwrap()
        .env_remove("GADGET_ROCKSDB_LIB")
        .arg("bench")
        .arg(experiment)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn every_cell_runs_three_times_and_reports_its_spread_and_interval() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), 1, "limit = 3000", YCSB);
    let out = dir.path().join("out");
    let done = bench(&exp, &out, &["--json"]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(summary, json(&out.join("summary.json")));
    assert_eq!(summary["partial"], false);
    let cells = summary["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 6);
    for c in cells {
        assert_eq!(
            (c["completed"].as_u64(), c["planned"].as_u64()),
            (Some(3), Some(3)),
            "{c}"
        );
        let t = &c["throughput"];
        assert_eq!(t["n"], 3);
        let (low, mean, high) = (
            t["ci95_low"].as_f64().unwrap(),
            t["mean"].as_f64().unwrap(),
            t["ci95_high"].as_f64().unwrap(),
        );
        let center = t["ci95_center"].as_f64().unwrap();
        assert!(low <= center && center <= high && mean > 0.0, "{t}");
        assert!(
            t["min"].as_f64().unwrap() <= mean && mean <= t["max"].as_f64().unwrap(),
            "{t}"
        );
        // the interval is the geometric mean's: e^(mean of logs ± t(0.975, 2) × s of logs / √3),
        // whose centre on the log scale is the runs' geometric mean
        let throughputs: Vec<f64> = (1..=3)
            .map(|r| {
                let id = format!("{}.r{r}", c["id"].as_str().unwrap());
                json(&out.join("runs").join(format!("{id}.json")))["throughput"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        let log_mean = throughputs.iter().map(|x| x.ln()).sum::<f64>() / 3.0;
        assert!(
            ((low.ln() + high.ln()) / 2.0 - log_mean).abs() < 1e-9,
            "{t} {throughputs:?}"
        );
        assert!((center.ln() - log_mean).abs() < 1e-9, "{t}");
        for p in ["p50", "p99", "p999", "max"] {
            assert_eq!(c["latency_ns"][p]["n"], 3, "{c}");
        }
        // each cell's three results files, labelled by their run
        for r in 1..=3 {
            let id = format!("{}.r{r}", c["id"].as_str().unwrap());
            let run = json(&out.join("runs").join(format!("{id}.json")));
            assert_eq!(run["context"]["label"], id.as_str());
            assert_eq!(
                run["store"],
                c["id"].as_str().unwrap().split('.').nth(1).unwrap()
            );
        }
    }
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains("throughput_ci95_low,throughput_ci95_high"));
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("| workloada | rocksdb | closed | 3/3 |"),
        "{md}"
    );

    // the order is the seed's: the same file plans the same order, another seed another one
    let order = json(&out.join("experiment.json"))["order"].clone();
    assert_eq!(order, summary["order"]);
    assert_eq!(order.as_array().unwrap().len(), 18);
    let again = dir.path().join("again");
    assert!(bench(&exp, &again, &[]).status.success());
    assert_eq!(json(&again.join("experiment.json"))["order"], order);
    let other = dir.path().join("other");
    assert!(bench(
        &experiment(dir.path(), 2, "limit = 3000", YCSB),
        &other,
        &[]
    )
    .status
    .success());
    assert_ne!(json(&other.join("experiment.json"))["order"], order);

    // two experiments compared cell by cell, with one experiment's verdicts
    let plots = dir.path().join("plots");
    let report = dir.path().join("compare.html");
    let compared = Command::cargo_bin("gadget")
        .unwrap()
        .args(["compare", "--json"])
        .arg(&out)
        .arg(&other)
        .arg("--plots")
        .arg(&plots)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        compared.status.success(),
        "{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    let compared: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    let changes = compared[0]["changes"].as_array().unwrap();
    assert_eq!(
        changes.len(),
        30,
        "throughput and four latencies of 6 cells"
    );
    for c in changes {
        let (low, ratio, high) = (
            c["low"].as_f64().unwrap(),
            c["ratio"].as_f64().unwrap(),
            c["high"].as_f64().unwrap(),
        );
        assert!(0.0 < low && low <= ratio && ratio <= high, "{c}");
        let means = c["other_mean"].as_f64().unwrap() / c["baseline_mean"].as_f64().unwrap();
        assert!((ratio - means).abs() < 1e-9 * ratio, "{c}");
        assert!(c["p_corrected"].as_f64().unwrap() <= 1.0, "{c}");
        assert!(!c["verdict"].as_str().unwrap().is_empty());
    }
    assert!(std::fs::read_to_string(&report).unwrap().contains("<svg"));
    assert!(plots.join("compare-1-throughput.svg").exists());
    let table = Command::cargo_bin("gadget")
        .unwrap()
        .arg("compare")
        .arg(&out)
        .arg(&other)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("Holm-corrected")
            && table.contains("| workloada.rocksdb.closed | throughput |")
            && table.contains(" req/s |"),
        "{table}"
    );

    // an experiment folder is not run over by accident
    let refused = bench(&exp, &out, &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--resume"));
}

#[test]
fn ctrl_c_keeps_finished_runs_and_resume_runs_only_the_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    // 18 runs of 0.4 s each, on endless synthetic streams
    let exp = experiment(dir.path(), 3, "duration = \"400ms\"", ENDLESS);
    let out = dir.path().join("out");
    let child = std::process::Command::cargo_bin("gadget")
        .unwrap()
        .env_remove("GADGET_ROCKSDB_LIB")
        .arg("bench")
        .arg(&exp)
        .arg("-o")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // interrupt once some runs are done
    let runs = out.join("runs");
    let started = Instant::now();
    while count_results(&runs) < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no run finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let stopped = child.wait_with_output().unwrap();
    assert_eq!(
        stopped.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["partial"], true);
    let kept = count_results(&runs);
    assert!((2..18).contains(&kept), "{kept} runs kept");
    let mtimes = results_mtimes(&runs);

    let resumed = bench(&exp, &out, &["--resume"]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(json(&out.join("summary.json"))["partial"], false);
    assert_eq!(count_results(&runs), 18);
    // the runs finished before the stop were not run again
    for (name, mtime) in mtimes {
        let now = std::fs::metadata(runs.join(&name))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(now, mtime, "{name} was run again");
    }
}

/// Completed runs' results files in `runs`.
fn count_results(runs: &Path) -> usize {
    results_mtimes(runs).len()
}

fn results_mtimes(runs: &Path) -> Vec<(String, std::time::SystemTime)> {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let complete = name.ends_with(".json")
                && !name.ends_with(".partial.json")
                && !name.ends_with(".inputs.json")
                && !name.ends_with(".stale.json")
                && !name.ends_with(".failed.json")
                && !name.starts_with('.');
            complete.then(|| Some((name, e.metadata().ok()?.modified().ok()?)))?
        })
        .collect()
}

#[test]
fn a_rate_sweep_reports_the_curve_and_the_highest_rate_sustained() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = project_root().join("examples/bench/tumbling-incr-zipf.toml");
    let exp = dir.path().join("sweep.toml");
    std::fs::write(
        &exp,
        format!(
            "[experiment]\nrepetitions = 2\nduration = \"300ms\"\nlatency_bound = \"50ms\"\n\
             [[workload]]\nconfig = \"{}\"\n[[store]]\nkind = \"memory\"\n\
             [[arrival]]\nprocess = \"constant\"\nrates = {{ from = 1000, to = 4000, steps = 2 }}\n",
            cfg.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let done = bench(&exp, &out, &[]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let summary = json(&out.join("summary.json"));
    let sweep = &summary["capacity"][0];
    assert_eq!(sweep["process"], "constant");
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (p, rate) in points.iter().zip([1000.0, 4000.0]) {
        assert_eq!(p["rate"], rate);
        // a constant schedule over 300 ms: the achieved rate is the target's
        let achieved = p["throughput"].as_f64().unwrap();
        assert!(achieved > 0.9 * rate && achieved < 1.1 * rate, "{p}");
    }
    // the in-memory store keeps up with 4,000 requests/s well within 50 ms
    assert_eq!(sweep["highest_sustained_rate"], 4000.0, "{sweep}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("sustains 4.0K requests/s with p99 ≤ 50 ms"),
        "{md}"
    );

    // the report: throughput bars, p99.9 on a log axis, a latency spectrum per rate, the
    // sweep's curve, all drawn by a browser
    let report = out.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    for outside in ["src=\"http", "href=\"http", "<link", "@import"] {
        assert!(!html.contains(outside), "the report fetches {outside}…");
    }
    for id in [
        "throughput",
        "p999",
        "spectrum-0",
        "spectrum-1",
        "capacity-0",
    ] {
        assert!(html.contains(&format!("<figure id=\"{id}\">")), "{id}");
    }
    assert!(html.contains("(log scale)") && html.contains("sustains 4K requests/s"));
    let Some(browser) = browser::chromium() else {
        return;
    };
    let (dom, stderr) = browser::rendered(browser, &report, dir.path());
    assert!(
        dom.contains("data-plots-drawn=\"5\""),
        "the browser drew not all 5 plots; stderr: {stderr}"
    );
}

#[test]
fn every_bundled_experiment_is_valid_and_names_files_that_exist() {
    let shared = project_root().join("../shared");
    let mut checked = 0;
    for folder in ["examples/experiments", "examples/experiments/paper"] {
        for entry in std::fs::read_dir(project_root().join(folder)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let e = gadget_eval::experiment::file::Experiment::load(&path)
                .unwrap_or_else(|e| panic!("{e}"));
            for w in &e.workloads {
                let files = match &w.file {
                    gadget_eval::experiment::file::WorkloadFile::Config(c) => c.clone(),
                    gadget_eval::experiment::file::WorkloadFile::Trace(t) => vec![t.clone()],
                };
                for f in files {
                    let in_shared = f.to_string_lossy().contains("/shared/");
                    if in_shared && !shared.exists() {
                        assert!(
                            std::env::var("CI").as_deref() != Ok("true"),
                            "../shared is missing, but CI=true"
                        );
                        eprintln!("not checked (no ../shared here): {}", f.display());
                        continue;
                    }
                    assert!(
                        f.exists(),
                        "{}: {} does not exist",
                        path.display(),
                        f.display()
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked} experiment files");
}

#[test]
fn resume_goes_by_meaning_keeping_every_finished_run_of_an_edited_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let examples = project_root().join("examples");
    let body = |repetitions: u32, stores: &str| {
        format!(
            "[experiment]\nrepetitions = {repetitions}\nlimit = 1000\n\
             [[workload]]\nconfig = \"{}\"\n{stores}",
            examples.join("ycsb/workloada.toml").display()
        )
    };
    let exp = dir.path().join("e.toml");
    let out = dir.path().join("out");
    let runs = out.join("runs");
    std::fs::write(&exp, body(2, "[[store]]\nkind = \"memory\"\n")).unwrap();
    let first = bench(&exp, &out, &[]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let mut kept = results_mtimes(&runs);
    assert_eq!(kept.len(), 2);
    let edits = [
        // a comment and other formatting: nothing runs
        (
            format!(
                "# the same experiment, reformatted\n\n{}",
                body(2, "[[store]]\nkind   =   \"memory\"  # in memory\n")
            ),
            2,
            "running 0",
        ),
        // one more repetition: one more run
        (body(3, "[[store]]\nkind = \"memory\"\n"), 3, "running 1"),
        // one more store: its three runs
        (
            body(
                3,
                "[[store]]\nkind = \"memory\"\n[[store]]\nkind = \"lmdb\"\nlmdb_map_gb = 1\n",
            ),
            6,
            "running 3",
        ),
    ];
    for (text, count, says) in edits {
        std::fs::write(&exp, &text).unwrap();
        let resumed = bench(&exp, &out, &["--resume"]);
        let said = String::from_utf8_lossy(&resumed.stderr);
        assert!(resumed.status.success(), "{said}");
        assert!(
            said.contains(&format!("keeping {} finished runs, {says}", kept.len())),
            "{said}"
        );
        let now = results_mtimes(&runs);
        assert_eq!(now.len(), count, "{text}");
        for (name, mtime) in &kept {
            let (_, t) = now.iter().find(|(n, _)| n == name).unwrap();
            assert_eq!(t, mtime, "{name} was run again after: {text}");
        }
        kept = now;
    }
    // a changed setting changes the command: those runs run again, the old ones set aside
    std::fs::write(
        &exp,
        body(
            3,
            "[[store]]\nkind = \"memory\"\n[[store]]\nkind = \"lmdb\"\nlmdb_map_gb = 2\n",
        ),
    )
    .unwrap();
    let resumed = bench(&exp, &out, &["--resume"]);
    let said = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        said.contains("keeping 3 finished runs, running 3 (3 again"),
        "{said}"
    );
    assert!(runs.join("workloada.lmdb.closed.r1.stale.json").exists());
}
