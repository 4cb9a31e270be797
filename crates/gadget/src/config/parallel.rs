//! A job's parallelism: how the keyed operator is split into subtasks, and which subtask a
//! config generates (docs/scale-out.md#parallelism).

use super::{Config, ConfigError, OperatorConfig};
use crate::engine::flink::FlinkOperator;
use crate::engine::kafka_streams::tasks::thread_of_key;
use crate::engine::kafka_streams::Runner;
use crate::key::{default_max_parallelism, KeyGroupRange, UPPER_BOUND_MAX_PARALLELISM};
use crate::source::subtask::{SubtaskFilter, SubtaskRouter};
use crate::source::ElementStream;

/// The keyed operator's parallelism and the subtask generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallelism {
    /// Subtasks of the keyed operator (`parallelism`; 1: one subtask has every key group).
    pub parallelism: u32,
    /// The subtask whose events and key groups are generated ([`Config::select_subtask`]);
    /// `None`: the job's whole stream (what `gadget analyze CONFIG` reads).
    pub subtask: Option<u32>,
    /// True when the config sets `max_parallelism`; otherwise it is Flink's default for the
    /// parallelism.
    pub max_parallelism_given: bool,
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism {
            parallelism: 1,
            subtask: None,
            max_parallelism_given: false,
        }
    }
}

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
    /// Its fields for a summary's JSON: `key_groups` (first and last) or `tasks`.
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

    /// What a table's column shows: `64-95`, or `0_1 0_3`.
    pub fn short(&self) -> String {
        match self {
            SubtaskPart::KeyGroups { range, .. } => format!("{}-{}", range.start, range.end),
            SubtaskPart::Tasks(tasks) => tasks.join(" "),
            SubtaskPart::Partitions(partitions) => {
                let listed: Vec<String> = partitions.iter().map(u32::to_string).collect();
                listed.join(" ")
            }
        }
    }

    /// The column's heading: `key groups` or `tasks`.
    pub fn heading(&self) -> &'static str {
        match self {
            SubtaskPart::KeyGroups { .. } => "key groups",
            SubtaskPart::Tasks(_) => "tasks",
            SubtaskPart::Partitions(_) => "partitions",
        }
    }
}

impl std::fmt::Display for SubtaskPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubtaskPart::KeyGroups { range, of } => {
                write!(f, "key groups {}-{} of {of}", range.start, range.end)
            }
            SubtaskPart::Tasks(tasks) => write!(f, "a stream thread: tasks {}", tasks.join(", ")),
            SubtaskPart::Partitions(partitions) => {
                let listed: Vec<String> = partitions.iter().map(u32::to_string).collect();
                write!(f, "shuffle partitions {}", listed.join(", "))
            }
        }
    }
}

/// Why `operator` cannot run as `parallelism` subtasks over `max_parallelism` key groups, or
/// `None` when it can.
pub(super) fn refusal(
    operator: &OperatorConfig,
    parallelism: u32,
    max_parallelism: u32,
) -> Option<String> {
    if parallelism <= 1 {
        return None;
    }
    Some(match operator {
        OperatorConfig::Ycsb(_) | OperatorConfig::Kvbench(_) => {
            "a YCSB or KVBench workload has no key groups to split among subtasks; \
             parallelism is for Flink's keyed operators"
                .to_string()
        }
        OperatorConfig::Flink(FlinkOperator::LookupJoin(_)) => {
            "the lookup-join splits its campaigns among the instances of `[run] instances` \
             (docs/external-state.md); parallelism is for the other keyed operators"
                .to_string()
        }
        OperatorConfig::Spark(spec) if spec.partitions < parallelism => format!(
            "a Spark query runs as {parallelism} subtasks of its shuffle partitions, a \
             partition's state stores on one subtask, and it has `partitions = {}` \
             (spark.sql.shuffle.partitions); raise `[operator] partitions` to {parallelism} or \
             more",
            spec.partitions
        ),
        OperatorConfig::Spark(_) => return None,
        OperatorConfig::KafkaStreams(spec) if spec.runner != Runner::Application => format!(
            "a Kafka Streams application runs as {parallelism} subtasks on as many stream \
             threads, and TopologyTestDriver has none: set `runner = \"application\"` and \
             `partitions` (the tasks the threads share) to {parallelism} or more"
        ),
        OperatorConfig::KafkaStreams(spec) if spec.partitions < parallelism => format!(
            "{parallelism} stream threads need a task each at least, and the input has \
             `partitions = {}` (a task each); raise `[operator] partitions` to {parallelism} or \
             more",
            spec.partitions
        ),
        OperatorConfig::KafkaStreams(_) => return None,
        OperatorConfig::Flink(FlinkOperator::Window { keyed: false, .. }) => {
            "a windowAll operator (keyed = false) runs as one subtask in Flink whatever the job's \
             parallelism; set keyed = true, or parallelism = 1"
                .to_string()
        }
        _ if parallelism > max_parallelism => format!(
            "{parallelism} subtasks need at least as many key groups, and max_parallelism is \
             {max_parallelism}; raise max_parallelism, or leave it out (Flink's default for \
             parallelism {parallelism} is {})",
            default_max_parallelism(parallelism)
        ),
        _ => return None,
    })
}

/// Applies a parallelism without key groups: a Kafka Streams application of parallelism
/// `parallelism` > 1 runs that many stream threads, each a subtask, so `operator`'s `threads`
/// becomes it, in `json` (the trace header's config) too; a Spark query's subtasks share out
/// its shuffle partitions. True for those two engines' operators, false for Flink's (whose
/// subtasks own key groups).
pub(super) fn subtasks_without_key_groups(
    operator: &mut OperatorConfig,
    json: &mut serde_json::Value,
    parallelism: u32,
) -> bool {
    match operator {
        OperatorConfig::KafkaStreams(spec) => {
            if parallelism > 1 {
                spec.threads = parallelism;
                json["operator"]["threads"] = parallelism.into();
            }
            true
        }
        OperatorConfig::Spark(_) => true,
        _ => false,
    }
}

impl Config {
    /// Runs the keyed operator as `parallelism` subtasks (`--parallelism`, over the config's
    /// `parallelism`); without a configured `max_parallelism` the number of key groups becomes
    /// Flink's default for it. A Kafka Streams application's subtasks are its stream threads:
    /// above 1 it sets `threads`. Chooses no subtask.
    pub fn set_parallelism(&mut self, parallelism: u32) -> Result<(), ConfigError> {
        let flag = |message: String| ConfigError::Option {
            flag: "--parallelism".into(),
            message,
        };
        if !(1..=UPPER_BOUND_MAX_PARALLELISM).contains(&parallelism) {
            return Err(flag(format!(
                "{parallelism} is out of range; allowed: [1, {UPPER_BOUND_MAX_PARALLELISM}]"
            )));
        }
        let max_parallelism = if self.parallel.max_parallelism_given {
            self.max_parallelism
        } else {
            default_max_parallelism(parallelism)
        };
        if let Some(problem) = refusal(&self.operator, parallelism, max_parallelism) {
            return Err(flag(problem));
        }
        self.parallel.parallelism = parallelism;
        self.parallel.subtask = None;
        self.json["parallelism"] = parallelism.into();
        if subtasks_without_key_groups(&mut self.operator, &mut self.json, parallelism) {
            return Ok(());
        }
        self.max_parallelism = max_parallelism;
        if !self.parallel.max_parallelism_given {
            // the default taken, for the trace's header (at parallelism 1 as before: none)
            if parallelism > 1 {
                self.json["max_parallelism"] = max_parallelism.into();
            } else if let Some(json) = self.json.as_object_mut() {
                json.remove("max_parallelism");
            }
        }
        Ok(())
    }

    /// Generates subtask `subtask` of the job (`--subtask`): its events and its key groups.
    pub fn select_subtask(&mut self, subtask: u32) -> Result<(), ConfigError> {
        let p = self.parallel.parallelism;
        if subtask >= p {
            return Err(ConfigError::Option {
                flag: "--subtask".into(),
                message: format!(
                    "{subtask} is not a subtask of this job of parallelism {p}; allowed: {}",
                    if p == 1 {
                        "0 (or all)".to_string()
                    } else {
                        format!("0 to {} (or all)", p - 1)
                    }
                ),
            });
        }
        self.parallel.subtask = Some(subtask);
        if p > 1 {
            self.json["subtask"] = subtask.into();
        }
        Ok(())
    }

    /// This config for subtask `subtask` ([`Config::select_subtask`]).
    pub fn for_subtask(&self, subtask: u32) -> Result<Config, ConfigError> {
        let mut config = self.clone();
        config.select_subtask(subtask)?;
        Ok(config)
    }

    /// The keyed exchange to the job's subtasks: by key group (Flink), by the input partition
    /// of a Kafka Streams task and the stream thread that runs it, or every event to every
    /// subtask (Spark's, each of which processes its own shuffle partitions' rows).
    pub fn subtask_router(&self) -> SubtaskRouter {
        match &self.operator {
            OperatorConfig::KafkaStreams(spec) => SubtaskRouter::by_partition(
                self.parallel.parallelism,
                spec.partitions,
                thread_of_key,
            ),
            OperatorConfig::Spark(_) => SubtaskRouter::to_every(self.parallel.parallelism),
            _ => SubtaskRouter::new(self.parallel.parallelism, self.max_parallelism),
        }
    }

    /// The key groups of the chosen subtask: all of them at parallelism 1 or with no subtask
    /// chosen.
    pub fn key_groups(&self) -> KeyGroupRange {
        match self.parallel.subtask {
            Some(i) if self.parallel.parallelism > 1 => {
                KeyGroupRange::of_subtask(self.max_parallelism, self.parallel.parallelism, i)
            }
            _ => KeyGroupRange::all(self.max_parallelism),
        }
    }

    /// What the chosen subtask holds: its key groups, its stream thread's tasks, or its
    /// shuffle partitions (all of them at parallelism 1 or with no subtask chosen).
    pub fn subtask_part(&self) -> SubtaskPart {
        match (&self.operator, self.parallel.subtask) {
            (OperatorConfig::KafkaStreams(spec), subtask) => SubtaskPart::Tasks(
                spec.thread_tasks(subtask.filter(|_| self.parallel.parallelism > 1)),
            ),
            (OperatorConfig::Spark(spec), subtask) => {
                SubtaskPart::Partitions(match subtask.filter(|_| self.parallel.parallelism > 1) {
                    Some(i) => spec.subtask_partitions(i, self.parallel.parallelism),
                    None => spec.subtask_partitions(0, 1),
                })
            }
            _ => SubtaskPart::KeyGroups {
                range: self.key_groups(),
                of: self.max_parallelism,
            },
        }
    }

    /// The share of `stream` (a keyed input of the job) the chosen subtask receives; all of it
    /// at parallelism 1 or with no subtask chosen.
    pub(crate) fn subtask_share(&self, stream: ElementStream) -> ElementStream {
        match self.parallel.subtask {
            Some(i) if self.parallel.parallelism > 1 => {
                Box::new(SubtaskFilter::new(stream, self.subtask_router(), i))
            }
            _ => stream,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const WINDOW: &str = r#"
seed = 3
[source]
type = "synthetic"
events = 2000
key_space = 300
[source.keys]
distribution = "uniform"
[source.gaps]
distribution = "constant"
value = 1
[operator]
type = "tumbling"
size = 1000
"#;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("job.toml"))
    }

    #[test]
    fn parallelism_defaults_to_one_and_max_parallelism_follows_flink() {
        let c = parse(WINDOW).unwrap();
        assert_eq!(c.parallel, Parallelism::default());
        assert_eq!(c.max_parallelism, 128);
        assert!(c.json.get("parallelism").is_none());

        let c = parse(&format!("parallelism = 100\n{WINDOW}")).unwrap();
        assert_eq!((c.parallel.parallelism, c.max_parallelism), (100, 256));
        assert_eq!(
            c.json["max_parallelism"], 256,
            "the default taken is recorded"
        );
        let c = parse(&format!(
            "parallelism = 100\nmax_parallelism = 100\n{WINDOW}"
        ))
        .unwrap();
        assert_eq!(c.max_parallelism, 100);

        let mut c = parse(WINDOW).unwrap();
        c.set_parallelism(200).unwrap();
        assert_eq!(c.max_parallelism, 512, "200 + 100 rounded up");
        assert_eq!(c.json["max_parallelism"], 512);
        c.set_parallelism(4).unwrap();
        assert_eq!(c.max_parallelism, 128);
        c.set_parallelism(1).unwrap();
        assert!(c.json.get("max_parallelism").is_none());
    }

    #[test]
    fn impossible_parallelisms_are_refused_with_what_to_do() {
        let e = parse(&format!(
            "parallelism = 200\nmax_parallelism = 128\n{WINDOW}"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("job.toml:1: `parallelism`: 200 subtasks need at least as many key groups, and max_parallelism is 128"),
            "{e}"
        );
        let all = WINDOW.replace("size = 1000", "size = 1000\nkeyed = false");
        let e = parse(&format!("parallelism = 2\n{all}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("windowAll"), "{e}");
        let mut c = parse(&all).unwrap();
        let e = c.set_parallelism(2).unwrap_err().to_string();
        assert!(e.starts_with("--parallelism: a windowAll"), "{e}");
        assert_eq!(c.parallel.parallelism, 1, "left as it was");
        let e = c.set_parallelism(0).unwrap_err().to_string();
        assert_eq!(e, "--parallelism: 0 is out of range; allowed: [1, 32768]");
    }

    #[test]
    fn a_subtask_outside_the_job_is_refused_with_the_allowed_range() {
        let mut c = parse(&format!("parallelism = 4\n{WINDOW}")).unwrap();
        let e = c.select_subtask(5).unwrap_err().to_string();
        assert_eq!(
            e,
            "--subtask: 5 is not a subtask of this job of parallelism 4; allowed: 0 to 3 (or all)"
        );
        c.select_subtask(3).unwrap();
        assert_eq!(c.key_groups(), KeyGroupRange::of_subtask(128, 4, 3));
        assert_eq!(c.json["subtask"], 3);
    }

    #[test]
    fn the_subtasks_streams_partition_the_jobs_events() {
        let job = parse(&format!("parallelism = 3\n{WINDOW}")).unwrap();
        let count = |c: &Config| {
            c.open_source()
                .unwrap()
                .map(|e| e.unwrap())
                .fold((0, 0), |(ev, wm), e| match e {
                    crate::source::StreamElement::Event(_) => (ev + 1, wm),
                    crate::source::StreamElement::Watermark(_) => (ev, wm + 1),
                })
        };
        let (events, watermarks) = count(&job);
        assert_eq!(events, 2000, "no subtask chosen: the whole stream");
        let mut sum = 0;
        for i in 0..3 {
            let (ev, wm) = count(&job.for_subtask(i).unwrap());
            assert_eq!(wm, watermarks, "subtask {i} sees every watermark");
            assert!(ev > 0);
            sum += ev;
        }
        assert_eq!(sum, events);
    }
}
