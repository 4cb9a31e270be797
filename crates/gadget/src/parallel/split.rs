//! How an engine splits a keyed operator into the subtasks of a parallel job
//! (docs/scale-out.md#parallelism): which parallelisms it can run at, what each subtask holds
//! of the job's state and which events reach it. Each engine answers in its own room
//! ([`JobSplit`]); the config asks it for every decision, so a new engine's parallel jobs are
//! one `impl` beside its operators.

use crate::key::KeyGroupRange;
use crate::source::subtask::SubtaskRouter;

/// An engine's way of running a keyed operator as `parallelism` subtasks. The provided
/// methods are Flink's: subtasks own ranges of key groups, and a key's events go to the
/// subtask whose range holds its key group.
pub trait JobSplit {
    /// Why the operator cannot run as `parallelism` (> 1) subtasks over `max_parallelism`
    /// key groups, saying what to change; `None` when it can.
    fn refusal(&self, parallelism: u32, max_parallelism: u32) -> Option<String>;

    /// Why the operator's own section disagrees with a config's `parallelism` (> 1) it can
    /// run at, saying what to change; `None` when it agrees. Asked of a config file only: a
    /// `--parallelism` flag overrides the section.
    fn disagreement(&self, _parallelism: u32) -> Option<String> {
        None
    }

    /// True when the subtasks own key groups, so that the job's `max_parallelism` applies
    /// (and is recorded in the trace's header).
    fn owns_key_groups(&self) -> bool {
        true
    }

    /// Takes a parallelism the operator can run at into its own settings, and into `json`
    /// (the config the trace's header records): Kafka Streams' stream threads.
    fn take_parallelism(&mut self, _parallelism: u32, _json: &mut serde_json::Value) {}

    /// The exchange of the job's events to its `parallelism` subtasks.
    fn router(&self, parallelism: u32, max_parallelism: u32) -> SubtaskRouter {
        SubtaskRouter::new(parallelism, max_parallelism)
    }

    /// What subtask `subtask` of `parallelism` holds; `None`: the whole job.
    fn part(&self, subtask: Option<u32>, parallelism: u32, max_parallelism: u32) -> SubtaskPart {
        SubtaskPart::KeyGroups {
            range: match subtask {
                Some(i) => KeyGroupRange::of_subtask(max_parallelism, parallelism, i),
                None => KeyGroupRange::all(max_parallelism),
            },
            of: max_parallelism,
        }
    }
}

/// Why a YCSB or KVBench client, one client issuing its operations, has no subtasks.
pub(crate) const CLIENT_REFUSAL: &str = "a YCSB or KVBench workload has no key groups to split \
     among subtasks; parallelism is for Flink's keyed operators";

/// What one subtask of a parallel job holds of the job's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubtaskPart {
    /// A Flink subtask's key groups, of `of`.
    KeyGroups {
        /// Its range.
        range: KeyGroupRange,
        /// The job's key groups (max parallelism).
        of: u32,
    },
    /// A Kafka Streams stream thread's tasks, by id (`0_1`).
    Tasks(Vec<String>),
    /// A Spark query's shuffle partitions.
    Partitions(Vec<u32>),
}

impl SubtaskPart {
    /// Its fields for a summary's JSON: `key_groups` (first and last), `tasks` or
    /// `partitions`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            SubtaskPart::KeyGroups { range, .. } => {
                serde_json::json!({ "key_groups": [range.start, range.end] })
            }
            SubtaskPart::Tasks(tasks) => serde_json::json!({ "tasks": tasks }),
            SubtaskPart::Partitions(partitions) => {
                serde_json::json!({ "partitions": partitions })
            }
        }
    }

    /// What a table's column shows: `64-95`, `0_1 0_3` or `1 3`.
    pub fn short(&self) -> String {
        match self {
            SubtaskPart::KeyGroups { range, .. } => format!("{}-{}", range.start, range.end),
            _ => self.listed(" "),
        }
    }

    /// The column's heading: `key groups`, `tasks` or `partitions`.
    pub fn heading(&self) -> &'static str {
        match self {
            SubtaskPart::KeyGroups { .. } => "key groups",
            SubtaskPart::Tasks(_) => "tasks",
            SubtaskPart::Partitions(_) => "partitions",
        }
    }

    /// The tasks or partitions, `separator` between them (none for key groups).
    fn listed(&self, separator: &str) -> String {
        match self {
            SubtaskPart::KeyGroups { .. } => String::new(),
            SubtaskPart::Tasks(tasks) => tasks.join(separator),
            SubtaskPart::Partitions(partitions) => {
                let listed: Vec<String> = partitions.iter().map(u32::to_string).collect();
                listed.join(separator)
            }
        }
    }
}

impl std::fmt::Display for SubtaskPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubtaskPart::KeyGroups { range, of } => {
                write!(f, "key groups {}-{} of {of}", range.start, range.end)
            }
            SubtaskPart::Tasks(_) => write!(f, "a stream thread: tasks {}", self.listed(", ")),
            SubtaskPart::Partitions(_) => write!(f, "shuffle partitions {}", self.listed(", ")),
        }
    }
}
