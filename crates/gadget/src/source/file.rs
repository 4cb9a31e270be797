//! Event streams read from CSV/TSV files (optionally gzip-compressed), such as the Borg trace.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use super::element::{
    java_string_bytes, Event, StreamElement, WatermarkGenerator, WatermarkPolicy,
};
use super::SourceError;
use crate::key::Key;

/// How the key column is typed in the Flink job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// A Java `long`.
    Long,
    /// A Java `String`.
    String,
}

/// Unit of the time column; event time is converted to milliseconds (integer division).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Nanoseconds.
    Nanoseconds,
    /// Microseconds (the Borg trace).
    Microseconds,
    /// Milliseconds.
    Milliseconds,
    /// Seconds.
    Seconds,
}

impl TimeUnit {
    fn to_millis(self, v: i64) -> i64 {
        match self {
            TimeUnit::Nanoseconds => v / 1_000_000,
            TimeUnit::Microseconds => v / 1_000,
            TimeUnit::Milliseconds => v,
            TimeUnit::Seconds => v.saturating_mul(1_000),
        }
    }
}

/// Delivery order of the file's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOrder {
    /// As the rows appear in the file.
    AsIs,
    /// Stably sorted by event time (what the Flink reference jobs did).
    SortByTime,
}

/// Which rows become events, and on which input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeRouting {
    /// Every row (no type column needed).
    All,
    /// Rows whose type is one of these, on input 0.
    Accept(Vec<String>),
    /// Two inputs from one file: rows of the first list on input 1, of the second on input 2.
    Split(Vec<String>, Vec<String>),
    /// Like `Split`, and rows of the third list are closing events on input 1.
    SplitClosing(Vec<String>, Vec<String>, Vec<String>),
    /// Like `Split`, and rows of other types on input 0 (for an engine that counts every row
    /// into its micro-batches).
    SplitKeepingOthers(Vec<String>, Vec<String>),
}

/// A file event source.
#[derive(Debug, Clone)]
pub struct FileSpec {
    /// Path of the CSV/TSV file (`.gz` or gzip magic: decompressed).
    pub path: PathBuf,
    /// Where the path was given, named by errors opening it, like `job.toml:7: `source.path``
    /// (empty when it was not given in a config).
    pub origin: String,
    /// Field delimiter (`,` or tab).
    pub delimiter: u8,
    /// Skip the first line.
    pub header: bool,
    /// Zero-based column of the key.
    pub key_column: usize,
    /// How the key is typed.
    pub key_type: KeyType,
    /// Zero-based column of the event time.
    pub time_column: usize,
    /// Unit of the time column.
    pub time_unit: TimeUnit,
    /// Zero-based column of the event type, if routing needs it.
    pub type_column: Option<usize>,
    /// Zero-based column each event carries as a Java `String` (its serialized bytes are the
    /// event's [`Event::payload`]), if any.
    pub payload_column: Option<usize>,
    /// Which rows become events on which input.
    pub routing: TypeRouting,
    /// Row order.
    pub order: FileOrder,
    /// Watermarks, assigned on every row before the type filter (as a Flink job that assigns
    /// timestamps at the source and filters afterwards).
    pub watermarks: WatermarkPolicy,
    /// Times the file is played (`repeat`, at least 1): copy *r* comes after copy *r* − 1,
    /// its event times shifted by *r* × the file's time span (latest − earliest + 1 ms), as the
    /// bundled Flink job's `--repeat` does.
    pub repeat: u32,
}

/// One parsed row: key, event time (ms), input (255 = filtered out), closes, payload bytes.
type Row = (Key, i64, u8, bool, u16);
const FILTERED: u8 = 255;

/// Streams the events of a file with watermarks, ending with the final watermark.
pub struct FileSource {
    rows: Box<dyn Iterator<Item = Result<Row, SourceError>>>,
    watermarks: WatermarkGenerator,
    pending_watermark: Option<i64>,
    done: bool,
}

impl std::fmt::Debug for FileSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSource")
            .field("done", &self.done)
            .finish()
    }
}

fn open_reader(path: &Path, origin: &str) -> Result<Box<dyn BufRead>, SourceError> {
    let io = |source| match origin {
        "" => SourceError::Io {
            path: path.to_path_buf(),
            source,
        },
        origin => SourceError::Open {
            origin: origin.to_string(),
            path: path.to_path_buf(),
            source,
        },
    };
    let mut file = File::open(path).map_err(io)?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(io)?;
    let file = File::open(path).map_err(io)?;
    if n == 2 && magic == [0x1f, 0x8b] {
        Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(file),
        )))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 16, file)))
    }
}

struct RowParser {
    spec: FileSpec,
    reader: Box<dyn BufRead>,
    line: String,
    line_no: u64,
    strings: std::collections::HashMap<String, Arc<str>>,
}

impl RowParser {
    fn bad(&self, msg: String) -> SourceError {
        SourceError::Parse {
            path: self.spec.path.clone(),
            line: self.line_no,
            message: msg,
        }
    }

    fn next_row(&mut self) -> Option<Result<Row, SourceError>> {
        loop {
            self.line.clear();
            match self.reader.read_line(&mut self.line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    return Some(Err(SourceError::Io {
                        path: self.spec.path.clone(),
                        source: e,
                    }))
                }
            }
            self.line_no += 1;
            if self.line_no == 1 && self.spec.header {
                continue;
            }
            let text = self.line.trim_end_matches(['\n', '\r']);
            if text.is_empty() {
                continue;
            }
            return Some(self.parse(text.to_string()));
        }
    }

    fn parse(&mut self, text: String) -> Result<Row, SourceError> {
        let d = self.spec.delimiter as char;
        let col = |i: usize| text.split(d).nth(i);
        let key_field = col(self.spec.key_column).ok_or_else(|| {
            self.bad(format!(
                "no key column {} (the row has {} columns); check key_column",
                self.spec.key_column,
                text.split(d).count()
            ))
        })?;
        let key = match self.spec.key_type {
            KeyType::Long => Key::Long(key_field.trim().parse().map_err(|_| {
                self.bad(format!(
                    "key {key_field:?} is not a long; set key_type = \"string\" for text keys"
                ))
            })?),
            KeyType::String => {
                let k = key_field.to_string();
                let interned = self
                    .strings
                    .entry(k.clone())
                    .or_insert_with(|| Arc::from(k.as_str()));
                Key::Str(interned.clone())
            }
        };
        let time_field = col(self.spec.time_column).ok_or_else(|| {
            self.bad(format!(
                "no time column {}; check time_column",
                self.spec.time_column
            ))
        })?;
        let raw: i64 = time_field.trim().parse().map_err(|_| {
            self.bad(format!(
                "time {time_field:?} is not an integer; check time_column"
            ))
        })?;
        let ts = self.spec.time_unit.to_millis(raw);
        let mut closes = false;
        let input = match &self.spec.routing {
            TypeRouting::All => 0,
            routing => {
                let c = self
                    .spec
                    .type_column
                    .expect("validated: routing needs a type column");
                let t = col(c)
                    .ok_or_else(|| self.bad(format!("no type column {c}; check type_column")))?
                    .trim();
                match routing {
                    TypeRouting::Accept(list) if list.iter().any(|x| x == t) => 0,
                    TypeRouting::Split(l, _) if l.iter().any(|x| x == t) => 1,
                    TypeRouting::Split(_, r) if r.iter().any(|x| x == t) => 2,
                    TypeRouting::SplitClosing(l, _, _) if l.iter().any(|x| x == t) => 1,
                    TypeRouting::SplitClosing(_, r, _) if r.iter().any(|x| x == t) => 2,
                    TypeRouting::SplitClosing(_, _, c) if c.iter().any(|x| x == t) => {
                        closes = true;
                        1
                    }
                    TypeRouting::SplitKeepingOthers(l, _) if l.iter().any(|x| x == t) => 1,
                    TypeRouting::SplitKeepingOthers(_, r) if r.iter().any(|x| x == t) => 2,
                    TypeRouting::SplitKeepingOthers(..) => 0,
                    _ => FILTERED,
                }
            }
        };
        let payload =
            match self.spec.payload_column {
                None => 0,
                Some(c) => java_string_bytes(col(c).ok_or_else(|| {
                    self.bad(format!("no payload column {c}; check payload_column"))
                })?),
            };
        Ok((key, ts, input, closes, payload))
    }
}

impl FileSource {
    /// Opens the file; with [`FileOrder::SortByTime`] or a `repeat` above 1 the whole file is
    /// read first (and sorted).
    pub fn open(spec: FileSpec) -> Result<Self, SourceError> {
        let reader = open_reader(&spec.path, &spec.origin)?;
        let watermarks = WatermarkGenerator::new(spec.watermarks);
        let order = spec.order;
        let repeat = spec.repeat.max(1);
        let mut parser = RowParser {
            spec,
            reader,
            line: String::new(),
            line_no: 0,
            strings: Default::default(),
        };
        let rows: Box<dyn Iterator<Item = Result<Row, SourceError>>> = match (order, repeat) {
            (FileOrder::AsIs, 1) => Box::new(std::iter::from_fn(move || parser.next_row())),
            _ => {
                let mut all = Vec::new();
                while let Some(row) = parser.next_row() {
                    all.push(row?);
                }
                if order == FileOrder::SortByTime {
                    all.sort_by_key(|r| r.1); // stable
                }
                Box::new(repeated(all, repeat).map(Ok))
            }
        };
        Ok(FileSource {
            rows,
            watermarks,
            pending_watermark: None,
            done: false,
        })
    }
}

/// `rows` played `times` times, each copy's event times shifted past the previous copy's.
fn repeated(rows: Vec<Row>, times: u32) -> impl Iterator<Item = Row> {
    let earliest = rows.iter().map(|r| r.1).min().unwrap_or(0);
    let latest = rows.iter().map(|r| r.1).max().unwrap_or(0);
    let span = latest.saturating_sub(earliest).saturating_add(1);
    (0..i64::from(times)).flat_map(move |copy| {
        let shift = copy.saturating_mul(span);
        rows.clone()
            .into_iter()
            .map(move |(key, time, input, closes, payload)| {
                (key, time.saturating_add(shift), input, closes, payload)
            })
    })
}

impl Iterator for FileSource {
    type Item = Result<StreamElement, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(w) = self.pending_watermark.take() {
            return Some(Ok(StreamElement::Watermark(w)));
        }
        loop {
            if self.done {
                return None;
            }
            match self.rows.next() {
                None => {
                    self.done = true;
                    return Some(Ok(StreamElement::Watermark(i64::MAX)));
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Some(Ok((key, timestamp, input, closes, payload))) => {
                    let wm = self.watermarks.on_event(timestamp);
                    if input == FILTERED {
                        if let Some(w) = wm {
                            return Some(Ok(StreamElement::Watermark(w)));
                        }
                        continue;
                    }
                    self.pending_watermark = wm;
                    return Some(Ok(StreamElement::Event(Event {
                        key,
                        timestamp,
                        input,
                        closes,
                        payload,
                    })));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: PathBuf, order: FileOrder, repeat: u32) -> FileSpec {
        FileSpec {
            origin: String::new(),
            path,
            delimiter: b',',
            header: false,
            key_column: 0,
            key_type: KeyType::Long,
            time_column: 1,
            time_unit: TimeUnit::Milliseconds,
            type_column: None,
            payload_column: None,
            routing: TypeRouting::All,
            order,
            watermarks: WatermarkPolicy::Punctuated {
                every: 2,
                out_of_orderness: 0,
            },
            repeat,
        }
    }

    /// The source's elements as `k@t` for events and `w@t` for watermarks.
    fn elements(spec: FileSpec) -> Vec<String> {
        FileSource::open(spec)
            .unwrap()
            .map(|e| match e.unwrap() {
                StreamElement::Event(e) => match e.key {
                    Key::Long(k) => format!("{k}@{}", e.timestamp),
                    other => panic!("{other:?}"),
                },
                StreamElement::Watermark(w) => format!("w@{w}"),
            })
            .collect()
    }

    #[test]
    fn a_repeated_file_plays_each_copy_after_the_last_shifted_by_its_span() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.csv");
        // span: 30 - 10 + 1 = 21 ms
        std::fs::write(&path, "1,20\n2,10\n3,30\n").unwrap();
        assert_eq!(
            elements(spec(path.clone(), FileOrder::AsIs, 2)),
            [
                "1@20",
                "2@10",
                "w@19",
                "3@30",
                "1@41",
                "w@40",
                "2@31",
                "3@51",
                "w@50",
                "w@9223372036854775807"
            ]
        );
        assert_eq!(
            elements(spec(path.clone(), FileOrder::SortByTime, 3)),
            [
                "2@10",
                "1@20",
                "w@19",
                "3@30",
                "2@31",
                "w@30",
                "1@41",
                "3@51",
                "w@50",
                "2@52",
                "1@62",
                "w@61",
                "3@72",
                "w@9223372036854775807"
            ]
        );
        assert_eq!(
            elements(spec(path.clone(), FileOrder::AsIs, 1)),
            elements(spec(path, FileOrder::AsIs, 0)),
            "0 and 1 both play the file once"
        );
    }
}
