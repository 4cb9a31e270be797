//! Lethe (Sarkar et al., SIGMOD'20), the paper's fourth store: a fork of RocksDB 6.12 whose
//! compaction, FADE, persists deletes within a threshold D_th by compacting first the files
//! whose deletes are older than their level's share of it. It is the rocksdb store on another
//! library: the same column families, merge operator and options as Flink's, on the library
//! `scripts/lethe/build.sh` builds from the source kept beside the project, with FADE as the
//! column families' `compaction_pri` and D_th in Lethe's process-wide tuning, which the
//! library's `gadget_lethe_configure` (`scripts/lethe/gadget_lethe.cc`) sets.
//!
//! Lethe keeps its tuning for the whole process, so one process runs one Lethe tuning: a
//! second lethe store with other settings is refused (`gadget bench` runs each run in a process
//! of its own). With `--store-counters` the results hold what Lethe is measured by: the deletes
//! still held (`rocksdb.held.tombstones_in_files`, `..._in_memtables`) and the bytes of live files.

use std::ffi::c_int;
use std::sync::{Arc, Mutex, PoisonError};

use super::rocksdb::library::{self, Library};
use super::rocksdb::{applied_on, Flavour, SharedRocksDb};
use super::rocksdb_lib::RocksDbLib;
use super::spec::{set, Opener, StoreSpec};
use super::StoreSettings;

/// Lethe's size ratio (RocksDB's default `max_bytes_for_level_multiplier`), by which it
/// splits D_th among the levels.
const SIZE_RATIO: f64 = 10.0;

/// The options string of each policy: FADE, or RocksDB's default on the same build.
fn options(settings: &StoreSettings) -> &'static str {
    if settings.lethe_fade {
        "compaction_pri=kFADE"
    } else {
        ""
    }
}

/// The policy's name in results.
fn policy(settings: &StoreSettings) -> &'static str {
    if settings.lethe_fade {
        "fade"
    } else {
        "rocksdb (kMinOverlappingRatio)"
    }
}

/// Lethe on its library, with FADE and its delete-persistence threshold.
pub(crate) const SPEC: StoreSpec = StoreSpec {
    name: "lethe",
    about: "embedded: Lethe, RocksDB 6.12 with delete-persistence-aware compaction (FADE), \
            built by scripts/setup.sh",
    reads: &[
        "write_buffer_mb",
        "write_buffers",
        "block_cache_mb",
        "wal",
        "store_counters",
        "lethe_compaction",
        "lethe_delete_persistence",
    ],
    applied: |s, applied| {
        applied_on(&RocksDbLib::Lethe, s, applied);
        set(applied, "compaction", policy(s));
        set(
            applied,
            "delete_persistence_s",
            s.lethe_delete_persistence.as_secs_f64(),
        );
        set(applied, "size_ratio", SIZE_RATIO);
    },
    library: |_| {
        library::loaded(&RocksDbLib::Lethe).map_or_else(
            || "lethe: not loaded".to_string(),
            |l| format!("{} (Lethe 7c60c4e)", l.describe()),
        )
    },
    open: Opener::Shared(|dir, instances, settings| {
        let flavour = Flavour {
            store: "lethe",
            library: &RocksDbLib::Lethe,
            options: options(settings),
            last: String::new(),
            memory: None,
            prepare: configure,
        };
        Ok(Arc::new(SharedRocksDb::open_as(
            dir, instances, settings, &flavour,
        )?))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// `gadget_lethe_configure(fade, delete_persistence_seconds, size_ratio)`.
type Configure = unsafe extern "C" fn(c_int, f64, f64) -> c_int;

/// The tuning this process gave Lethe, once given: (FADE, D_th in seconds).
static TUNED: Mutex<Option<(bool, f64)>> = Mutex::new(None);

/// Gives Lethe's process-wide tuning the store's settings, once per process; a second store
/// with other settings is refused.
fn configure(library: &'static Library, settings: &StoreSettings) -> Result<(), String> {
    let wanted = (
        settings.lethe_fade,
        settings.lethe_delete_persistence.as_secs_f64(),
    );
    let mut tuned = TUNED.lock().unwrap_or_else(PoisonError::into_inner);
    match *tuned {
        Some(t) if t == wanted => return Ok(()),
        Some((fade, seconds)) => {
            return Err(format!(
                "this process runs Lethe with compaction {} and delete persistence {seconds}s \
                 already, and Lethe keeps one tuning per process: run the other settings in a \
                 gadget process of their own",
                if fade { "fade" } else { "rocksdb" }
            ))
        }
        None => {}
    }
    // SAFETY: the signature of gadget_lethe.cc's function.
    let function = unsafe { library.function::<Configure>(b"gadget_lethe_configure\0") }
        .ok_or_else(|| {
            format!(
                "{} has no gadget_lethe_configure: it is not the library scripts/lethe/build.sh \
                 builds; run that again",
                library.path().display()
            )
        })?;
    // SAFETY: plain values; the function only sets Lethe's singleton.
    let status = unsafe { function(c_int::from(wanted.0), wanted.1, SIZE_RATIO) };
    if status != 0 {
        return Err(format!(
            "Lethe refused delete persistence {}s with size ratio {SIZE_RATIO}",
            wanted.1
        ));
    }
    *tuned = Some(wanted);
    Ok(())
}

/// For Lethe's tests, which need a process of their own (one process runs one RocksDB
/// library): runs the current test binary again with `args` and `env` set, requires it to
/// succeed, and returns what it printed. Without Lethe's library, `None`: the caller's test
/// skips, saying how to build it, or fails under `CI=true`.
#[doc(hidden)]
pub fn rerun_in_own_process(env: &str, args: &[&str]) -> Option<String> {
    let library = super::rocksdb_lib::lethe_location();
    if !library.exists() {
        let why = format!(
            "no Lethe library at {} (scripts/lethe/build.sh builds it)",
            library.display()
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("skipped: {why}");
        return None;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = std::process::Command::new(exe)
        .args(args)
        .env(env, "1")
        .output()
        .expect("the test binary runs again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fade_is_the_column_families_compaction_and_rocksdb_leaves_it_as_it_is() {
        let mut s = StoreSettings::default();
        assert_eq!(options(&s), "compaction_pri=kFADE");
        assert_eq!(policy(&s), "fade");
        s.lethe_fade = false;
        assert_eq!(options(&s), "");
        let mut applied = std::collections::BTreeMap::new();
        (SPEC.applied)(&s, &mut applied);
        assert_eq!(applied["compaction"], "rocksdb (kMinOverlappingRatio)");
        assert_eq!(applied["delete_persistence_s"], "60");
        assert_eq!(applied["library"], "lethe");
    }
}
