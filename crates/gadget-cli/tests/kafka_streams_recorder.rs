//! Kafka Streams recorded and reproduced: the recorder agent and the Kafka Streams reference
//! job are built with Maven, `gadget record kafka-streams` runs the job, which runs
//! `groupByKey().count()` and `.aggregate(...)`, tumbling and hopping windowed counts, session-windowed counts and
//! KStream–KStream joins under `TopologyTestDriver` on real RocksDB stores over the Borg trace for several settings
//! (cache sizes, aggregate sizes, window sizes, gaps, grace, suppression, input order with late
//! records, names),
//! and each recording must be what `gadget gen`
//! generates for the matching config of `examples/kafka-streams-reference/`, request for
//! request. A window segment's `open` and `drop` are left out of the comparison: the recorder
//! sees RocksDB calls, and Kafka Streams deletes an expired segment's directory without one.
//!
//! Needs `java` and `mvn` (and Maven Central the first time); without them the test is
//! skipped, except with `CI=true`, where it fails.

#[path = "../../gadget/tests/common.rs"]
mod common;
#[path = "support/config_edit.rs"]
mod config_edit;
#[path = "support/kafka_streams_job.rs"]
mod kafka_streams_job;
#[path = "support/late_input.rs"]
mod late_input;
#[path = "support/recording.rs"]
mod recording;
#[path = "support/settings_share.rs"]
mod settings_share;
#[path = "support/two_at_a_time.rs"]
mod two_at_a_time;

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use recording::{generate, have, trace_diff};

/// One recorded setting: the job's flags and the same setting as config edits of a bundled
/// config.
struct Setting {
    name: &'static str,
    /// `examples/kafka-streams-reference/<config>.toml`.
    config: &'static str,
    flags: &'static [&'static str],
    edits: &'static [(&'static str, &'static str)],
    /// Read the Borg events with some records late (see [`late_input`]), in file order.
    late: bool,
}

/// Options of every windowed setting's diff: segments open and drop unseen by the recorder.
const WINDOWED_DIFF: &[&str] = &["--skip-ops", "open,drop"];

const SETTINGS: &[Setting] = &[
    Setting {
        name: "count",
        config: "count",
        late: false,
        flags: &[],
        edits: &[],
    },
    Setting {
        name: "aggregate, a list of the key's times (8 bytes a record)",
        config: "aggregate",
        late: false,
        flags: &["--operator", "aggregate"],
        edits: &[],
    },
    Setting {
        name: "aggregate, 16 bytes a record, no cache",
        config: "aggregate",
        late: false,
        flags: &[
            "--operator",
            "aggregate",
            "--cache-bytes",
            "0",
            "--bytes-per-record",
            "16",
        ],
        edits: &[("cache_bytes", "0"), ("bytes_per_record", "16")],
    },
    Setting {
        name: "aggregate, a cache of 50,000 bytes (the growing values evict sooner)",
        config: "aggregate",
        late: false,
        flags: &["--operator", "aggregate", "--cache-bytes", "50000"],
        edits: &[("cache_bytes", "50000")],
    },
    Setting {
        name: "aggregate of a fixed 32 bytes, a cache of 20,000 bytes, late records",
        config: "aggregate",
        late: true,
        flags: &[
            "--operator",
            "aggregate",
            "--initial-bytes",
            "32",
            "--bytes-per-record",
            "0",
            "--cache-bytes",
            "20000",
        ],
        edits: &[
            ("initial_bytes", "32"),
            ("bytes_per_record", "0"),
            ("cache_bytes", "20000"),
        ],
    },
    Setting {
        name: "count, no cache",
        config: "count",
        late: false,
        flags: &["--cache-bytes", "0"],
        edits: &[("cache_bytes", "0")],
    },
    Setting {
        name: "count, a cache of 2,000 bytes (evicting all the time)",
        config: "count",
        late: false,
        flags: &["--cache-bytes", "2000"],
        edits: &[("cache_bytes", "2000")],
    },
    Setting {
        name: "count, a cache of 100,000 bytes (evicting now and then)",
        config: "count",
        late: false,
        flags: &["--cache-bytes", "100000"],
        edits: &[("cache_bytes", "100000")],
    },
    Setting {
        name: "count, input in file order",
        config: "count",
        late: false,
        flags: &["--order", "file", "--cache-bytes", "5000"],
        edits: &[("order", "\"file\""), ("cache_bytes", "5000")],
    },
    Setting {
        name: "count, other application, store and topic names",
        config: "count",
        late: false,
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
    Setting {
        name: "tumbling count of 5 s, default cache",
        config: "tumbling-count",
        flags: &["--operator", "tumbling-count"],
        edits: &[],
        late: false,
    },
    Setting {
        name: "tumbling count of 5 s, no cache",
        config: "tumbling-count",
        flags: &["--operator", "tumbling-count", "--cache-bytes", "0"],
        edits: &[("cache_bytes", "0")],
        late: false,
    },
    Setting {
        name: "tumbling count of 5 min (150 s segments), a cache of 50,000 bytes",
        config: "tumbling-count",
        flags: &[
            "--operator",
            "tumbling-count",
            "--window",
            "300000",
            "--cache-bytes",
            "50000",
        ],
        edits: &[("size", "300000"), ("cache_bytes", "50000")],
        late: false,
    },
    Setting {
        name: "tumbling count, grace 2 s, late records, no cache",
        config: "tumbling-count",
        flags: &[
            "--operator",
            "tumbling-count",
            "--grace",
            "2000",
            "--cache-bytes",
            "0",
        ],
        edits: &[("grace", "2000"), ("cache_bytes", "0")],
        late: true,
    },
    Setting {
        name: "tumbling count of 5 s, suppressed until windows close, default cache",
        config: "tumbling-count",
        flags: &[
            "--operator",
            "tumbling-count",
            "--suppress",
            "until-window-closes",
        ],
        edits: &[("suppress", "\"until-window-closes\"")],
        late: false,
    },
    Setting {
        name: "hopping count of 10 s every 5 s, grace 1 s, suppressed, late records, a cache of 20,000 bytes",
        config: "hopping-count",
        flags: &[
            "--operator",
            "hopping-count",
            "--window",
            "10000",
            "--advance",
            "5000",
            "--grace",
            "1000",
            "--cache-bytes",
            "20000",
            "--suppress",
            "until-window-closes",
        ],
        edits: &[
            ("grace", "1000"),
            ("cache_bytes", "20000"),
            ("suppress", "\"until-window-closes\""),
        ],
        late: true,
    },
    Setting {
        name: "hopping count of 10 s every 5 s, default cache",
        config: "hopping-count",
        flags: &[
            "--operator",
            "hopping-count",
            "--window",
            "10000",
            "--advance",
            "5000",
        ],
        edits: &[],
        late: false,
    },
    Setting {
        name: "hopping count of 4 s every 1 s, grace 0.5 s, late records, a cache of 20,000 bytes",
        config: "hopping-count",
        flags: &[
            "--operator",
            "hopping-count",
            "--window",
            "4000",
            "--advance",
            "1000",
            "--grace",
            "500",
            "--cache-bytes",
            "20000",
        ],
        edits: &[
            ("size", "4000"),
            ("advance", "1000"),
            ("grace", "500"),
            ("cache_bytes", "20000"),
        ],
        late: true,
    },
    Setting {
        name: "session count, gap 30 s, default cache",
        config: "session-count",
        flags: &["--operator", "session-count", "--gap", "30000"],
        edits: &[],
        late: false,
    },
    Setting {
        name: "session count, gap 30 s, no cache",
        config: "session-count",
        flags: &["--operator", "session-count", "--cache-bytes", "0"],
        edits: &[("cache_bytes", "0")],
        late: false,
    },
    Setting {
        name: "session count, a cache of 2,000 bytes (evicting all the time)",
        config: "session-count",
        flags: &["--operator", "session-count", "--cache-bytes", "2000"],
        edits: &[("cache_bytes", "2000")],
        late: false,
    },
    Setting {
        name: "session count, suppressed until sessions close, default cache",
        config: "session-count",
        flags: &[
            "--operator",
            "session-count",
            "--suppress",
            "until-window-closes",
        ],
        edits: &[("suppress", "\"until-window-closes\"")],
        late: false,
    },
    Setting {
        name: "session count, gap 5 s, grace 3 s, late records, a cache of 20,000 bytes",
        config: "session-count",
        flags: &[
            "--operator",
            "session-count",
            "--gap",
            "5000",
            "--grace",
            "3000",
            "--cache-bytes",
            "20000",
        ],
        edits: &[("gap", "5000"), ("grace", "3000"), ("cache_bytes", "20000")],
        late: true,
    },
    Setting {
        name: "session count, gap 5 min (150 s segments), suppressed, a cache of 50,000 bytes",
        config: "session-count",
        flags: &[
            "--operator",
            "session-count",
            "--gap",
            "300000",
            "--cache-bytes",
            "50000",
            "--suppress",
            "until-window-closes",
        ],
        edits: &[
            ("gap", "300000"),
            ("cache_bytes", "50000"),
            ("suppress", "\"until-window-closes\""),
        ],
        late: false,
    },
    Setting {
        name: "stream join SUBMIT with FINISH within 5 s",
        config: "stream-join",
        flags: &["--operator", "stream-join", "--window", "5000"],
        edits: &[],
        late: false,
    },
    Setting {
        name: "stream join within 5 min (300 s segments)",
        config: "stream-join",
        flags: &["--operator", "stream-join", "--window", "300000"],
        edits: &[("window", "300000")],
        late: false,
    },
    Setting {
        name: "stream join within 5 s, grace 3 s, late records",
        config: "stream-join",
        flags: &[
            "--operator",
            "stream-join",
            "--window",
            "5000",
            "--grace",
            "3000",
        ],
        edits: &[("grace", "3000")],
        late: true,
    },
    Setting {
        name: "stream join SCHEDULE with FINISH within 1 s, late records dropped",
        config: "stream-join",
        flags: &[
            "--operator",
            "stream-join",
            "--window",
            "1000",
            "--left-types",
            "SCHEDULE",
        ],
        edits: &[("window", "1000"), ("left_types", "[\"SCHEDULE\"]")],
        late: true,
    },
    Setting {
        name: "stream join of starts with ends within 60 s, other store and topic names",
        config: "stream-join",
        flags: &[
            "--operator",
            "stream-join",
            "--window",
            "60000",
            "--left-types",
            "SUBMIT,SCHEDULE",
            "--right-types",
            "FINISH,KILL,FAIL,EVICT",
            "--store",
            "jobs",
            "--right-topic",
            "ends",
        ],
        edits: &[
            ("window", "60000"),
            ("left_types", "[\"SUBMIT\", \"SCHEDULE\"]"),
            ("right_types", "[\"FINISH\", \"KILL\", \"FAIL\", \"EVICT\"]"),
            ("store", "\"jobs\""),
            ("right_topic", "\"ends\""),
        ],
        late: false,
    },
];

/// What one setting's run reads: the agent, the job's class path and the two inputs.
struct Inputs<'a> {
    agent: &'a std::path::Path,
    classpath: &'a str,
    borg: &'a std::path::Path,
    late: &'a std::path::Path,
}

/// Records `setting` in `work` and compares the recording with Gadget's trace: `None` when
/// identical, else the diff's report.
fn check(setting: &Setting, work: &std::path::Path, inputs: &Inputs<'_>) -> Option<String> {
    let state = work.join("state");
    let traces = work.join("traces");
    std::fs::create_dir_all(&state).unwrap();
    let (input, order): (&std::path::Path, &[&str]) = if setting.late {
        (inputs.late, &["--order", "file"])
    } else {
        (inputs.borg, &[])
    };
    let run = Command::cargo_bin("gadget")
        .unwrap()
        .args(["record", "kafka-streams", "--json", "--agent"])
        .arg(inputs.agent)
        .arg("--state-dir")
        .arg(&state)
        .arg("--out")
        .arg(&traces)
        .args(["--", "java"])
        .args(recording::QUICK_JVM)
        .args(["-cp", inputs.classpath])
        .arg("gadget.recorder.examples.kafka.ReferenceStreams")
        .arg("--input")
        .arg(input)
        .arg("--state-dir")
        .arg(&state)
        .args(setting.flags)
        .args(order)
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
    let base = common::project_root()
        .join("examples/kafka-streams-reference")
        .join(format!("{}.toml", setting.config));
    let mut edits = setting.edits.to_vec();
    if setting.late {
        edits.push(("source.order", "\"file\""));
    }
    let config = config_edit::edited(&base, input, &edits);
    let generated = generate(&config, work, setting.name);
    let mut diff: Vec<&str> = vec!["--reads"];
    if !matches!(setting.config, "count" | "aggregate") {
        diff.extend(WINDOWED_DIFF);
    }
    // the same requests, each get finding what Kafka Streams' did
    let (same, report) = trace_diff(&generated, &recorded, &diff);
    eprintln!("{}: {}", setting.name, report.lines().nth(2).unwrap_or(""));
    (!same).then(|| format!("{}:\n{report}", setting.name))
}

#[test]
fn recording_kafka_streams_reproduces_gadget_request_for_request() {
    let test = "Kafka Streams recorder";
    let Some(shared) = common::shared_dir(test) else {
        return;
    };
    if !have("java", test) || !have("mvn", test) {
        return;
    }
    let (agent, classpath) = kafka_streams_job::build(&common::project_root());
    let borg = shared.join("data/borg-jobs.csv.gz");
    let dir = tempfile::tempdir().unwrap();
    // every tenth record 7 s late: windows close before some of their records arrive
    let late = late_input::late_input(&borg, dir.path(), 7_000_000, "late.csv");
    let inputs = Inputs {
        agent: &agent,
        classpath: &classpath,
        borg: &borg,
        late: &late,
    };
    let settings = settings_share::this_runs_share(SETTINGS, "Kafka Streams recorder");
    let failed = two_at_a_time::two_at_a_time(&settings, |i, setting| {
        check(setting, &dir.path().join(i.to_string()), &inputs)
    });
    assert!(
        failed.is_empty(),
        "recordings that are not Gadget's trace:\n{}",
        failed.join("\n")
    );
}
