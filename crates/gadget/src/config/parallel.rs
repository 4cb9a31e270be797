//! A job's parallelism and which subtask a config generates (docs/scale-out.md#parallelism);
//! how the keyed operator splits into subtasks is its engine's
//! ([`crate::parallel::split::JobSplit`]).

use super::{Config, ConfigError, SubtaskPart};
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
        if parallelism > 1 {
            if let Some(problem) = self.operator.split().refusal(parallelism, max_parallelism) {
                return Err(flag(problem));
            }
        }
        self.parallel.parallelism = parallelism;
        self.parallel.subtask = None;
        self.json["parallelism"] = parallelism.into();
        let split = self.operator.split_mut();
        split.take_parallelism(parallelism, &mut self.json);
        if !split.owns_key_groups() {
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

    /// The keyed exchange to the job's subtasks, as its engine splits the job
    /// ([`crate::parallel::split::JobSplit::router`]).
    pub fn subtask_router(&self) -> SubtaskRouter {
        self.operator
            .split()
            .router(self.parallel.parallelism, self.max_parallelism)
    }

    /// The chosen subtask as `(index, parallelism)`; `None` at parallelism 1 or with no
    /// subtask chosen (the whole job).
    pub(crate) fn chosen_subtask(&self) -> Option<(u32, u32)> {
        let p = self.parallel.parallelism;
        self.parallel.subtask.filter(|_| p > 1).map(|i| (i, p))
    }

    /// The key groups of the chosen subtask: all of them at parallelism 1 or with no subtask
    /// chosen.
    pub fn key_groups(&self) -> KeyGroupRange {
        match self.chosen_subtask() {
            Some((i, p)) => KeyGroupRange::of_subtask(self.max_parallelism, p, i),
            None => KeyGroupRange::all(self.max_parallelism),
        }
    }

    /// What the chosen subtask holds: its key groups, its stream thread's tasks, or its
    /// shuffle partitions (all of them at parallelism 1 or with no subtask chosen).
    pub fn subtask_part(&self) -> SubtaskPart {
        self.operator.split().part(
            self.chosen_subtask().map(|(i, _)| i),
            self.parallel.parallelism,
            self.max_parallelism,
        )
    }

    /// The share of `stream` (a keyed input of the job) the chosen subtask receives; all of it
    /// at parallelism 1 or with no subtask chosen.
    pub(crate) fn subtask_share(&self, stream: ElementStream) -> ElementStream {
        match self.chosen_subtask() {
            Some((i, _)) => Box::new(SubtaskFilter::new(stream, self.subtask_router(), i)),
            None => stream,
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
