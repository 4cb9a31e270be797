//! Trace files: the state-access stream on disk.
//!
//! Two formats carry the same content, a [`TraceHeader`], the records (accesses and
//! event/watermark markers) and a [`TraceFooter`] with the counts:
//!
//! - [`binary`]: compact, checksummed blocks of prefix-compressed records
//!   ([`BinaryTraceWriter`], [`BinaryTraceReader`]);
//! - [`text`]: one tab-separated line per record ([`TextTraceWriter`], [`TextTraceReader`]);
//!   the text reader also reads the Flink 1.20 reference recordings (`#op cf keyhex vlen`).
//!
//! Both writers are [`AccessSink`]s, so a generator streams straight into them; both readers
//! stream in constant memory. [`open_trace`] detects the format (and gzip) of a file, and
//! [`convert`] rewrites a trace in another format. The byte-level layout is documented in
//! `docs/trace-format.md`.

pub mod binary;
mod error;
mod file;
pub mod text;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::ops::ControlFlow;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::access::{Access, AccessSink, Op, StateId, TraceRecord};

pub use binary::{BinaryTraceReader, BinaryTraceWriter, BINARY_MAGIC, BINARY_VERSION};
pub use error::TraceError;
pub use file::TraceFileWriter;
pub use text::{TextDialect, TextTraceReader, TextTraceWriter, TEXT_VERSION};

/// Longest key a trace may hold (1 MiB); longer keys are refused by writers and readers.
pub const MAX_KEY_LEN: usize = 1 << 20;

/// Longest value a put, merge or batch put may write (64 MiB); writers and readers refuse
/// longer ones. The format's `value_len` is a u32, but a replay hands every value to its store
/// as bytes: a length near 4 GiB would make it allocate that much for one request. Values of
/// the engines Gadget models are bytes to kilobytes (Kafka's producers refuse records above
/// 1 MB by default); Redis, the smallest store limit, takes 512 MB.
pub const MAX_VALUE_LEN: u32 = 64 << 20;

/// Longest state name a trace may hold (1 KiB; Flink's are a few words), so that a reader's
/// table of names stays small however many states a trace has.
pub const MAX_STATE_NAME_LEN: usize = 1 << 10;

/// Largest JSON header or footer a trace may hold (64 MiB).
pub const MAX_HEADER_LEN: usize = 64 << 20;

/// What a trace is: known before the first record, so written first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// Version of the Gadget that wrote the trace.
    pub gadget_version: String,
    /// Name of every state; the index is the [`StateId`] used by the records.
    pub state_names: Vec<String>,
    /// Seed of the run, if it used randomness.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The full configuration of the run.
    #[serde(default)]
    pub config: serde_json::Value,
    /// The operator that produced the accesses.
    pub operator: String,
}

impl TraceHeader {
    /// A header stamped with this Gadget's version.
    pub fn new(
        operator: impl Into<String>,
        state_names: Vec<String>,
        seed: Option<u64>,
        config: serde_json::Value,
    ) -> Self {
        TraceHeader {
            gadget_version: env!("CARGO_PKG_VERSION").to_string(),
            state_names,
            seed,
            config,
            operator: operator.into(),
        }
    }
}

/// What a trace held: known only at the end of a streaming run, so written last.
///
/// Writers fill in `events`, `watermarks`, `requests` and `requests_by_op` themselves from what
/// they wrote; readers check them against what they read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceFooter {
    /// Event markers in the trace.
    pub events: u64,
    /// Watermark markers in the trace.
    pub watermarks: u64,
    /// Requests (accesses) in the trace.
    pub requests: u64,
    /// True when the run was cut short (a request limit), so open windows never fired.
    pub truncated: bool,
    /// Requests per op name (ops that occur only).
    #[serde(default)]
    pub requests_by_op: BTreeMap<String, u64>,
    /// Anything else the producer wants to record (timings, host, ...).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl TraceFooter {
    /// A footer whose counts the writer will fill in.
    pub fn new(truncated: bool) -> Self {
        TraceFooter {
            truncated,
            ..TraceFooter::default()
        }
    }
}

/// One record as a reader yields it: the key borrows the reader's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordRef<'a> {
    /// A state access.
    Access(Access<'a>),
    /// An input event reached the operator.
    Event {
        /// 0 for one-input operators, 1 or 2 for the inputs of a join.
        input: u8,
    },
    /// A watermark reached the operator.
    Watermark {
        /// Its event-time value in milliseconds.
        timestamp: i64,
    },
}

impl RecordRef<'_> {
    /// Copies the record into an owned [`TraceRecord`].
    pub fn to_record(&self) -> TraceRecord {
        match *self {
            RecordRef::Access(a) => TraceRecord::Access {
                op: a.op,
                state: a.state,
                key: a.key.to_vec(),
                value_len: a.value_len,
            },
            RecordRef::Event { input } => TraceRecord::Event { input },
            RecordRef::Watermark { timestamp } => TraceRecord::Watermark { timestamp },
        }
    }

    /// Hands the record to a sink.
    pub fn feed<S: AccessSink + ?Sized>(&self, sink: &mut S) {
        match *self {
            RecordRef::Access(a) => sink.access(a),
            RecordRef::Event { input } => sink.event(input),
            RecordRef::Watermark { timestamp } => sink.watermark(timestamp),
        }
    }
}

impl<'a> From<&'a TraceRecord> for RecordRef<'a> {
    fn from(r: &'a TraceRecord) -> Self {
        match r {
            TraceRecord::Access {
                op,
                state,
                key,
                value_len,
            } => RecordRef::Access(Access {
                op: *op,
                state: *state,
                key,
                value_len: *value_len,
            }),
            TraceRecord::Event { input } => RecordRef::Event { input: *input },
            TraceRecord::Watermark { timestamp } => RecordRef::Watermark {
                timestamp: *timestamp,
            },
        }
    }
}

/// Anything that yields trace records one by one.
pub trait RecordSource {
    /// The next record, `Ok(None)` at the (verified) end of the trace.
    fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, TraceError>;
}

/// Iterator of owned records over a [`RecordSource`]; it stops after the first error.
#[derive(Debug)]
pub struct Records<'a, S: RecordSource + ?Sized> {
    source: &'a mut S,
    done: bool,
}

impl<'a, S: RecordSource + ?Sized> Records<'a, S> {
    /// Iterates over the remaining records of `source`.
    pub fn new(source: &'a mut S) -> Self {
        Records {
            source,
            done: false,
        }
    }
}

impl<S: RecordSource + ?Sized> Iterator for Records<'_, S> {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.source.next_record() {
            Ok(Some(r)) => Some(Ok(r.to_record())),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Feeds every remaining record of `source` to `sink`; returns how many records it fed.
pub fn replay<S: RecordSource + ?Sized, K: AccessSink + ?Sized>(
    source: &mut S,
    sink: &mut K,
) -> Result<u64, TraceError> {
    let mut n = 0;
    while let Some(r) = source.next_record()? {
        r.feed(sink);
        n += 1;
    }
    Ok(n)
}

/// The two trace formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// Checksummed binary blocks ([`binary`]).
    Binary,
    /// Tab-separated lines ([`text`]), including Flink recordings when reading.
    Text,
}

impl TraceFormat {
    /// Recognizes a format from the first bytes of (uncompressed) data: the binary magic,
    /// `#gadget-trace` or a Flink recording's `#op` header line. `None` if it is neither
    /// (or gzip: check [`is_gzip`] first).
    pub fn detect(first: &[u8]) -> Option<TraceFormat> {
        if first.starts_with(&BINARY_MAGIC) {
            Some(TraceFormat::Binary)
        } else if first.starts_with(text::GADGET_FIRST_LINE_PREFIX)
            || first.starts_with(text::FLINK_FIRST_LINE_PREFIX)
        {
            Some(TraceFormat::Text)
        } else {
            None
        }
    }

    /// The format's name, as accepted by [`TraceFormat::from_str`].
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Binary => "binary",
            TraceFormat::Text => "text",
        }
    }
}

impl std::fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "binary" | "bin" => Ok(TraceFormat::Binary),
            "text" | "tsv" => Ok(TraceFormat::Text),
            other => Err(format!(
                "unknown trace format '{other}' (expected 'binary' or 'text')"
            )),
        }
    }
}

/// True if the bytes start with the gzip magic `1f 8b`.
pub fn is_gzip(first: &[u8]) -> bool {
    first.starts_with(&[0x1f, 0x8b])
}

/// The boxed input stream of a [`TraceReader`].
pub type BoxedInput = Box<dyn BufRead + Send>;

/// A reader of any trace: binary or text, plain or gzip, Gadget's or a Flink recording.
pub enum TraceReader {
    /// A binary trace.
    Binary(BinaryTraceReader<BoxedInput>),
    /// A text trace or a Flink recording.
    Text(TextTraceReader<BoxedInput>),
}

impl TraceReader {
    /// Detects gzip and the format from the first bytes of `input` and reads the header.
    pub fn from_reader<R: Read + Send + 'static>(input: R) -> Result<TraceReader, TraceError> {
        let (first, input) = sniff(input)?;
        if is_gzip(&first) {
            let gz = flate2::read::MultiGzDecoder::new(input);
            let (first, input) = sniff(gz)?;
            Self::dispatch(&first, input)
        } else {
            Self::dispatch(&first, input)
        }
    }

    fn dispatch<R: Read + Send + 'static>(
        first: &[u8],
        input: R,
    ) -> Result<TraceReader, TraceError> {
        let boxed: BoxedInput = Box::new(BufReader::with_capacity(64 * 1024, input));
        match TraceFormat::detect(first) {
            Some(TraceFormat::Binary) => Ok(TraceReader::Binary(BinaryTraceReader::new(boxed)?)),
            Some(TraceFormat::Text) => Ok(TraceReader::Text(TextTraceReader::new(boxed)?)),
            None if first.is_empty() => Err(TraceError::NotATrace {
                offset: 0,
                what: "the file is empty".into(),
            }),
            None => Err(TraceError::NotATrace {
                offset: 0,
                what: format!(
                    "it starts with {:?}, not the binary magic {:?}, '#gadget-trace' or a Flink \
                     recording's '#op' line",
                    String::from_utf8_lossy(first),
                    String::from_utf8_lossy(&BINARY_MAGIC)
                ),
            }),
        }
    }

    /// The format of the trace.
    pub fn format(&self) -> TraceFormat {
        match self {
            TraceReader::Binary(_) => TraceFormat::Binary,
            TraceReader::Text(_) => TraceFormat::Text,
        }
    }

    /// True for a Flink reference recording (which has no header or footer).
    pub fn is_flink_recording(&self) -> bool {
        matches!(self, TraceReader::Text(t) if t.dialect() == TextDialect::Flink)
    }

    /// The header; `None` for Flink recordings.
    pub fn header(&self) -> Option<&TraceHeader> {
        match self {
            TraceReader::Binary(r) => Some(r.header()),
            TraceReader::Text(r) => r.header(),
        }
    }

    /// The state table as of the last record read: the header's with the names `open`
    /// records gave, or for a Flink recording the names seen so far.
    pub fn state_names(&self) -> &[String] {
        match self {
            TraceReader::Binary(r) => r.state_names(),
            TraceReader::Text(r) => r.state_names(),
        }
    }

    /// The next record, `Ok(None)` at the (verified) end of the trace.
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, TraceError> {
        match self {
            TraceReader::Binary(r) => r.next_record(),
            TraceReader::Text(r) => r.next_record(),
        }
    }

    /// Iterator over the remaining records, owned.
    pub fn records(&mut self) -> Records<'_, Self> {
        Records::new(self)
    }

    /// The footer, once the end has been reached; `None` before, and always for Flink
    /// recordings.
    pub fn footer(&self) -> Option<&TraceFooter> {
        match self {
            TraceReader::Binary(r) => r.footer(),
            TraceReader::Text(r) => r.footer(),
        }
    }
}

impl std::fmt::Debug for TraceReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("format", &self.format())
            .field("flink_recording", &self.is_flink_recording())
            .field("header", &self.header())
            .field("footer", &self.footer())
            .finish_non_exhaustive()
    }
}

impl RecordSource for TraceReader {
    fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, TraceError> {
        TraceReader::next_record(self)
    }
}

/// The first bytes of a stream, and a reader that still yields them.
type Sniffed<R> = (Vec<u8>, io::Chain<Cursor<Vec<u8>>, R>);

/// Reads up to 16 bytes from the start of `input` and gives them back with a reader that
/// still yields them.
fn sniff<R: Read>(mut input: R) -> Result<Sniffed<R>, TraceError> {
    let mut first = vec![0u8; 16];
    let mut got = 0;
    while got < first.len() {
        match input.read(&mut first[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(TraceError::ReadAt {
                    offset: got as u64,
                    source,
                })
            }
        }
    }
    first.truncate(got);
    let chained = Cursor::new(first.clone()).chain(input);
    Ok((first, chained))
}

/// Opens a trace file of any format (binary or text, plain or gzip, or a Flink recording);
/// `-` reads standard input.
pub fn open_trace(path: impl AsRef<Path>) -> Result<TraceReader, TraceError> {
    let path = path.as_ref();
    if path.as_os_str() == "-" {
        return TraceReader::from_reader(io::stdin()).map_err(|e| e.in_file(path));
    }
    let file = File::open(path).map_err(|source| TraceError::File {
        action: "cannot open trace",
        path: path.to_path_buf(),
        source,
    })?;
    TraceReader::from_reader(file).map_err(|e| e.in_file(path))
}

/// Converts the trace at `input` (any format [`open_trace`] reads) into `format` at `output`,
/// gzip-compressed if `output` ends in `.gz`. Returns the footer written.
///
/// The output is written to a temporary file in the same directory and renamed over `output`
/// only once complete, so `output` is never left half written. A Flink recording (no header)
/// is read twice: once to collect its state names, which the header needs up front.
pub fn convert(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    format: TraceFormat,
) -> Result<TraceFooter, TraceError> {
    convert_with_progress(input, output, format, &mut |_| ControlFlow::Continue(()))
}

/// [`convert`], calling `progress` with the records read so far every
/// [`PROGRESS_EVERY`](crate::PROGRESS_EVERY) records. When it returns `Break` (Ctrl-C), the
/// conversion stops, its temporary file is removed and `output` is left as it was:
/// [`TraceError::Stopped`].
pub fn convert_with_progress(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    format: TraceFormat,
    progress: &mut dyn FnMut(u64) -> ControlFlow<()>,
) -> Result<TraceFooter, TraceError> {
    let input = input.as_ref();
    let output = output.as_ref();
    let mut records = 0u64;
    let mut counted = || {
        records += 1;
        if records % crate::PROGRESS_EVERY == 0 && progress(records).is_break() {
            return Err(TraceError::Stopped {
                path: output.to_path_buf(),
            });
        }
        Ok(())
    };
    let mut reader = open_trace(input)?;
    let header = match reader.header() {
        Some(h) => h.clone(),
        None => {
            // A recording: collect the state table first, then start over.
            while reader
                .next_record()
                .map_err(|e| e.in_file(input))?
                .is_some()
            {
                counted()?;
            }
            let names = reader.state_names().to_vec();
            reader = open_trace(input)?;
            let stem = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stem = stem
                .strip_suffix(".gz")
                .unwrap_or(&stem)
                .trim_end_matches(".tsv")
                .to_string();
            TraceHeader::new(
                stem,
                names,
                None,
                serde_json::json!({ "converted_from": input.to_string_lossy() }),
            )
        }
    };

    let mut writer = TraceFileWriter::create(output, format, &header)?;
    while let Some(record) = reader.next_record().map_err(|e| e.in_file(input))? {
        record.feed(&mut writer);
        counted()?;
    }
    let footer = reader.footer().cloned().unwrap_or_default();
    writer.finish(footer)
}

/// Counts what a writer wrote or a reader read, to fill in or check the footer.
#[derive(Debug, Default, Clone)]
pub(crate) struct Counter {
    events: u64,
    watermarks: u64,
    by_op: [u64; Op::COUNT],
}

impl Counter {
    #[inline]
    pub(crate) fn access(&mut self, op: Op) {
        if let Some(c) = self.by_op.get_mut(op as usize) {
            *c += 1;
        }
    }

    #[inline]
    pub(crate) fn event(&mut self) {
        self.events += 1;
    }

    #[inline]
    pub(crate) fn watermark(&mut self) {
        self.watermarks += 1;
    }

    pub(crate) fn requests(&self) -> u64 {
        self.by_op.iter().sum()
    }

    pub(crate) fn records(&self) -> u64 {
        self.requests() + self.events + self.watermarks
    }

    /// Writes the counts into a footer.
    pub(crate) fn fill(&self, footer: &mut TraceFooter) {
        footer.events = self.events;
        footer.watermarks = self.watermarks;
        footer.requests = self.requests();
        footer.requests_by_op = Op::ALL
            .iter()
            .zip(self.by_op)
            .filter(|(_, n)| *n > 0)
            .map(|(op, n)| (op.name().to_string(), n))
            .collect();
    }

    /// Checks a footer against the counts; the message says what differs.
    pub(crate) fn check(&self, footer: &TraceFooter) -> Result<(), String> {
        let pairs = [
            ("events", footer.events, self.events),
            ("watermarks", footer.watermarks, self.watermarks),
            ("requests", footer.requests, self.requests()),
        ];
        for (what, said, found) in pairs {
            if said != found {
                return Err(format!(
                    "the footer says {said} {what} but the trace holds {found}"
                ));
            }
        }
        if !footer.requests_by_op.is_empty() {
            for (op, found) in Op::ALL.iter().zip(self.by_op) {
                let said = footer.requests_by_op.get(op.name()).copied().unwrap_or(0);
                if said != found {
                    return Err(format!(
                        "the footer says {said} {op} requests but the trace holds {found}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Checks that a state table can be written as text: unique names without tabs or newlines.
pub(crate) fn check_state_names(names: &[String]) -> Result<(), String> {
    if names.len() > usize::from(StateId::MAX) + 1 {
        return Err(format!(
            "{} state names, more than the {} a StateId can address",
            names.len(),
            usize::from(StateId::MAX) + 1
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    for name in names {
        check_state_name(name)?;
        if !seen.insert(name.as_str()) {
            return Err(format!("state name {name:?} appears twice"));
        }
    }
    Ok(())
}

/// Gives `state` the name an [`Op::Open`] carries in `key`, or says why it cannot: the state
/// must be in the table, and the name UTF-8, short enough, free of tabs and line breaks and
/// not another state's.
pub(crate) fn rename_state(names: &mut [String], state: StateId, key: &[u8]) -> Result<(), String> {
    let declared = names.len();
    let name = std::str::from_utf8(key)
        .map_err(|_| format!("an open of state {state} names it with bytes that are not UTF-8"))?;
    check_state_name_len(name)?;
    if name.bytes().any(|b| matches!(b, b'\t' | b'\n' | b'\r')) {
        return Err(format!(
            "an open names a state {name:?}, which contains a tab or line break"
        ));
    }
    if let Some(other) = names
        .iter()
        .enumerate()
        .find(|&(i, n)| i != usize::from(state) && n == name)
    {
        return Err(format!(
            "an open names state {state} {name:?}, the name state {} already has",
            other.0
        ));
    }
    let Some(slot) = names.get_mut(usize::from(state)) else {
        return Err(format!(
            "an open of state id {state}, but the header names only {declared} states"
        ));
    };
    name.clone_into(slot);
    Ok(())
}

/// Refuses a value longer than [`MAX_VALUE_LEN`] written by `op`, or found by a get (other
/// ops' `value_len` is no value: entries, a bound's length, an extended op's code).
#[inline]
pub fn check_value_len(op: Op, value_len: u32) -> Result<(), String> {
    if value_len > MAX_VALUE_LEN && op.writes_value() {
        return Err(value_too_long(op, value_len));
    }
    if op == Op::Get && value_len > crate::access::ReadLen::Found(MAX_VALUE_LEN).value_len() {
        return Err(value_too_long(op, value_len - 2));
    }
    Ok(())
}

/// Refuses a name no trace can hold as a state's: one with a tab or a line break (text traces
/// separate their fields and records with them) or longer than [`MAX_STATE_NAME_LEN`]. Every
/// reader and writer checks each state name with it; configs check the names they give
/// states with it too, so that a trace generated from a config that loads can be read.
pub fn check_state_name(name: &str) -> Result<(), String> {
    check_state_name_len(name)?;
    if name.bytes().any(|b| matches!(b, b'\t' | b'\n' | b'\r')) {
        return Err(format!("state name {name:?} contains a tab or line break"));
    }
    Ok(())
}

/// `value_len` made one that `op` may carry with a key of `key_len` bytes, for tests that
/// draw records at random.
#[cfg(test)]
pub(crate) fn valid_value_len(op: Op, key_len: usize, value_len: u32) -> u32 {
    if op.is_range() {
        value_len % (key_len as u32 + 1)
    } else if op.is_persistence() {
        0
    } else if op.writes_value() {
        value_len.min(MAX_VALUE_LEN)
    } else if op == Op::Get {
        value_len.min(crate::access::ReadLen::Found(MAX_VALUE_LEN).value_len())
    } else {
        value_len
    }
}

#[cold]
fn value_too_long(op: Op, value_len: u32) -> String {
    format!(
        "a {op} of a {value_len}-byte value, longer than the {MAX_VALUE_LEN} bytes (64 MiB) a \
         value may have"
    )
}

/// Refuses a state name longer than [`MAX_STATE_NAME_LEN`].
pub(crate) fn check_state_name_len(name: &str) -> Result<(), String> {
    if name.len() > MAX_STATE_NAME_LEN {
        let start: String = name.chars().take(40).collect();
        return Err(format!(
            "state name {start:?}… is {} bytes, longer than the {MAX_STATE_NAME_LEN} allowed",
            name.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
