//! Everything an experiment's runs need, checked before the first run starts, with the
//! experiment file's line: every store setting against what its store reads
//! ([`crate::store::StoreKind::reads`]; the store's kind itself is checked as the file
//! parses) and the store's settings together against what it refuses
//! ([`crate::store::spec::StoreSpec::refuses`]), every workload config loaded and validated
//! (with its properties), every trace's header read. A mistake found after an hour of runs
//! costs the hour.

use crate::experiment::file::{Experiment, ExperimentStore, WorkloadFile};
use crate::store::choice::refused_together;
use crate::store::StoreSettings;
use gadget::config::store_settings::GivenSetting;
use gadget::config::Config;

/// The first mistake found, naming where the experiment file makes it.
pub fn before_any_run(e: &Experiment) -> Result<(), String> {
    for s in &e.stores {
        for (key, origin) in &s.given {
            if !s.kind.reads_setting(key) {
                return Err(format!("{origin}: {}", s.kind.ignores(key)));
            }
        }
        opens_with_its_settings(s)?;
    }
    for w in &e.workloads {
        match &w.file {
            WorkloadFile::Config(configs) => {
                let overrides: Vec<String> = w
                    .properties
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                for path in configs {
                    Config::load_with_overrides(path, &overrides)
                        .map_err(|err| format!("{}: workload `{}`: {err}", w.origin, w.name))?;
                }
            }
            WorkloadFile::Trace(path) => {
                gadget::trace::open_trace(path)
                    .map_err(|err| format!("{}: workload `{}`: {err}", w.origin, w.name))?;
            }
        }
    }
    Ok(())
}

/// Whether the store's settings, taken together, are ones it opens with; a refusal names the
/// line of the setting it is about.
fn opens_with_its_settings(s: &ExperimentStore) -> Result<(), String> {
    let read: Vec<&GivenSetting> = s
        .settings
        .iter()
        .filter(|g| s.kind.reads().contains(&g.setting.key))
        .collect();
    let mut settings = StoreSettings::default();
    for given in &read {
        settings.set(given)?;
    }
    refused_together(s.kind, &settings, read.into_iter()).map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn check(store: &str, workload: &str) -> Result<(), String> {
        let text = format!("[[workload]]\nname = \"w\"\n{workload}\n[[store]]\n{store}\n");
        let e = Experiment::parse(&text, &root().join("examples/experiments/e.toml")).unwrap();
        before_any_run(&e)
    }

    #[test]
    fn a_setting_the_store_does_not_read_is_named_at_its_line() {
        let ycsb = "config = \"../ycsb/workloada.toml\"";
        let e = check("kind = \"lmdb\"\nwrite_buffer_mb = 64", ycsb).unwrap_err();
        assert!(
            e.contains("e.toml:6:")
                && e.contains(
                    "the lmdb store does not read `write_buffer_mb`; it reads lmdb_map_gb"
                ),
            "{e}"
        );
        let e = check("kind = \"memory\"\nwal = false", ycsb).unwrap_err();
        assert!(e.contains("e.toml:6:") && e.contains("`wal`"), "{e}");
        check(
            "kind = \"rocksdb\"\nwrite_buffer_mb = 64\ninstances = 2",
            ycsb,
        )
        .unwrap();
    }

    #[test]
    #[cfg(feature = "rocksdb")]
    fn settings_the_store_cannot_open_with_together_are_named_at_their_line() {
        let ycsb = "config = \"../ycsb/workloada.toml\"";
        let e = check(
            "kind = \"rocksdb\"\nrocksdb_lib = \"debian\"\nrocksdb_options = \"flink\"",
            ycsb,
        )
        .unwrap_err();
        assert!(
            e.contains("e.toml:7:") && e.contains("`rocksdb_lib` in an experiment"),
            "{e}"
        );
        // each alone opens
        check("kind = \"rocksdb\"\nrocksdb_lib = \"debian\"", ycsb).unwrap();
        check("kind = \"rocksdb\"\nrocksdb_options = \"flink\"", ycsb).unwrap();
    }

    #[test]
    fn a_config_that_does_not_load_is_named_with_the_workload_line() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[operator]\nsise = 5000\n").unwrap();
        let e = check(
            "kind = \"memory\"",
            &format!("config = \"{}\"", bad.display()),
        )
        .unwrap_err();
        assert!(e.contains("e.toml:3:") && e.contains("bad.toml"), "{e}");
        let e = check("kind = \"memory\"", "trace = \"../ycsb/workloada.toml\"").unwrap_err();
        assert!(e.contains("e.toml:3:") && e.contains("workload `w`"), "{e}");
    }
}
