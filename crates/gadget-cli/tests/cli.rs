//! The `gadget` command as users run it.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

mod interrupt;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

/// A small CSV of events: key, time (ms), type.
fn events_csv(dir: &Path) -> PathBuf {
    let path = dir.join("events.csv");
    let mut s = String::new();
    for i in 0..300u64 {
        let key = (i * 7919) % 13;
        let kind = if i % 3 == 0 { "FINISH" } else { "SUBMIT" };
        s.push_str(&format!("{key},{},{kind}\n", i * 37));
    }
    std::fs::write(&path, s).unwrap();
    path
}

fn config(dir: &Path, operator: &str) -> PathBuf {
    events_csv(dir);
    let path = dir.join("workload.toml");
    std::fs::write(
        &path,
        format!(
            "seed = 7\n\n[source]\ntype = \"file\"\npath = \"events.csv\"\nkey_column = 0\ntime_column = 1\n\n[source.watermarks]\nevery = 10\n\n[operator]\n{operator}\n"
        ),
    )
    .unwrap();
    path
}

const TUMBLING: &str = "type = \"tumbling\"\nsize = 500";

#[test]
fn gen_prints_a_summary_and_writes_a_binary_trace() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    let out = dir.path().join("t.gtrace");
    gadget()
        .args(["gen", cfg.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("events                 300"))
        .stdout(predicate::str::contains("window-contents"))
        .stdout(predicate::str::contains("amplification"));
    assert_eq!(&std::fs::read(&out).unwrap()[..8], b"GADGTRC1");
}

#[test]
fn same_config_and_seed_give_a_byte_identical_trace() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "type = \"session\"\ngap = 200\nfunction = \"holistic\"",
    );
    let run = |name: &str| {
        let out = dir.path().join(name);
        gadget()
            .args(["gen", cfg.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .assert()
            .success();
        std::fs::read(out).unwrap()
    };
    assert_eq!(run("a.gtrace"), run("b.gtrace"));
}

#[test]
fn a_synthetic_out_of_order_stream_is_byte_identical_per_seed_and_differs_across_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("synthetic.toml");
    std::fs::write(
        &cfg,
        "seed = 7\n[source]\ntype = \"synthetic\"\nevents = 20000\nkey_space = 500\n\
         [source.keys]\ndistribution = \"zipf\"\ns = 1.1\n\
         [source.gaps]\ndistribution = \"exponential\"\nrate = 0.5\n\
         [source.out_of_order]\nfraction = 0.2\nmax_delay = 300\n\
         [source.watermarks]\ntype = \"punctuated\"\nevery = 50\nout_of_orderness = 100\n\
         [operator]\ntype = \"sliding\"\nsize = 1000\nslide = 250\nfunction = \"holistic\"\nallowed_lateness = 200\n",
    )
    .unwrap();
    let run = |name: &str, seed: Option<&str>| {
        let out = dir.path().join(name);
        let mut cmd = gadget();
        cmd.args(["gen", cfg.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        if let Some(seed) = seed {
            cmd.args(["--seed", seed]);
        }
        cmd.assert().success();
        std::fs::read(out).unwrap()
    };
    let a = run("a.gtrace", None);
    assert_eq!(a, run("b.gtrace", None));
    assert_eq!(a, run("c.gtrace", Some("7")));
    // another seed changes the requests themselves, not only the seed in the header
    let requests = |name: &str, seed: &str| -> Vec<String> {
        let out = dir.path().join(name);
        gadget()
            .args([
                "gen",
                cfg.to_str().unwrap(),
                "--format",
                "text",
                "--seed",
                seed,
                "-o",
            ])
            .arg(&out)
            .assert()
            .success();
        std::fs::read_to_string(out)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let seven = requests("7.txt", "7");
    assert!(seven.len() > 20_000, "{} requests", seven.len());
    assert_eq!(seven, requests("7-again.txt", "7"));
    assert_ne!(seven, requests("8.txt", "8"));
}

#[test]
fn json_summary_is_machine_readable() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    let out = dir.path().join("t.gtrace");
    let output = gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["events"], 300);
    assert_eq!(json["seed"], 7);
    let by_op = json["requests_by_op"].as_object().unwrap();
    let total: u64 = by_op.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(json["requests"].as_u64().unwrap(), total);
}

#[test]
fn limit_truncates_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    let out = dir.path().join("t.txt");
    gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--format",
            "text",
            "--limit",
            "50",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("truncated"));
    let text = std::fs::read_to_string(&out).unwrap();
    let requests = text.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(requests, 50);
    assert!(text.contains("\"truncated\":true"));
}

#[test]
fn repeat_plays_the_event_file_again_later_and_the_header_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    let gen = |extra: &[&str], name: &str| {
        let out = dir.path().join(name);
        let summary = gadget()
            .args(["gen", cfg.to_str().unwrap(), "--json", "-o"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(summary.status.success(), "{summary:?}");
        let json: serde_json::Value = serde_json::from_slice(&summary.stdout).unwrap();
        (
            json,
            String::from_utf8_lossy(&std::fs::read(out).unwrap()).into_owned(),
        )
    };
    let (once, _) = gen(&["--format", "text"], "once.txt");
    let (thrice, text) = gen(&["--format", "text", "--input-passes", "3"], "thrice.txt");
    assert_eq!(once["events"].as_u64().unwrap(), 300);
    assert_eq!(thrice["events"].as_u64().unwrap(), 900);
    // about three times the requests: the copies share only the windows across their seams
    // (and the RocksDB timers' start-up, 512 requests, comes once)
    let (one, three) = (
        once["requests"].as_u64().unwrap() as f64 - 512.0,
        thrice["requests"].as_u64().unwrap() as f64 - 512.0,
    );
    assert!((three / one - 3.0).abs() < 0.03, "{one} -> {three}");
    assert_ne!(three, 3.0 * one, "copies 2 and 3 are later in event time");
    assert!(
        text.contains("\"repeat\":3"),
        "the trace's config records it"
    );
    // the config key does the same
    let body = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("[source]\n", "[source]\nrepeat = 3\n");
    std::fs::write(&cfg, body).unwrap();
    let (keyed, _) = gen(&[], "keyed.gtrace");
    assert_eq!(keyed["requests"], thrice["requests"]);
}

#[test]
fn repeat_rejects_zero_and_sources_without_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "-o",
            "-",
            "--input-passes",
            "0",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--input-passes: 0 is out of range; allowed: 1 to",
        ));
    // the old name still works, and says what the flag does
    gadget()
        .args(["gen", cfg.to_str().unwrap(), "-o", "-", "--repeat", "2"])
        .assert()
        .success()
        .stderr(predicate::str::contains("--repeat is now --input-passes"));
    let synthetic = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/synthetic/session-out-of-order.toml");
    gadget()
        .args([
            "gen",
            synthetic.to_str().unwrap(),
            "-o",
            "-",
            "--repeat",
            "2",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "only a file source can be repeated",
        ));
    let err = config_error(&format!(
        "{SOURCE}repeat = 0\n\n[operator]\ntype = \"tumbling\"\nsize = 5\n"
    ));
    assert!(
        err.contains("bad.toml:6") && err.contains("`source.repeat`"),
        "{err}"
    );
}

#[test]
fn text_traces_have_one_request_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    let out = dir.path().join("t.txt");
    gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--format",
            "text",
        ])
        .assert()
        .success();
    let text = std::fs::read_to_string(&out).unwrap();
    // the first request after the timers' start-up
    let first = text.lines().find(|l| l.starts_with("get\t")).unwrap();
    let fields: Vec<&str> = first.split('\t').collect();
    assert_eq!(fields.len(), 4);
    assert_eq!(fields[0], "get");
    assert_eq!(fields[1], "window-contents");
    assert_eq!(fields[2].len(), 2 * 25); // key group, long key, window
                                         // what it found is not known without `--reads`
    assert_eq!(fields[3], "?");
}

#[test]
fn convert_round_trips_and_diff_finds_them_identical() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "type = \"sliding\"\nsize = 500\nslide = 100");
    let bin = dir.path().join("t.gtrace");
    let txt = dir.path().join("t.txt.gz");
    let back = dir.path().join("back.gtrace");
    gadget()
        .args(["gen", cfg.to_str().unwrap(), "-o", bin.to_str().unwrap()])
        .assert()
        .success();
    gadget()
        .args([
            "trace",
            "convert",
            bin.to_str().unwrap(),
            "-o",
            txt.to_str().unwrap(),
            "--format",
            "text",
        ])
        .assert()
        .success();
    gadget()
        .args([
            "trace",
            "convert",
            txt.to_str().unwrap(),
            "-o",
            back.to_str().unwrap(),
            "--format",
            "bin",
        ])
        .assert()
        .success();
    assert_eq!(std::fs::read(&bin).unwrap(), std::fs::read(&back).unwrap());
    gadget()
        .args([
            "trace",
            "diff",
            bin.to_str().unwrap(),
            txt.to_str().unwrap(),
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("match: 1.000000"));
}

#[test]
fn diff_fails_on_different_traces_and_names_the_first_difference() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    let a = dir.path().join("a.gtrace");
    gadget()
        .args(["gen", cfg.to_str().unwrap(), "-o", a.to_str().unwrap()])
        .assert()
        .success();
    let cfg2 = config(
        dir.path(),
        "type = \"tumbling\"\nsize = 500\nfunction = \"holistic\"",
    );
    let b = dir.path().join("b.gtrace");
    gadget()
        .args(["gen", cfg2.to_str().unwrap(), "-o", b.to_str().unwrap()])
        .assert()
        .success();
    gadget()
        .args(["trace", "diff", a.to_str().unwrap(), b.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("first difference at request 0"));
    gadget()
        .args([
            "trace",
            "diff",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--min-match",
            "0.1",
        ])
        .assert()
        .success();
    // an exact match required: the diff stops at the first difference and says it is a bound
    gadget()
        .args(["trace", "diff", a.to_str().unwrap(), b.to_str().unwrap()])
        .args(["--min-match", "1"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "more than 0 requests differ, below --min-match",
        ))
        .stdout(predicate::str::contains("first difference at request 0"));
}

#[test]
fn truncated_and_corrupted_traces_give_an_offset_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    let good = dir.path().join("t.gtrace");
    gadget()
        .args(["gen", cfg.to_str().unwrap(), "-o", good.to_str().unwrap()])
        .assert()
        .success();
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.path().join("cut.gtrace");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    gadget()
        .args([
            "trace",
            "convert",
            cut.to_str().unwrap(),
            "-o",
            dir.path().join("x").to_str().unwrap(),
            "--format",
            "text",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("byte"))
        .stderr(predicate::str::contains("panicked").not());
    assert!(!dir.path().join("x").exists(), "no half-written output");
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    let corrupt = dir.path().join("bad.gtrace");
    std::fs::write(&corrupt, &bad).unwrap();
    gadget()
        .args([
            "trace",
            "diff",
            good.to_str().unwrap(),
            corrupt.to_str().unwrap(),
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("byte"))
        .stderr(predicate::str::contains("panicked").not());
}

fn config_error(body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    events_csv(dir.path());
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, body).unwrap();
    let out = gadget()
        .args([
            "gen",
            path.to_str().unwrap(),
            "-o",
            dir.path().join("o").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a bad config exits non-zero");
    assert!(!dir.path().join("o").exists());
    String::from_utf8(out.stderr).unwrap()
}

const SOURCE: &str =
    "[source]\ntype = \"file\"\npath = \"events.csv\"\nkey_column = 0\ntime_column = 1\n";

#[test]
fn unknown_key_names_file_line_and_allowed_keys() {
    let err = config_error(&format!(
        "{SOURCE}\n[operator]\ntype = \"tumbling\"\nsize = 5\nsise = 5\n"
    ));
    assert!(err.contains("bad.toml:10"), "{err}");
    assert!(err.contains("`operator.sise`"), "{err}");
    assert!(
        err.contains("unknown key; allowed here:") && err.contains("size"),
        "{err}"
    );
}

#[test]
fn missing_parameter_names_the_key_and_what_to_add() {
    let err = config_error(&format!(
        "{SOURCE}\n[operator]\ntype = \"sliding\"\nsize = 5000\n"
    ));
    assert!(err.contains("`operator.slide`: missing"), "{err}");
    assert!(err.contains("bad.toml:7"), "{err}");
}

#[test]
fn out_of_range_value_names_the_allowed_range() {
    let err = config_error(&format!(
        "{SOURCE}\n[operator]\ntype = \"tumbling\"\nsize = -5\n"
    ));
    assert!(
        err.contains("bad.toml:9") && err.contains("`operator.size`"),
        "{err}"
    );
    assert!(err.contains("out of range; allowed: [1,"), "{err}");
}

#[test]
fn flags_and_config_keys_share_one_set_of_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "type = \"tumbling\"\nsize = 5000");
    let cfg = cfg.to_str().unwrap();
    // each flag is refused with the range its config key has, tiny numbers in short form
    for (args, said) in [
        (
            vec!["gen", cfg, "--limit", "0", "-o", "t"],
            "invalid value '0' for '--limit",
        ),
        (
            vec![
                "run",
                cfg,
                "--store",
                "memory",
                "--arrival",
                "constant",
                "--rate",
                "1e-300",
            ],
            "--rate 1e-300 is out of range; allowed: [1e-6, 1000000000000]",
        ),
        (
            vec![
                "run",
                cfg,
                "--store",
                "memory",
                "--arrival",
                "event-time",
                "--speed",
                "1e-300",
            ],
            "--speed 1e-300 is out of range; allowed: [1e-9, 1000000000000]",
        ),
        (
            vec!["run", cfg, "--store", "memory", "--interval", "10us"],
            "--interval \"10us\": give a time of at least 1ms",
        ),
        (
            vec!["run", cfg, "--store", "memory", "--instances", "5000"],
            "--instances 5000 is out of range; allowed: [1, 4096]",
        ),
    ] {
        let out = gadget()
            .current_dir(dir.path())
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
    let err = config_error(&format!(
        "{SOURCE}\n[operator]\ntype = \"tumbling\"\nsize = 5\n[run]\narrival = \"constant\"\nrate = 1e-300\n"
    ));
    assert!(
        err.contains("`run.rate`: 1e-300 is out of range; allowed: [1e-6, 1000000000000]"),
        "{err}"
    );
    let err = config_error(&format!(
        "{SOURCE}\n[operator]\ntype = \"tumbling\"\nsize = 5\n[run]\ninterval = \"1ns\"\n"
    ));
    assert!(err.contains("is not a time of at least 1ms"), "{err}");
}

#[test]
fn unknown_choice_lists_the_allowed_values() {
    let err = config_error(&format!("{SOURCE}\n[operator]\ntype = \"hopping\"\n"));
    assert!(
        err.contains("`operator.type`") && err.contains("tumbling, sliding, session"),
        "{err}"
    );
}

#[test]
fn wrong_type_says_what_type_is_expected() {
    let err = config_error(&format!(
        "{SOURCE}\n[operator]\ntype = \"tumbling\"\nsize = \"5s\"\n"
    ));
    assert!(err.contains("`operator.size`: must be an integer"), "{err}");
}

#[test]
fn toml_syntax_errors_have_a_line() {
    let err = config_error("[source\ntype = 1\n");
    assert!(
        err.contains("bad.toml:1") && err.contains("not valid TOML"),
        "{err}"
    );
}

#[test]
fn a_missing_event_file_names_the_path() {
    let err = config_error("[source]\ntype = \"file\"\npath = \"nope.csv\"\nkey_column = 0\ntime_column = 1\n[operator]\ntype = \"aggregation\"\n");
    assert!(
        err.contains("bad.toml:3: `source.path`: cannot read ") && err.contains("nope.csv"),
        "{err}"
    );
}

#[test]
fn an_empty_or_header_only_event_file_warns_that_no_events_were_read() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TUMBLING);
    let toml = std::fs::read_to_string(&cfg).unwrap();
    let with_header = toml.replace("time_column = 1\n", "time_column = 1\nheader = true\n");
    std::fs::write(&cfg, with_header).unwrap();
    for content in ["", "key,time\n"] {
        std::fs::write(dir.path().join("events.csv"), content).unwrap();
        gadget()
            .args(["gen", cfg.to_str().unwrap(), "-o"])
            .arg(dir.path().join("t.gtrace"))
            .assert()
            .success()
            .stdout(predicate::str::contains("events                   0"))
            .stderr(predicate::str::contains("warning: no events read from "))
            .stderr(predicate::str::contains("`source.path`"));
        // only the RocksDB timer service's start-up, as Flink's job without input issues it
        gadget()
            .args(["run", cfg.to_str().unwrap(), "--store", "memory"])
            .assert()
            .success()
            .stdout(predicate::str::contains("closed loop: 512 requests"));
    }
}

#[test]
fn a_bad_row_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("events.csv"), "1,10\n2,x\n").unwrap();
    let path = dir.path().join("w.toml");
    std::fs::write(&path, "[source]\ntype = \"file\"\npath = \"events.csv\"\nkey_column = 0\ntime_column = 1\n[operator]\ntype = \"aggregation\"\n").unwrap();
    gadget()
        .args([
            "gen",
            path.to_str().unwrap(),
            "-o",
            dir.path().join("o").to_str().unwrap(),
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("events.csv:2"))
        .stderr(predicate::str::contains("not an integer"));
    assert!(!dir.path().join("o").exists());
}

#[test]
fn help_teaches_the_commands() {
    gadget()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("gen"))
        .stdout(predicate::str::contains("trace"));
    gadget()
        .args(["trace", "diff", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("renamed by first appearance"));
}

#[test]
fn limit_counts_requests_not_events_and_the_help_and_docs_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("w.toml");
    std::fs::write(
        &cfg,
        "seed = 5\n[source]\ntype = \"synthetic\"\nevents = 20000\nkey_space = 200\n\
         [source.keys]\ndistribution = \"zipf\"\ns = 1.0\n\
         [source.gaps]\ndistribution = \"exponential\"\nrate = 1.0\n\
         [source.watermarks]\ntype = \"punctuated\"\nevery = 20\n\
         [operator]\ntype = \"sliding\"\nsize = 200\nslide = 50\nfunction = \"holistic\"\n",
    )
    .unwrap();
    let out = dir.path().join("t.txt");
    gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "--limit",
            "500",
            "--format",
            "text",
        ])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let text = std::fs::read_to_string(&out).unwrap();
    let requests = text.lines().filter(|l| !l.starts_with('#')).count();
    let events = text.lines().filter(|l| l.starts_with("#ev")).count();
    assert_eq!(requests, 500);
    assert!(events < 500, "{events} events: the limit counted requests");

    for command in ["gen", "run", "replay"] {
        let help = gadget().args([command, "--help"]).output().unwrap();
        let help = String::from_utf8(help.stdout).unwrap();
        let limit = help
            .split("--limit")
            .nth(1)
            .unwrap_or_else(|| panic!("{command} --help has no --limit:\n{help}"));
        let limit = &limit[..limit.find("\n  -").unwrap_or(limit.len())];
        assert!(limit.contains("requests"), "{command}: {limit}");
        assert!(
            !limit.contains("events") || limit.contains("not events"),
            "{command}: {limit}"
        );
    }
    gadget()
        .args(["compare", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Compare traces, run results or bench experiments",
        ))
        .stdout(predicate::str::contains("`gadget bench` folders"));

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config_md = std::fs::read_to_string(root.join("docs/config.md")).unwrap();
    let row = config_md
        .lines()
        .find(|l| l.starts_with("| `limit` |"))
        .unwrap();
    assert!(row.contains("state requests, not events"), "{row}");
    let bench_md = std::fs::read_to_string(root.join("docs/bench.md")).unwrap();
    let line = bench_md
        .lines()
        .find(|l| l.starts_with("limit = "))
        .unwrap();
    assert!(
        line.contains("state requests") && line.contains("not events"),
        "{line}"
    );
}

#[test]
fn a_join_can_read_two_separate_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jobs.csv"), "1,100\n2,200\n1,5000\n").unwrap();
    std::fs::write(dir.path().join("tasks.tsv"), "1\t150\n2\t210\n3\t300\n").unwrap();
    let cfg = dir.path().join("join.toml");
    std::fs::write(
        &cfg,
        "[left]\ntype = \"file\"\npath = \"jobs.csv\"\nkey_column = 0\ntime_column = 1\n\n\
         [right]\ntype = \"file\"\npath = \"tasks.tsv\"\nkey_column = 0\ntime_column = 1\n\n\
         [operator]\ntype = \"interval-join\"\nlower_bound = -100\nupper_bound = 100\ninterleave = \"source-order\"\ntimers = \"heap\"\n",
    )
    .unwrap();
    let out = dir.path().join("j.txt");
    gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--format",
            "text",
        ])
        .assert()
        .success();
    let text = std::fs::read_to_string(out).unwrap();
    let inputs: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("#ev"))
        .map(|l| l.rsplit('\t').next().unwrap())
        .collect();
    // by time: 100 (left), 150 (right), 200 (left), 210 (right), 300 (right), 5000 (left)
    assert_eq!(inputs, vec!["1", "2", "1", "2", "2", "1"]);
    assert!(text.contains("get\tLEFT_BUFFER"));
    assert!(text.contains("get\tRIGHT_BUFFER"));
}

/// An original Gadget config (key = value), as the bundled example holds it.
const ORIGINAL: &str = include_str!("../../../examples/original/tumbling-keyed-incremental.conf");

#[test]
fn original_gadget_configs_run_with_their_request_limit() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.txt");
    std::fs::write(&cfg, ORIGINAL).unwrap();
    let out = dir.path().join("t.txt");
    gadget()
        .args([
            "gen",
            cfg.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--format",
            "text",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "requests              1000  (truncated by the request limit)",
        ))
        .stderr(predicate::str::contains("`wrapper.*` ignored"));
    let text = std::fs::read_to_string(out).unwrap();
    assert!(text.contains("get\twindow-contents\t"));
    assert!(text.contains("batch_put\t_timer_state/event_window-timers\t"));
}

#[test]
fn original_gadget_configs_reject_typos_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.txt");
    let cases = [
        (
            ORIGINAL.replace("window.length", "window.lenght"),
            // a missing key has no line to point at, not the line of another key
            vec!["config.txt: `window.length`: missing"],
        ),
        (
            ORIGINAL.replace("window.length = 5", "window.length 5"),
            vec!["config.txt:4: `window.length 5`: not a `key = value` line"],
        ),
        (
            format!("{ORIGINAL}first.event.generator.watermark.frequncy = 2\n"),
            vec!["config.txt:19", "unknown key"],
        ),
        (
            ORIGINAL.replace("tumbling.keyed.incremental", "tumbling.keyed.incremetal"),
            vec!["config.txt:2", "tumbling.keyed.incremental"],
        ),
    ];
    for (text, needles) in cases {
        std::fs::write(&cfg, text).unwrap();
        let mut assert = gadget()
            .args(["gen", cfg.to_str().unwrap(), "-o"])
            .arg(dir.path().join("o"))
            .assert()
            .code(1);
        for n in needles {
            assert = assert.stderr(predicate::str::contains(n));
        }
    }
}

/// Starts `gadget gen` on an endless workload, stops it with `stop` after 1.5 s, and checks
/// that the trace so far is in place, readable and marked partial.
fn stopped_gen_keeps_a_readable_partial_trace(
    stop: fn(std::process::Child, std::time::Duration, &str) -> std::process::Output,
) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("endless.toml");
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bench/tumbling-incr-zipf.toml");
    std::fs::copy(example, &cfg).unwrap();
    let trace = dir.path().join("t.gtrace");
    // the source is endless (an endless one needs a limit to be written to a file): only the
    // signal ends it
    let child = interrupt::spawn_gadget([
        "gen",
        cfg.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
        "--limit",
        "1000000000000",
    ]);
    let out = stop(child, std::time::Duration::from_millis(1500), "gadget gen");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("(PARTIAL: stopped by Ctrl-C or SIGTERM)"),
        "{stdout}"
    );
    assert!(stderr.contains("marked partial"), "{stderr}");

    // the trace is in place, whole up to the interrupt (the reader checks the footer's
    // counts against the records), and says it is partial; no temporary file is left
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let mut reader = gadget::trace::open_trace(&trace).unwrap();
    let mut requests = 0u64;
    while let Some(record) = reader.next_record().unwrap() {
        requests += u64::from(matches!(record, gadget::trace::RecordRef::Access(_)));
    }
    let footer = reader.footer().unwrap();
    assert!(requests > 0);
    assert_eq!(footer.requests, requests);
    assert!(footer.truncated);
    assert_eq!(footer.extra["interrupted"], true);
}

#[test]
fn ctrl_c_stops_gen_and_keeps_a_readable_partial_trace() {
    stopped_gen_keeps_a_readable_partial_trace(interrupt::interrupt_and_wait);
}

#[test]
fn sigterm_stops_gen_as_ctrl_c_does() {
    stopped_gen_keeps_a_readable_partial_trace(interrupt::terminate_and_wait);
}

#[test]
fn the_agent_writes_text_for_every_format_and_kafka_streams_passes_one_trace_of_all_threads() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.jar");
    std::fs::write(&agent, b"not run").unwrap();
    // `--format bin` is Gadget's conversion after the job: the agent is asked for text
    let out = gadget()
        .args(["record", "spark", "--format", "bin", "--agent"])
        .arg(&agent)
        .arg("--work")
        .arg(dir.path().join("work"))
        .arg("--out")
        .arg(dir.path().join("spark-traces"))
        .args(["--", "env"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed
            .lines()
            .any(|l| l.starts_with("JAVA_TOOL_OPTIONS=") && l.contains(",format=text,")),
        "{printed}"
    );
    // the agent's options reach the command: `env` prints them
    let out = gadget()
        .args(["record", "kafka-streams", "--threads", "one", "--agent"])
        .arg(&agent)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .arg("--out")
        .arg(dir.path().join("traces"))
        .args(["--", "env"])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    let options = printed
        .lines()
        .find(|l| l.starts_with("JAVA_TOOL_OPTIONS="))
        .unwrap_or_default();
    assert!(
        options.ends_with(",threads=one,engine=kafka-streams"),
        "{printed}"
    );
}

#[test]
fn record_refuses_agent_paths_the_jvm_cannot_carry_and_names_a_missing_agent() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.jar");
    std::fs::write(&agent, b"not run").unwrap();
    let state = dir.path().join("state,dir");
    let out = gadget()
        .args(["record", "kafka-streams", "--agent"])
        .arg(&agent)
        .arg("--state-dir")
        .arg(&state)
        .arg("--out")
        .arg(dir.path().join("traces"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("state,dir") && said.contains("comma"),
        "{said}"
    );
    let out = gadget()
        .args(["record", "kafka-streams", "--state-dir"])
        .arg(dir.path().join("state"))
        .arg("--agent")
        .arg(dir.path().join("missing.jar"))
        .args(["--", "true"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("missing.jar"),
        "{said}"
    );
}

/// A text trace of state `s` with `lines` (requests and markers), counted in its footer.
fn text_trace(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
    text_trace_of(dir, name, &["s"], lines)
}

/// A text trace of `states` with `lines` (requests and markers), counted in its footer.
fn text_trace_of(dir: &Path, name: &str, states: &[&str], lines: &[&str]) -> PathBuf {
    let requests = lines.iter().filter(|l| !l.starts_with('#')).count();
    let events = lines.iter().filter(|l| l.starts_with("#ev")).count();
    let names = serde_json::to_string(states).unwrap();
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "#gadget-trace\ttext\t3\n#header\t{{\"gadget_version\":\"0.1.0\",\"state_names\":{names},\
             \"seed\":null,\"config\":null,\"operator\":\"x\"}}\n{}\n#footer\t{{\"events\":{events},\
             \"watermarks\":0,\"requests\":{requests},\"truncated\":false}}\n",
            lines.join("\n")
        ),
    )
    .unwrap();
    path
}

#[test]
fn store_instances_interleaved_differently_are_identical_instance_by_instance() {
    let dir = tempfile::tempdir().unwrap();
    let states = ["app/0_0/rocksdb/c/data", "app/0_1/rocksdb/c/data"];
    let (t0, t1) = ("app/0_0/rocksdb/c/data", "app/0_1/rocksdb/c/data");
    let line = |op: &str, state: &str, key: &str| format!("{op}\t{state}\t{key}\t8");
    let a: Vec<String> = vec![
        line("get", t0, "6b"),
        line("get", t1, "6c"),
        line("put", t0, "6b"),
        line("put", t1, "6c"),
    ];
    let b = [a[1].clone(), a[3].clone(), a[0].clone(), a[2].clone()];
    let c = [a[2].clone(), a[1].clone(), a[0].clone(), a[3].clone()];
    fn lines(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let a = text_trace_of(dir.path(), "a.txt", &states, &lines(&a));
    let b = text_trace_of(dir.path(), "b.txt", &states, &lines(&b));
    let c = text_trace_of(dir.path(), "c.txt", &states, &lines(&c));
    let diff = |x: &Path, y: &Path, per_instance: bool| {
        let mut args = vec!["trace", "diff", x.to_str().unwrap(), y.to_str().unwrap()];
        if per_instance {
            args.push("--per-instance");
        }
        let out = gadget().args(&args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert!(!diff(&a, &b, false).0, "the whole traces differ in order");
    let (same, report) = diff(&a, &b, true);
    assert!(same, "{report}");
    assert!(
        report.contains("2 of 2 store instances identical"),
        "{report}"
    );
    // within an instance, order counts
    let (same, report) = diff(&a, &c, true);
    assert!(!same, "{report}");
    assert!(
        report.contains("1 of 2 store instances identical")
            && report.contains("first differing instance: app/0_0/rocksdb/c, at its request 0"),
        "{report}"
    );
}

#[test]
fn traces_without_event_markers_are_compared_whole() {
    let dir = tempfile::tempdir().unwrap();
    let a = text_trace(dir.path(), "a.txt", &["get\ts\t6b\t0", "put\ts\t6b\t8"]);
    let b = text_trace(dir.path(), "b.txt", &["get\ts\t6b\t0", "delete\ts\t6b\t0"]);
    let same = text_trace(dir.path(), "same.txt", &["get\ts\t6c\t0", "put\ts\t6c\t8"]);
    let diff = |x: &Path, y: &Path, per_key: bool| {
        let mut args = vec!["trace", "diff", x.to_str().unwrap(), y.to_str().unwrap()];
        if per_key {
            args.push("--per-key");
        }
        gadget().args(args).assert()
    };
    // two different traces were "identical" (exit 0): no request came before a first marker
    diff(&a, &b, false)
        .code(1)
        .stdout(predicate::str::contains("A: ").and(predicate::str::contains("(2 requests)")))
        .stdout(predicate::str::contains(
            "first difference at request 1: A has `put s #1`, B has `delete s #1`",
        ));
    diff(&a, &b, true)
        .code(1)
        .stdout(predicate::str::contains("0 of 1 state keys identical"));
    diff(&a, &same, false)
        .success()
        .stdout(predicate::str::contains("identical request sequences"));
    // a start-up before the first marker is still left out, and the hint says how each was read
    let marked = text_trace(
        dir.path(),
        "marked.txt",
        &[
            "put\ts\t626f6f74\t3",
            "#ev\t\t\t0",
            "get\ts\t6b\t0",
            "put\ts\t6b\t8",
        ],
    );
    diff(&marked, &a, false)
        .success()
        .stderr(predicate::str::contains(
            "hint: only A has event markers: A is compared from its first event on, B (without \
             markers) from its first request",
        ));
}
