//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The Flink 1.20 reference recordings in `../shared/reference-traces/flink-1.20/`, each with
/// its config in `examples/flink-reference/<name>.toml`.
pub const REFERENCE_TRACES: &[&str] = &[
    "tumbling-incr",
    "tumbling-hol",
    "sliding-incr",
    "sliding-hol",
    "session-incr",
    "session-hol",
    "aggregation",
    "interval-join",
    "tumbling-incr.rocksdb-timers",
];

/// The project's root folder.
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared` beside the checkout, or `None` (test skipped) when it is missing outside CI.
///
/// With `CI=true` a missing folder fails the test: CI always has it.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let dir = project_root().join("../shared");
    if dir.join("data").is_dir() && dir.join("reference-traces").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "{test}: {} is missing, but CI=true: CI must provide ../shared beside the checkout",
            dir.display()
        );
    }
    eprintln!(
        "skipping {test}: {} (the Borg trace and Flink's recordings) is not beside this checkout",
        dir.display()
    );
    None
}

/// Writes `events.csv` in `dir` (no header): 3,000 rows of a key (0–49), a time in µs (20 s
/// apart, so windows, segments and sessions come and go) and a Borg event type (`SUBMIT`,
/// `SCHEDULE`, `FINISH`, `FAIL`), the columns of the bundled reference configs; its path.
pub fn events_csv(dir: &std::path::Path) -> PathBuf {
    let types = ["SUBMIT", "SCHEDULE", "FINISH", "FAIL"];
    let rows: String = (0..3000u64)
        .map(|i| {
            format!(
                "{},{},{}\n",
                i * 7 % 50,
                i * 20_000_000,
                types[i as usize % 4]
            )
        })
        .collect();
    let path = dir.join("events.csv");
    std::fs::write(&path, rows).unwrap();
    path
}

/// What a trace held, read back.
#[derive(Debug, Default)]
pub struct ReadBack {
    /// Its requests.
    pub requests: u64,
    /// The names of its states: the header's and those its `open`s gave.
    pub names: Vec<String>,
}

/// Generates `config`'s trace (its first `elements` events and watermarks, at most `limit`
/// requests) in the binary and the text format, and reads each back to its end with the
/// trace reader: every record must read, and as many as were generated. An error says what
/// went wrong; a config whose source cannot open gives an empty read.
pub fn generate_and_read_back(
    config: &gadget::config::Config,
    limit: u64,
) -> Result<ReadBack, String> {
    generate_and_read_back_first(config, limit, u64::MAX)
}

/// [`generate_and_read_back`] of the source's first `elements` elements only.
pub fn generate_and_read_back_first(
    config: &gadget::config::Config,
    limit: u64,
    elements: u64,
) -> Result<ReadBack, String> {
    use gadget::trace::{BinaryTraceWriter, RecordRef, TextTraceWriter, TraceFooter, TraceReader};
    let mut read = ReadBack::default();
    for binary in [true, false] {
        let Ok(source) = config.open_source() else {
            return Ok(ReadBack::default());
        };
        let source = Box::new(source.take(elements as usize));
        let mut operator = config.build_operator();
        let header = config.trace_header(operator.states());
        let (generated, bytes) = if binary {
            let mut w = BinaryTraceWriter::new(Vec::new(), &header)
                .map_err(|e| format!("the binary writer refused the header: {e}"))?;
            let Ok(g) = gadget::generate::generate(
                source,
                operator.as_mut(),
                &mut w,
                Some(limit),
                &mut |_| {},
            ) else {
                return Ok(ReadBack::default());
            };
            let bytes = w
                .finish(TraceFooter::new(g.truncated))
                .map_err(|e| format!("the binary writer refused a record: {e}"))?;
            (g, bytes)
        } else {
            let mut w = TextTraceWriter::new(Vec::new(), &header)
                .map_err(|e| format!("the text writer refused the header: {e}"))?;
            let Ok(g) = gadget::generate::generate(
                source,
                operator.as_mut(),
                &mut w,
                Some(limit),
                &mut |_| {},
            ) else {
                return Ok(ReadBack::default());
            };
            let bytes = w
                .finish(TraceFooter::new(g.truncated))
                .map_err(|e| format!("the text writer refused a record: {e}"))?;
            (g, bytes)
        };
        let format = if binary { "binary" } else { "text" };
        let mut reader = TraceReader::from_reader(std::io::Cursor::new(bytes))
            .map_err(|e| format!("the {format} trace's header does not read: {e}"))?;
        let mut names = reader.state_names().to_vec();
        let (mut requests, mut events, mut watermarks) = (0u64, 0u64, 0u64);
        while let Some(record) = reader
            .next_record()
            .map_err(|e| format!("the {format} trace does not read back: {e}"))?
        {
            match record {
                RecordRef::Access(a) => {
                    requests += 1;
                    if a.op == gadget::access::Op::Open {
                        names.push(String::from_utf8_lossy(a.key).into_owned());
                    }
                }
                RecordRef::Event { .. } => events += 1,
                RecordRef::Watermark { .. } => watermarks += 1,
            }
        }
        let c = &generated.counts;
        if (requests, events, watermarks) != (c.requests(), c.events, c.watermarks) {
            return Err(format!(
                "the {format} trace reads back {requests} requests, {events} events and \
                 {watermarks} watermarks, of {} , {} and {} generated",
                c.requests(),
                c.events,
                c.watermarks
            ));
        }
        read = ReadBack { requests, names };
    }
    Ok(read)
}

/// The trace of `config` (of its chosen subtask; of the whole job with none chosen).
pub fn trace(config: &gadget::config::Config) -> Vec<gadget::access::TraceRecord> {
    let mut operator = config.build_operator();
    let mut sink = gadget::access::VecSink::default();
    gadget::generate::generate(
        config.open_source().unwrap(),
        operator.as_mut(),
        &mut sink,
        None,
        &mut |_| {},
    )
    .unwrap();
    sink.records
}

/// A request by its state's name: state, op, key, value size.
pub type NamedRequest = (String, gadget::access::Op, Vec<u8>, u32);

/// The requests of `config`'s trace (of its chosen subtask) by state name, and its event
/// markers.
pub fn named_requests(config: &gadget::config::Config) -> (Vec<NamedRequest>, u64) {
    use gadget::access::TraceRecord;
    let states = config.build_operator().states();
    let mut events = 0;
    let requests = trace(config)
        .into_iter()
        .filter_map(|r| match r {
            TraceRecord::Access {
                op,
                state,
                key,
                value_len,
            } => Some((states[state as usize].clone(), op, key, value_len)),
            TraceRecord::Event { .. } => {
                events += 1;
                None
            }
            TraceRecord::Watermark { .. } => None,
        })
        .collect();
    (requests, events)
}

/// Asserts that one pass over `job`'s input (`AllSubtasks`, on two threads) gives each of its
/// subtasks the trace generating it alone gives, each with events; `what` names the job in a
/// failure.
pub fn assert_one_pass_is_each_subtask_alone(job: &gadget::config::Config, what: &str) {
    let p = job.parallel.parallelism;
    let configs: Vec<gadget::config::Config> =
        (0..p).map(|i| job.for_subtask(i).unwrap()).collect();
    let build = |i: u32| configs[i as usize].build_operator();
    let mut sinks: Vec<gadget::access::VecSink> = (0..p).map(|_| Default::default()).collect();
    let all = gadget::parallel::AllSubtasks {
        router: job.subtask_router(),
        build_operator: &build,
        limit: None,
        threads: 2,
    };
    let generated = all
        .generate(
            job.open_job_inputs().unwrap(),
            &mut sinks,
            &mut |_| {},
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap();
    for (i, (sink, generated)) in sinks.iter().zip(&generated).enumerate() {
        let alone = trace(&configs[i]);
        assert!(
            sink.records == alone,
            "{what}: subtask {i} in one pass ({} records) and alone ({})",
            sink.records.len(),
            alone.len()
        );
        assert!(
            !generated.interrupted && generated.counts.events > 0,
            "{what}"
        );
    }
}
