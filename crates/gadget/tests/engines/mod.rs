//! The bundled configs of the three engines (Flink, Kafka Streams, Spark) and mutations of
//! them that push their operators' settings to the edges, for the fuzzers that generate,
//! read back and replay their traces.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use gadget::source::random::Rng;

/// The folders of bundled configs whose workloads the engines' operators generate.
const FOLDERS: &[&str] = &[
    "flink-reference",
    "kafka-streams-reference",
    "spark-reference",
    "bench",
    "synthetic",
    "external",
];

/// The Borg events file the reference configs read (beside the checkout, not in CI's).
const BORG: &str = "\"../../../shared/data/borg-jobs.csv.gz\"";

/// Every bundled engine config, its path and text, with the Borg events replaced by `csv`
/// (the same columns: key, time in µs, event type).
pub fn examples(csv: &Path) -> Vec<(PathBuf, String)> {
    let mut all = Vec::new();
    for folder in FOLDERS {
        let dir = crate::common::project_root().join("examples").join(folder);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                all.push((path, text.replace(BORG, &format!("{csv:?}"))));
            }
        }
    }
    all.sort();
    for engine in ["kafka-streams", "spark"] {
        let needle = format!("engine = \"{engine}\"");
        assert!(
            all.iter().filter(|(_, t)| t.contains(&needle)).count() >= 5,
            "expected the bundled {engine} configs"
        );
    }
    all
}

/// The operators' keys of every engine.
pub const KEYS: &[&str] = &[
    "size",
    "advance",
    "slide",
    "grace",
    "gap",
    "window",
    "delay",
    "allowed_lateness",
    "partitions",
    "trigger_events",
    "trigger_ms",
    "mode",
    "join_type",
    "cache_bytes",
    "commit_every",
    "runner",
    "suppress",
    "initial_bytes",
    "bytes_per_record",
    "element_size",
    "timers",
    "function",
    "application_id",
    "store",
    "topic",
    "right_topic",
    "state_name",
    "table_state",
    "sink_state",
    "value_bytes",
];

/// Numbers at the edges of what the operators' keys allow, and past them.
pub const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "100",
    "30000",
    "60000",
    "50",
    "51",
    "200",
    "201",
    "863",
    "864",
    "1000",
    "5000",
    "86400000",
    "86400001",
    "10000000",
    "10000001",
    "9223372036854775807",
];

/// Strings for the operators' string keys: choices of each, and names at and past the edges
/// of what Kafka and a trace take.
pub fn strings() -> Vec<String> {
    let mut v: Vec<String> = [
        "application",
        "test-driver",
        "until-window-closes",
        "none",
        "append",
        "update",
        "inner",
        "full-outer",
        "rocksdb",
        "heap",
        "incremental",
        "holistic",
        "ok-name_1.x",
        "a\\tb",
        "a\\nb",
        "a\\r",
        "..",
        "",
        "a/b",
        "a b",
        "window-contents",
    ]
    .map(|s| format!("\"{s}\""))
    .to_vec();
    for n in [249, 250, 1024, 1025, 1100] {
        v.push(format!("\"{}\"", "n".repeat(n)));
    }
    v
}

/// The keys of [`KEYS`] that take strings.
const STRING_KEYS: &[&str] = &[
    "mode",
    "join_type",
    "runner",
    "suppress",
    "timers",
    "function",
    "application_id",
    "store",
    "topic",
    "right_topic",
    "state_name",
    "table_state",
    "sink_state",
];

/// A value for `key`, whose value in `text` is a string or a number (a string for a key that
/// takes one when it is not set): mostly of its type, sometimes of the other.
fn value_for(text: &str, key: &str, rng: &mut Rng) -> String {
    let current = text
        .lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix(key)?
                .trim_start()
                .strip_prefix('=')
        })
        .map(str::trim_start);
    let string = match current {
        Some(v) => v.starts_with('"'),
        None => STRING_KEYS.contains(&key),
    };
    let strings = strings();
    if string != (rng.below(8) == 0) {
        strings[rng.below(strings.len() as u64) as usize].clone()
    } else {
        NUMBERS[rng.below(NUMBERS.len() as u64) as usize].to_string()
    }
}

/// `text` with `key = value` in its `[operator]` section: the key's line replaced, or a line
/// added after the section's header (at the end without one).
pub fn set_key(text: &str, key: &str, value: &str) -> String {
    let line = format!("{key} = {value}");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let operator = lines.iter().position(|l| l.trim() == "[operator]");
    let end = operator.map_or(lines.len(), |start| {
        lines[start + 1..]
            .iter()
            .position(|l| l.trim_start().starts_with('['))
            .map_or(lines.len(), |n| start + 1 + n)
    });
    let from = operator.map_or(0, |start| start + 1);
    let existing = (from..end).find(|&i| {
        let l = lines[i].trim_start();
        l.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    });
    match (existing, operator) {
        (Some(i), _) => lines[i] = line,
        (None, Some(start)) => lines.insert(start + 1, line),
        (None, None) => lines.push(line),
    }
    lines.join("\n") + "\n"
}

/// The keys set in `text`'s `[operator]` section.
fn operator_keys(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| l.trim() != "[operator]")
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim().to_string()))
        .filter(|k| !k.is_empty() && !k.starts_with('#') && k != "type")
        .collect()
}

/// One or two edits of `text`: most set a key its operator has to a value at an edge (or of
/// the wrong type), some set any engine's key, drop a line or cut the text short.
pub fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut out = text.to_string();
    for _ in 0..1 + rng.below(2) {
        let own = operator_keys(&out);
        out = match rng.below(12) {
            0 => {
                let lines: Vec<&str> = out.lines().collect();
                let drop = rng.below(lines.len().max(1) as u64) as usize;
                let kept: Vec<&str> = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != drop)
                    .map(|(_, l)| *l)
                    .collect();
                kept.join("\n") + "\n"
            }
            1 => {
                let mut at = rng.below(out.len() as u64 + 1) as usize;
                while !out.is_char_boundary(at) {
                    at -= 1;
                }
                out[..at].to_string()
            }
            2..=9 if !own.is_empty() => {
                let key = &own[rng.below(own.len() as u64) as usize];
                let value = value_for(&out, key, rng);
                set_key(&out, key, &value)
            }
            _ => {
                let key = KEYS[rng.below(KEYS.len() as u64) as usize];
                let value = value_for(&out, key, rng);
                set_key(&out, key, &value)
            }
        };
    }
    out
}
