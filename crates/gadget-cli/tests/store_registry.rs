//! One list of stores and one of the settings each reads, honoured by every entry point: the
//! `--store` flag, a config's `[run] store` and `[run.stores.NAME] kind`, and an experiment's
//! `[[store]] kind`; a setting is accepted exactly where its store reads it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use gadget_eval::experiment::file::{experiment_store_settings, SettingValue};
use gadget_eval::store::StoreKind;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn gadget() -> Command {
    let mut c = Command::cargo_bin("gadget").unwrap();
    c.env_remove("GADGET_ROCKSDB_LIB")
        .env_remove("GADGET_REDIS_URL")
        .timeout(Duration::from_secs(120));
    c
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A YCSB workload of a few requests with `run` as its `[run]` section.
fn config(dir: &Path, name: &str, run: &str) -> PathBuf {
    let ycsb = std::fs::read_to_string(project_root().join("examples/ycsb/workloada.toml"))
        .unwrap()
        .replace("recordcount = 1000", "recordcount = 20")
        .replace("operationcount = 1000", "operationcount = 20");
    let path = dir.join(name);
    std::fs::write(&path, format!("{ycsb}\n{run}")).unwrap();
    path
}

/// A server nobody listens on, so that a networked store is accepted, then fails to connect
/// at once instead of needing a server in this test.
const NOBODY: &str = "redis://127.0.0.1:1";

/// The run went through to the store: it ran, or (for a store over the network) failed to
/// reach it. Never refused as a store this build lacks.
fn reached_the_store(kind: StoreKind, how: &str, o: &std::process::Output) {
    let e = stderr(o);
    if kind.name().starts_with("redis") {
        let failed_to_connect = format!("cannot open the {} store at {NOBODY}", kind.name());
        assert!(
            e.contains(&failed_to_connect),
            "{how}: {}:\n{e}",
            kind.name()
        );
    } else {
        assert!(o.status.success(), "{how}: {}:\n{e}", kind.name());
    }
}

#[test]
fn every_store_is_accepted_by_the_flag_the_run_section_and_the_stores_table() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        StoreKind::all().iter().any(|k| k.name() == "redis-cluster"),
        "a build with Redis has the cluster too"
    );
    for &kind in StoreKind::all() {
        let name = kind.name();
        let url = if name.starts_with("redis") {
            format!("url = \"{NOBODY}\"\n")
        } else {
            String::new()
        };
        let plain = config(dir.path(), "plain.toml", "");
        let by_flag = gadget()
            .arg("run")
            .arg(&plain)
            .args([
                "--store",
                name,
                "--redis-url",
                NOBODY,
                "--redis-timeout",
                "1s",
            ])
            .output()
            .unwrap();
        reached_the_store(kind, "--store", &by_flag);

        let redis_section = if name.starts_with("redis") {
            format!("[run.redis]\n{url}timeout = \"1s\"\n")
        } else {
            String::new()
        };
        let in_run = config(
            dir.path(),
            "in-run.toml",
            &format!("[run]\nstore = \"{name}\"\n{redis_section}"),
        );
        let by_run_section = gadget().arg("run").arg(&in_run).output().unwrap();
        reached_the_store(kind, "[run] store", &by_run_section);

        let routed = config(
            dir.path(),
            "routed.toml",
            &format!(
                "[run]\nstore = \"memory\"\n[run.stores.own]\nkind = \"{name}\"\n{url}\
                 [run.states]\nusertable = \"own\"\n"
            ),
        );
        let by_stores_table = gadget().arg("run").arg(&routed).output().unwrap();
        reached_the_store(kind, "[run.stores.own] kind", &by_stores_table);
    }
}

#[test]
fn the_store_flags_help_lists_every_store_of_the_build_from_its_own_declaration() {
    for command in ["run", "replay"] {
        let help = gadget().args([command, "--help"]).output().unwrap();
        let help = String::from_utf8(help.stdout).unwrap();
        for &kind in StoreKind::all() {
            let entry = format!("{} ({})", kind.name(), kind.spec().about);
            assert!(
                help.contains(&entry),
                "`{command} --help` lacks {entry}:\n{help}"
            );
        }
    }
}

#[test]
fn a_store_name_no_build_has_is_refused_at_its_line_naming_the_stores() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "c.toml", "[run]\nstore = \"rocksbd\"\n");
    let o = gadget().arg("run").arg(&cfg).output().unwrap();
    let e = stderr(&o);
    assert!(!o.status.success());
    let line = std::fs::read_to_string(&cfg)
        .unwrap()
        .lines()
        .position(|l| l.contains("rocksbd"))
        .unwrap()
        + 1;
    assert!(
        e.contains(&format!("c.toml:{line}: `run.store`")) && e.contains("redis-cluster"),
        "{e}"
    );
}

/// A value of the right type for `setting`.
fn a_value(setting: SettingValue) -> String {
    match setting {
        SettingValue::Switch => "true".into(),
        SettingValue::Int(b) => b.ints().0.to_string(),
        SettingValue::Float(b) => b.max.to_string(),
        SettingValue::Time { .. } => "\"5s\"".into(),
        SettingValue::Library => "\"flink-1.20\"".into(),
        SettingValue::Url => format!("\"{NOBODY}\""),
        SettingValue::Choice(names) => format!("\"{}\"", names[0]),
        SettingValue::RocksDbOptions => "\"db_bench\"".into(),
    }
}

#[test]
fn every_experiment_store_kind_takes_exactly_the_settings_its_store_reads() {
    let dir = tempfile::tempdir().unwrap();
    // a workload that does not exist: the check before any run reaches it only once every
    // store and setting was accepted, and no run starts either way
    for &kind in StoreKind::all() {
        for setting in experiment_store_settings() {
            let text = format!(
                "[[workload]]\nconfig = \"missing.toml\"\n\n[[store]]\nkind = \"{}\"\n{} = {}\n",
                kind.name(),
                setting.key,
                a_value(setting.value)
            );
            let exp = dir.path().join("e.toml");
            std::fs::write(&exp, &text).unwrap();
            let o = gadget()
                .arg("bench")
                .arg(&exp)
                .arg("-o")
                .arg(dir.path().join("out"))
                .output()
                .unwrap();
            let e = stderr(&o);
            assert!(!o.status.success(), "{text}");
            assert!(!dir.path().join("out/runs").exists(), "{text}");
            if kind.reads_setting(setting.key) {
                assert!(
                    e.contains("missing.toml") && !e.contains("does not read"),
                    "{text}\n=> {e}"
                );
            } else {
                assert!(
                    e.contains("e.toml:6:")
                        && e.contains(&format!(
                            "the {} store does not read `{}`",
                            kind.name(),
                            setting.key
                        )),
                    "{text}\n=> {e}"
                );
            }
        }
    }
}

#[test]
fn a_config_setting_its_store_does_not_read_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let lmdb = config(
        dir.path(),
        "lmdb.toml",
        "[run]\nstore = \"lmdb\"\n[run.rocksdb]\nwrite_buffer_mb = 64\n",
    );
    let o = gadget().arg("run").arg(&lmdb).output().unwrap();
    let e = stderr(&o);
    assert!(!o.status.success(), "{e}");
    assert!(
        e.contains("`run.rocksdb.write_buffer_mb`")
            && e.contains("the lmdb store does not read `write_buffer_mb`; it reads lmdb_map_gb"),
        "{e}"
    );
    // the same section where a store of [run.stores] reads it is fine
    let routed = config(
        dir.path(),
        "routed.toml",
        "[run]\nstore = \"lmdb\"\n[run.rocksdb]\nwrite_buffer_mb = 64\n\
         [run.stores.own]\nkind = \"rocksdb\"\n[run.states]\nusertable = \"own\"\n",
    );
    let o = gadget().arg("run").arg(&routed).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // a flag the store does not read is a warning: a command line is reused across stores
    let plain = config(dir.path(), "plain.toml", "");
    let o = gadget()
        .arg("run")
        .arg(&plain)
        .args(["--store", "lmdb", "--write-buffer-mb", "64"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: --write-buffer-mb has no effect"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_results_of_every_store_name_its_library_and_version() {
    let dir = tempfile::tempdir().unwrap();
    let plain = config(dir.path(), "plain.toml", "");
    for &kind in StoreKind::all() {
        if kind.name().starts_with("redis") {
            continue; // a server's version: tests/redis_cluster.rs and the redis store's tests
        }
        let out = gadget()
            .arg("run")
            .arg(&plain)
            .args(["--store", kind.name(), "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let libraries = r["context"]["store_libraries"].as_array().unwrap().clone();
        assert_eq!(libraries.len(), 1, "{}: {libraries:?}", kind.name());
        let named = libraries[0].as_str().unwrap();
        let (what, version) = match kind.name() {
            "memory" => ("Gadget ", env!("CARGO_PKG_VERSION")),
            "rocksdb" => ("RocksDB ", "6.20.3"),
            "leveldb" => ("LevelDB ", "."),
            "berkeleydb" | "berkeleydb-hash" => ("Berkeley DB ", "5."),
            "lmdb" => ("LMDB ", "heed 0."),
            "redb" => ("redb ", "2."),
            "fjall" => ("fjall ", "2."),
            "sqlite" => ("SQLite 3.", "rusqlite 0."),
            "faster" => ("FASTER", "faster-rs 0."),
            "lethe" => ("RocksDB 6.12.0", "(Lethe 7c60c4e)"),
            other => panic!("{other}: say what it runs on here"),
        };
        assert!(
            named.contains(what) && named.contains(version) && !named.contains("unknown"),
            "{}: {named}",
            kind.name()
        );
    }
}

/// What a setting's value may be, as the docs' table says it.
fn allowed(setting: SettingValue) -> String {
    use gadget::config::bounds::duration_text;
    use gadget::config::store_settings::{ROCKSDB_LIBRARIES, ROCKSDB_OPTION_SETS};
    let quoted = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match setting {
        SettingValue::Switch => "`true`, `false`".into(),
        SettingValue::Int(b) => {
            let (min, max) = b.ints();
            format!("{min} – {max}")
        }
        SettingValue::Float(b) => format!("{} – {}", b.min, b.max),
        SettingValue::Time { min_ns, max_ns } => format!(
            "a time from `\"{}\"` to `\"{}\"`",
            duration_text(min_ns),
            duration_text(max_ns)
        ),
        SettingValue::Library => format!(
            "{}, or the path of a librocksdb .so (relative to the file)",
            quoted(ROCKSDB_LIBRARIES)
        ),
        SettingValue::Url => "`redis://`, `rediss://`, `unix://` URLs".into(),
        SettingValue::Choice(names) => quoted(names),
        SettingValue::RocksDbOptions => format!(
            "{}, or RocksDB options (`name=value;...`)",
            quoted(ROCKSDB_OPTION_SETS)
        ),
    }
}

/// The table of store settings docs/config.md shows, made from the one list of settings and
/// what each store reads.
fn settings_table() -> String {
    use gadget::config::store_settings::STORE_SETTINGS;
    let mut t = String::from(
        "| config | flag, experiment key | allowed | read by | meaning |\n|---|---|---|---|---|\n",
    );
    for s in STORE_SETTINGS {
        let readers: Vec<&str> = StoreKind::all()
            .iter()
            .filter(|k| k.reads().contains(&s.key))
            .map(|k| k.name())
            .collect();
        let config = match s.config.table {
            Some(table) => format!("`[run.{table}]` `{}`", s.config.key),
            None => format!("`[run]` `{}`", s.config.key),
        };
        t.push_str(&format!(
            "| {config} | `{}`, `{}` | {} | {} | {} |\n",
            s.flag(),
            s.key,
            allowed(s.value),
            readers.join(", "),
            s.doc.replace('|', "\\|")
        ));
    }
    t
}

/// docs/config.md's table of store settings is the one list's: a setting added, changed or
/// read by another store changes the docs with it (`GADGET_BLESS=1` rewrites the table).
#[test]
fn the_docs_table_of_store_settings_is_the_one_list() {
    if StoreKind::all().len() < 12 {
        eprintln!("skipped: this build lacks some stores, and the docs describe a full build");
        return;
    }
    let path = project_root().join("docs/config.md");
    let docs = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = (
        "<!-- store settings: made from STORE_SETTINGS; GADGET_BLESS=1 cargo test --test store_registry rewrites it -->\n",
        "<!-- end of store settings -->",
    );
    let start = docs
        .find(begin)
        .expect("docs/config.md marks its store settings table")
        + begin.len();
    let stop = docs[start..].find(end).expect("and its end") + start;
    let table = settings_table();
    if docs[start..stop] != table {
        if std::env::var_os("GADGET_BLESS").is_some() {
            std::fs::write(&path, format!("{}{table}{}", &docs[..start], &docs[stop..])).unwrap();
        } else {
            panic!(
                "docs/config.md's store settings differ from STORE_SETTINGS; run `GADGET_BLESS=1 cargo test -p gadget-cli --test store_registry` and review. It should be:\n{table}"
            );
        }
    }
}
