//! Kafka Streams recorded and reproduced: the recorder agent and the Kafka Streams reference
//! job are built with Maven, `gadget record kafka-streams` runs the job, which runs `groupByKey().count()` under `TopologyTestDriver` on
//! real RocksDB stores over the Borg trace for several settings (cache sizes, input order,
//! names), and each recording must be what `gadget gen` generates for the matching config of
//! `examples/kafka-streams-reference/`, request for request.
//!
//! Needs `java` and `mvn` (and Maven Central the first time); without them the test is
//! skipped, except with `CI=true`, where it fails.

#[path = "../../gadget/tests/common.rs"]
mod common;
#[path = "support/config_edit.rs"]
mod config_edit;
#[path = "support/recording.rs"]
mod recording;

use std::path::PathBuf;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use recording::{generate, have, trace_diff};

/// Builds the agent and the Kafka Streams reference job: the agent's jar and the job's class
/// path.
fn build() -> (PathBuf, String) {
    let dir = common::project_root().join("recorder/flink");
    let status = Command::new("mvn")
        .args(["-B", "-q", "-Dstyle.color=never", "-Pkafka-streams"])
        .args(["-pl", "agent,examples-kafka-streams", "package", "-f"])
        .arg(dir.join("pom.xml"))
        .status()
        .expect("running mvn");
    assert!(
        status.success(),
        "building the recorder and the Kafka Streams job failed"
    );
    let target = dir.join("examples-kafka-streams/target");
    let deps = std::fs::read_to_string(target.join("classpath.txt")).unwrap();
    let classpath = format!(
        "{}:{}",
        target
            .join("gadget-recorder-kafka-streams-examples.jar")
            .display(),
        deps.trim()
    );
    (
        dir.join("agent/target/gadget-recorder-flink.jar"),
        classpath,
    )
}

/// One recorded setting: the job's flags and the same setting as config edits.
struct Setting {
    name: &'static str,
    flags: &'static [&'static str],
    edits: &'static [(&'static str, &'static str)],
}

const SETTINGS: &[Setting] = &[
    Setting {
        name: "count",
        flags: &[],
        edits: &[],
    },
    Setting {
        name: "count, no cache",
        flags: &["--cache-bytes", "0"],
        edits: &[("cache_bytes", "0")],
    },
    Setting {
        name: "count, a cache of 2,000 bytes (evicting all the time)",
        flags: &["--cache-bytes", "2000"],
        edits: &[("cache_bytes", "2000")],
    },
    Setting {
        name: "count, a cache of 100,000 bytes (evicting now and then)",
        flags: &["--cache-bytes", "100000"],
        edits: &[("cache_bytes", "100000")],
    },
    Setting {
        name: "count, input in file order",
        flags: &["--order", "file", "--cache-bytes", "5000"],
        edits: &[("order", "\"file\""), ("cache_bytes", "5000")],
    },
    Setting {
        name: "count, other application, store and topic names",
        flags: &[
            "--application-id",
            "billing",
            "--store",
            "jobs-per-key",
            "--topic",
            "borg-job-events",
        ],
        edits: &[
            ("application_id", "\"billing\""),
            ("store", "\"jobs-per-key\""),
            ("topic", "\"borg-job-events\""),
        ],
    },
];

#[test]
fn recording_kafka_streams_reproduces_gadget_request_for_request() {
    let test = "Kafka Streams recorder";
    let Some(shared) = common::shared_dir(test) else {
        return;
    };
    if !have("java", test) || !have("mvn", test) {
        return;
    }
    let (agent, classpath) = build();
    let borg = shared.join("data/borg-jobs.csv.gz");
    let dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for (i, setting) in SETTINGS.iter().enumerate() {
        let work = dir.path().join(i.to_string());
        let state = work.join("state");
        let traces = work.join("traces");
        std::fs::create_dir_all(&state).unwrap();
        let run = Command::cargo_bin("gadget")
            .unwrap()
            .args(["record", "kafka-streams", "--json", "--agent"])
            .arg(&agent)
            .arg("--state-dir")
            .arg(&state)
            .arg("--out")
            .arg(&traces)
            .args(["--", "java", "-cp", &classpath])
            .arg("gadget.recorder.examples.kafka.ReferenceStreams")
            .args(["--operator", "count", "--input"])
            .arg(&borg)
            .arg("--state-dir")
            .arg(&state)
            .args(setting.flags)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}: the job failed: {}",
            setting.name,
            String::from_utf8_lossy(&run.stderr)
        );
        let listed: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(
            listed.as_array().map(Vec::len),
            Some(1),
            "{}: one trace, the driver's thread: {listed}",
            setting.name
        );
        let recorded = traces.join("main.gtrace");
        let base = common::project_root().join("examples/kafka-streams-reference/count.toml");
        let config = config_edit::edited(&base, &borg, setting.edits);
        let generated = generate(&config, &work, setting.name);
        let (_, report) = trace_diff(&generated, &recorded, &[]);
        eprintln!("{}: {}", setting.name, report.lines().nth(2).unwrap_or(""));
        if !report.contains("identical request sequences") {
            failed.push(format!("{}:\n{report}", setting.name));
        }
    }
    assert!(
        failed.is_empty(),
        "recordings that are not Gadget's trace:\n{}",
        failed.join("\n")
    );
}
