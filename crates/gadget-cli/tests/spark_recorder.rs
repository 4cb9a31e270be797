//! Spark Structured Streaming recorded (`gadget record spark`) and reproduced: the recorder
//! agent and the Spark reference queries are built with Maven, each query (a windowed count
//! with a watermark, `dropDuplicatesWithinWatermark`, a stream-stream join, a session count by
//! `flatMapGroupsWithState` with an event-time timeout, one by `session_window` and one by
//! `transformWithState` in each kind of state variable with event-time timers, on the
//! RocksDB state store provider, `local[1]`, one micro-batch per file of events) runs over the
//! Borg trace under the agent for several settings (output modes, join types, window sizes and
//! gaps, trigger sizes, watermark delays, shuffle partitions, late and very late records, input
//! all there under `Trigger.AvailableNow` or under the processing-time trigger, or arriving
//! batch by batch under the processing-time trigger, batches without data on and off), and
//! each recording must be what `gadget gen` generates for the matching config of
//! `examples/spark-reference/`, request for request, flushes and checkpoints included. Each
//! plays the first [`SPARK_EVENTS`] events of the trace (all with `GADGET_RECORDER_EVENTS=all`).
//!
//! Needs `java` and `mvn` (and Maven Central the first time); without them the test is
//! skipped, except with `CI=true`, where it fails.

#[path = "../../gadget/tests/common.rs"]
mod common;
#[path = "support/config_edit.rs"]
mod config_edit;
#[path = "support/first_events.rs"]
mod first_events;
#[path = "support/late_input.rs"]
mod late_input;
#[path = "support/recording.rs"]
mod recording;
#[path = "support/settings_share.rs"]
mod settings_share;
#[path = "support/two_at_a_time.rs"]
mod two_at_a_time;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

use recording::{generate, have, trace_diff};

/// What Spark 4.1 needs opened on Java 17 (its launcher passes the same).
const JAVA_OPENS: &[&str] = &[
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
    "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
    "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
    "-Djdk.reflect.useDirectMethodHandle=false",
    "-Dio.netty.tryReflectionSetAccessible=true",
];

/// Builds the agent and the Spark reference query: the agent's jar and the query's class path.
fn build() -> (PathBuf, String) {
    let dir = common::project_root().join("recorder");
    let status = Command::new("mvn")
        .args(["-B", "-q", "-Dstyle.color=never", "-Pspark"])
        .args(["-pl", "agent,spark", "package", "-f"])
        .arg(dir.join("pom.xml"))
        .status()
        .expect("running mvn");
    assert!(
        status.success(),
        "building the recorder and the Spark query failed"
    );
    let target = dir.join("spark/target");
    let deps = std::fs::read_to_string(target.join("classpath.txt")).unwrap();
    let classpath = format!(
        "{}:{}",
        target.join("gadget-recorder-spark-examples.jar").display(),
        deps.trim()
    );
    (
        dir.join("agent/target/gadget-recorder-flink.jar"),
        classpath,
    )
}

/// Which input a setting reads.
#[derive(Clone, Copy)]
enum Input {
    /// The Borg events sorted by time.
    Borg,
    /// In file order, every tenth record 7 s late.
    Late,
    /// In file order, every tenth record an hour late: behind the watermark, dropped.
    VeryLate,
}

/// One recorded setting: the query's flags and the same setting as config edits.
struct Setting {
    name: &'static str,
    /// The query (`--operator`), whose config is `examples/spark-reference/<operator>.toml`.
    operator: &'static str,
    flags: &'static [&'static str],
    edits: &'static [(&'static str, &'static str)],
    input: Input,
}

/// The Borg events each setting plays: the first 8,000 of 26,250 (about 150 minutes of event
/// time, so records an hour late are still dropped and ten-minute micro-batches still many).
/// A micro-batch costs Spark about a second, so the whole trace takes 2.5 times as long;
/// `GADGET_RECORDER_EVENTS=all` plays it (`scripts/record-all.sh`).
const SPARK_EVENTS: usize = 8_000;

const COUNT: &str = "tumbling-count";
const DEDUP: &str = "drop-duplicates-within-watermark";
const JOIN: &str = "stream-join";
const GROUPS: &str = "flat-map-groups-with-state";
const SESSIONS: &str = "session-count";
const TRANSFORM: &str = "transform-with-state";

const SETTINGS: &[Setting] = &[
    Setting {
        operator: COUNT,
        name: "5 s windows, append, 1,000 events per micro-batch",
        flags: &[],
        edits: &[],
        input: Input::Borg,
    },
    Setting {
        operator: COUNT,
        name: "60 s windows, a watermark 30 s behind, 10 min of event time per micro-batch",
        flags: &[
            "--window",
            "60000",
            "--trigger-ms",
            "600000",
            "--delay",
            "30000",
        ],
        edits: &[
            ("size", "60000"),
            ("trigger_events", ""),
            ("trigger_ms", "600000"),
            ("delay", "30000"),
        ],
        input: Input::Borg,
    },
    Setting {
        operator: COUNT,
        name: "2 s windows, update mode, 2,000 events per micro-batch, a watermark 5 s behind, \
               3 shuffle partitions",
        flags: &[
            "--partitions",
            "3",
            "--window",
            "2000",
            "--mode",
            "update",
            "--trigger-events",
            "2000",
            "--delay",
            "5000",
        ],
        edits: &[
            ("partitions", "3"),
            ("size", "2000"),
            ("mode", "\"update\""),
            ("trigger_events", "2000"),
            ("delay", "5000"),
        ],
        input: Input::Borg,
    },
    Setting {
        operator: COUNT,
        name: "5 s windows, a watermark 3 s behind, late records",
        flags: &["--delay", "3000"],
        edits: &[("delay", "3000")],
        input: Input::Late,
    },
    Setting {
        operator: COUNT,
        name: "5 s windows, a watermark 60 s behind, records an hour late (dropped)",
        flags: &["--delay", "60000"],
        edits: &[("delay", "60000")],
        input: Input::VeryLate,
    },
    Setting {
        operator: COUNT,
        name: "5 s windows, a watermark 3 s behind, input arriving batch by batch under the \
               processing-time trigger (a batch without data after each batch of data)",
        flags: &["--trigger", "processing-time", "--delay", "3000"],
        edits: &[("trigger", "\"processing-time\""), ("delay", "3000")],
        input: Input::Borg,
    },
    Setting {
        operator: COUNT,
        name: "5 s windows, a watermark 3 s behind, the processing-time trigger over input all \
               there at the start (each trigger finds its batch: Gadget's available-now model)",
        flags: &[
            "--trigger",
            "processing-time",
            "--input-at-start",
            "true",
            "--delay",
            "3000",
        ],
        edits: &[("delay", "3000")],
        input: Input::Borg,
    },
    Setting {
        operator: COUNT,
        name: "5 s windows, a watermark 3 s behind, batches without data turned off",
        flags: &["--no-data-batches", "false", "--delay", "3000"],
        edits: &[("no_data_batches", "false"), ("delay", "3000")],
        input: Input::Borg,
    },
    Setting {
        operator: DEDUP,
        name: "deduplication, a watermark 10 s behind",
        flags: &["--delay", "10000"],
        edits: &[],
        input: Input::Borg,
    },
    Setting {
        operator: DEDUP,
        name: "deduplication, no delay, update mode, 500 events per micro-batch, 4 shuffle partitions",
        flags: &[
            "--delay",
            "0",
            "--mode",
            "update",
            "--trigger-events",
            "500",
            "--partitions",
            "4",
        ],
        edits: &[
            ("partitions", "4"),
            ("delay", "0"),
            ("mode", "\"update\""),
            ("trigger_events", "500"),
        ],
        input: Input::Borg,
    },
    Setting {
        operator: DEDUP,
        name: "deduplication, a watermark 3 s behind, 5 min of event time per micro-batch, late records",
        flags: &["--delay", "3000", "--trigger-ms", "300000"],
        edits: &[
            ("delay", "3000"),
            ("trigger_events", ""),
            ("trigger_ms", "300000"),
        ],
        input: Input::Late,
    },
    Setting {
        operator: JOIN,
        name: "join, 5 s apart at most",
        flags: &["--window", "5000"],
        edits: &[],
        input: Input::Borg,
    },
    Setting {
        operator: JOIN,
        name: "full outer join, 60 s apart at most, a watermark 10 s behind, 2 shuffle \
               partitions, 10 min of event time per micro-batch, late records",
        flags: &[
            "--join-type",
            "full_outer",
            "--window",
            "60000",
            "--delay",
            "10000",
            "--partitions",
            "2",
            "--trigger-ms",
            "600000",
        ],
        edits: &[
            ("join_type", "\"full-outer\""),
            ("window", "60000"),
            ("delay", "10000"),
            ("partitions", "2"),
            ("trigger_events", ""),
            ("trigger_ms", "600000"),
        ],
        input: Input::Late,
    },
    Setting {
        operator: JOIN,
        name: "join, 5 s apart at most, a watermark 2 s behind, 2,000 events per micro-batch \
               arriving batch by batch under the processing-time trigger",
        flags: &[
            "--window",
            "5000",
            "--delay",
            "2000",
            "--trigger-events",
            "2000",
            "--trigger",
            "processing-time",
        ],
        edits: &[
            ("delay", "2000"),
            ("trigger_events", "2000"),
            ("trigger", "\"processing-time\""),
        ],
        input: Input::Borg,
    },
    Setting {
        operator: GROUPS,
        name: "flatMapGroupsWithState session count, 30 s gap",
        flags: &["--gap", "30000"],
        edits: &[],
        input: Input::Borg,
    },
    Setting {
        operator: GROUPS,
        name: "flatMapGroupsWithState, 5 s gap, a watermark 10 s behind, update mode, \
               3 shuffle partitions, 10 min of event time per micro-batch, late records",
        flags: &[
            "--gap",
            "5000",
            "--delay",
            "10000",
            "--mode",
            "update",
            "--partitions",
            "3",
            "--trigger-ms",
            "600000",
        ],
        edits: &[
            ("gap", "5000"),
            ("delay", "10000"),
            ("mode", "\"update\""),
            ("partitions", "3"),
            ("trigger_events", ""),
            ("trigger_ms", "600000"),
        ],
        input: Input::Late,
    },
    Setting {
        operator: GROUPS,
        name: "flatMapGroupsWithState, 60 s gap, 500 events per micro-batch, records an hour \
               late (dropped)",
        flags: &["--gap", "60000", "--trigger-events", "500"],
        edits: &[("gap", "60000"), ("trigger_events", "500")],
        input: Input::VeryLate,
    },
    Setting {
        operator: SESSIONS,
        name: "session windows, 30 s gap",
        flags: &["--gap", "30000"],
        edits: &[],
        input: Input::Borg,
    },
    Setting {
        operator: SESSIONS,
        name: "session windows, 10 s gap, a watermark 3 s behind, 2 shuffle partitions, late \
               records",
        flags: &["--gap", "10000", "--delay", "3000", "--partitions", "2"],
        edits: &[("gap", "10000"), ("delay", "3000"), ("partitions", "2")],
        input: Input::Late,
    },
    Setting {
        operator: SESSIONS,
        name: "session windows, 60 s gap, 10 min of event time per micro-batch, records an \
               hour late (some restored sessions outlast a key's records)",
        flags: &["--gap", "60000", "--trigger-ms", "600000"],
        edits: &[
            ("gap", "60000"),
            ("trigger_events", ""),
            ("trigger_ms", "600000"),
        ],
        input: Input::VeryLate,
    },
    Setting {
        operator: TRANSFORM,
        name: "transformWithState, a ValueState and an event-time timer, 30 s gap",
        flags: &["--state", "value", "--gap", "30000"],
        edits: &[],
        input: Input::Borg,
    },
    Setting {
        operator: TRANSFORM,
        name: "transformWithState, a ValueState, 5 s gap, a watermark 10 s behind, update mode, \
               3 shuffle partitions, 10 min of event time per micro-batch, late records",
        flags: &[
            "--state",
            "value",
            "--gap",
            "5000",
            "--delay",
            "10000",
            "--mode",
            "update",
            "--partitions",
            "3",
            "--trigger-ms",
            "600000",
        ],
        edits: &[
            ("gap", "5000"),
            ("delay", "10000"),
            ("mode", "\"update\""),
            ("partitions", "3"),
            ("trigger_events", ""),
            ("trigger_ms", "600000"),
        ],
        input: Input::Late,
    },
    Setting {
        operator: TRANSFORM,
        name: "transformWithState, a ListState of event times, 30 s gap, 500 events per \
               micro-batch, records an hour late (dropped)",
        flags: &["--state", "list", "--gap", "30000", "--trigger-events", "500"],
        edits: &[("state", "\"list\""), ("trigger_events", "500")],
        input: Input::VeryLate,
    },
    Setting {
        operator: TRANSFORM,
        name: "transformWithState, a MapState by minute, 60 s gap, a watermark 3 s behind, \
               2 shuffle partitions, late records (a key's minutes out of order)",
        flags: &[
            "--state",
            "map",
            "--gap",
            "60000",
            "--delay",
            "3000",
            "--partitions",
            "2",
        ],
        edits: &[
            ("state", "\"map\""),
            ("gap", "60000"),
            ("delay", "3000"),
            ("partitions", "2"),
        ],
        input: Input::Late,
    },
];

/// What one setting's run reads.
struct Inputs<'a> {
    agent: &'a Path,
    classpath: &'a str,
    borg: &'a Path,
    late: &'a Path,
    very_late: &'a Path,
}

/// Records `setting` in `work` and compares the recording with Gadget's trace: `None` when
/// identical, else the diff's report.
fn check(setting: &Setting, work: &Path, inputs: &Inputs<'_>) -> Option<String> {
    std::fs::create_dir_all(work).unwrap();
    let traces = work.join("traces");
    let (input, order): (&Path, &[&str]) = match setting.input {
        Input::Borg => (inputs.borg, &[]),
        Input::Late => (inputs.late, &["--order", "file"]),
        Input::VeryLate => (inputs.very_late, &["--order", "file"]),
    };
    // `gadget record spark` keeps the agent's text and writes one trace of every thread (the
    // partitions' tasks run one at a time on whichever executor thread is free)
    let run = Command::cargo_bin("gadget")
        .unwrap()
        .args(["record", "spark", "--json", "--agent"])
        .arg(inputs.agent)
        .arg("--work")
        .arg(work)
        .arg("--out")
        .arg(&traces)
        .args(["--", "java"])
        .args(recording::QUICK_JVM)
        .args(JAVA_OPENS)
        .args(["-cp", inputs.classpath])
        .arg("gadget.recorder.examples.spark.ReferenceQueries")
        .args(["--operator", setting.operator])
        .arg("--input")
        .arg(input)
        .arg("--work")
        .arg(work)
        .args(setting.flags)
        .args(order)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}: the query failed: {}",
        setting.name,
        String::from_utf8_lossy(&run.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(1),
        "{}: one trace of every thread: {listed}",
        setting.name
    );
    let recorded = [traces.join("all-threads.trace.txt")];
    let base = common::project_root().join(format!(
        "examples/spark-reference/{}.toml",
        setting.operator
    ));
    let mut edits = setting.edits.to_vec();
    if !matches!(setting.input, Input::Borg) {
        edits.push(("source.order", "\"file\""));
    }
    let config = config_edit::edited(&base, input, &edits);
    let generated = generate(&config, work, setting.name);
    // the same requests, each get finding what Spark's did
    let (same, report) = trace_diff(&generated, &recorded[0], &["--reads"]);
    eprintln!("{}: {}", setting.name, report.lines().nth(2).unwrap_or(""));
    (!same).then(|| format!("{}:\n{report}", setting.name))
}

#[test]
fn recording_spark_reproduces_gadget_request_for_request() {
    let test = "Spark recorder";
    let Some(shared) = common::shared_dir(test) else {
        return;
    };
    if !have("java", test) || !have("mvn", test) {
        return;
    }
    let (agent, classpath) = build();
    let dir = tempfile::tempdir().unwrap();
    let events = first_events::recorded_events(SPARK_EVENTS);
    let borg = shared.join("data/borg-jobs.csv.gz");
    let borg = first_events::first_events(&borg, dir.path(), events, "borg.csv.gz");
    let late = late_input::late_input(&borg, dir.path(), 7_000_000, "late.csv");
    let very_late = late_input::late_input(&borg, dir.path(), 3_600_000_000, "very-late.csv");
    let inputs = Inputs {
        agent: &agent,
        classpath: &classpath,
        borg: &borg,
        late: &late,
        very_late: &very_late,
    };
    let settings = settings_share::this_runs_share(SETTINGS, "Spark recorder");
    let failed = two_at_a_time::two_at_a_time(&settings, |i, setting| {
        check(setting, &dir.path().join(i.to_string()), &inputs)
    });
    assert!(
        failed.is_empty(),
        "recordings that are not Gadget's trace:\n{}",
        failed.join("\n")
    );
}
