//! [`ConfigError`]: why a config or experiment file cannot be used, naming the file, the line
//! and the key.

use std::path::PathBuf;

use super::MAX_CONFIG_BYTES;

/// Why a config cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Io {
        /// The config file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{path}:{line}: not valid TOML: {message}")]
    Syntax {
        /// The config file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// A key is unknown, missing or out of range.
    #[error("{path}:{line}: `{key}`: {message}")]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the key (or of its section when the key is missing).
        line: usize,
        /// The full key, like `operator.size`.
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The file is not UTF-8 text.
    #[error("{path}:{line}: byte {offset} is not UTF-8; configs are UTF-8 text (re-save the file as UTF-8)")]
    NotUtf8 {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// Offset of the first invalid byte from the start of the file.
        offset: usize,
    },
    /// The file is larger than a config can be (`/dev/zero`, a trace named as a config).
    #[error("{path} is over {MAX_CONFIG_BYTES} bytes, more than any config; is it the right file (a trace goes to `gadget replay`)?")]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A required key or section is absent (it has no line to point at).
    #[error("{path}: `{key}`: {message}")]
    Missing {
        /// The config file.
        path: PathBuf,
        /// The full key or section, like `operator.size` or `source`.
        key: String,
        /// What to add.
        message: String,
    },
    /// A command-line option that changes the config (such as `--input-passes`) does not apply.
    #[error("{flag}: {message}")]
    Option {
        /// The option.
        flag: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A `-p key=value` command-line override is malformed or invalid.
    #[error("-p {key}: {message}")]
    Override {
        /// The property.
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}
