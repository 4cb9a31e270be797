//! The error type of trace reading, writing and conversion.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong with a trace file.
///
/// Messages name the position (byte offset for the binary format, line number for the text
/// format) and say what is wrong, so they can be shown to a user as they are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The input ended before the trace did.
    #[error(
        "trace truncated at byte {offset}: {what}; the file was probably cut short, regenerate it"
    )]
    Truncated {
        /// Byte offset (in the uncompressed stream) where the data ran out.
        offset: u64,
        /// What was being read.
        what: String,
    },
    /// A block's checksum does not match its contents.
    #[error(
        "corrupted block at byte {offset}: checksum mismatch (stored {stored:08x}, computed \
         {computed:08x}); the file is damaged, regenerate it"
    )]
    ChecksumMismatch {
        /// Byte offset of the block.
        offset: u64,
        /// The CRC32 stored in the block header.
        stored: u32,
        /// The CRC32 of the bytes actually read.
        computed: u32,
    },
    /// Bytes that cannot be what the binary format says is there.
    #[error("corrupted trace at byte {offset}: {what}")]
    Corrupt {
        /// Byte offset of the offending data.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// The input is not a trace at all (or not one this version of Gadget knows).
    #[error("not a Gadget trace (byte {offset}): {what}")]
    NotATrace {
        /// Byte offset where recognition failed (usually 0).
        offset: u64,
        /// What was found instead.
        what: String,
    },
    /// The trace was written in a format version this build cannot read.
    #[error(
        "unsupported trace format version {version} at byte {offset} (this Gadget reads versions \
         1 to {supported}); convert it with a newer Gadget or regenerate it"
    )]
    UnsupportedVersion {
        /// Where the version number is.
        offset: u64,
        /// The version found in the file.
        version: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A malformed line of a text trace.
    #[error("malformed trace at line {line}: {what}")]
    Syntax {
        /// One-based line number.
        line: u64,
        /// What is wrong.
        what: String,
    },
    /// A text trace that stops before its footer.
    #[error(
        "trace truncated at line {line}: {what}; the file was probably cut short, regenerate it"
    )]
    TruncatedText {
        /// One-based line number where the data ran out.
        line: u64,
        /// What was missing.
        what: String,
    },
    /// An I/O error while reading, at a byte offset of the stream.
    #[error("I/O error reading the trace at byte {offset}: {source}")]
    ReadAt {
        /// Byte offset (uncompressed) where the read failed.
        offset: u64,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An I/O error while reading, at a line of a text trace.
    #[error("I/O error reading the trace at line {line}: {source}")]
    ReadLine {
        /// One-based line number being read.
        line: u64,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An I/O error while writing.
    #[error("I/O error writing the trace after {records} records: {source}")]
    Write {
        /// Records (requests and markers) handed to the writer before the failure.
        records: u64,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A file could not be opened, created or renamed.
    #[error("{action} {}: {source}", path.display())]
    File {
        /// What was attempted ("cannot open", "cannot create", ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An error in a named file.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: Box<TraceError>,
    },
    /// Something handed to a writer cannot be represented in the trace.
    #[error("cannot write the trace: {0}")]
    InvalidInput(String),
    /// The work was stopped (Ctrl-C) before it was complete; the output was left as it was.
    #[error("stopped before the end: {} was not written", path.display())]
    Stopped {
        /// The output that was not written.
        path: PathBuf,
    },
    /// A reader was used again after it returned an error.
    #[error("the trace reader already failed (at byte/line reported before); reopen the file")]
    AlreadyFailed,
}

impl TraceError {
    /// Wraps the error with the file it concerns (unless it already names one).
    pub fn in_file(self, path: impl Into<PathBuf>) -> TraceError {
        match self {
            e @ (TraceError::InFile { .. } | TraceError::File { .. }) => e,
            e => TraceError::InFile {
                path: path.into(),
                source: Box::new(e),
            },
        }
    }
}
