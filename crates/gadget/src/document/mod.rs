//! The TOML document of a config or experiment file: a span-aware reader over its tables that
//! remembers which keys were read, so every error names the file, the line, the key and what
//! is allowed, and unknown keys are rejected. The lowest room of config reading: `config`,
//! each engine's `[operator]` parser and experiments read through it.

mod error;

pub use error::ConfigError;

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use toml_edit::{Item, Table, Value};

/// The whole file: its path and text, for line numbers.
#[derive(Debug)]
pub struct Document<'a> {
    /// The file, as errors name it (relative paths in it are relative to its folder).
    pub path: &'a Path,
    /// Its whole text.
    pub text: &'a str,
}

impl Document<'_> {
    /// The 1-based line of byte `offset` (0 without one).
    pub fn line_of(&self, offset: Option<usize>) -> usize {
        offset.map_or(0, |o| {
            self.text[..o.min(self.text.len())]
                .bytes()
                .filter(|b| *b == b'\n')
                .count()
                + 1
        })
    }

    /// The file's top level as a section, or where its TOML is broken.
    pub fn top(&self) -> Result<Section<'_>, ConfigError> {
        let parsed = toml_edit::ImDocument::parse(self.text.to_string()).map_err(|e| {
            ConfigError::Syntax {
                path: self.path.to_path_buf(),
                line: self.line_of(e.span().map(|s| s.start)),
                message: e.message().trim().to_string(),
            }
        })?;
        Ok(Section::new(self, parsed.as_table().clone(), ""))
    }

    /// An error about `key` at the line of `offset`, or without a line when there is none
    /// (a key or section that is missing).
    pub fn error(
        &self,
        offset: Option<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> ConfigError {
        let (path, key, message) = (self.path.to_path_buf(), key.to_string(), message.into());
        match offset {
            Some(_) => ConfigError::Invalid {
                path,
                line: self.line_of(offset),
                key,
                message,
            },
            None => ConfigError::Missing { path, key, message },
        }
    }
}

/// One table of the config (`[source]`, `[operator]`, ...).
pub struct Section<'a> {
    doc: &'a Document<'a>,
    table: Table,
    name: String,
    offset: Option<usize>,
    read: RefCell<Vec<String>>,
    allowed: RefCell<Vec<&'static str>>,
}

impl<'a> Section<'a> {
    /// The section `name` (`run`, `run.rocksdb`, ...) of `doc`, its table `table`.
    pub fn new(doc: &'a Document<'a>, table: Table, name: &str) -> Self {
        let offset = table.span().map(|s| s.start);
        Section {
            doc,
            table,
            name: name.to_string(),
            offset,
            read: RefCell::new(Vec::new()),
            allowed: RefCell::new(Vec::new()),
        }
    }

    fn full(&self, key: &str) -> String {
        if self.name.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.name)
        }
    }

    fn item(&self, key: &'static str) -> Option<&Item> {
        self.allowed.borrow_mut().push(key);
        let item = self.table.get(key);
        if item.is_some() {
            self.read.borrow_mut().push(key.to_string());
        }
        item
    }

    fn item_offset(&self, key: &str) -> Option<usize> {
        self.table
            .key(key)
            .and_then(|k| k.span())
            .or_else(|| self.table.get(key).and_then(|i| i.span()))
            .map(|s| s.start)
            .or(self.offset)
    }

    /// An error about `key` at its line (or the section's line when the key is missing).
    pub fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        self.doc
            .error(self.item_offset(key), &self.full(key), message)
    }

    /// Where `key` is set in the file (the section's start when it is not): for an error
    /// about it found after the section was finished ([`Document::error`]).
    pub fn offset_of(&self, key: &str) -> Option<usize> {
        self.item_offset(key)
    }

    /// Where `key` is set, as errors name it: `job.toml:7: `source.path``.
    pub fn origin(&self, key: &str) -> String {
        format!(
            "{}:{}: `{}`",
            self.doc.path.display(),
            self.doc.line_of(self.item_offset(key)),
            self.full(key)
        )
    }

    /// An error about the section as a whole, at its header line.
    pub fn section_error(&self, message: impl Into<String>) -> ConfigError {
        self.doc.error(self.offset, &self.name, message)
    }

    /// An error for a key that is missing, unless a key of the section nobody asked for is
    /// a misspelling of it (`sise` for `size`): then that key, at its line.
    pub fn missing(&self, key: &str, what: &str) -> ConfigError {
        let misspelled = self.table.iter().map(|(k, _)| k).find(|k| {
            !self.read.borrow().iter().any(|r| r == k) && *k != key && edit_distance(k, key) <= 2
        });
        if let Some(k) = misspelled {
            return self.error(k, format!("unknown key; did you mean `{key}`?"));
        }
        let section = if self.name.is_empty() {
            "the top level".to_string()
        } else {
            format!("[{}]", self.name)
        };
        self.doc.error(
            self.offset,
            &self.full(key),
            format!("missing; add `{key} = ...` to {section}: {what}"),
        )
    }

    fn value(&self, key: &'static str) -> Option<&Value> {
        self.item(key).and_then(|i| i.as_value())
    }

    /// The section's TOML table.
    pub fn as_table(&self) -> &Table {
        &self.table
    }

    /// True if `key` holds a table (`[a.key]` or an inline `{ ... }`), without reading it.
    pub fn is_table(&self, key: &str) -> bool {
        matches!(
            self.table.get(key),
            Some(Item::Table(_)) | Some(Item::Value(Value::InlineTable(_)))
        )
    }

    /// True if the section sets `key` (without counting it as read).
    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// A sub-table (`[source.watermarks]` or an inline table).
    pub fn table(&self, key: &'static str) -> Result<Option<Section<'a>>, ConfigError> {
        match self.item(key) {
            None => Ok(None),
            Some(Item::Table(t)) => Ok(Some(Section::new(self.doc, t.clone(), &self.full(key)))),
            Some(Item::Value(Value::InlineTable(t))) => {
                let mut s = Section::new(self.doc, t.clone().into_table(), &self.full(key));
                s.offset = self.item_offset(key);
                Ok(Some(s))
            }
            Some(_) => Err(self.error(key, "must be a table")),
        }
    }

    /// Every sub-table of the section by its key (`[run.stores.table]` gives `table`), for
    /// sections whose keys are names the user chooses; a key that is not a table is an error.
    pub fn named_tables(&self) -> Result<Vec<(String, Section<'a>)>, ConfigError> {
        let mut out = Vec::new();
        for (key, item) in self.table.iter() {
            self.read.borrow_mut().push(key.to_string());
            let table = match item {
                Item::Table(t) => t.clone(),
                Item::Value(Value::InlineTable(t)) => t.clone().into_table(),
                _ => return Err(self.error(key, "must be a table ([NAME] or NAME = { ... })")),
            };
            let mut s = Section::new(self.doc, table, &self.full(key));
            if s.offset.is_none() {
                s.offset = self.item_offset(key);
            }
            out.push((key.to_string(), s));
        }
        Ok(out)
    }

    /// An array of tables (`[[workload]]`), each a section named `workload[1]`, `workload[2]`...
    pub fn tables(&self, key: &'static str) -> Result<Vec<Section<'a>>, ConfigError> {
        match self.item(key) {
            None => Ok(Vec::new()),
            Some(Item::ArrayOfTables(a)) => Ok(a
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    Section::new(
                        self.doc,
                        t.clone(),
                        &format!("{}[{}]", self.full(key), i + 1),
                    )
                })
                .collect()),
            Some(_) => Err(self.error(key, format!("must be [[{key}]] sections"))),
        }
    }

    /// A list of numbers within `[min, max]`.
    pub fn floats(
        &self,
        key: &'static str,
        min: f64,
        max: f64,
    ) -> Result<Option<Vec<f64>>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        let what = format!(
            "must be a list of numbers from {} to {}, like [1000, 2000]",
            number(min),
            number(max)
        );
        let arr = v.as_array().ok_or_else(|| self.error(key, &what))?;
        arr.iter()
            .map(|x| {
                x.as_float()
                    .or_else(|| x.as_integer().map(|n| n as f64))
                    .filter(|n| (min..=max).contains(n))
                    .ok_or_else(|| self.error(key, &what))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// A string that must be one of `allowed`.
    pub fn choice(
        &self,
        key: &'static str,
        allowed: &[&'static str],
    ) -> Result<Option<&'static str>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        Ok(Some(allowed[self.index_of_choice(key, v, allowed)?]))
    }

    /// The index in `allowed` of the string `v` that `key` holds, or an error naming them.
    fn index_of_choice(
        &self,
        key: &'static str,
        v: &Value,
        allowed: &[&'static str],
    ) -> Result<usize, ConfigError> {
        let s = v.as_str().ok_or_else(|| {
            self.error(
                key,
                format!("must be a string, one of: {}", allowed.join(", ")),
            )
        })?;
        allowed.iter().position(|a| *a == s).ok_or_else(|| {
            self.error(
                key,
                format!("`{s}` is not allowed; use one of: {}", allowed.join(", ")),
            )
        })
    }

    /// A required string, one of `named`'s names: the value named by it.
    pub fn require_named<T: Copy>(
        &self,
        key: &'static str,
        named: &[(&'static str, T)],
    ) -> Result<T, ConfigError> {
        let names: Vec<&'static str> = named.iter().map(|(name, _)| *name).collect();
        let Some(v) = self.value(key) else {
            return Err(self.missing(key, &format!("one of {}", names.join(", "))));
        };
        Ok(named[self.index_of_choice(key, v, &names)?].1)
    }

    /// A required choice.
    pub fn require_choice(
        &self,
        key: &'static str,
        allowed: &[&'static str],
    ) -> Result<&'static str, ConfigError> {
        self.choice(key, allowed)?
            .ok_or_else(|| self.missing(key, &format!("one of {}", allowed.join(", "))))
    }

    /// An integer in `[min, max]`.
    pub fn int(&self, key: &'static str, min: i64, max: i64) -> Result<Option<i64>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        let n = v
            .as_integer()
            .ok_or_else(|| self.error(key, format!("must be an integer in [{min}, {max}]")))?;
        if n < min || n > max {
            return Err(self.error(key, format!("{n} is out of range; allowed: [{min}, {max}]")));
        }
        Ok(Some(n))
    }

    /// A required integer in `[min, max]`.
    pub fn require_int(
        &self,
        key: &'static str,
        min: i64,
        max: i64,
        what: &str,
    ) -> Result<i64, ConfigError> {
        self.int(key, min, max)?
            .ok_or_else(|| self.missing(key, what))
    }

    /// A number (integer or float) in `[min, max]`.
    pub fn float(&self, key: &'static str, min: f64, max: f64) -> Result<Option<f64>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        let n = v
            .as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .ok_or_else(|| {
                self.error(
                    key,
                    format!("must be a number in [{}, {}]", number(min), number(max)),
                )
            })?;
        if !(n >= min && n <= max) {
            return Err(self.error(
                key,
                format!(
                    "{} is out of range; allowed: [{}, {}]",
                    number(n),
                    number(min),
                    number(max)
                ),
            ));
        }
        Ok(Some(n))
    }

    /// A required number in `[min, max]`.
    pub fn require_float(
        &self,
        key: &'static str,
        min: f64,
        max: f64,
        what: &str,
    ) -> Result<f64, ConfigError> {
        self.float(key, min, max)?
            .ok_or_else(|| self.missing(key, what))
    }

    /// A boolean.
    pub fn bool(&self, key: &'static str) -> Result<Option<bool>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        v.as_bool()
            .map(Some)
            .ok_or_else(|| self.error(key, "must be true or false"))
    }

    /// A free string.
    pub fn string(&self, key: &'static str) -> Result<Option<String>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        v.as_str()
            .map(|s| Some(s.to_string()))
            .ok_or_else(|| self.error(key, "must be a string"))
    }

    /// A string that names a state in traces (`state_name`, `table_state`): non-empty and as
    /// every trace reader takes it ([`crate::trace::check_state_name`]: no tab or line break,
    /// at most [`MAX_STATE_NAME_LEN`](crate::trace::MAX_STATE_NAME_LEN) bytes).
    pub fn state_name(&self, key: &'static str) -> Result<Option<String>, ConfigError> {
        let Some(name) = self.string(key)? else {
            return Ok(None);
        };
        let why = if name.is_empty() {
            "an empty name".to_string()
        } else if let Err(why) = crate::trace::check_state_name(&name) {
            why
        } else {
            return Ok(Some(name));
        };
        Err(self.error(
            key,
            format!(
                "{why}: a state's name in a trace is non-empty, without tabs or line breaks, and \
                 at most {} bytes long",
                crate::trace::MAX_STATE_NAME_LEN
            ),
        ))
    }

    /// An integer (`Ok`) or a string (`Err`), for keys that take a count or a time.
    pub fn string_or_int(
        &self,
        key: &'static str,
    ) -> Result<Option<Result<i64, String>>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        if let Some(n) = v.as_integer() {
            return Ok(Some(Ok(n)));
        }
        v.as_str()
            .map(|s| Some(Err(s.to_string())))
            .ok_or_else(|| self.error(key, "must be a request count (10000) or a time (\"5s\")"))
    }

    /// A list of strings.
    pub fn strings(&self, key: &'static str) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        let arr = v
            .as_array()
            .ok_or_else(|| self.error(key, "must be a list of strings, like [\"SUBMIT\"]"))?;
        arr.iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.error(key, "must be a list of strings, like [\"SUBMIT\"]"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// The folder of the file this section is in, which relative paths start from.
    pub fn folder(&self) -> &Path {
        self.doc.path.parent().unwrap_or(Path::new("."))
    }

    /// A path, relative to the config file's folder.
    pub fn path(&self, key: &'static str) -> Result<Option<PathBuf>, ConfigError> {
        Ok(self.string(key)?.map(|p| {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                self.folder().join(p)
            }
        }))
    }

    /// Every remaining value of the section as `(key, value as text, line)`, sub-tables
    /// flattened to dotted keys (`exponential.percentile`), keys in `skip` left out; all of
    /// them count as read. For sections that pass their keys on, like `[ycsb]`.
    pub fn text_entries(&self, skip: &[&str]) -> Result<Vec<(String, String, usize)>, ConfigError> {
        let mut out = Vec::new();
        for (key, item) in self.table.iter() {
            if skip.contains(&key) {
                continue;
            }
            self.read.borrow_mut().push(key.to_string());
            let line = self.doc.line_of(self.item_offset(key));
            let sub = match item {
                Item::Table(t) => Some(t.clone()),
                Item::Value(Value::InlineTable(t)) => Some(t.clone().into_table()),
                _ => None,
            };
            if let Some(t) = sub {
                let s = Section::new(self.doc, t, &self.full(key));
                for (k, v, l) in s.text_entries(&[])? {
                    out.push((format!("{key}.{k}"), v, l));
                }
                continue;
            }
            let text = match item.as_value() {
                Some(Value::String(v)) => v.value().clone(),
                Some(Value::Integer(v)) => v.value().to_string(),
                Some(Value::Float(v)) => v.value().to_string(),
                Some(Value::Boolean(v)) => v.value().to_string(),
                _ => {
                    return Err(self.error(key, "must be a string, a number or true/false"));
                }
            };
            out.push((key.to_string(), text, line));
        }
        Ok(out)
    }

    /// Fails on any key that no getter asked for.
    pub fn finish(self) -> Result<(), ConfigError> {
        let read = self.read.borrow();
        let allowed = self.allowed.borrow();
        for (key, _) in self.table.iter() {
            if !read.iter().any(|r| r == key) {
                let mut names: Vec<&str> = allowed.to_vec();
                names.sort_unstable();
                names.dedup();
                return Err(self.error(
                    key,
                    format!("unknown key; allowed here: {}", names.join(", ")),
                ));
            }
        }
        Ok(())
    }
}

/// `text` as the path of a file a config names: a relative one starts from `folder` (the
/// config's), and one that would start with `-` gets `./` before it, so that passed on it is
/// never read as a flag. An empty name, or one holding a control character (a NUL, a tab, a
/// line break), is refused with a message that says so.
pub fn file_path(folder: &Path, text: &str) -> Result<PathBuf, String> {
    if text.is_empty() || text.chars().any(char::is_control) {
        return Err(format!(
            "`{}` is not a file name: it is empty or holds a control character (a NUL, a tab, a line break)",
            text.escape_debug()
        ));
    }
    let p = PathBuf::from(text);
    let p = if p.is_absolute() { p } else { folder.join(p) };
    Ok(if p.as_os_str().as_encoded_bytes().starts_with(b"-") {
        Path::new(".").join(p)
    } else {
        p
    })
}

/// The Levenshtein distance of `a` and `b` (insertions, deletions, substitutions), for keys
/// a few characters long.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// A number as a message shows it: plainly in the usual range, in scientific notation when
/// huge or tiny (`1e-300`, not 300 digits).
pub fn number(x: f64) -> String {
    if x == 0.0 || (1e-4..1e15).contains(&x.abs()) || !x.is_finite() {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// The largest time in ms (and the largest magnitude of an offset or bound) a config takes:
/// a quarter of `i64`'s range, so sums of a few times stay in range.
pub const MS_MAX: i64 = i64::MAX / 4;

/// The largest config or experiment file read: configs are hand-written text, and a bound
/// keeps `/dev/zero` or a trace given by mistake from filling memory.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// A config file's text, or why it cannot be read (missing, not UTF-8: with line and byte,
/// over [`MAX_CONFIG_BYTES`]).
pub fn read_text(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let io = |source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..offset];
        ConfigError::NotUtf8 {
            path: path.to_path_buf(),
            line: before.iter().filter(|b| **b == b'\n').count() + 1,
            offset,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distances_count_single_character_edits() {
        assert_eq!(edit_distance("sise", "size"), 1);
        assert_eq!(edit_distance("size", "size"), 0);
        assert_eq!(edit_distance("sze", "size"), 1);
        assert_eq!(edit_distance("window", "size"), 5);
        assert_eq!(edit_distance("", "ab"), 2);
    }
}
