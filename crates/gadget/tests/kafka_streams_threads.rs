//! A Kafka Streams application run as a parallel job: each stream thread a subtask with a trace
//! of its own.
//!
//! What must hold, and is checked here, for every Kafka Streams operator over an input of five
//! partitions with a record cache small enough to evict:
//! - a thread's trace holds exactly the requests the application's one trace (every thread,
//!   interleaved by the input's order) sends its tasks' stores, in the same order: the tasks of
//!   one thread share its cache whichever way it is generated;
//! - its states are its own tasks' stores, and every task is on exactly one thread;
//! - one pass over the input (`AllSubtasks`) gives each thread the trace generating it alone
//!   gives.

mod common;

use common::named_requests;
use gadget::config::{Config, SubtaskPart};

/// An application of five partitions over a Zipf stream, with operator `operator`.
fn application(operator: &str) -> String {
    let join = if operator.contains("join") {
        "left_fraction = 0.5\n"
    } else {
        ""
    };
    format!(
        r#"
engine = "kafka-streams"
seed = 7
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
runner = "application"
partitions = 5
cache_bytes = 6000
"#
    )
}

/// Every Kafka Streams operator, as `[operator]` lines.
const OPERATORS: [&str; 6] = [
    "type = \"count\"",
    "type = \"aggregate\"\nbytes_per_record = 8",
    "type = \"tumbling-count\"\nsize = 100",
    "type = \"hopping-count\"\nsize = 100\nadvance = 50",
    "type = \"session-count\"\ngap = 50",
    "type = \"stream-join\"\nwindow = 50",
];

fn parse(text: &str) -> Config {
    Config::parse(text, std::path::Path::new("app.toml")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn each_threads_trace_is_what_the_application_sends_its_tasks_stores() {
    for operator in OPERATORS {
        for threads in [2u32, 3] {
            let text = application(operator);
            // the application on `threads` threads, in one trace
            let whole = parse(&text.replace(
                "partitions = 5",
                &format!("partitions = 5\nthreads = {threads}"),
            ));
            let (all, _) = named_requests(&whole);
            assert!(all.len() > 1000, "{operator}: {} requests", all.len());
            let mut job = parse(&text);
            job.set_parallelism(threads).unwrap();
            let mut tasks_seen = Vec::new();
            let mut requests_seen = 0;
            for thread in 0..threads {
                let config = job.for_subtask(thread).unwrap();
                let SubtaskPart::Tasks(tasks) = config.subtask_part() else {
                    panic!("a thread holds tasks")
                };
                let (mine, _) = named_requests(&config);
                let thread_states = config.build_operator().states();
                // a store's path names its task: `gadget/0_1/…`, or `0_1/…` for a segment slot
                let of_task = |state: &str| tasks.iter().any(|t| state.split('/').any(|p| p == t));
                assert!(
                    thread_states.iter().all(|s| of_task(s)),
                    "{operator}, thread {thread}: {thread_states:?} are its tasks' {tasks:?}"
                );
                let expected: Vec<_> = all
                    .iter()
                    .filter(|(state, ..)| of_task(state))
                    .cloned()
                    .collect();
                assert!(!mine.is_empty(), "{operator}: thread {thread} of {threads}");
                assert!(
                    mine == expected,
                    "{operator}, thread {thread} of {threads}: {} requests, the application's \
                     to its tasks {}",
                    mine.len(),
                    expected.len()
                );
                requests_seen += mine.len();
                tasks_seen.extend(tasks);
            }
            tasks_seen.sort();
            assert_eq!(
                tasks_seen,
                ["0_0", "0_1", "0_2", "0_3", "0_4"],
                "{operator}"
            );
            assert_eq!(
                requests_seen,
                all.len(),
                "{operator}: every request is a thread's"
            );
        }
    }
}

#[test]
fn one_pass_gives_each_thread_the_trace_it_has_alone() {
    for operator in OPERATORS {
        let mut job = parse(&application(operator));
        job.set_parallelism(3).unwrap();
        common::assert_one_pass_is_each_subtask_alone(&job, operator);
    }
}
