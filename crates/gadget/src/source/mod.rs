//! Event sources: files and synthetic generators (YSB's ad events among them), with watermarks.

pub mod distribution;
pub mod element;
pub mod file;
pub mod interleave;
pub mod random;
pub mod subtask;
pub mod synthetic;
pub mod ysb;

use std::path::PathBuf;

/// Why an event source could not deliver its events.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The input file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The input file named in a config could not be opened.
    #[error("{origin}: cannot read {path}: {source}")]
    Open {
        /// Where the config names the file, like `job.toml:7: `source.path``.
        origin: String,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A synthetic source's parameters are invalid.
    #[error(transparent)]
    Distribution(#[from] distribution::DistributionError),
    /// A row of the input file does not fit the configured column map.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong and what to change.
        message: String,
    },
}

/// A stream of events and watermarks, in arrival order.
pub type ElementStream = Box<dyn Iterator<Item = Result<StreamElement, SourceError>>>;

pub use element::{Event, StreamElement};
