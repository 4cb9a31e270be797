//! Which part of a split run a results file holds, as its command line says: a shard of its
//! workload (`--shard I/N`), a subtask of its parallel job (`--subtask I`, of `--parallelism P`
//! or the config's), both or neither. Read and checked when the file is merged: a part the
//! run could not have been (`--shard 3/3`, `--subtask 5` of `--parallelism 2`) is refused.

use gadget::key::UPPER_BOUND_MAX_PARALLELISM;

use crate::shard::Shard;
use gadget_results::RunReport;

use super::MergeError;

/// The part of a split run a results file holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Part {
    /// `--shard I/N`.
    pub(super) shard: Option<Shard>,
    /// `--subtask I`.
    pub(super) subtask: Option<u32>,
    /// `--parallelism P`.
    pub(super) parallelism: Option<u32>,
}

impl Part {
    /// The part `r` (read from `file`) ran, from its `context.command_line` (none without a
    /// context); an error names the file and the flag when the part is not one of a run.
    pub(super) fn of(file: &str, r: &RunReport) -> Result<Part, MergeError> {
        let Some(c) = &r.context else {
            return Ok(Part::default());
        };
        let line = &c.command_line;
        let refuse = |message: String| MergeError::BadField {
            file: file.to_string(),
            field: "context.command_line".into(),
            message: format!(
                "{message}; `gadget run` refuses such a part, so the file was changed after it \
                 wrote it: use the file as written"
            ),
        };
        let shard = flag_value(line, "--shard")
            .map(|v| v.parse::<Shard>().map_err(|e| refuse(format!("says {e}"))))
            .transpose()?;
        let number = |flag: &str, min: u32| -> Result<Option<u32>, MergeError> {
            flag_value(line, flag)
                .map(|v| {
                    v.trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n >= min)
                        .ok_or_else(|| {
                            refuse(format!(
                                "says {flag} {v:?}, which is not a whole number from {min}"
                            ))
                        })
                })
                .transpose()
        };
        let parallelism = number("--parallelism", 1)?;
        if let Some(p) = parallelism.filter(|&p| p > UPPER_BOUND_MAX_PARALLELISM) {
            return Err(refuse(format!(
                "says --parallelism {p}, above the {UPPER_BOUND_MAX_PARALLELISM} a job may have"
            )));
        }
        let subtask = number("--subtask", 0)?;
        if let (Some(i), Some(p)) = (subtask, parallelism) {
            if i >= p {
                return Err(refuse(format!(
                    "says --subtask {i} of --parallelism {p}: a subtask is from 0 to {}, below \
                     the parallelism",
                    p - 1
                )));
            }
        }
        Ok(Part {
            shard,
            subtask,
            parallelism,
        })
    }

    /// True for a part of a split run.
    pub(super) fn is_split(&self) -> bool {
        self.shard.is_some() || self.subtask.is_some()
    }

    /// The parts of a split run that `parts` (one run's, agreeing on the split) lack: shards
    /// of each subtask given, and subtasks when `--parallelism` says how many there are.
    pub(super) fn missing(parts: &[Part]) -> Vec<String> {
        let mut missing = Vec::new();
        let mut subtasks: Vec<Option<u32>> = parts.iter().map(|p| p.subtask).collect();
        subtasks.sort_unstable();
        subtasks.dedup();
        if let Some(count) = parts.first().and_then(|p| p.shard).map(|s| s.count) {
            for &subtask in &subtasks {
                for index in 0..count {
                    let shard = Some(Shard { index, count });
                    if !parts
                        .iter()
                        .any(|p| p.subtask == subtask && p.shard == shard)
                    {
                        let part = Part {
                            shard,
                            subtask,
                            parallelism: None,
                        };
                        missing.push(part.to_string());
                    }
                }
            }
        }
        if let Some(p) = parts
            .first()
            .filter(|p| p.shard.is_none() && p.subtask.is_some())
            .and_then(|p| p.parallelism)
        {
            for i in 0..p {
                if !parts.iter().any(|x| x.subtask == Some(i)) {
                    missing.push(format!("subtask {i}"));
                }
            }
        }
        missing
    }
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.shard, &self.subtask) {
            (Some(s), Some(t)) => write!(f, "shard {s} of subtask {t}"),
            (Some(s), None) => write!(f, "shard {s}"),
            (None, Some(t)) => write!(f, "subtask {t}"),
            (None, None) => write!(f, "the whole workload"),
        }
    }
}

/// The value of `flag` on a command line (`--flag V` or `--flag=V`; the last one given).
fn flag_value<'a>(line: &'a [String], flag: &str) -> Option<&'a str> {
    let mut value = None;
    for (i, arg) in line.iter().enumerate() {
        if arg == flag {
            value = line.get(i + 1).map(String::as_str);
        } else if let Some(v) = arg.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            value = Some(v);
        }
    }
    value
}
