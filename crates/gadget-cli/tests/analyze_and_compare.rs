//! `gadget analyze` and `gadget compare` as users run them.

mod browser;
#[path = "../../gadget/tests/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

/// A text trace written by hand: keys a b a c b (state `s`), events and a watermark.
fn hand_made_trace(dir: &Path) -> PathBuf {
    let path = dir.join("hand.txt");
    let header =
        r#"{"gadget_version":"0","state_names":["s"],"seed":null,"config":null,"operator":"hand"}"#;
    let mut s = format!("#gadget-trace\ttext\t1\n#header\t{header}\n");
    for line in [
        "#ev\t\t\t0",
        "get\ts\t61\t0",
        "put\ts\t61\t8",
        "#ev\t\t\t0",
        "get\ts\t62\t0",
        "#wm\t\t\t1000",
        "merge\ts\t61\t4",
        "#ev\t\t\t0",
        "put\ts\t63\t8",
        "delete\ts\t62\t0",
        "batch_commit\ts\t\t1",
        r#"#footer	{"events":3,"watermarks":1,"requests":7,"truncated":false}"#,
    ] {
        s.push_str(line);
        s.push('\n');
    }
    std::fs::write(&path, s).unwrap();
    path
}

#[test]
fn analyze_reports_known_answers_for_a_hand_made_trace() {
    let dir = tempfile::tempdir().unwrap();
    let t = hand_made_trace(dir.path());
    let out = gadget()
        .args([
            "analyze",
            t.to_str().unwrap(),
            "--json",
            "--max-sequence-len",
            "3",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(a["requests"], 7);
    assert_eq!(a["events"], 3);
    assert_eq!(a["requests_by_op"]["get"], 2);
    assert_eq!(a["requests_by_state"]["s"]["merge"], 1);
    assert_eq!(a["distinct_state_keys"], 3);
    // keys a a b a c b: distances 0 (a), 1 (a after b), 2 (b after a, c)
    let sd = &a["stack_distance"];
    assert_eq!(sd["cold"], 3);
    assert_eq!(sd["accesses"], 6);
    assert_eq!(sd["mean"], 1.0);
    assert_eq!(sd["max"], 2);
    // sequences: 3 keys; pairs aa ab ba ac cb; triples aab aba bac acb
    assert_eq!(a["unique_sequences"], serde_json::json!([3, 5, 4]));
    assert_eq!(a["ttl"]["requests"]["max"], 3);
    assert!((a["event_amplification"].as_f64().unwrap() - 7.0 / 3.0).abs() < 1e-12);
}

#[test]
fn analyze_prints_a_summary_and_writes_json_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let t = hand_made_trace(dir.path());
    let json = dir.path().join("analysis.json");
    gadget()
        .args(["analyze", t.to_str().unwrap(), "-o", json.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("temporal locality"))
        .stdout(predicate::str::contains("unique key sequences"))
        .stdout(predicate::str::contains("working set"));
    let a: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(a["requests"], 7);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn a_damaged_trace_is_an_error_with_its_offset_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::project_root().join("examples/synthetic/session-out-of-order.toml");
    let t = dir.path().join("t.gtrace");
    gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
            "--limit",
            "5000",
        ])
        .assert()
        .success();
    let bytes = std::fs::read(&t).unwrap();
    std::fs::write(&t, &bytes[..bytes.len() / 2]).unwrap();
    gadget()
        .args(["analyze", t.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("byte"))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn gadgets_trace_and_flinks_recording_compare_as_identical() {
    let Some(shared) = common::shared_dir("analyze and compare") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let flink = shared.join("reference-traces/flink-1.20/tumbling-incr.tsv.gz");
    let ours = dir.path().join("tumbling-incr.gtrace");
    let cfg = common::project_root().join("examples/flink-reference/tumbling-incr.toml");
    gadget()
        .args(["gen", cfg.to_str().unwrap(), "-o", ours.to_str().unwrap()])
        .assert()
        .success();
    let out = gadget()
        .args([
            "compare",
            flink.to_str().unwrap(),
            ours.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let items: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (f, g) = (&items[0]["analysis"], &items[1]["analysis"]);
    for metric in [
        "requests",
        "distinct_state_keys",
        "stack_distance",
        "unique_sequences",
        "working_set",
        "ttl",
    ] {
        assert_eq!(f[metric], g[metric], "{metric}");
    }
    // Flink's keys are counted from the key prefix, Gadget's recorded by gen: they agree
    assert_eq!(f["distinct_event_keys"], g["distinct_event_keys"]);
    assert_eq!(
        items[1]["popularity_distance_to_first"]["ks_statistic"],
        0.0
    );
    gadget()
        .args(["compare", flink.to_str().unwrap(), ours.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("popularity KS vs first"));
}

#[test]
fn the_html_report_renders_its_plots_in_a_browser() {
    let Some(browser) = browser::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::project_root().join("examples/synthetic/session-out-of-order.toml");
    let t = dir.path().join("t.gtrace");
    gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
            "--limit",
            "20000",
        ])
        .assert()
        .success();
    let report = dir.path().join("report.html");
    let plots = dir.path().join("plots");
    gadget()
        .args([
            "analyze",
            t.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ])
        .args(["--plots", plots.to_str().unwrap()])
        .assert()
        .success();
    let html = std::fs::read_to_string(&report).unwrap();
    for outside in ["src=\"http", "href=\"http", "<link", "@import"] {
        assert!(!html.contains(outside), "the report fetches {outside}…");
    }
    let figures = html.matches("<figure").count();
    assert!(figures >= 5, "{figures} figures");
    // every plot says under it how to read it, a sentence beyond its title
    for caption in html.split("<figcaption>").skip(1) {
        let caption = &caption[..caption.find("</figcaption>").unwrap()];
        let sentence = caption.split("</b>").nth(1).unwrap_or("").trim();
        assert!(
            sentence.len() > 40,
            "a caption without how to read: {caption}"
        );
    }
    for name in [
        "stack-distance",
        "unique-sequences",
        "working-set",
        "ttl-cdf",
        "hit-ratio-curve",
    ] {
        for ext in ["svg", "png"] {
            let p = plots.join(format!("{name}.{ext}"));
            assert!(
                std::fs::metadata(&p).unwrap().len() > 1000,
                "{}",
                p.display()
            );
        }
    }
    let (dom, stderr) = browser::rendered(browser, &report, dir.path());
    assert!(
        dom.contains(&format!("data-plots-drawn=\"{figures}\"")),
        "the browser drew not all {figures} plots; stderr: {stderr}"
    );
}

#[test]
fn run_results_keep_a_latency_spectrum_that_analyze_draws_on_a_nines_axis() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::project_root().join("examples/ycsb/workloada.toml");
    let results = dir.path().join("r.json");
    gadget()
        .args(["run", cfg.to_str().unwrap(), "--store", "memory", "-o"])
        .arg(&results)
        .assert()
        .success();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    let spectra = r["latency_spectrum"].as_array().unwrap();
    let all = spectra.iter().find(|s| s["op"] == "all").unwrap();
    let points = all["points"].as_array().unwrap();
    assert!(points.len() > 20, "{} points", points.len());
    let last = points.last().unwrap();
    assert_eq!(last[0], 100.0);
    let max = r["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "all")
        .unwrap()["max_ns"]
        .clone();
    assert_eq!(last[1], max, "the spectrum ends at the maximum");
    let plots = dir.path().join("plots");
    gadget()
        .arg("analyze")
        .arg(&results)
        .arg("--plots")
        .arg(&plots)
        .assert()
        .success();
    let svg = std::fs::read_to_string(plots.join("latency-spectrum.svg")).unwrap();
    for label in ["99%", "99.9%", "percentile"] {
        assert!(svg.contains(label), "the spectrum's x axis lacks {label}");
    }
    assert!(plots.join("latency-distribution.svg").exists());
}

#[test]
fn a_sampled_analysis_says_what_it_estimated_and_a_bad_rate_names_the_allowed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.gtrace");
    let config =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/tumbling-incr-zipf.toml");
    gadget()
        .args(["gen", config.to_str().unwrap(), "--limit", "200000", "-o"])
        .arg(&trace)
        .assert()
        .success();
    let analyze = |sample: &str| {
        let out = gadget()
            .args([
                "analyze",
                trace.to_str().unwrap(),
                "--json",
                "--sample",
                sample,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (exact, sampled) = (analyze("exact"), analyze("1/16"));
    assert!(exact["sampling"].is_null());
    assert_eq!(sampled["sampling"]["rate"], "1/16");
    // counts stay exact; sequences are not counted; the curve starts at 16 keys
    assert_eq!(sampled["requests"], exact["requests"]);
    assert_eq!(sampled["unique_sequences"], serde_json::json!([]));
    assert_eq!(sampled["stack_distance"]["hit_ratio_curve"][0][0], 16);
    let (e, s) = (
        exact["distinct_state_keys"].as_f64().unwrap(),
        sampled["distinct_state_keys"].as_f64().unwrap(),
    );
    let error = sampled["sampling"]["distinct_keys_relative_error"]
        .as_f64()
        .unwrap();
    assert!(
        (s / e - 1.0).abs() <= 4.0 * error,
        "{s} against {e} (±{error})"
    );
    // the summary says it sampled
    gadget()
        .args(["analyze", trace.to_str().unwrap(), "--sample", "1/16"])
        .assert()
        .success()
        .stdout(predicate::str::contains("SAMPLED (1/16)"));
    gadget()
        .args(["analyze", trace.to_str().unwrap(), "--sample", "1/10"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "`1/10` is not a sampling rate: use exact, or 1/N",
        ));
}
