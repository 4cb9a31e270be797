//! The text trace format: one tab-separated line per record.
//!
//! ```text
//! #gadget-trace<TAB>text<TAB>4
//! #header<TAB>{"gadget_version":"0.1.0","state_names":["window-contents"],...}
//! #ev<TAB><TAB><TAB>0
//! get<TAB>window-contents<TAB>000000000175c0508d<TAB>?
//! put<TAB>window-contents<TAB>000000000175c0508d<TAB>8
//! get<TAB>window-contents<TAB>000000000175c0508d<TAB>8
//! range_delete<TAB>window-contents<TAB>0000..0001<TAB>0
//! #wm<TAB><TAB><TAB>151132735
//! #footer<TAB>{"events":1,"watermarks":1,"requests":2,"truncated":false,...}
//! ```
//!
//! The reader also reads the Flink 1.20 reference recordings (first line
//! `#op<TAB>cf<TAB>keyhex<TAB>vlen`), mapping their requests onto [`Op`]s; see
//! [`TextDialect::Flink`] and `docs/trace-format.md`.
//!
//! A `get`'s last column says what it found when the trace was made ([`ReadLen`]): the
//! length, `-1` for nothing, `?` when not known (version 3 and older wrote 0 for every get,
//! read as not known).
//!
//! One concept, the text format, read and written here together (every record kind's line in
//! both directions), which is why the file is long.

use std::collections::HashMap;
use std::io::{self, BufRead, BufWriter, Read, Write};

use crate::access::{Access, AccessSink, Op, ReadLen, StateId};

use super::{
    check_state_name_len, check_state_names, Counter, RecordRef, RecordSource, Records, TraceError,
    TraceFooter, TraceHeader, MAX_HEADER_LEN, MAX_KEY_LEN,
};

/// The text format version this build writes and reads.
pub const TEXT_VERSION: u32 = 4;

/// The first text format version whose gets say what they found.
const READS_SINCE: u32 = 4;

/// How a Gadget text trace starts.
pub(crate) const GADGET_FIRST_LINE_PREFIX: &[u8] = b"#gadget-trace\t";
/// How a Flink recording starts.
pub(crate) const FLINK_FIRST_LINE_PREFIX: &[u8] = b"#op\t";

/// Longest record or footer line the reader accepts: a maximal key in hex plus room for the
/// rest.
const MAX_RECORD_LINE: usize = 2 * MAX_KEY_LEN + (1 << 20);
/// Longest header line: the JSON plus its tag.
const MAX_HEADER_LINE: usize = MAX_HEADER_LEN + 64;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes the decimal digits of `v` through a stack buffer.
fn write_u64<W: Write>(out: &mut W, mut v: u64) -> io::Result<()> {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.write_all(buf.get(i..).unwrap_or_default())
}

fn write_i64<W: Write>(out: &mut W, v: i64) -> io::Result<()> {
    if v < 0 {
        out.write_all(b"-")?;
    }
    write_u64(out, v.unsigned_abs())
}

/// Streams records into a text trace. An [`AccessSink`]: buffered, nothing allocated per
/// record.
///
/// As with [`BinaryTraceWriter`](super::BinaryTraceWriter), the first error is kept and
/// reported by [`finish`](Self::finish); records after it are dropped.
#[derive(Debug)]
pub struct TextTraceWriter<W: Write> {
    out: BufWriter<W>,
    names: Vec<String>,
    counts: Counter,
    error: Option<TraceError>,
}

impl<W: Write> TextTraceWriter<W> {
    /// Writes the `#gadget-trace` and `#header` lines.
    ///
    /// The state names must be unique and free of tabs and line breaks, as they appear in
    /// every request line.
    pub fn new(out: W, header: &TraceHeader) -> Result<Self, TraceError> {
        check_state_names(&header.state_names).map_err(TraceError::InvalidInput)?;
        let json = serde_json::to_vec(header)
            .map_err(|e| TraceError::InvalidInput(format!("the header cannot be encoded: {e}")))?;
        if json.len() > MAX_HEADER_LEN {
            return Err(TraceError::InvalidInput(format!(
                "the header is {} bytes of JSON, more than the {MAX_HEADER_LEN} allowed",
                json.len()
            )));
        }
        let mut out = BufWriter::with_capacity(64 * 1024, out);
        let io = |source| TraceError::Write { records: 0, source };
        out.write_all(GADGET_FIRST_LINE_PREFIX).map_err(io)?;
        out.write_all(b"text\t").map_err(io)?;
        write_u64(&mut out, u64::from(TEXT_VERSION)).map_err(io)?;
        out.write_all(b"\n#header\t").map_err(io)?;
        out.write_all(&json).map_err(io)?;
        out.write_all(b"\n").map_err(io)?;
        Ok(TextTraceWriter {
            out,
            names: header.state_names.clone(),
            counts: Counter::default(),
            error: None,
        })
    }

    /// The first error met so far, if any (it will also be returned by `finish`).
    pub fn error(&self) -> Option<&TraceError> {
        self.error.as_ref()
    }

    /// Records (requests and markers) accepted so far.
    pub fn records_written(&self) -> u64 {
        self.counts.records()
    }

    /// `footer` with its counts replaced by what this writer received so far.
    pub fn complete_footer(&self, mut footer: TraceFooter) -> TraceFooter {
        self.counts.fill(&mut footer);
        footer
    }

    /// Writes the `#footer` line, flushes and returns the output. The footer's counts are
    /// replaced by the writer's own; its other fields are kept.
    pub fn finish(mut self, footer: TraceFooter) -> Result<W, TraceError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let footer = self.complete_footer(footer);
        let json = serde_json::to_vec(&footer)
            .map_err(|e| TraceError::InvalidInput(format!("the footer cannot be encoded: {e}")))?;
        let records = self.counts.records();
        let io = |source| TraceError::Write { records, source };
        self.out.write_all(b"#footer\t").map_err(io)?;
        self.out.write_all(&json).map_err(io)?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(io)?;
        self.out.into_inner().map_err(|e| io(e.into_error()))
    }

    fn fail(&mut self, e: TraceError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    fn write_access(&mut self, a: &Access<'_>) -> io::Result<()> {
        let Some(name) = self.names.get(usize::from(a.state)) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "state without a name",
            ));
        };
        let out = &mut self.out;
        out.write_all(a.op.name().as_bytes())?;
        out.write_all(b"\t")?;
        out.write_all(name.as_bytes())?;
        out.write_all(b"\t")?;
        match a.range() {
            Some((start, end)) => {
                write_hex(out, start)?;
                out.write_all(b"..")?;
                write_hex(out, end)?;
                out.write_all(b"\t0\n")
            }
            None => {
                write_hex(out, a.key)?;
                out.write_all(b"\t")?;
                match (a.op, ReadLen::from_value_len(a.value_len)) {
                    (Op::Get, ReadLen::Unknown) => out.write_all(b"?")?,
                    (Op::Get, ReadLen::Missing) => out.write_all(b"-1")?,
                    (Op::Get, ReadLen::Found(n)) => write_u64(out, u64::from(n))?,
                    _ => write_u64(out, u64::from(a.value_len))?,
                }
                out.write_all(b"\n")
            }
        }
    }
}

/// What a get found, recorded as a length or -1 for nothing.
fn found(len: i64) -> Result<ReadLen, String> {
    match len {
        -1 => Ok(ReadLen::Missing),
        n => u32::try_from(n)
            .ok()
            .filter(|&n| n <= super::MAX_VALUE_LEN)
            .map(ReadLen::Found)
            .ok_or_else(|| {
                format!(
                    "a get found {n} bytes: a length up to {} (64 MiB), -1 for nothing, or ? if \
                     not known",
                    super::MAX_VALUE_LEN
                )
            }),
    }
}

/// Writes `bytes` as lowercase hex.
fn write_hex(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let mut hex = [0u8; 128];
    for chunk in bytes.chunks(hex.len() / 2) {
        for (pair, &b) in hex.chunks_exact_mut(2).zip(chunk) {
            pair[0] = HEX[usize::from(b >> 4)];
            pair[1] = HEX[usize::from(b & 0xf)];
        }
        out.write_all(hex.get(..chunk.len() * 2).unwrap_or_default())?;
    }
    Ok(())
}

impl<W: Write> AccessSink for TextTraceWriter<W> {
    fn access(&mut self, a: Access<'_>) {
        if self.error.is_some() {
            return;
        }
        if usize::from(a.state) >= self.names.len() {
            let e = TraceError::InvalidInput(format!(
                "a {} of state {} cannot be written as text: the header names only {} states",
                a.op,
                a.state,
                self.names.len()
            ));
            return self.fail(e);
        }
        if a.key.len() > MAX_KEY_LEN {
            let e = TraceError::InvalidInput(format!(
                "a {} key of {} bytes is longer than the {MAX_KEY_LEN} allowed",
                a.op,
                a.key.len()
            ));
            return self.fail(e);
        }
        if let Err(what) = super::check_value_len(a.op, a.value_len) {
            return self.fail(TraceError::InvalidInput(what));
        }
        if a.op.is_range() && a.range().is_none() {
            let e = TraceError::InvalidInput(format!(
                "a {} with a start bound of {} bytes in a key of {} bytes",
                a.op,
                a.value_len,
                a.key.len()
            ));
            return self.fail(e);
        }
        match self.write_access(&a) {
            Ok(()) => self.counts.access(a.op),
            Err(source) => {
                let records = self.counts.records();
                return self.fail(TraceError::Write { records, source });
            }
        }
        if a.op == Op::Open {
            if let Err(what) = super::rename_state(&mut self.names, a.state, a.key) {
                self.fail(TraceError::InvalidInput(what));
            }
        }
    }

    fn event(&mut self, input: u8) {
        if self.error.is_some() {
            return;
        }
        let r = self
            .out
            .write_all(b"#ev\t\t\t")
            .and_then(|()| write_u64(&mut self.out, u64::from(input)))
            .and_then(|()| self.out.write_all(b"\n"));
        match r {
            Ok(()) => self.counts.event(),
            Err(source) => {
                let records = self.counts.records();
                self.fail(TraceError::Write { records, source });
            }
        }
    }

    fn watermark(&mut self, timestamp: i64) {
        if self.error.is_some() {
            return;
        }
        let r = self
            .out
            .write_all(b"#wm\t\t\t")
            .and_then(|()| write_i64(&mut self.out, timestamp))
            .and_then(|()| self.out.write_all(b"\n"));
        match r {
            Ok(()) => self.counts.watermark(),
            Err(source) => {
                let records = self.counts.records();
                self.fail(TraceError::Write { records, source });
            }
        }
    }
}

/// Which kind of text a [`TextTraceReader`] is reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextDialect {
    /// Gadget's own text traces: `#gadget-trace`, `#header`, records, `#footer`.
    Gadget,
    /// A Flink 1.20 reference recording: `#op cf keyhex vlen`, no header or footer.
    ///
    /// `iter_new` lines are dropped; `iter_seek` becomes [`Op::Seek`] with the seek target (the
    /// part of `keyhex` before `>`); `iter_next` becomes [`Op::Next`] with the key landed on
    /// (empty when the iterator became invalid); `wb_put`, `wb_delete`, `wb_write` become
    /// [`Op::BatchPut`], [`Op::BatchDelete`], [`Op::BatchCommit`]; `cf_create` only registers a
    /// state name; `#ev` becomes an event with `input = vlen`, `#wm` a watermark; `#late` and
    /// `#merge_ns` are skipped. States are numbered in the order their names first appear.
    /// `vlen` becomes `value_len` for put, merge, batch put and batch commit, and 0 otherwise
    /// (for reads Flink records the length found, or -1).
    Flink,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Reading,
    Done,
    Failed,
}

/// What a line turned out to be.
enum Parsed {
    /// A record whose key (if an access) is in `self.key`.
    Access {
        op: Op,
        state: StateId,
        value_len: u32,
    },
    Event(u8),
    Watermark(i64),
    Skip,
    Footer,
}

/// Reads a text trace or a Flink recording line by line, in constant memory.
#[derive(Debug)]
pub struct TextTraceReader<R: BufRead> {
    inner: R,
    line: Vec<u8>,
    line_no: u64,
    dialect: TextDialect,
    /// The Gadget text format's version (0 for a Flink recording).
    version: u32,
    header: Option<TraceHeader>,
    footer: Option<TraceFooter>,
    names: Vec<String>,
    ids: HashMap<String, StateId>,
    key: Vec<u8>,
    counts: Counter,
    status: Status,
}

/// Decodes hex digits into `key` (cleared first).
fn decode_hex(hex: &[u8], key: &mut Vec<u8>) -> Result<(), String> {
    key.clear();
    append_hex(hex, key)
}

/// Decodes the key column of a range op, `starthex..endhex`, into `start ‖ end`; the length of
/// `start`.
fn decode_range(field: &[u8], key: &mut Vec<u8>) -> Result<u32, String> {
    let Some(dots) = field.windows(2).position(|w| w == b"..") else {
        return Err(format!(
            "a range op needs its key column as start..end in hex, found {:?}",
            preview(field)
        ));
    };
    decode_hex(&field[..dots], key)?;
    let start_len = key.len() as u32;
    append_hex(&field[dots + 2..], key)?;
    Ok(start_len)
}

/// Decodes hex digits onto the end of `key`.
fn append_hex(hex: &[u8], key: &mut Vec<u8>) -> Result<(), String> {
    if hex.len() % 2 != 0 {
        return Err(format!(
            "the key has an odd number of hex digits ({})",
            hex.len()
        ));
    }
    if key.len() + hex.len() / 2 > MAX_KEY_LEN {
        return Err(format!(
            "a key of {} bytes is longer than the {MAX_KEY_LEN} allowed",
            key.len() + hex.len() / 2
        ));
    }
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    for pair in hex.chunks_exact(2) {
        match (digit(pair[0]), digit(pair[1])) {
            (Some(h), Some(l)) => key.push(h << 4 | l),
            _ => {
                return Err(format!(
                    "the key has a character that is not a hex digit: {:?}",
                    String::from_utf8_lossy(pair)
                ))
            }
        }
    }
    Ok(())
}

fn parse_num<T: std::str::FromStr>(field: &[u8], what: &str) -> Result<T, String> {
    std::str::from_utf8(field)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            format!(
                "{what} {:?} is not a number in range",
                String::from_utf8_lossy(field)
            )
        })
}

/// Splits a line into exactly four tab-separated fields.
fn four_fields(line: &[u8]) -> Result<[&[u8]; 4], String> {
    let mut it = line.split(|&b| b == b'\t');
    let mut fields: [&[u8]; 4] = [&[]; 4];
    for (i, f) in fields.iter_mut().enumerate() {
        *f = it.next().ok_or_else(|| {
            format!(
                "expected 4 tab-separated fields, found {}: {:?}",
                i,
                preview(line)
            )
        })?;
    }
    if it.next().is_some() {
        return Err(format!(
            "expected 4 tab-separated fields, found more: {:?}",
            preview(line)
        ));
    }
    Ok(fields)
}

/// The start of a line, for messages.
fn preview(line: &[u8]) -> String {
    let cut = line.get(..80).unwrap_or(line);
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if cut.len() < line.len() {
        s.push_str("...");
    }
    s
}

impl<R: BufRead> TextTraceReader<R> {
    /// Reads the first line (and for Gadget traces the header line) and recognizes the
    /// dialect.
    pub fn new(inner: R) -> Result<Self, TraceError> {
        let mut r = TextTraceReader {
            inner,
            line: Vec::new(),
            line_no: 0,
            dialect: TextDialect::Gadget,
            version: 0,
            header: None,
            footer: None,
            names: Vec::new(),
            ids: HashMap::new(),
            key: Vec::new(),
            counts: Counter::default(),
            status: Status::Reading,
        };
        if !r.read_line(MAX_HEADER_LINE, true)? {
            return Err(TraceError::NotATrace {
                offset: 0,
                what: "the file is empty".into(),
            });
        }
        if let Some(rest) = r.line.strip_prefix(GADGET_FIRST_LINE_PREFIX) {
            let version = rest
                .strip_prefix(b"text\t")
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|v| v.parse::<u32>().ok())
                .ok_or_else(|| TraceError::Syntax {
                    line: 1,
                    what: format!(
                        "expected '#gadget-trace<TAB>text<TAB><version>', found {:?}",
                        preview(&r.line)
                    ),
                })?;
            // version 2 brought the ops `open` and `drop`, version 3 `flush` and `checkpoint`,
            // version 4 what a get found; older versions are read as well
            if version == 0 || version > TEXT_VERSION {
                return Err(TraceError::UnsupportedVersion {
                    offset: 0,
                    version,
                    supported: TEXT_VERSION,
                });
            }
            r.version = version;
            if !r.read_line(MAX_HEADER_LINE, false)? {
                return Err(TraceError::TruncatedText {
                    line: 2,
                    what: "the file ends before the #header line".into(),
                });
            }
            let Some(json) = r.line.strip_prefix(b"#header\t") else {
                return Err(TraceError::Syntax {
                    line: 2,
                    what: format!(
                        "expected '#header<TAB><json>', found {:?}",
                        preview(&r.line)
                    ),
                });
            };
            let header: TraceHeader =
                serde_json::from_slice(json).map_err(|e| TraceError::Syntax {
                    line: 2,
                    what: format!("the header is not valid header JSON: {e}"),
                })?;
            check_state_names(&header.state_names)
                .map_err(|what| TraceError::Syntax { line: 2, what })?;
            for (i, name) in header.state_names.iter().enumerate() {
                // check_state_names bounds the count to what a StateId addresses.
                let id = StateId::try_from(i).unwrap_or(StateId::MAX);
                r.ids.insert(name.clone(), id);
            }
            r.names = header.state_names.clone();
            r.header = Some(header);
            r.dialect = TextDialect::Gadget;
        } else if r.line.starts_with(FLINK_FIRST_LINE_PREFIX) {
            r.dialect = TextDialect::Flink;
        } else {
            return Err(TraceError::NotATrace {
                offset: 0,
                what: format!(
                    "line 1 is {:?}, neither '#gadget-trace<TAB>text<TAB>1' nor a Flink \
                     recording's '#op<TAB>cf<TAB>keyhex<TAB>vlen'",
                    preview(&r.line)
                ),
            });
        }
        Ok(r)
    }

    /// Which dialect the input is.
    pub fn dialect(&self) -> TextDialect {
        self.dialect
    }

    /// The header; `None` for Flink recordings.
    pub fn header(&self) -> Option<&TraceHeader> {
        self.header.as_ref()
    }

    /// The state table: the header's, or for a Flink recording the names seen so far.
    pub fn state_names(&self) -> &[String] {
        &self.names
    }

    /// The footer, once the end has been reached (never for Flink recordings).
    pub fn footer(&self) -> Option<&TraceFooter> {
        self.footer.as_ref()
    }

    /// Lines read so far.
    pub fn line_number(&self) -> u64 {
        self.line_no
    }

    /// Iterator over the remaining records, owned.
    pub fn records(&mut self) -> Records<'_, Self> {
        Records::new(self)
    }

    /// Reads the next line into `self.line` without its line break; `false` at end of input.
    fn read_line(&mut self, cap: usize, lenient_end: bool) -> Result<bool, TraceError> {
        self.line.clear();
        let line = self.line_no + 1;
        let got = (&mut self.inner)
            .take(cap as u64 + 1)
            .read_until(b'\n', &mut self.line);
        match got {
            Ok(0) => return Ok(false),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(TraceError::TruncatedText {
                    line,
                    what: format!("the compressed stream ends early ({e})"),
                })
            }
            Err(source) => return Err(TraceError::ReadLine { line, source }),
        }
        self.line_no = line;
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
        } else if self.line.len() > cap {
            return Err(TraceError::Syntax {
                line,
                what: format!("the line is longer than the {cap} bytes allowed"),
            });
        } else if !lenient_end {
            return Err(TraceError::TruncatedText {
                line,
                what: "the last line has no line break".into(),
            });
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        Ok(true)
    }

    /// The id of a state name, registering it if `register` (Flink recordings).
    fn state_id(&mut self, name: &[u8], register: bool) -> Result<StateId, String> {
        let name = std::str::from_utf8(name)
            .map_err(|_| format!("state name {:?} is not UTF-8", preview(name)))?;
        if let Some(&id) = self.ids.get(name) {
            return Ok(id);
        }
        if !register {
            return Err(format!(
                "state {:?} is not in the header's state_names",
                preview(name.as_bytes())
            ));
        }
        check_state_name_len(name)?;
        let id = StateId::try_from(self.names.len())
            .map_err(|_| "more than 65536 state names".to_string())?;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        Ok(id)
    }

    /// Gives `state` the name the `open` just parsed carries (its key).
    fn rename(&mut self, state: StateId) -> Result<(), String> {
        let old = self
            .names
            .get(usize::from(state))
            .cloned()
            .unwrap_or_default();
        super::rename_state(&mut self.names, state, &self.key)?;
        self.ids.remove(&old);
        if let Some(new) = self.names.get(usize::from(state)) {
            self.ids.insert(new.clone(), state);
        }
        Ok(())
    }

    fn parse_gadget(&mut self) -> Result<Parsed, String> {
        let line = std::mem::take(&mut self.line);
        let r = self.parse_gadget_line(&line);
        self.line = line;
        r
    }

    fn parse_gadget_line(&mut self, line: &[u8]) -> Result<Parsed, String> {
        if let Some(json) = line.strip_prefix(b"#footer\t") {
            let footer: TraceFooter = serde_json::from_slice(json)
                .map_err(|e| format!("the footer is not valid footer JSON: {e}"))?;
            self.counts.check(&footer)?;
            self.footer = Some(footer);
            return Ok(Parsed::Footer);
        }
        let [op, state, key, value] = four_fields(line)?;
        match op {
            b"#ev" => Ok(Parsed::Event(parse_num(value, "event input")?)),
            b"#wm" => Ok(Parsed::Watermark(parse_num(value, "watermark timestamp")?)),
            _ => {
                let op = std::str::from_utf8(op)
                    .ok()
                    .and_then(Op::from_name)
                    .ok_or_else(|| format!("unknown op {:?}", preview(op)))?;
                let state = self.state_id(state, false)?;
                let value_len = if op.is_range() {
                    if value != b"0" {
                        return Err(format!(
                            "a {op} writes nothing: its value column must be 0, found {:?}",
                            preview(value)
                        ));
                    }
                    decode_range(key, &mut self.key)?
                } else if op == Op::Get {
                    decode_hex(key, &mut self.key)?;
                    self.read_len(value)?.value_len()
                } else {
                    decode_hex(key, &mut self.key)?;
                    parse_num(value, "value length")?
                };
                if op == Op::Open {
                    self.rename(state)?;
                }
                Ok(Parsed::Access {
                    op,
                    state,
                    value_len,
                })
            }
        }
    }

    /// What a get's last column says it found: before version 4 nothing (every get wrote 0).
    fn read_len(&self, value: &[u8]) -> Result<ReadLen, String> {
        if self.version < READS_SINCE {
            parse_num::<u64>(value, "value length")?;
            return Ok(ReadLen::Unknown);
        }
        if value == b"?" {
            return Ok(ReadLen::Unknown);
        }
        found(parse_num(
            value,
            "the length a get found (or -1 for nothing, ? if not known)",
        )?)
    }

    fn parse_flink(&mut self) -> Result<Parsed, String> {
        let line = std::mem::take(&mut self.line);
        let r = self.parse_flink_line(&line);
        self.line = line;
        r
    }

    fn parse_flink_line(&mut self, line: &[u8]) -> Result<Parsed, String> {
        if line.is_empty() {
            return Ok(Parsed::Skip);
        }
        let [op, cf, key, vlen] = four_fields(line)?;
        let op = match op {
            b"#ev" => return Ok(Parsed::Event(parse_num(vlen, "event input")?)),
            b"#wm" => return Ok(Parsed::Watermark(parse_num(vlen, "watermark timestamp")?)),
            b"#late" | b"#merge_ns" => return Ok(Parsed::Skip),
            b"cf_create" | b"iter_new" => {
                self.state_id(cf, true)?;
                return Ok(Parsed::Skip);
            }
            b"get" => Op::Get,
            b"put" => Op::Put,
            b"merge" => Op::Merge,
            b"delete" => Op::Delete,
            b"iter_seek" => Op::Seek,
            b"iter_next" => Op::Next,
            b"wb_put" => Op::BatchPut,
            b"wb_delete" => Op::BatchDelete,
            b"wb_write" => Op::BatchCommit,
            other => return Err(format!("unknown Flink op {:?}", preview(other))),
        };
        let state = self.state_id(cf, true)?;
        let key = if op == Op::Seek {
            key.split(|&b| b == b'>').next().unwrap_or_default()
        } else {
            key
        };
        decode_hex(key, &mut self.key)?;
        let vlen: i64 = parse_num(vlen, "vlen")?;
        let value_len = match op {
            Op::Put | Op::Merge | Op::BatchPut | Op::BatchCommit => {
                u32::try_from(vlen).map_err(|_| format!("vlen {vlen} of a {op} is not a length"))?
            }
            Op::Get => found(vlen)?.value_len(),
            _ => 0,
        };
        Ok(Parsed::Access {
            op,
            state,
            value_len,
        })
    }

    /// Reads lines until one yields a record or the trace ends.
    fn advance(&mut self) -> Result<Option<Parsed>, TraceError> {
        loop {
            let flink = self.dialect == TextDialect::Flink;
            if !self.read_line(MAX_RECORD_LINE, flink)? {
                if flink {
                    return Ok(None);
                }
                return Err(TraceError::TruncatedText {
                    line: self.line_no + 1,
                    what: "the file ends without a #footer line".into(),
                });
            }
            let parsed = if flink {
                self.parse_flink()
            } else {
                self.parse_gadget()
            };
            let parsed = parsed
                .and_then(|p| match p {
                    Parsed::Access { op, value_len, .. } => {
                        super::check_value_len(op, value_len).map(|()| p)
                    }
                    p => Ok(p),
                })
                .map_err(|what| TraceError::Syntax {
                    line: self.line_no,
                    what,
                })?;
            match parsed {
                Parsed::Skip => continue,
                Parsed::Footer => {
                    if self.read_line(MAX_RECORD_LINE, true)? {
                        return Err(TraceError::Syntax {
                            line: self.line_no,
                            what: "data after the #footer line".into(),
                        });
                    }
                    return Ok(None);
                }
                Parsed::Access { op, .. } => self.counts.access(op),
                Parsed::Event(_) => self.counts.event(),
                Parsed::Watermark(_) => self.counts.watermark(),
            }
            return Ok(Some(parsed));
        }
    }

    /// The next record, `Ok(None)` at the end (for Gadget traces, after the footer has been
    /// read and checked against the records).
    ///
    /// The key borrows the reader; nothing is allocated per record. After an error every call
    /// returns [`TraceError::AlreadyFailed`].
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, TraceError> {
        match self.status {
            Status::Done => return Ok(None),
            Status::Failed => return Err(TraceError::AlreadyFailed),
            Status::Reading => {}
        }
        match self.advance() {
            Ok(Some(Parsed::Access {
                op,
                state,
                value_len,
            })) => Ok(Some(RecordRef::Access(Access {
                op,
                state,
                key: &self.key,
                value_len,
            }))),
            Ok(Some(Parsed::Event(input))) => Ok(Some(RecordRef::Event { input })),
            Ok(Some(Parsed::Watermark(timestamp))) => Ok(Some(RecordRef::Watermark { timestamp })),
            Ok(Some(Parsed::Skip | Parsed::Footer)) | Ok(None) => {
                self.status = Status::Done;
                Ok(None)
            }
            Err(e) => {
                self.status = Status::Failed;
                Err(e)
            }
        }
    }
}

impl<R: BufRead> RecordSource for TextTraceReader<R> {
    fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, TraceError> {
        TextTraceReader::next_record(self)
    }
}
