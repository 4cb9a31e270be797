//! YCSB's workload parameters as `key=value` properties, each remembering where it was set, so
//! an invalid value is reported at its file and line (or as the `-p` override it came from).

use std::path::{Path, PathBuf};

use super::ConfigError;

/// Where a property was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A line of a file (a YCSB `.properties` workload file or a `[ycsb]` section).
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
    },
    /// A `-p key=value` command-line override.
    CommandLine,
}

/// One `key=value` setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// The property name, like `recordcount`.
    pub key: String,
    /// The value as text, as YCSB reads it.
    pub value: String,
    /// Where it was set.
    pub origin: Origin,
}

impl Property {
    /// An error about this property that names where it was set.
    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        match &self.origin {
            Origin::File { path, line } => ConfigError::Invalid {
                path: path.clone(),
                line: *line,
                key: self.key.clone(),
                message: message.into(),
            },
            Origin::CommandLine => ConfigError::Override {
                key: self.key.clone(),
                message: message.into(),
            },
        }
    }
}

/// An ordered set of properties; a later setting of a key overrides an earlier one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: Vec<Property>,
}

impl Properties {
    /// No properties.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a Java properties file as YCSB ships its workloads: `key=value` (or `key:value`,
    /// or `key value`) per line, `#` and `!` comment lines, surrounding blanks trimmed.
    /// A line ending in a backslash continues on the next line, as in Java.
    pub fn parse_file(text: &str, path: &Path) -> Properties {
        let mut props = Properties::new();
        let mut lines = text.lines().enumerate();
        while let Some((index, raw)) = lines.next() {
            let mut line = raw.trim().to_string();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            while line.ends_with('\\') {
                line.pop();
                match lines.next() {
                    Some((_, more)) => line.push_str(more.trim_start()),
                    None => break,
                }
            }
            let split = line
                .find(['=', ':'])
                .or_else(|| line.find(char::is_whitespace));
            let (key, value) = match split {
                Some(i) => (line[..i].trim_end(), line[i + 1..].trim()),
                None => (line.as_str(), ""),
            };
            props.set(
                key,
                value,
                Origin::File {
                    path: path.to_path_buf(),
                    line: index + 1,
                },
            );
        }
        props
    }

    /// Parses a `-p key=value` override.
    pub fn parse_override(text: &str) -> Result<(String, String), ConfigError> {
        match text.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(ConfigError::Override {
                key: text.to_string(),
                message: "write an override as key=value, like -p recordcount=100000".into(),
            }),
        }
    }

    /// Sets `key`, overriding an earlier setting.
    pub fn set(&mut self, key: &str, value: &str, origin: Origin) {
        self.entries.retain(|p| p.key != key);
        self.entries.push(Property {
            key: key.to_string(),
            value: value.to_string(),
            origin,
        });
    }

    /// Adds every property of `other`, overriding.
    pub fn extend(&mut self, other: Properties) {
        for p in other.entries {
            self.set(&p.key, &p.value, p.origin);
        }
    }

    /// The setting of `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Property> {
        self.entries.iter().find(|p| p.key == key)
    }

    /// Every setting, in the order they were made.
    pub fn iter(&self) -> impl Iterator<Item = &Property> {
        self.entries.iter()
    }

    /// True if the text is a YCSB workload file: a `workload` property naming a YCSB workload
    /// class (`site.ycsb.…` or the older `com.yahoo.ycsb.…`), as every file in YCSB's
    /// `workloads/` folder has.
    pub fn looks_like_ycsb(text: &str) -> bool {
        text.lines().any(|l| {
            let l = l.trim();
            l.strip_prefix("workload")
                .map(|rest| rest.trim_start())
                .and_then(|rest| rest.strip_prefix(['=', ':']))
                .map(str::trim)
                .is_some_and(|v| v.starts_with("site.ycsb.") || v.starts_with("com.yahoo.ycsb."))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ycsb_files() {
        let text = "# comment\n! also\n\nrecordcount=1000\nreadproportion : 0.5\nmaxscan\\\n  length=7\nworkload=site.ycsb.workloads.CoreWorkload\nrecordcount = 2000\n";
        let p = Properties::parse_file(text, Path::new("w"));
        assert_eq!(p.get("recordcount").unwrap().value, "2000");
        assert_eq!(
            p.get("recordcount").unwrap().origin,
            Origin::File {
                path: "w".into(),
                line: 9
            }
        );
        assert_eq!(p.get("readproportion").unwrap().value, "0.5");
        assert_eq!(p.get("maxscanlength").unwrap().value, "7");
        assert!(Properties::looks_like_ycsb(text));
        assert!(!Properties::looks_like_ycsb("seed = 1\n[ycsb]\n"));
    }

    #[test]
    fn overrides_need_an_equals_sign() {
        assert_eq!(
            Properties::parse_override("recordcount=5").unwrap(),
            ("recordcount".to_string(), "5".to_string())
        );
        assert!(Properties::parse_override("recordcount").is_err());
        assert!(Properties::parse_override("=5").is_err());
    }
}
