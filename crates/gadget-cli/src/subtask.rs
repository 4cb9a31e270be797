//! `--parallelism` and `--subtask`: which part of a parallel job a command generates.

use std::path::{Path, PathBuf};

use anyhow::Context;
use gadget::config::Config;

/// `--subtask`: one subtask by its index, or every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubtaskChoice {
    /// Subtask `i` (from 0).
    One(u32),
    /// Every subtask (`all`).
    All,
}

/// Parses `--subtask`: an index from 0, or `all`.
pub fn parse(s: &str) -> Result<SubtaskChoice, String> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(SubtaskChoice::All);
    }
    s.parse::<u32>().map(SubtaskChoice::One).map_err(|_| {
        format!("{s:?} is no subtask; give an index from 0 (below the parallelism) or `all`")
    })
}

/// Applies `--parallelism` over the config's, then `--subtask`; the choice made (`One(0)` for a
/// job of one subtask given none). A job of several subtasks needs `--subtask`.
pub fn apply(
    config: &mut Config,
    parallelism: Option<u32>,
    subtask: Option<SubtaskChoice>,
    config_path: &Path,
) -> anyhow::Result<SubtaskChoice> {
    if let Some(p) = parallelism {
        config.set_parallelism(p)?;
    }
    let p = config.parallel.parallelism;
    let choice = match subtask {
        Some(choice) => choice,
        None if p == 1 => SubtaskChoice::One(0),
        None => anyhow::bail!(
            "{}: the job has parallelism {p}: choose a subtask with --subtask I (0 to {}), or \
             --subtask all for one trace per subtask",
            config_path.display(),
            p - 1
        ),
    };
    if let SubtaskChoice::One(i) = choice {
        config.select_subtask(i)?;
    }
    Ok(choice)
}

/// What part of a config `gadget run` drives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunPart {
    /// One subtask alone (`--subtask I`, or the one subtask of a job of parallelism 1), or a
    /// YCSB/KVBench workload (whole, or a keyspace shard).
    One,
    /// Subtasks of a parallel job, one instance each on the job's schedule: every one
    /// (`--parallelism P`) or a shard's (`--shard I/N`).
    Subtasks(std::ops::Range<u32>),
}

/// Applies `--parallelism` and `--subtask` for `gadget run`, and decides with `--shard` what
/// part of the config runs: a job of several subtasks without `--subtask` runs all of them,
/// or with `--shard I/N` the shard's range of them.
pub fn apply_for_run(
    config: &mut Config,
    parallelism: Option<u32>,
    subtask: Option<SubtaskChoice>,
    shard: Option<gadget_eval::shard::Shard>,
    config_path: &Path,
) -> anyhow::Result<RunPart> {
    let keyspace = matches!(config.operator_name.as_str(), "ycsb" | "kvbench");
    if keyspace || subtask.is_some() {
        if subtask.is_some() && shard.is_some() && !keyspace {
            anyhow::bail!(
                "--shard chooses the subtasks of the job itself (a range of them per shard);                  give --shard I/N or --subtask I, not both"
            );
        }
        let choice = apply(config, parallelism, subtask, config_path)?;
        if choice == SubtaskChoice::All {
            anyhow::bail!(
                "--subtask all: gadget run drives every subtask when --subtask is left out                  (or a shard's with --shard I/N); gadget gen --subtask all writes every                  subtask's trace"
            );
        }
        return Ok(RunPart::One);
    }
    if let Some(p) = parallelism {
        config.set_parallelism(p)?;
    }
    let p = config.parallel.parallelism;
    if p == 1 && shard.is_none_or(|s| s.count == 1) {
        config.select_subtask(0)?;
        return Ok(RunPart::One);
    }
    let range = gadget_eval::job::JobSubtasks::of_shard(shard, p).with_context(|| {
        format!(
            "{}: a parallel job splits into shards by its subtasks",
            config_path.display()
        )
    })?;
    Ok(RunPart::Subtasks(range))
}

/// Where `--subtask all` writes subtask `i`'s trace: the index before the extension of `-o`
/// (`out/trace.gtrace` -> `out/trace.3.gtrace`; `out/trace` -> `out/trace.3`).
pub fn trace_path(output: &Path, i: u32) -> PathBuf {
    with_index(output, &i.to_string())
}

/// The traces of `parallelism` subtasks, as a summary names them: `out/trace.{0..3}.gtrace`.
pub fn trace_paths(output: &Path, parallelism: u32) -> String {
    let last = parallelism.saturating_sub(1);
    with_index(output, &format!("{{0..{last}}}"))
        .display()
        .to_string()
}

fn with_index(output: &Path, index: &str) -> PathBuf {
    let stem = output.file_stem().unwrap_or(output.as_os_str());
    let mut name = stem.to_os_string();
    name.push(format!(".{index}"));
    if let Some(extension) = output.extension() {
        name.push(".");
        name.push(extension);
    }
    output.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_goes_before_the_extension() {
        let path = |s: &str, i| trace_path(Path::new(s), i);
        assert_eq!(path("out/trace.gtrace", 0), Path::new("out/trace.0.gtrace"));
        assert_eq!(
            path("out/trace.gtrace", 12),
            Path::new("out/trace.12.gtrace")
        );
        assert_eq!(
            path("t.rocksdb-timers.txt", 1),
            Path::new("t.rocksdb-timers.1.txt")
        );
        assert_eq!(path("out/trace", 2), Path::new("out/trace.2"));
        assert_eq!(path("trace.gtrace", 3), Path::new("trace.3.gtrace"));
        assert_eq!(
            trace_paths(Path::new("out/t.gtrace"), 4),
            "out/t.{0..3}.gtrace"
        );
    }

    #[test]
    fn a_subtask_is_an_index_or_all() {
        assert_eq!(parse("all"), Ok(SubtaskChoice::All));
        assert_eq!(parse("3"), Ok(SubtaskChoice::One(3)));
        assert!(parse("-1").unwrap_err().contains("`all`"));
    }
}
