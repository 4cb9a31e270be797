//! `--hdr-log` files as HdrHistogram's own Java tools read them: `HistogramLogProcessor -i
//! FILE`, without options, reports all requests of the run, and `-tag OP` one op, with the
//! counts and percentiles of the run's own results.
//!
//! Needs `java` and HdrHistogram's jar, which `scripts/setup.sh debug` fetches into
//! `.deps/hdrhistogram/`; without them the test is skipped, except with `CI=true`, where it
//! fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

/// The HdrHistogram version scripts/setup.sh fetches.
const JAR: &str = "HdrHistogram-2.2.2.jar";

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// HdrHistogram's jar when it and `java` are there; `None` (saying why) when either is
/// missing outside CI.
fn hdrhistogram_jar() -> Option<PathBuf> {
    let jar = project_root().join(".deps/hdrhistogram").join(JAR);
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = match (java, jar.is_file()) {
        (true, true) => return Some(jar),
        (false, _) => "`java` is not installed".to_string(),
        (true, false) => format!("{} is missing", jar.display()),
    };
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{missing}, but CI=true: `scripts/setup.sh debug` installs a JDK and fetches the jar"
    );
    eprintln!("skipping the HdrHistogram tool check: {missing} (scripts/setup.sh debug)");
    None
}

/// `HistogramLogProcessor -i log ARGS`'s standard output.
fn processor(jar: &Path, log: &Path, args: &[&str]) -> String {
    let out = Command::new("java")
        .arg("-cp")
        .arg(jar)
        .arg("org.HdrHistogram.HistogramLogProcessor")
        .arg("-i")
        .arg(log)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("Exception"),
        "HistogramLogProcessor {args:?} failed: {stderr}"
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What the processor printed: its percentile rows `(value, percentile)`, its maximum and
/// its total count.
struct Distribution {
    rows: Vec<(f64, f64)>,
    max: f64,
    count: u64,
}

impl Distribution {
    fn parse(text: &str) -> Distribution {
        let mut rows = Vec::new();
        let (mut max, mut count) = (None, None);
        for line in text.lines() {
            let fields: Vec<&str> = line
                .split([' ', ',', '=', '[', ']'])
                .filter(|f| !f.is_empty())
                .collect();
            match fields.as_slice() {
                ["#", "Max", max_v, "Total", "count", n] => {
                    max = max_v.parse().ok();
                    count = n.parse().ok();
                }
                [value, percentile, ..] if !line.starts_with('#') => {
                    if let (Ok(v), Ok(p)) = (value.parse(), percentile.parse()) {
                        rows.push((v, p));
                    }
                }
                _ => {}
            }
        }
        Distribution {
            rows,
            max: max.unwrap_or_else(|| panic!("no #[Max ...] line in\n{text}")),
            count: count.unwrap_or_else(|| panic!("no Total count in\n{text}")),
        }
    }

    /// The value of the row at exactly `percentile` (a fraction).
    fn at(&self, percentile: f64) -> f64 {
        self.rows
            .iter()
            .find(|r| (r.1 - percentile).abs() < 1e-12)
            .unwrap_or_else(|| panic!("no row at {percentile}"))
            .0
    }

    /// The values of the rows on either side of `percentile`.
    fn around(&self, percentile: f64) -> (f64, f64) {
        let above = self.rows.iter().position(|r| r.1 >= percentile).unwrap();
        (self.rows[above.saturating_sub(1)].0, self.rows[above].0)
    }
}

/// The `latency` row of `op` in the results.
fn row<'a>(results: &'a serde_json::Value, op: &str) -> &'a serde_json::Value {
    results["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["op"] == op)
        .unwrap_or_else(|| panic!("no {op} row"))
}

#[test]
fn hdrhistograms_log_processor_reads_the_log_without_options_and_agrees_with_the_results() {
    let Some(jar) = hdrhistogram_jar() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("w.toml");
    std::fs::write(
        &config,
        "seed = 5\n[source]\ntype = \"synthetic\"\nevents = 6000\nkey_space = 200\n\
         [source.keys]\ndistribution = \"zipf\"\ns = 1.0\n\
         [source.gaps]\ndistribution = \"exponential\"\nrate = 1.0\n\
         [source.watermarks]\ntype = \"punctuated\"\nevery = 20\n\
         [operator]\ntype = \"sliding\"\nsize = 200\nslide = 50\nfunction = \"holistic\"\n",
    )
    .unwrap();
    let (log, results) = (dir.path().join("run.hlog"), dir.path().join("run.json"));
    let out = Command::cargo_bin("gadget")
        .unwrap()
        .arg("run")
        .arg(&config)
        .args([
            "--store",
            "memory",
            "--interval",
            "20ms",
            "--warmup",
            "2000",
        ])
        .arg("--hdr-log")
        .arg(&log)
        .arg("-o")
        .arg(&results)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();

    // no options: every request, in milliseconds to three decimals
    let all = row(&results, "all");
    let d = Distribution::parse(&processor(&jar, &log, &[]));
    assert_eq!(
        d.count,
        all["ops"].as_u64().unwrap(),
        "every measured request"
    );
    let ms = |v: &serde_json::Value| v.as_u64().unwrap() as f64 / 1e6;
    for (java, gadget) in [(d.at(0.5), &all["p50_ns"]), (d.max, &all["max_ns"])] {
        assert!(
            (java - ms(gadget)).abs() <= 0.0005,
            "{java} ms against Gadget's {gadget} ns"
        );
    }

    // one op's tag, in nanoseconds: the same percentiles, exactly
    let get = row(&results, "get");
    let d = Distribution::parse(&processor(
        &jar,
        &log,
        &["-tag", "get", "-outputValueUnitRatio", "1"],
    ));
    let ns = |v: &serde_json::Value| v.as_u64().unwrap() as f64;
    assert_eq!(d.count, get["ops"].as_u64().unwrap());
    assert_eq!(d.at(0.5), ns(&get["p50_ns"]));
    assert_eq!(d.max, ns(&get["max_ns"]));
    let (below, above) = d.around(0.99);
    let p99 = ns(&get["p99_ns"]);
    assert!(
        below <= p99 && p99 <= above,
        "p99 {p99} outside [{below}, {above}]"
    );
}
