//! The Flink recorder end to end: the recorder agent and the bundled reference job are built
//! with Maven, `gadget record flink` runs the job over the Borg trace for every reference
//! setting, and each recording must be the reference recording, request for request.
//!
//! Needs `java` and `mvn` (and Maven Central the first time); without them the test is
//! skipped, except with `CI=true`, where it fails.

#[path = "../../gadget/tests/common.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

/// Whether `tool -version` runs; with `CI=true` a missing tool fails the test.
fn have(tool: &str, test: &str) -> bool {
    let ok = Command::new(tool)
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{test}: `{tool}` is missing, but CI=true: .ci/run must install it");
        }
        eprintln!("skipping {test}: `{tool}` is not installed (scripts/setup.sh installs it)");
    }
    ok
}

/// Builds the agent and the reference job; the agent jar and the job's class path.
fn build_recorder() -> (PathBuf, String) {
    let dir = common::project_root().join("recorder/flink");
    let status = Command::new("mvn")
        .args(["-B", "-q", "-Dstyle.color=never", "package", "-f"])
        .arg(dir.join("pom.xml"))
        .status()
        .expect("running mvn");
    assert!(status.success(), "building the recorder with Maven failed");
    let agent = dir.join("agent/target/gadget-recorder-flink.jar");
    let examples = dir.join("examples/target");
    let deps = std::fs::read_to_string(examples.join("classpath.txt")).unwrap();
    let classpath = format!(
        "{}:{}",
        examples
            .join("gadget-recorder-flink-examples.jar")
            .display(),
        deps.trim()
    );
    (agent, classpath)
}

/// Records the reference job with `args` into `out`; the one trace of the operator's task.
fn record(agent: &Path, classpath: &str, out: &Path, operator: &str, args: &[&str]) -> PathBuf {
    let output = Command::cargo_bin("gadget")
        .unwrap()
        .args(["record", "flink", "--json", "--agent"])
        .arg(agent)
        .arg("--out")
        .arg(out)
        .args([
            "--",
            "java",
            "-cp",
            classpath,
            "gadget.recorder.examples.ReferenceJob",
        ])
        .args(["--operator", operator])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "recording {operator} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let traces: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let traces = traces.as_array().unwrap();
    assert_eq!(
        traces.len(),
        1,
        "{operator}: one task thread with state: {traces:?}"
    );
    let t = &traces[0];
    assert_eq!(t["dropped_records"], 0, "{t}");
    let file = PathBuf::from(t["file"].as_str().unwrap());
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(operator), "{name}: named after the task");
    assert!(
        name.ends_with("_1_1_0.gtrace"),
        "{name}: subtask 1 of 1, attempt 0"
    );
    file
}

#[test]
fn recording_the_reference_job_reproduces_every_flink_reference_trace() {
    let test = "flink recorder";
    let Some(shared) = common::shared_dir(test) else {
        return;
    };
    if !have("java", test) || !have("mvn", test) {
        return;
    }
    let (agent, classpath) = build_recorder();
    let input = shared.join("data/borg-jobs.csv.gz");
    let input = input.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // two recordings at a time: the machine has two cores
    let names: Vec<&str> = common::REFERENCE_TRACES.to_vec();
    std::thread::scope(|scope| {
        for half in names.chunks(names.len().div_ceil(2)) {
            let (agent, classpath, dir, shared) = (&agent, &classpath, dir.path(), &shared);
            scope.spawn(move || {
                for name in half {
                    let (operator, timers) = match name.strip_suffix(".rocksdb-timers") {
                        Some(op) => (op, "rocksdb"),
                        None => (*name, "heap"),
                    };
                    let out = dir.join(name);
                    let args = ["--input", input, "--timers", timers];
                    let trace = record(agent, classpath, &out, operator, &args);
                    let reference =
                        shared.join(format!("reference-traces/flink-1.20/{name}.tsv.gz"));
                    // the join's two inputs race through the network: allow what the
                    // generation issue allows
                    let min_match = if operator == "interval-join" {
                        "0.99"
                    } else {
                        "1"
                    };
                    let diff = Command::cargo_bin("gadget")
                        .unwrap()
                        .args(["trace", "diff", "--min-match", min_match])
                        .arg(&reference)
                        .arg(&trace)
                        .output()
                        .unwrap();
                    let report = String::from_utf8_lossy(&diff.stdout);
                    assert!(
                        diff.status.success(),
                        "{name}: the recording differs:\n{report}"
                    );
                    eprintln!("{name}: {}", report.lines().nth(2).unwrap_or_default());
                }
            });
        }
    });
}
