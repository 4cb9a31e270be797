//! Writing a trace file atomically: to a temporary file beside the destination, renamed over
//! it only when complete, so a failed or interrupted run never leaves a half-written trace.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{
    BinaryTraceWriter, TextTraceWriter, TraceError, TraceFooter, TraceFormat, TraceHeader,
};
use crate::access::{Access, AccessSink, Op, StateId};
use crate::atomic::AtomicFile;

/// A trace being written to a file (or to standard output for the path `-`).
///
/// gzip-compressed when the path ends in `.gz`. Call [`TraceFileWriter::finish`]; dropping
/// the writer instead removes the temporary file and leaves the destination untouched.
pub struct TraceFileWriter {
    sink: FormatSink,
    /// The file being written; `None` for standard output.
    out: Option<AtomicFile>,
    dest: PathBuf,
}

enum FormatSink {
    Binary(BinaryTraceWriter<OutFile>),
    Text(TextTraceWriter<OutFile>),
}

impl std::fmt::Debug for TraceFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceFileWriter")
            .field("dest", &self.dest)
            .finish()
    }
}

impl TraceFileWriter {
    /// Starts writing a trace to `path` in `format`.
    pub fn create(
        path: &Path,
        format: TraceFormat,
        header: &TraceHeader,
    ) -> Result<Self, TraceError> {
        let gz = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        let (out, atomic) = if path.as_os_str() == "-" {
            (OutFile::new(Target::Stdout(io::stdout()), gz), None)
        } else {
            let cannot_create = |source| TraceError::File {
                action: "cannot create",
                path: path.to_path_buf(),
                source,
            };
            let mut atomic = AtomicFile::create(path).map_err(cannot_create)?;
            let file = atomic.take_file().map_err(cannot_create)?;
            (
                OutFile::new(Target::File(WrittenBack::new(file)), gz),
                Some(atomic),
            )
        };
        let sink = match format {
            TraceFormat::Binary => FormatSink::Binary(BinaryTraceWriter::new(out, header)?),
            TraceFormat::Text => FormatSink::Text(TextTraceWriter::new(out, header)?),
        };
        Ok(TraceFileWriter {
            sink,
            out: atomic,
            dest: path.to_path_buf(),
        })
    }

    /// Writes the footer, flushes, and moves the file into place. Returns the footer written
    /// (counts filled in by the writer).
    pub fn finish(mut self, footer: TraceFooter) -> Result<TraceFooter, TraceError> {
        let (out, footer) = match self.sink {
            FormatSink::Binary(w) => {
                let footer = w.complete_footer(footer);
                (w.finish(footer.clone())?, footer)
            }
            FormatSink::Text(w) => {
                let footer = w.complete_footer(footer);
                (w.finish(footer.clone())?, footer)
            }
        };
        let target = out.close().map_err(|source| TraceError::File {
            action: "cannot write",
            path: self.dest.clone(),
            source,
        })?;
        if let (Some(atomic), Target::File(file)) = (self.out.take(), target) {
            atomic
                .commit(file.file)
                .map_err(|source| TraceError::File {
                    action: "cannot move the finished file onto",
                    path: self.dest.clone(),
                    source,
                })?;
        }
        Ok(footer)
    }
}

impl AccessSink for TraceFileWriter {
    #[inline]
    fn access(&mut self, a: Access<'_>) {
        match &mut self.sink {
            FormatSink::Binary(w) => w.access(a),
            FormatSink::Text(w) => w.access(a),
        }
    }
    #[inline]
    fn access_all(&mut self, state: StateId, key: &[u8], requests: &[(Op, u32)]) {
        match &mut self.sink {
            FormatSink::Binary(w) => w.access_all(state, key, requests),
            FormatSink::Text(w) => w.access_all(state, key, requests),
        }
    }
    fn event(&mut self, input: u8) {
        match &mut self.sink {
            FormatSink::Binary(w) => w.event(input),
            FormatSink::Text(w) => w.event(input),
        }
    }
    fn watermark(&mut self, timestamp: i64) {
        match &mut self.sink {
            FormatSink::Binary(w) => w.watermark(timestamp),
            FormatSink::Text(w) => w.watermark(timestamp),
        }
    }
}

enum Target {
    File(WrittenBack),
    Stdout(io::Stdout),
}

/// Bytes written before the kernel is asked to start writing them to disk.
const WRITEBACK_CHUNK: u64 = 8 << 20;

/// A file written front to back whose pages go to disk while generation goes on.
///
/// Every [`WRITEBACK_CHUNK`] bytes the kernel is asked to start writing the pages just
/// filled (`sync_file_range`, Linux only, as RocksDB's `bytes_per_sync`), so that the final
/// `fsync` before the rename waits for the last chunk only instead of the whole trace. The
/// request starts writeback without waiting for it; durability still comes from the `fsync`.
struct WrittenBack {
    file: File,
    written: u64,
    started: u64,
}

impl WrittenBack {
    fn new(file: File) -> Self {
        WrittenBack {
            file,
            written: 0,
            started: 0,
        }
    }
}

impl Write for WrittenBack {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_CHUNK {
            start_writeback(&self.file, self.started, self.written - self.started);
            self.started = self.written;
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Asks the kernel to start writing `len` bytes of `file` from `offset` to disk, without
/// waiting. A hint: where it fails (a pipe, a device) or does not exist, nothing changes.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: the descriptor is open for the call's duration (borrowed from `file`), and
    // sync_file_range only reads its integer arguments.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _offset: u64, _len: u64) {}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Target::File(f) => f.write(buf),
            Target::Stdout(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Target::File(f) => f.flush(),
            Target::Stdout(s) => s.flush(),
        }
    }
}

/// The output stream of a trace file: buffered, optionally gzip.
///
/// The buffer holds 512 KiB, as the binary writer's chunks ([`super::binary::OUTPUT_CHUNK`]),
/// which pass through it unbuffered; the text writer's lines reach the file in writes as
/// large, which the kernel takes faster than 64 KiB ones.
enum OutFile {
    Plain(BufWriter<Target>),
    Gz(flate2::write::GzEncoder<BufWriter<Target>>),
}

impl OutFile {
    fn new(target: Target, gz: bool) -> Self {
        let w = BufWriter::with_capacity(super::binary::OUTPUT_CHUNK, target);
        if gz {
            OutFile::Gz(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::default(),
            ))
        } else {
            OutFile::Plain(w)
        }
    }

    fn close(self) -> io::Result<Target> {
        let w = match self {
            OutFile::Plain(w) => w,
            OutFile::Gz(gz) => gz.finish()?,
        };
        w.into_inner().map_err(|e| e.into_error())
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            OutFile::Plain(w) => w.write(buf),
            OutFile::Gz(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            OutFile::Plain(w) => w.write_all(buf),
            OutFile::Gz(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            OutFile::Plain(w) => w.flush(),
            OutFile::Gz(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_file_written_back_in_chunks_keeps_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.bin");
        let mut out = WrittenBack::new(File::create(&path).unwrap());
        let piece: Vec<u8> = (0..=250u8).collect();
        let mut expected = Vec::new();
        while expected.len() < 2 * WRITEBACK_CHUNK as usize + 12_345 {
            out.write_all(&piece).unwrap();
            expected.extend_from_slice(&piece);
        }
        out.flush().unwrap();
        assert_eq!(out.written, expected.len() as u64);
        assert!(
            out.started >= 2 * WRITEBACK_CHUNK && out.started <= out.written,
            "writeback started for {} of {} bytes",
            out.started,
            out.written
        );
        drop(out);
        let mut back = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut back).unwrap();
        assert!(back == expected, "the file differs from what was written");
    }
}
