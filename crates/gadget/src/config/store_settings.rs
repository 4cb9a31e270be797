//! Store settings, each defined once: its flag (`--write-buffer-mb`), its place in a config
//! (`[run.rocksdb] write_buffer_mb`), its key in an experiment's `[[store]]`
//! (`write_buffer_mb`), what its value must be, its default and its help. `gadget run`'s flags,
//! the `[run]` section, experiment files and the docs' tables all read [`STORE_SETTINGS`]; the
//! evaluator applies a [`Value`] by key and says which stores read which keys.

use std::path::{Path, PathBuf};

use super::bounds::{duration_text, parse_duration, Bounds};
use super::ConfigError;
use crate::document::{file_path, number, Section};

/// Where a Redis Cluster keeps an instance's keys (`[run.redis] placement`,
/// `--redis-placement`); the evaluator's `Placement` reads these names.
pub const REDIS_PLACEMENTS: &[&str] = &["native", "aligned", "replicated"];

/// `write_buffer_mb`: a RocksDB (LevelDB, fjall) write buffer, MiB.
pub const WRITE_BUFFER_MB: Bounds = Bounds::new(1.0, (1u64 << 20) as f64);

/// `write_buffers`: RocksDB's number of write buffers.
pub const WRITE_BUFFERS: Bounds = Bounds::new(1.0, 64.0);

/// `block_cache_mb`: a block cache, MiB (0: none).
pub const BLOCK_CACHE_MB: Bounds = Bounds::new(0.0, (1u64 << 20) as f64);

/// `redis_pipeline`: Redis point writes per round trip.
pub const REDIS_PIPELINE: Bounds = Bounds::new(1.0, (1u64 << 20) as f64);

/// `lmdb_map_gb`: LMDB's map size, GiB.
pub const LMDB_MAP_GB: Bounds = Bounds::new(1.0, (1u64 << 20) as f64);

/// `faster_log_mb`: FASTER's in-memory log, MiB (at least the 192 MiB FASTER needs).
pub const FASTER_LOG_MB: Bounds = Bounds::new(192.0, (1u64 << 20) as f64);

/// `faster_index_mb`: FASTER's hash index, MiB.
pub const FASTER_INDEX_MB: Bounds = Bounds::new(1.0, (1u64 << 16) as f64);

/// The RocksDB libraries `[run.rocksdb] library` and `--rocksdb-lib` name (gadget-eval's
/// `RocksDbLib`); any other value must be the path of a `librocksdb` shared library.
pub const ROCKSDB_LIBRARIES: &[&str] = &["flink-1.20", "flink-2.x", "forst", "current", "debian"];

/// Whether `text` names a shared library's file rather than a RocksDB library by name.
pub fn is_library_path(text: &str) -> bool {
    text.contains('/') || text.ends_with(".so") || text.contains(".so.")
}

/// The option sets `--rocksdb-options` names: RocksDB opened as another client opens it
/// (gadget-eval's `store::rocksdb::options` spells each out); any other value must be RocksDB
/// options in RocksDB's own string form.
pub const ROCKSDB_OPTION_SETS: &[&str] = &["db_bench", "flink"];

/// How `--store lethe` picks the files it compacts (`[run.lethe] compaction`,
/// `--lethe-compaction`): Lethe's FADE, or the RocksDB policy its fork keeps.
pub const LETHE_COMPACTIONS: &[&str] = &["fade", "rocksdb"];

/// The shortest delete-persistence threshold accepted, ns (1 s: Lethe's timestamps are in
/// milliseconds and its per-level shares of the threshold a fraction of it).
pub const MIN_DELETE_PERSISTENCE_NS: u64 = 1_000_000_000;

/// The longest delete-persistence threshold accepted, ns (30 days).
pub const MAX_DELETE_PERSISTENCE_NS: u64 = 30 * 86_400 * 1_000_000_000;

/// The shortest Redis timeout accepted, ns (1 ms).
pub const MIN_REDIS_TIMEOUT_NS: u64 = 1_000_000;

/// The longest Redis timeout accepted, ns (1 h).
pub const MAX_REDIS_TIMEOUT_NS: u64 = 3_600_000_000_000;

/// What a setting's value must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SettingValue {
    /// `true` or `false`: a switch given to the run when true.
    Switch,
    /// A whole number within bounds.
    Int(Bounds),
    /// A number within bounds.
    Float(Bounds),
    /// A time (`"5s"`, `"500ms"`) within `[min_ns, max_ns]`.
    Time {
        /// The shortest, ns.
        min_ns: u64,
        /// The longest, ns.
        max_ns: u64,
    },
    /// A RocksDB library by name ([`ROCKSDB_LIBRARIES`]) or the path of a librocksdb .so,
    /// relative to the folder of the file that gives it.
    Library,
    /// A Redis URL (`redis://`, `rediss://`, `unix://`).
    Url,
    /// One of these names.
    Choice(&'static [&'static str]),
    /// RocksDB options: a set by name ([`ROCKSDB_OPTION_SETS`]) or `name=value;...` in
    /// RocksDB's options-string form.
    RocksDbOptions,
}

/// A setting's value, as read from a config, an experiment or a flag.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A switch.
    Switch(bool),
    /// A whole number.
    Int(i64),
    /// A number.
    Float(f64),
    /// A time, nanoseconds.
    Time(u64),
    /// A name, a path or a URL.
    Text(String),
}

impl Value {
    /// The value as its flag takes it: `None` for a switch left off, `Some(None)` for a switch
    /// on, else `Some(Some(text))`.
    pub fn as_flag(&self) -> Option<Option<String>> {
        match self {
            Value::Switch(on) => on.then_some(None),
            Value::Int(n) => Some(Some(n.to_string())),
            Value::Float(x) => Some(Some(number(*x))),
            Value::Time(ns) => Some(Some(duration_text(*ns))),
            Value::Text(t) => Some(Some(t.clone())),
        }
    }
}

/// Where a config file gives a store setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigPlace {
    /// The table under `[run]` (`rocksdb` for `[run.rocksdb]`); `None`: `[run]` itself.
    pub table: Option<&'static str>,
    /// The key in it.
    pub key: &'static str,
}

impl ConfigPlace {
    /// As messages and docs name it: `run.rocksdb.write_buffer_mb`.
    pub fn dotted(&self) -> String {
        match self.table {
            Some(t) => format!("run.{t}.{}", self.key),
            None => format!("run.{}", self.key),
        }
    }
}

/// A store setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreSetting {
    /// Its key: the flag without `--`, `_` for `-`, and the key of an experiment's `[[store]]`.
    pub key: &'static str,
    /// Where a config gives it.
    pub config: ConfigPlace,
    /// What its value must be.
    pub value: SettingValue,
    /// The environment variable the flag falls back to.
    pub env: Option<&'static str>,
    /// The flag's value name in `--help` (`MIB`).
    pub value_name: &'static str,
    /// Its help: what it sets and its default.
    pub doc: &'static str,
}

const fn at(table: &'static str, key: &'static str) -> ConfigPlace {
    ConfigPlace {
        table: Some(table),
        key,
    }
}

/// Every store setting, in the order `--help` and the docs list them.
pub const STORE_SETTINGS: &[StoreSetting] = &[
    StoreSetting {
        key: "rocksdb_lib",
        config: at("rocksdb", "library"),
        value: SettingValue::Library,
        env: Some("GADGET_ROCKSDB_LIB"),
        value_name: "LIBRARY",
        doc: "The RocksDB library to run on, loaded at run time: flink-1.20 (frocksdb 6.20.3, the RocksDB Flink 1.x ships; the default), flink-2.x (frocksdb 8.10.0), forst (ForSt 0.1.8, Flink 2.x's disaggregated backend), current (RocksDB 10.10.1), debian (the system's librocksdb, a build with assertions on), or the path of any librocksdb .so (6.20 or newer). scripts/setup.sh fetches the named release builds from Maven Central.",
    },
    StoreSetting {
        key: "write_buffer_mb",
        config: at("rocksdb", "write_buffer_mb"),
        value: SettingValue::Int(WRITE_BUFFER_MB),
        env: None,
        value_name: "MIB",
        doc: "RocksDB write buffer size in MiB (default 128; two of them, as in the paper). Also LevelDB's and fjall's; redb and SQLite get a cache of all write buffers plus the block cache, RocksDB's memory budget.",
    },
    StoreSetting {
        key: "write_buffers",
        config: at("rocksdb", "write_buffers"),
        value: SettingValue::Int(WRITE_BUFFERS),
        env: None,
        value_name: "N",
        doc: "RocksDB's number of write buffers (default 2).",
    },
    StoreSetting {
        key: "block_cache_mb",
        config: at("rocksdb", "block_cache_mb"),
        value: SettingValue::Int(BLOCK_CACHE_MB),
        env: None,
        value_name: "MIB",
        doc: "RocksDB's block cache in MiB (default 64; 0: none; `--rocksdb-options flink` splits it and the write buffers as Flink splits managed memory); also LevelDB's and fjall's.",
    },
    StoreSetting {
        key: "rocksdb_options",
        config: at("rocksdb", "options"),
        value: SettingValue::RocksDbOptions,
        env: None,
        value_name: "OPTIONS",
        doc: "RocksDB opened as another client opens it, over the settings above: `db_bench` (the options db_bench 7.8 sets for the flags scripts/bench-db-bench.sh gives it, its block cache of --block-cache-mb without a high-priority pool among them), `flink` (the options Flink 1.20's RocksDB state backend sets by default, and its block cache and write buffer manager, sized from the block cache and write buffers together as Flink sizes them from a slot's managed memory and made through RocksJava as Flink makes them: a RocksJava build's --rocksdb-lib only), or options in RocksDB's own form, applied last (`max_background_jobs=4;block_based_table_factory={block_size=16384}`). The options applied are in the results (`store_settings.rocksdb_options`); the database's OPTIONS file holds all of them.",
    },
    StoreSetting {
        key: "wal",
        config: at("rocksdb", "wal"),
        value: SettingValue::Switch,
        env: None,
        value_name: "",
        doc: "Turn RocksDB's write-ahead log on (Flink runs with it off).",
    },
    StoreSetting {
        key: "store_counters",
        config: ConfigPlace {
            table: None,
            key: "store_counters",
        },
        value: SettingValue::Switch,
        env: None,
        value_name: "",
        doc: "Report the store's own counters of the work behind the requests, where it keeps them: RocksDB's (and Lethe's) deleted and hidden entries that its iterators stepped over and the blocks it read (its perf context, which costs a little throughput), and what it holds at the end: the bytes of its live files and its deletes not yet compacted away. Shown in the summary and as `store_counters` in --json.",
    },
    StoreSetting {
        key: "redis_url",
        config: at("redis", "url"),
        value: SettingValue::Url,
        env: Some("GADGET_REDIS_URL"),
        value_name: "URL",
        doc: "Redis server for --store redis, a node of the cluster for --store redis-cluster (default redis://127.0.0.1:6379).",
    },
    StoreSetting {
        key: "redis_pipeline",
        config: at("redis", "pipeline"),
        value: SettingValue::Int(REDIS_PIPELINE),
        env: None,
        value_name: "N",
        doc: "Redis point writes sent per round trip (default 1: no pipelining).",
    },
    StoreSetting {
        key: "redis_placement",
        config: at("redis", "placement"),
        value: SettingValue::Choice(REDIS_PLACEMENTS),
        env: None,
        value_name: "PLACEMENT",
        doc: "Where --store redis-cluster keeps each operator instance's keys; instance i is placed on node i: `native` (the cluster's own hashing; about 1/N of the requests stay on the instance's node; the default), `aligned` (hash tags put every key on the instance's node), `replicated` (writes go to every node, reads to the instance's own).",
    },
    StoreSetting {
        key: "redis_timeout",
        config: at("redis", "timeout"),
        value: SettingValue::Time {
            min_ns: MIN_REDIS_TIMEOUT_NS,
            max_ns: MAX_REDIS_TIMEOUT_NS,
        },
        env: None,
        value_name: "TIME",
        doc: "The longest a Redis connection or round trip may take, from 1ms to 1h (default 5s): a server that stops answering then ends the run, results so far kept and marked partial.",
    },
    StoreSetting {
        key: "lmdb_map_gb",
        config: at("lmdb", "map_gb"),
        value: SettingValue::Int(LMDB_MAP_GB),
        env: None,
        value_name: "GIB",
        doc: "LMDB map size in GiB (default 16): the most an lmdb store can hold (sparse on disk).",
    },
    StoreSetting {
        key: "faster_log_mb",
        config: at("faster", "log_mb"),
        value: SettingValue::Int(FASTER_LOG_MB),
        env: None,
        value_name: "MIB",
        doc: "FASTER's in-memory log in MiB (default 256, as in the paper): a multiple of 32, at least 192; records beyond it go to files in the store directory and are read back.",
    },
    StoreSetting {
        key: "faster_index_mb",
        config: at("faster", "index_mb"),
        value: SettingValue::Int(FASTER_INDEX_MB),
        env: None,
        value_name: "MIB",
        doc: "FASTER's hash index in MiB (default 64, as in the paper): a power of two.",
    },
    StoreSetting {
        key: "lethe_compaction",
        config: at("lethe", "compaction"),
        value: SettingValue::Choice(LETHE_COMPACTIONS),
        env: None,
        value_name: "POLICY",
        doc: "Which files --store lethe compacts first: `fade` (Lethe's FADE: files whose deletes are older than their level's share of --lethe-delete-persistence, then those with the most deletes; the default) or `rocksdb` (RocksDB's own kMinOverlappingRatio, on the same build: the baseline FADE is measured against).",
    },
    StoreSetting {
        key: "lethe_delete_persistence",
        config: at("lethe", "delete_persistence"),
        value: SettingValue::Time {
            min_ns: MIN_DELETE_PERSISTENCE_NS,
            max_ns: MAX_DELETE_PERSISTENCE_NS,
        },
        env: None,
        value_name: "TIME",
        doc: "Lethe's delete-persistence threshold D_th, from 1s to 30 days (default 60s): the time within which FADE compacts a delete down to the last level, split among the levels by the size ratio (10) as in Lethe's paper.",
    },
];

/// The store setting of `key` (`write_buffer_mb`).
pub fn store_setting(key: &str) -> Option<&'static StoreSetting> {
    STORE_SETTINGS.iter().find(|s| s.key == key)
}

/// The tables under `[run]` that hold store settings, each once, in the order of
/// [`STORE_SETTINGS`].
pub fn config_tables() -> Vec<&'static str> {
    let mut tables: Vec<&'static str> = Vec::new();
    for t in STORE_SETTINGS.iter().filter_map(|s| s.config.table) {
        if !tables.contains(&t) {
            tables.push(t);
        }
    }
    tables
}

/// A setting given, with where: `job.toml:7: `run.lmdb.map_gb``, `--lmdb-map-gb`.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenSetting {
    /// Which setting.
    pub setting: &'static StoreSetting,
    /// Its value.
    pub value: Value,
    /// Where it is given, for messages.
    pub origin: String,
}

impl StoreSetting {
    /// Its flag: `--write-buffer-mb`.
    pub fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }

    /// Every place it can be given, for a message that does not know which one was used:
    /// `` `--write-buffer-mb`, `run.rocksdb.write_buffer_mb` in a config, `write_buffer_mb` in an
    /// experiment's `[[store]]` ``.
    pub fn places(&self) -> String {
        format!(
            "`{}`, `{}` in a config, `{}` in an experiment's `[[store]]`",
            self.flag(),
            self.config.dotted(),
            self.key
        )
    }

    /// Its value from a flag's text (a switch's flag is `true`); an error that names the flag
    /// and what is allowed. A library path is taken as given (relative to where the command
    /// runs).
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        let flag = self.flag();
        match self.value {
            SettingValue::Switch => match text {
                "true" => Ok(Value::Switch(true)),
                "false" => Ok(Value::Switch(false)),
                _ => Err(format!("{flag} {text:?}: give true or false")),
            },
            SettingValue::Int(b) => {
                let n: i64 = text.trim().parse().map_err(|_| {
                    let (min, max) = b.ints();
                    format!("{flag} {text:?} is not a whole number; allowed: [{min}, {max}]")
                })?;
                b.check(&flag, n as f64)?;
                Ok(Value::Int(n))
            }
            SettingValue::Float(b) => {
                let x: f64 = text
                    .trim()
                    .parse()
                    .map_err(|_| format!("{flag} {text:?} is not a number"))?;
                Ok(Value::Float(b.check(&flag, x)?))
            }
            SettingValue::Time { min_ns, max_ns } => time(text, min_ns, max_ns)
                .map(Value::Time)
                .ok_or_else(|| format!("{flag} {text:?}: {}", time_help(min_ns, max_ns))),
            SettingValue::Library => library(text, Path::new(""))
                .map(|p| Value::Text(p.display().to_string()))
                .map_err(|e| format!("{flag} {text:?}: {e}")),
            SettingValue::Url => url(text)
                .map(Value::Text)
                .map_err(|e| format!("{flag}: {e}")),
            SettingValue::RocksDbOptions => rocksdb_options(text)
                .map(Value::Text)
                .map_err(|e| format!("{flag} {text:?}: {e}")),
            SettingValue::Choice(allowed) => allowed
                .contains(&text)
                .then(|| Value::Text(text.to_string()))
                .ok_or_else(|| {
                    format!(
                        "{flag} {text:?} is not allowed; use one of: {}",
                        allowed.join(", ")
                    )
                }),
        }
    }

    /// Its value from `key` of a config's or an experiment's section, checked; `None` when
    /// the section does not give it. A library path is relative to the file's folder.
    pub fn read(
        &'static self,
        s: &Section<'_>,
        key: &'static str,
    ) -> Result<Option<GivenSetting>, ConfigError> {
        let value = match self.value {
            SettingValue::Switch => s.bool(key)?.map(Value::Switch),
            SettingValue::Int(b) => {
                let (min, max) = b.ints();
                s.int(key, min, max)?.map(Value::Int)
            }
            SettingValue::Float(b) => s.float(key, b.min, b.max)?.map(Value::Float),
            SettingValue::Time { min_ns, max_ns } => match s.string(key)? {
                None => None,
                Some(t) => Some(Value::Time(time(&t, min_ns, max_ns).ok_or_else(|| {
                    s.error(key, format!("`{t}`: {}", time_help(min_ns, max_ns)))
                })?)),
            },
            SettingValue::Library => match s.string(key)? {
                None => None,
                Some(name) => Some(Value::Text(
                    library(&name, s.folder())
                        .map_err(|e| s.error(key, e))?
                        .display()
                        .to_string(),
                )),
            },
            SettingValue::Url => match s.string(key)? {
                None => None,
                Some(u) => Some(Value::Text(url(&u).map_err(|e| s.error(key, e))?)),
            },
            SettingValue::Choice(allowed) => {
                s.choice(key, allowed)?.map(|c| Value::Text(c.to_string()))
            }
            SettingValue::RocksDbOptions => match s.string(key)? {
                None => None,
                Some(t) => Some(Value::Text(
                    rocksdb_options(&t).map_err(|e| s.error(key, format!("`{t}`: {e}")))?,
                )),
            },
        };
        Ok(value.map(|value| GivenSetting {
            setting: self,
            value,
            origin: s.origin(key),
        }))
    }
}

/// Reads the store settings of a `[run]` section: those of `[run]` itself and those of its
/// tables (`[run.rocksdb]`, `[run.redis]`, ...), each table finished (an unknown key in it is
/// an error naming what it takes).
pub(crate) fn read_run_settings(s: &Section<'_>) -> Result<Vec<GivenSetting>, ConfigError> {
    let mut given = Vec::new();
    for setting in STORE_SETTINGS.iter().filter(|x| x.config.table.is_none()) {
        given.extend(setting.read(s, setting.config.key)?);
    }
    for table in config_tables() {
        let Some(t) = s.table(table)? else {
            continue;
        };
        for setting in STORE_SETTINGS
            .iter()
            .filter(|x| x.config.table == Some(table))
        {
            given.extend(setting.read(&t, setting.config.key)?);
        }
        t.finish()?;
    }
    Ok(given)
}

/// A time within `[min_ns, max_ns]`.
fn time(text: &str, min_ns: u64, max_ns: u64) -> Option<u64> {
    parse_duration(text).filter(|n| (min_ns..=max_ns).contains(n))
}

/// What a time must be.
fn time_help(min_ns: u64, max_ns: u64) -> String {
    format!(
        "give a time from {} to {}, such as \"5s\"",
        duration_text(min_ns),
        duration_text(max_ns)
    )
}

/// A RocksDB library's name, or the path of a shared library (relative to `folder`).
fn library(text: &str, folder: &Path) -> Result<PathBuf, String> {
    if ROCKSDB_LIBRARIES.contains(&text) {
        return Ok(PathBuf::from(text));
    }
    if !is_library_path(text) {
        return Err(format!(
            "`{text}` is not a RocksDB library; choose one of {} or give the path of a librocksdb .so",
            ROCKSDB_LIBRARIES.join(", ")
        ));
    }
    file_path(folder, text)
}

/// A Redis URL.
/// `text` when it names an option set or reads as RocksDB options: `name=value` pairs joined
/// by `;`, a value in braces holding options of its own. Whether RocksDB knows each name and
/// takes each value is for RocksDB to say when the store opens.
fn rocksdb_options(text: &str) -> Result<String, String> {
    let text = text.trim();
    if ROCKSDB_OPTION_SETS.contains(&text) {
        return Ok(text.to_string());
    }
    let sets = ROCKSDB_OPTION_SETS.join(", ");
    let help = format!(
        "give an option set ({sets}) or RocksDB options as name=value pairs joined by `;`, \
         e.g. max_background_jobs=4;block_based_table_factory={{block_size=16384}}"
    );
    if !text.contains('=') {
        return Err(format!("neither an option set nor an option; {help}"));
    }
    let mut depth = 0i32;
    let mut pair = String::new();
    let check = |pair: &str, at: usize| -> Result<(), String> {
        let pair = pair.trim();
        if pair.is_empty() {
            return Ok(());
        }
        let name = pair.split('=').next().unwrap_or("").trim();
        let named = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !pair.contains('=') || !named {
            return Err(format!(
                "`{pair}` (byte {at}) is no name=value pair; {help}"
            ));
        }
        Ok(())
    };
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Err(format!("a `}}` at byte {i} closes nothing; {help}")),
            '}' => depth -= 1,
            ';' if depth == 0 => {
                check(&pair, i - pair.len())?;
                pair.clear();
                continue;
            }
            _ => {}
        }
        pair.push(c);
    }
    if depth > 0 {
        return Err(format!("a `{{` is not closed; {help}"));
    }
    check(&pair, text.len() - pair.len())?;
    Ok(text.to_string())
}

fn url(text: &str) -> Result<String, String> {
    let ok = ["redis://", "rediss://", "unix://", "redis+unix://"]
        .iter()
        .any(|p| text.starts_with(p))
        && !text.chars().any(char::is_control);
    if ok {
        Ok(text.to_string())
    } else {
        Err(format!(
            "`{}` is not a Redis URL; give one such as \"redis://127.0.0.1:6379\"",
            text.escape_debug()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_flag_and_config_place_is_unique() {
        for (i, a) in STORE_SETTINGS.iter().enumerate() {
            for b in &STORE_SETTINGS[i + 1..] {
                assert_ne!(a.key, b.key);
                assert_ne!(a.config, b.config, "{} and {}", a.key, b.key);
            }
            assert!(!a.doc.is_empty(), "{} has help", a.key);
            assert_eq!(
                a.value_name.is_empty(),
                a.value == SettingValue::Switch,
                "{}: a value name unless a switch",
                a.key
            );
        }
        assert_eq!(
            config_tables(),
            ["rocksdb", "redis", "lmdb", "faster", "lethe"]
        );
    }

    #[test]
    fn flags_are_checked_as_config_keys_are() {
        let s = store_setting("write_buffer_mb").unwrap();
        assert_eq!(s.flag(), "--write-buffer-mb");
        assert_eq!(s.parse("64"), Ok(Value::Int(64)));
        let e = s.parse("0").unwrap_err();
        assert!(e.contains("--write-buffer-mb 0 is out of range"), "{e}");
        assert!(s.parse("x").unwrap_err().contains("not a whole number"));
        let t = store_setting("redis_timeout").unwrap();
        assert_eq!(t.parse("5s"), Ok(Value::Time(5_000_000_000)));
        let e = t.parse("2h").unwrap_err();
        assert!(e.contains("from 1ms to 1h"), "{e}");
        let l = store_setting("rocksdb_lib").unwrap();
        assert_eq!(
            l.places(),
            "`--rocksdb-lib`, `run.rocksdb.library` in a config, `rocksdb_lib` in an \
             experiment's `[[store]]`"
        );
        assert_eq!(l.parse("forst"), Ok(Value::Text("forst".into())));
        assert!(l.parse("fourst").unwrap_err().contains("choose one of"));
        let u = store_setting("redis_url").unwrap();
        assert!(u.parse("http://x").unwrap_err().contains("not a Redis URL"));
        let p = store_setting("redis_placement").unwrap();
        assert!(p.parse("nativ").unwrap_err().contains("native, aligned"));
    }

    #[test]
    fn rocksdb_options_are_a_set_by_name_or_name_value_pairs() {
        let o = store_setting("rocksdb_options").unwrap();
        assert_eq!(o.parse("db_bench"), Ok(Value::Text("db_bench".into())));
        let nested = "max_background_jobs=4;block_based_table_factory={block_size=16384;x=1};";
        assert_eq!(o.parse(nested), Ok(Value::Text(nested.into())));
        for (bad, says) in [
            ("db-bench", "neither an option set nor an option"),
            ("a=1;b", "`b` (byte 4) is no name=value pair"),
            ("a={b=1", "is not closed"),
            ("a=1}", "closes nothing"),
            ("=1", "no name=value pair"),
            ("", "give an option set (db_bench, flink)"),
            ("a=1;;b", "`b` (byte 5) is no name=value pair"),
        ] {
            let e = o.parse(bad).unwrap_err();
            assert!(
                e.contains(says) && e.contains("--rocksdb-options"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_value_goes_back_to_its_flag_text() {
        let t = store_setting("redis_timeout").unwrap();
        let v = t.parse("250ms").unwrap();
        let text = v.as_flag().unwrap().unwrap();
        assert_eq!(t.parse(&text), Ok(v), "{text}");
        assert_eq!(Value::Switch(false).as_flag(), None);
        assert_eq!(Value::Switch(true).as_flag(), Some(None));
    }
}
