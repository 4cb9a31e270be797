//! A real `KafkaStreams` application recorded and reproduced: the test starts a single-node
//! KRaft broker (Kafka 4.4's `kafka.Kafka` from the reference job's class path, its storage
//! formatted first), and `gadget record kafka-streams --threads one` runs the reference job
//! with `--bootstrap`: it produces the Borg events to the input topic and runs the topology as
//! an application with one stream thread until it has processed them all, then closes it.
//!
//! With a commit interval longer than the run, the application commits only when it closes,
//! and each recording must be `gadget gen`'s trace of the matching config with
//! `runner = "application"`, request for request. With a commit interval of 100 ms the
//! commits fall among the records as wall-clock time decides, so the recording is bounded
//! instead: every request but the writes is identical, and the writes lie between those of one
//! commit at the end and those of a commit after every record.
//!
//! Needs `java` and `mvn` (and Maven Central the first time); without them the test is
//! skipped, except with `CI=true`, where it fails.

#[path = "../../gadget/tests/common.rs"]
mod common;
#[path = "support/config_edit.rs"]
mod config_edit;
#[path = "support/kafka_streams_job.rs"]
mod kafka_streams_job;
#[path = "support/recording.rs"]
mod recording;
#[path = "support/settings_share.rs"]
mod settings_share;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use recording::{generate, have, trace_diff};

/// How long the broker waits for a new group's members before its first assignment: every
/// stream thread of an application joins in that time, so that no task moves from one
/// thread to another once started (which would close and reopen its stores).
const REBALANCE_DELAY_MS: u64 = 3000;

/// A single-node KRaft broker (broker and controller in one process), killed when dropped.
struct Broker {
    child: Child,
    port: u16,
}

impl Broker {
    /// Formats a log directory below `dir` and starts the broker from `classpath`; returns
    /// once it accepts connections (at most 120 s).
    fn start(dir: &Path, classpath: &str) -> Broker {
        let (port, controller) = (free_port(), free_port());
        let logs = dir.join("logs");
        let properties = dir.join("server.properties");
        std::fs::write(
            &properties,
            format!(
                "process.roles=broker,controller\n\
                 node.id=1\n\
                 controller.quorum.voters=1@localhost:{controller}\n\
                 listeners=PLAINTEXT://localhost:{port},CONTROLLER://localhost:{controller}\n\
                 advertised.listeners=PLAINTEXT://localhost:{port}\n\
                 controller.listener.names=CONTROLLER\n\
                 listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
                 log.dirs={}\n\
                 offsets.topic.replication.factor=1\n\
                 transaction.state.log.replication.factor=1\n\
                 transaction.state.log.min.isr=1\n\
                 group.initial.rebalance.delay.ms={REBALANCE_DELAY_MS}\n\
                 log.retention.ms=-1\n",
                logs.display()
            ),
        )
        .unwrap();
        let format = Command::new("java")
            .args(recording::QUICK_JVM)
            .args(["-cp", classpath, "kafka.tools.StorageTool", "format"])
            .args(["-t", "MkU3OEVBNTcwNTJENDM2Qk", "-c"])
            .arg(&properties)
            .output()
            .unwrap();
        assert!(
            format.status.success(),
            "formatting the broker's storage failed: {}",
            String::from_utf8_lossy(&format.stderr)
        );
        let child = Command::new("java")
            .args(["-cp", classpath, "kafka.Kafka"])
            .arg(&properties)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut broker = Broker { child, port };
        let started = Instant::now();
        while TcpStream::connect(("localhost", port)).is_err() {
            if let Some(status) = broker.child.try_wait().unwrap() {
                panic!("the broker exited ({status}) before it listened on {port}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the broker did not listen on {port} within 120 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        broker
    }

    fn bootstrap(&self) -> String {
        format!("localhost:{}", self.port)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One recorded setting: the job's flags and the same setting as config edits.
struct Setting {
    name: &'static str,
    /// `examples/kafka-streams-reference/<config>.toml`.
    config: &'static str,
    flags: &'static [&'static str],
    edits: &'static [(&'static str, &'static str)],
}

/// An application over several partitions: a task per partition, on `threads` threads.
struct Partitioned {
    name: &'static str,
    /// `examples/kafka-streams-reference/<config>.toml`.
    config: &'static str,
    operator: &'static str,
    partitions: u32,
    threads: u32,
    /// Counted by the Borg user (column 3) instead of the job: `groupBy`, through a
    /// repartition topic to a second sub-topology (tasks `1_<i>`).
    regroup: bool,
}

/// Each task's requests must be identical to Gadget's, whatever the tasks' interleaving. CI
/// records one third of them, rotating by day (`support/settings_share.rs`), each third
/// with one and two threads; `scripts/record-all.sh kafka_streams_application` records all.
/// Every setting keeps the default cache, which evicts nothing over the Borg events: an
/// eviction in a thread's cache shared by several tasks depends on their interleaving.
const PARTITIONED: &[Partitioned] = &[
    Partitioned {
        name: "application: count over 2 partitions, 1 thread",
        config: "count",
        operator: "count",
        partitions: 2,
        threads: 1,
        regroup: false,
    },
    Partitioned {
        name: "application: 5 s tumbling count over 2 partitions, 2 threads",
        config: "tumbling-count",
        operator: "tumbling-count",
        partitions: 2,
        threads: 2,
        regroup: false,
    },
    Partitioned {
        name: "application: session count over 4 partitions, 2 threads",
        config: "session-count",
        operator: "session-count",
        partitions: 4,
        threads: 2,
        regroup: false,
    },
    Partitioned {
        name: "application: count by user, through a repartition topic of 2 partitions, 2 threads",
        config: "count",
        operator: "count",
        partitions: 2,
        threads: 2,
        regroup: true,
    },
    Partitioned {
        name: "application: count by user, through a repartition topic of 1 partition",
        config: "count",
        operator: "count",
        partitions: 1,
        threads: 1,
        regroup: true,
    },
    Partitioned {
        name: "application: count over 4 partitions, 1 thread",
        config: "count",
        operator: "count",
        partitions: 4,
        threads: 1,
        regroup: false,
    },
];

/// An hour between commits: the application commits only when it closes.
const NO_COMMITS: [&str; 2] = ["--commit-interval", "3600000"];

const SETTINGS: &[Setting] = &[
    Setting {
        name: "application: count, the default cache",
        config: "count",
        flags: &["--operator", "count"],
        edits: &[],
    },
    Setting {
        name: "application: aggregate (a list of times), a cache of 50,000 bytes",
        config: "aggregate",
        flags: &["--operator", "aggregate", "--cache-bytes", "50000"],
        edits: &[("cache_bytes", "50000")],
    },
    Setting {
        name: "application: 5 s tumbling count, the default cache",
        config: "tumbling-count",
        flags: &["--operator", "tumbling-count"],
        edits: &[],
    },
];

/// Runs the job with `flags` (and `--bootstrap`) under `gadget record kafka-streams
/// --threads one` in `work`; returns the trace.
fn record(
    broker: &Broker,
    agent: &Path,
    classpath: &str,
    borg: &Path,
    work: &Path,
    flags: &[&str],
) -> PathBuf {
    let state = work.join("state");
    let traces = work.join("traces");
    std::fs::create_dir_all(&state).unwrap();
    let run = Command::cargo_bin("gadget")
        .unwrap()
        .args(["record", "kafka-streams", "--threads", "one", "--agent"])
        .arg(agent)
        .arg("--state-dir")
        .arg(&state)
        .arg("--out")
        .arg(&traces)
        .args(["--", "java"])
        .args(recording::QUICK_JVM)
        .args(["-cp", classpath])
        .arg("gadget.recorder.examples.kafka.ReferenceStreams")
        .arg("--input")
        .arg(borg)
        .arg("--state-dir")
        .arg(&state)
        .args(["--bootstrap", &broker.bootstrap()])
        .args(flags)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "the application failed ({:?}): {}",
        flags,
        String::from_utf8_lossy(&run.stderr)
    );
    traces.join("all-threads.gtrace")
}

/// The config `examples/kafka-streams-reference/<config>.toml` run as an application, with
/// `edits`.
fn application_config(config: &str, borg: &Path, edits: &[(&str, &str)]) -> String {
    let base = common::project_root()
        .join("examples/kafka-streams-reference")
        .join(format!("{config}.toml"));
    // the test driver's commit per record goes; an edit may set another
    let mut all = vec![("commit_every", ""), ("runner", "\"application\"")];
    all.extend_from_slice(edits);
    config_edit::edited(&base, borg, &all)
}

/// The requests of `trace` (converted to text in `work`): `(puts, others)`.
fn puts_and_others(trace: &Path, work: &Path) -> (u64, u64) {
    let text = work.join("counted.trace.txt");
    let out = Command::cargo_bin("gadget")
        .unwrap()
        .args(["trace", "convert", "--format", "text", "--output"])
        .arg(&text)
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = std::fs::read_to_string(&text).unwrap();
    let requests = all.lines().filter(|l| !l.starts_with('#'));
    let (mut puts, mut others) = (0, 0);
    for line in requests {
        if line.starts_with("put\t") {
            puts += 1;
        } else {
            others += 1;
        }
    }
    (puts, others)
}

/// Records each of `settings` against `broker` and compares each task's requests with
/// Gadget's (`trace diff --per-instance`); returns the settings that differ, with the report.
fn partitioned_differences(
    broker: &Broker,
    agent: &Path,
    classpath: &str,
    borg: &Path,
    dir: &Path,
    settings: &[&Partitioned],
) -> Vec<String> {
    let mut failed = Vec::new();
    for (i, setting) in settings.iter().enumerate() {
        let work = dir.join(format!("partitioned-{i}"));
        let (partitions, threads) = (setting.partitions.to_string(), setting.threads.to_string());
        let mut flags = vec![
            "--operator",
            setting.operator,
            "--partitions",
            &partitions,
            "--threads",
            &threads,
            NO_COMMITS[0],
            NO_COMMITS[1],
        ];
        let mut edits = vec![
            ("partitions", partitions.as_str()),
            ("threads", threads.as_str()),
        ];
        if setting.regroup {
            flags.extend(["--regroup-column", "3"]);
            edits.extend([
                ("source.key_column", "3"),
                ("source.key_type", "\"string\""),
                ("repartition", "true"),
            ]);
        }
        let recorded = record(broker, agent, classpath, borg, &work, &flags);
        let config = application_config(setting.config, borg, &edits);
        let generated = generate(&config, &work, setting.name);
        // behind a repartition topic of several partitions, the records of the tasks before
        // it interleave into each of its partitions as the threads decide: each state key's
        // requests are the engine's, their order across keys is timing's
        if setting.regroup && setting.partitions > 1 {
            let (same, report) = trace_diff(
                &generated,
                &recorded,
                &[
                    "--per-key",
                    "--from-start",
                    "--json",
                    "--skip-ops",
                    "open,drop",
                ],
            );
            let json: serde_json::Value = serde_json::from_str(&report).unwrap();
            eprintln!(
                "{}: {} of {} state keys identical",
                setting.name, json["identical_keys"], json["state_keys"]
            );
            if !same {
                failed.push(format!("{}:\n{report}", setting.name));
            }
            continue;
        }
        let (same, report) = trace_diff(
            &generated,
            &recorded,
            &["--per-instance", "--json", "--skip-ops", "open,drop"],
        );
        let json: serde_json::Value = serde_json::from_str(&report).unwrap();
        // every task (of the sub-topology with the state) holds a store both traces use
        let sub_topology = u8::from(setting.regroup);
        let used = |t: u32| {
            json["instances"].as_array().unwrap().iter().any(|i| {
                i["instance"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("/{sub_topology}_{t}/"))
                    && i["requests_a"].as_u64() > Some(0)
                    && i["requests_b"].as_u64() > Some(0)
            })
        };
        let tasks = (0..setting.partitions).all(used);
        eprintln!(
            "{}: {} of {} store instances identical",
            setting.name,
            json["identical_instances"],
            json["instances"].as_array().map_or(0, Vec::len)
        );
        if !same || !tasks {
            failed.push(format!(
                "{} (every task used: {tasks}):\n{report}",
                setting.name
            ));
        }
    }
    failed
}

#[test]
fn a_kafka_streams_application_against_a_broker_reproduces_gadget() {
    let test = "Kafka Streams application";
    let Some(shared) = common::shared_dir(test) else {
        return;
    };
    if !have("java", test) || !have("mvn", test) {
        return;
    }
    let (agent, classpath) = kafka_streams_job::build(&common::project_root());
    let borg = shared.join("data/borg-jobs.csv.gz");
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path(), &classpath);
    let mut failed = Vec::new();
    for (i, setting) in SETTINGS.iter().enumerate() {
        let work = dir.path().join(i.to_string());
        let flags: Vec<&str> = setting.flags.iter().chain(&NO_COMMITS).copied().collect();
        let recorded = record(&broker, &agent, &classpath, &borg, &work, &flags);
        let config = application_config(setting.config, &borg, setting.edits);
        let generated = generate(&config, &work, setting.name);
        let (_, report) = trace_diff(&generated, &recorded, &["--skip-ops", "open,drop"]);
        eprintln!("{}: {}", setting.name, report.lines().nth(2).unwrap_or(""));
        if !report.contains("identical request sequences") {
            failed.push(format!("{}:\n{report}", setting.name));
        }
    }
    failed.extend(partitioned_differences(
        &broker,
        &agent,
        &classpath,
        &borg,
        dir.path(),
        &settings_share::this_runs_share(PARTITIONED, test),
    ));
    assert!(
        failed.is_empty(),
        "recordings that are not Gadget's trace:\n{}",
        failed.join("\n")
    );

    // commits every 100 ms of wall-clock time: where they fall is timing's, the rest is not
    let work = dir.path().join("wall-clock-commits");
    let flags = ["--operator", "count", "--commit-interval", "100"];
    let recorded = record(&broker, &agent, &classpath, &borg, &work, &flags);
    let fewest = generate(
        &application_config("count", &borg, &[]),
        &work,
        "one commit",
    );
    let (same, report) = trace_diff(&fewest, &recorded, &["--skip-ops", "put"]);
    assert!(
        same && report.contains("identical request sequences"),
        "with commits every 100 ms, the requests other than writes differ:\n{report}"
    );
    let most_work = work.join("most");
    std::fs::create_dir_all(&most_work).unwrap();
    let most = generate(
        &application_config("count", &borg, &[("commit_every", "1")]),
        &most_work,
        "a commit per record",
    );
    let (low, _) = puts_and_others(&fewest, &work);
    let (got, _) = puts_and_others(&recorded, &work);
    let (high, _) = puts_and_others(&most, &work);
    eprintln!("writes with commits every 100 ms: {got} (bounds {low} to {high})");
    assert!(
        low < got && got < high,
        "the recording's {got} writes are not between one commit's {low} and a commit per \
         record's {high}"
    );
}
