//! A Spark query run as a parallel job: its shuffle partitions shared out among subtasks, each
//! with a trace of its own.
//!
//! What must hold, and is checked here, for every Spark query over five partitions, in
//! micro-batches by event count and by event time:
//! - a subtask's trace holds exactly the requests the query's one trace sends its
//!   partitions' state stores, in the same order: every subtask counts every event into the
//!   micro-batches, so its batches (and their watermarks) are the whole query's;
//! - its states are its own partitions' stores, and every partition is on exactly one subtask;
//! - each event is marked in exactly one subtask's trace, its row's partition's;
//! - one pass over the input (`AllSubtasks`) gives each subtask the trace generating it alone
//!   gives.

mod common;

use common::named_requests;
use gadget::config::{Config, SubtaskPart};

/// A query of five shuffle partitions over a Zipf stream, with operator `operator` and
/// micro-batches cut by `trigger`.
fn query(operator: &str, trigger: &str) -> String {
    let join = if operator.contains("join") {
        "left_fraction = 0.5\n"
    } else {
        ""
    };
    format!(
        r#"
engine = "spark"
seed = 11
[source]
type = "synthetic"
events = 4000
key_space = 300
{join}[source.keys]
distribution = "zipf"
s = 0.9
[source.gaps]
distribution = "exponential"
rate = 1.0
[operator]
{operator}
{trigger}
partitions = 5
"#
    )
}

/// Every Spark query, as `[operator]` lines.
const OPERATORS: [&str; 8] = [
    "type = \"tumbling-count\"\nsize = 100",
    "type = \"drop-duplicates-within-watermark\"\ndelay = 50",
    "type = \"stream-join\"\nwindow = 50\ndelay = 20",
    "type = \"flat-map-groups-with-state\"\ngap = 50",
    "type = \"session-count\"\ngap = 50",
    "type = \"transform-with-state\"\nstate = \"value\"\ngap = 50",
    "type = \"transform-with-state\"\nstate = \"list\"\ngap = 50",
    "type = \"transform-with-state\"\nstate = \"map\"\ngap = 50",
];

/// Micro-batches by event count and by event time.
const TRIGGERS: [&str; 2] = ["trigger_events = 300", "trigger_ms = 200"];

fn parse(text: &str) -> Config {
    Config::parse(text, std::path::Path::new("query.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// The partition a state store belongs to: `…StateStoreId(opId=0,partId=3,name=…)…` -> 3.
fn partition(state: &str) -> u32 {
    let from = state.find("partId=").unwrap() + "partId=".len();
    let digits: String = state[from..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

#[test]
fn each_subtasks_trace_is_what_the_query_sends_its_partitions_stores() {
    for operator in OPERATORS {
        for trigger in TRIGGERS {
            let text = query(operator, trigger);
            let (all, all_events) = named_requests(&parse(&text));
            assert!(all.len() > 1000, "{operator}: {} requests", all.len());
            for parallelism in [2u32, 3] {
                let mut job = parse(&text);
                job.set_parallelism(parallelism).unwrap();
                let (mut partitions_seen, mut requests_seen, mut events_seen) = (Vec::new(), 0, 0);
                for i in 0..parallelism {
                    let config = job.for_subtask(i).unwrap();
                    let SubtaskPart::Partitions(partitions) = config.subtask_part() else {
                        panic!("a Spark subtask holds shuffle partitions")
                    };
                    let (mine, events) = named_requests(&config);
                    let states = config.build_operator().states();
                    assert!(
                        states.iter().all(|s| partitions.contains(&partition(s))),
                        "{operator}, subtask {i}: {states:?} are its partitions' {partitions:?}"
                    );
                    let expected: Vec<_> = all
                        .iter()
                        .filter(|(state, ..)| partitions.contains(&partition(state)))
                        .cloned()
                        .collect();
                    assert!(!mine.is_empty(), "{operator}: subtask {i} of {parallelism}");
                    assert!(
                        mine == expected,
                        "{operator}, {trigger}, subtask {i} of {parallelism}: {} requests, the \
                         query's to its partitions {}",
                        mine.len(),
                        expected.len()
                    );
                    requests_seen += mine.len();
                    events_seen += events;
                    partitions_seen.extend(partitions);
                }
                partitions_seen.sort();
                assert_eq!(partitions_seen, [0, 1, 2, 3, 4], "{operator}");
                assert_eq!(
                    requests_seen,
                    all.len(),
                    "{operator}: every request is a subtask's"
                );
                assert_eq!(
                    events_seen, all_events,
                    "{operator}: each event marked once"
                );
            }
        }
    }
}

#[test]
fn one_pass_gives_each_subtask_the_trace_it_has_alone() {
    for operator in OPERATORS {
        let mut job = parse(&query(operator, TRIGGERS[0]));
        job.set_parallelism(3).unwrap();
        common::assert_one_pass_is_each_subtask_alone(&job, operator);
    }
}
