//! What a run of an experiment reads: its command line and each file it is given, resolved and
//! hashed, so that `gadget bench --resume` keeps a finished run only when running it again
//! would run the same thing (a moved experiment file resolves its relative paths elsewhere; a
//! trace replaced in place has other bytes).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::experiment::file::{Experiment, WorkloadFile};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use super::plan::{Cell, Plan};

/// A file a run reads, as it was when the run was planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// Its path, resolved (absolute, links followed).
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// XXH3-128 of its content, hex.
    pub xxh3: String,
}

/// What a run reads (`runs/ID.inputs.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInputs {
    /// The `gadget` arguments, its results file left out (the folder may move).
    pub arguments: Vec<String>,
    /// The files among them.
    pub files: Vec<InputFile>,
}

/// Why the inputs of a run could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A file the experiment names cannot be read.
    #[error("{origin}: cannot read {}: {source}; fix the path (relative paths start from the experiment file's folder)", path.display())]
    Unreadable {
        /// Where the experiment names it.
        origin: String,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Ctrl-C came while hashing.
    #[error("stopped while reading the experiment's input files")]
    Stopped,
}

/// Hashes each file once, however many cells read it.
#[derive(Debug, Default)]
pub struct Hashes {
    known: BTreeMap<PathBuf, InputFile>,
}

impl Hashes {
    /// What `cell` of `e` reads.
    pub fn of_cell(
        &mut self,
        e: &Experiment,
        cell: &Cell,
        stop: &AtomicBool,
    ) -> Result<RunInputs, InputError> {
        let workload = &e.workloads[cell.workload];
        let paths: Vec<&PathBuf> = match &workload.file {
            WorkloadFile::Config(configs) => configs.iter().collect(),
            WorkloadFile::Trace(trace) => vec![trace],
        };
        // the files count by what they resolve to (below), not by how the path is written
        // from the current folder; the results file does not count (the folder may move)
        let arguments = Plan::arguments(e, cell, &cell.id, Path::new(""))
            .into_iter()
            .filter(|a| !a.as_encoded_bytes().starts_with(b"--output="))
            .filter(|a| !paths.iter().any(|p| p.as_os_str() == a))
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            files.push(self.file(path, &workload.origin, stop)?);
        }
        Ok(RunInputs { arguments, files })
    }

    fn file(
        &mut self,
        path: &Path,
        origin: &str,
        stop: &AtomicBool,
    ) -> Result<InputFile, InputError> {
        if let Some(known) = self.known.get(path) {
            return Ok(known.clone());
        }
        let unreadable = |source| InputError::Unreadable {
            origin: origin.to_string(),
            path: path.to_path_buf(),
            source,
        };
        let resolved = std::fs::canonicalize(path).map_err(unreadable)?;
        let mut file = std::fs::File::open(&resolved).map_err(unreadable)?;
        let mut hasher = Xxh3::new();
        let mut buffer = vec![0u8; 1 << 20];
        let mut bytes = 0u64;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(InputError::Stopped);
            }
            let n = file.read(&mut buffer).map_err(unreadable)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            bytes += n as u64;
        }
        let input = InputFile {
            path: resolved.display().to_string(),
            bytes,
            xxh3: format!("{:032x}", hasher.digest128()),
        };
        self.known.insert(path.to_path_buf(), input.clone());
        Ok(input)
    }
}

/// The arguments of a run, for messages: `run a.toml --store=memory …`.
pub fn command_line(arguments: &[OsString]) -> String {
    arguments
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(dir: &Path, trace: &str) -> Experiment {
        let text = format!(
            "[[workload]]\nname = \"w\"\ntrace = \"{trace}\"\n[[store]]\nkind = \"memory\"\n"
        );
        Experiment::parse(&text, &dir.join("e.toml")).unwrap()
    }

    #[test]
    fn a_file_with_other_bytes_or_at_another_place_reads_differently() {
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        std::fs::write(dir.path().join("t.gtrace"), b"one").unwrap();
        let e = experiment(dir.path(), "t.gtrace");
        let plan = Plan::of(&e);
        let first = Hashes::default()
            .of_cell(&e, &plan.cells[0], &stop)
            .unwrap();
        assert_eq!(first.files[0].bytes, 3);
        assert!(!first.arguments.iter().any(|a| a.starts_with("--output")));
        std::fs::write(dir.path().join("t.gtrace"), b"two").unwrap();
        let replaced = Hashes::default()
            .of_cell(&e, &plan.cells[0], &stop)
            .unwrap();
        assert_ne!(first, replaced, "same size, other bytes");
        std::fs::create_dir(dir.path().join("moved")).unwrap();
        std::fs::write(dir.path().join("moved/t.gtrace"), b"two").unwrap();
        let moved = experiment(&dir.path().join("moved"), "t.gtrace");
        let elsewhere = Hashes::default()
            .of_cell(&moved, &Plan::of(&moved).cells[0], &stop)
            .unwrap();
        assert_ne!(replaced, elsewhere, "same bytes, another file");
    }

    #[test]
    fn a_missing_file_is_named_with_the_experiment_line_that_gives_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = experiment(dir.path(), "missing.gtrace");
        let plan = Plan::of(&e);
        let err = Hashes::default()
            .of_cell(&e, &plan.cells[0], &AtomicBool::new(false))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("e.toml:3:") && err.contains("trace`") && err.contains("missing.gtrace"),
            "{err}"
        );
    }
}
