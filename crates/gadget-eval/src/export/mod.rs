//! Every results file and printed result goes out through here: one file per format, each an
//! [`Exporter`] of the documents it can write, as hyperfine's `export/` does. `run`, `replay`,
//! `bench` and `compare` write through the same code, so a format looks the same wherever it
//! comes from, and every file is written atomically (a temporary file beside it, renamed into
//! place when complete) with a fallback file when its destination fails.
//!
//! | format | run ([`RunReport`]) | experiment ([`ExperimentSummary`]) | comparison ([`Comparison`]) |
//! |---|---|---|---|
//! | [`Json`] | `-o`, `--json` | `summary.json`, `--json` | `--json` |
//! | [`Csv`] | `--csv` (time series) | `summary.csv` | |
//! | [`HdrLog`] | `--hdr-log` ([`HdrIntervals`]) | | |
//! | [`Markdown`] | | `summary.md`, printed | printed |
//! | [`Html`] | | `report.html` | |
//! | [`Text`] | printed | | |
//!
//! [`RunReport`]: gadget_results::RunReport
//! [`ExperimentSummary`]: crate::experiment::summary::ExperimentSummary
//! [`Comparison`]: crate::experiment::compare::Comparison

mod csv;
mod hdr_log;
mod html;
mod json;
mod markdown;
pub mod svg;
mod text;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use self::csv::Csv;
pub use self::hdr_log::{HdrIntervals, HdrLog};
pub use self::html::{comparison_plot, Html};
pub use self::json::Json;
pub use self::markdown::Markdown;
pub use self::text::Text;
pub use gadget::atomic::{AtomicFile, OutputFailure};

/// A format that can write documents of type `D`.
pub trait Exporter<D: ?Sized> {
    /// Writes `doc` to `out` in this format.
    fn export(&self, doc: &D, out: &mut dyn Write) -> io::Result<()>;
}

/// A file that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Its temporary file could not be created beside it.
    #[error("cannot write {}: {source}; check that its folder exists and is writable", path.display())]
    Create {
        /// The destination.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Writing failed; what it held went to a fallback file, which the message names.
    #[error(transparent)]
    Write(#[from] OutputFailure),
}

/// `doc` in `format`, as text to print.
pub fn render<D: ?Sized>(format: &impl Exporter<D>, doc: &D) -> String {
    let mut out = Vec::new();
    format
        .export(doc, &mut out)
        .expect("writing to memory cannot fail");
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes `doc` in `format` to `path`, atomically.
pub fn to_file<D: ?Sized>(
    format: &impl Exporter<D>,
    doc: &D,
    path: &Path,
) -> Result<(), ExportError> {
    let out = AtomicFile::create(path).map_err(|source| ExportError::Create {
        path: path.to_path_buf(),
        source,
    })?;
    to_prepared(format, doc, out).map_err(ExportError::from)
}

/// Writes `doc` in `format` to an output prepared before the work began (so that an
/// unwritable destination failed early); when writing fails now, the content goes to a
/// fallback file in the temporary directory, which the error names.
pub fn to_prepared<D: ?Sized>(
    format: &impl Exporter<D>,
    doc: &D,
    out: AtomicFile,
) -> Result<(), OutputFailure> {
    gadget::atomic::write_or_fall_back(out, |w| format.export(doc, w))
}

/// A latency and its 95% interval in one unit chosen by the value, with the precision that
/// unit needs: `412 ns [404, 420]`, `16.0 µs [9.1, 29.8]`, `1.19 ms [0.40, 7.73]`.
pub(crate) fn ns_in_interval(ns: f64, low: f64, high: f64) -> String {
    let (scale, unit, decimals) = match ns.abs() {
        a if a >= 1e9 => (1e9, "s", 2),
        a if a >= 1e6 => (1e6, "ms", 2),
        a if a >= 1e3 => (1e3, "µs", 1),
        _ => (1.0, "ns", 0),
    };
    format!(
        "{:.decimals$} {unit} [{:.decimals$}, {:.decimals$}]",
        ns / scale,
        low / scale,
        high / scale
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Shout;

    impl Exporter<str> for Shout {
        fn export(&self, doc: &str, out: &mut dyn Write) -> io::Result<()> {
            writeln!(out, "{}", doc.to_uppercase())
        }
    }

    #[test]
    fn a_file_is_written_whole_and_a_missing_folder_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        to_file(&Shout, "hello", &path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "HELLO\n");
        assert_eq!(render(&Shout, "hi"), "HI\n");
        let missing = dir.path().join("no/such/folder/out.txt");
        let e = to_file(&Shout, "hello", &missing).unwrap_err().to_string();
        assert!(e.contains("no/such/folder/out.txt"), "{e}");
        assert!(e.contains("folder exists"), "{e}");
    }

    #[test]
    fn a_latency_and_its_interval_share_the_unit_of_the_latency() {
        assert_eq!(ns_in_interval(412.4, 404.0, 420.3), "412 ns [404, 420]");
        assert_eq!(
            ns_in_interval(16_040.0, 9_100.0, 29_800.0),
            "16.0 µs [9.1, 29.8]"
        );
        assert_eq!(
            ns_in_interval(1_185_600.0, 400_000.0, 7_730_000.0),
            "1.19 ms [0.40, 7.73]"
        );
        assert_eq!(ns_in_interval(2.5e9, 2.4e9, 2.6e9), "2.50 s [2.40, 2.60]");
    }
}
