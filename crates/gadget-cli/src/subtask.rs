//! `--parallelism` and `--subtask`: which part of a parallel job a command generates.

use std::path::{Path, PathBuf};

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
