//! The store contract on every RocksDB library `--rocksdb-lib` offers. A process runs one
//! RocksDB library (see [`library`]), so the tests that cover every library run one test of
//! this binary per library, each in a process of its own; run directly, such a test uses the
//! default library.

use std::process::Command;

use super::super::contract;
use super::*;
use crate::store::rocksdb_lib::RocksDbLib;
use crate::store::Store;

/// Names the library a child test process runs on.
const LIBRARY_UNDER_TEST: &str = "GADGET_ROCKSDB_TEST_LIB";

/// The library this process tests: the one the parent test named, else the default.
fn library_under_test() -> RocksDbLib {
    std::env::var(LIBRARY_UNDER_TEST)
        .ok()
        .and_then(|name| name.parse().ok())
        .unwrap_or_default()
}

/// The named libraries installed here. `scripts/setup.sh` installs them all, so under CI a
/// missing one fails; elsewhere it is skipped, saying why.
fn installed() -> Vec<RocksDbLib> {
    RocksDbLib::NAMED
        .into_iter()
        .filter(|lib| {
            let path = library::location(lib);
            if path.exists() {
                return true;
            }
            let why = format!(
                "the RocksDB library {lib} is not at {}: run scripts/setup.sh",
                path.display()
            );
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
            eprintln!("skipped {lib}: {why}");
            false
        })
        .collect()
}

/// Runs this binary's test `test` once per installed library, each in a process of its own.
fn in_a_process_per_library(test: &str) {
    let binary = std::env::current_exe().expect("the test binary's path");
    for lib in installed() {
        let out = Command::new(&binary)
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(LIBRARY_UNDER_TEST, lib.name())
            .output()
            .expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{test} on {lib}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn settings(lib: &RocksDbLib) -> StoreSettings {
    StoreSettings {
        write_buffer_size: 1 << 20,
        block_cache: 1 << 20,
        rocksdb_lib: lib.clone(),
        ..StoreSettings::default()
    }
}

fn store(dir: &Path, lib: &RocksDbLib) -> RocksDbStore {
    let states = vec!["window-contents".to_string(), "timers".to_string()];
    RocksDbStore::open(dir, &states, &settings(lib)).unwrap_or_else(|e| panic!("{lib}: {e}"))
}

#[test]
fn every_library_opens_writes_merges_iterates_and_reads_back_and_says_its_version() {
    in_a_process_per_library(
        "store::rocksdb::tests::the_library_under_test_keeps_the_store_contract",
    );
}

#[test]
fn the_library_under_test_keeps_the_store_contract() {
    let lib = library_under_test();
    let checks: [fn(&mut dyn Store); 6] = [
        contract::merge_appends_with_flinks_delimiter,
        contract::states_are_separate,
        contract::seek_and_next_walk_in_key_order_and_batches_apply_on_commit,
        contract::range_ops_cover_start_up_to_end,
        contract::a_drop_empties_its_state_and_nothing_else,
        contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator,
    ];
    for check in checks {
        let dir = tempfile::tempdir().unwrap();
        check(&mut store(dir.path(), &lib));
    }
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), &lib);
    assert_eq!(s.emulated(), &[]);
    let library = s.library();
    match lib.release() {
        Some(release) => {
            assert_eq!(library.version(), release.rocksdb_version, "{lib}");
            assert!(
                library.describe().contains(release.artifact),
                "{}",
                library.describe()
            );
        }
        None => assert!(
            library.version().starts_with(|c: char| c.is_ascii_digit()),
            "{lib}"
        ),
    }
    assert_eq!(library.compression(), "kSnappyCompression", "{lib}");
    assert!(library.path().is_absolute(), "{lib}");
    println!("{}", library.describe());
}

#[test]
fn every_library_reads_merged_lists_back_from_its_files() {
    in_a_process_per_library(
        "store::rocksdb::tests::merged_lists_are_read_back_from_files_after_a_flush_and_a_reopen",
    );
}

#[test]
fn merged_lists_are_read_back_from_files_after_a_flush_and_a_reopen() {
    let lib = library_under_test();
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = store(dir.path(), &lib);
        for i in 0..1000u32 {
            s.merge(0, &(i % 10).to_be_bytes(), b"abcd").unwrap();
        }
        s.flush().unwrap();
        s.merge(0, &0u32.to_be_bytes(), b"xy").unwrap();
    }
    let mut s = store(dir.path(), &lib);
    // 100 elements of 4 bytes and 99 commas; key 0 has one more element
    assert_eq!(s.get(0, &1u32.to_be_bytes()).unwrap(), Some(499), "{lib}");
    assert_eq!(
        s.get(0, &0u32.to_be_bytes()).unwrap(),
        Some(499 + 3),
        "{lib}"
    );
}

#[test]
fn every_library_drops_a_column_family_and_makes_it_again_under_its_name() {
    in_a_process_per_library(
        "store::rocksdb::tests::a_dropped_column_family_is_made_again_and_found_after_a_reopen",
    );
}

#[test]
fn a_dropped_column_family_is_made_again_and_found_after_a_reopen() {
    let lib = library_under_test();
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = store(dir.path(), &lib);
        for i in 0..1000u32 {
            s.merge(0, &(i % 10).to_be_bytes(), b"abcd").unwrap();
            s.put(1, &i.to_be_bytes(), b"v").unwrap();
        }
        // on disk, in the memtable and in an open iterator when it is dropped
        s.flush().unwrap();
        s.merge(0, &0u32.to_be_bytes(), b"xy").unwrap();
        assert_eq!(s.seek(0, b"").unwrap(), Some(499 + 3));
        // several pending entries, of both states, around the dropped one's
        s.batch_put(1, b"before", b"1").unwrap();
        s.batch_put(0, b"batched", b"22").unwrap();
        s.batch_delete(0, &1u32.to_be_bytes()).unwrap();
        s.batch_put(1, b"after", b"333").unwrap();
        s.drop_state(0).unwrap();
        assert_eq!(s.next(0).unwrap(), None, "{lib}");
        assert_eq!(s.get(0, &0u32.to_be_bytes()).unwrap(), None, "{lib}");
        assert_eq!(s.range_query(0, b"", &[0xff; 8]).unwrap(), 0, "{lib}");
        s.batch_commit().unwrap();
        assert_eq!(s.range_query(0, b"", &[0xff; 8]).unwrap(), 1, "{lib}");
        assert_eq!(s.get(1, b"after").unwrap(), Some(3), "{lib}");
        // the merge operator is the original one
        s.merge(0, b"list", b"a").unwrap();
        s.merge(0, b"list", b"bc").unwrap();
        assert_eq!(s.get(0, b"list").unwrap(), Some(4), "{lib}");
        s.flush().unwrap();
        s.merge(0, b"list", b"d").unwrap();
    }
    // reopened: the column family has its old name, and only what came after the drop
    let mut s = store(dir.path(), &lib);
    assert_eq!(s.get(0, b"list").unwrap(), Some(6), "{lib}");
    assert_eq!(s.get(0, b"batched").unwrap(), Some(2), "{lib}");
    assert_eq!(s.get(0, &2u32.to_be_bytes()).unwrap(), None, "{lib}");
    assert_eq!(s.range_query(1, b"", &[0xff; 8]).unwrap(), 1002, "{lib}");
}

#[test]
fn every_library_counts_or_refuses_to() {
    in_a_process_per_library(
        "store::rocksdb::tests::counters_count_the_deleted_entries_a_seek_steps_over",
    );
}

#[test]
fn counters_count_the_deleted_entries_a_seek_steps_over() {
    let lib = library_under_test();
    let dir = tempfile::tempdir().unwrap();
    let states = vec!["s".to_string()];
    let settings = StoreSettings {
        counters: true,
        ..settings(&lib)
    };
    let loaded = library::load(&lib).unwrap();
    let mut s = match RocksDbStore::open(dir.path(), &states, &settings) {
        Ok(s) => s,
        Err(e) => {
            assert!(!loaded.keeps_counters(), "{lib}: {e}");
            assert!(e.to_string().contains("--store-counters"), "{e}");
            return;
        }
    };
    assert!(loaded.keeps_counters(), "{lib}");
    for i in 0..100u32 {
        s.put(0, &i.to_be_bytes(), b"v").unwrap();
    }
    for i in 0..99u32 {
        s.delete(0, &i.to_be_bytes()).unwrap();
    }
    assert_eq!(s.seek(0, b"").unwrap(), Some(1));
    let counters: std::collections::BTreeMap<_, _> = s.counters().into_iter().collect();
    assert!(
        counters["rocksdb.internal_delete_skipped_count"] >= 99,
        "{lib}: {counters:?}"
    );
    // what it holds: the deletes in its memtable, then (flushed) in its files
    assert_eq!(
        counters["rocksdb.held.tombstones_in_memtables"], 99,
        "{lib}: {counters:?}"
    );
    assert_eq!(counters["rocksdb.held.live_sst_bytes"], 0, "{lib}");
    s.flush_state(0).unwrap();
    let counters: std::collections::BTreeMap<_, _> = s.counters().into_iter().collect();
    assert_eq!(counters["rocksdb.held.tombstones_in_files"], 99, "{lib}");
    assert_eq!(counters["rocksdb.held.tombstones_in_memtables"], 0, "{lib}");
    assert!(counters["rocksdb.held.live_sst_bytes"] > 0, "{lib}");
}

#[test]
fn a_process_runs_one_library() {
    in_a_process_per_library("store::rocksdb::tests::a_second_library_is_refused");
}

#[test]
fn a_second_library_is_refused() {
    let lib = library_under_test();
    library::load(&lib).unwrap();
    let other = if lib == RocksDbLib::Debian {
        RocksDbLib::Current
    } else {
        RocksDbLib::Debian
    };
    let e = library::load(&other).err().unwrap();
    assert!(
        matches!(e, library::LibraryError::AnotherLoaded { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("gadget process of its own"), "{e}");
}

#[test]
fn instances_sharing_a_database_use_their_own_column_families() {
    let lib = library_under_test();
    let dir = tempfile::tempdir().unwrap();
    let states = vec!["a".to_string(), "b".to_string()];
    let shared =
        SharedRocksDb::open(dir.path(), &[states.clone(), states], &settings(&lib)).unwrap();
    let mut first = shared.attach(0).unwrap();
    let mut second = shared.attach(1).unwrap();
    first.put(1, b"k", b"first").unwrap();
    assert_eq!(second.get(1, b"k").unwrap(), None);
    second.put(1, b"k", b"2").unwrap();
    assert_eq!(first.get(1, b"k").unwrap(), Some(5));
    assert!(shared.attach(2).is_err());
    // a drop in one instance's column family leaves the other's
    first.drop_state(1).unwrap();
    assert_eq!(first.get(1, b"k").unwrap(), None);
    assert_eq!(second.get(1, b"k").unwrap(), Some(1));
    // a second store of an instance would keep the handle a drop replaces: refused
    let again = shared.attach(1).unwrap();
    let e = second.drop_state(1).unwrap_err().to_string();
    assert!(e.contains("attach each instance once"), "{e}");
    drop(again);
    second.drop_state(1).unwrap();
    assert_eq!(second.get(1, b"k").unwrap(), None);
}

#[test]
fn every_library_opens_many_column_families_in_batches_each_state_its_own() {
    in_a_process_per_library(
        "store::rocksdb::tests::column_families_made_at_an_open_and_after_a_reopen_keep_their_states",
    );
}

#[test]
fn column_families_made_at_an_open_and_after_a_reopen_keep_their_states() {
    let lib = library_under_test();
    let dir = tempfile::tempdir().unwrap();
    let names = |n: usize| (0..n).map(|i| format!("state-{i}")).collect::<Vec<_>>();
    // more than a batch, then more again: 20 found by the reopen, 36 made after it
    {
        let mut s = RocksDbStore::open(dir.path(), &names(20), &settings(&lib)).unwrap();
        for i in 0..20u16 {
            s.put(i, b"key", &vec![b'v'; usize::from(i) + 1]).unwrap();
        }
    }
    let mut s = RocksDbStore::open(dir.path(), &names(56), &settings(&lib)).unwrap();
    for i in 0..56u16 {
        let found = (i < 20).then_some(usize::from(i) + 1);
        assert_eq!(s.get(i, b"key").unwrap(), found, "{lib}: state {i}");
        s.put(i, b"new", &vec![b'n'; usize::from(i) + 1]).unwrap();
    }
    for i in 0..56u16 {
        assert_eq!(s.get(i, b"new").unwrap(), Some(usize::from(i) + 1), "{lib}");
    }
}

#[test]
fn a_stop_while_column_families_are_made_ends_the_opening_as_interrupted() {
    let lib = library_under_test();
    let states: Vec<String> = (0..600).map(|i| format!("state-{i}")).collect();
    // asked before the opening: no column family is made
    let stopped = StoreSettings {
        stop: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        ..settings(&lib)
    };
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        RocksDbStore::open(dir.path(), &states, &stopped),
        Err(StoreError::Interrupted { store: "rocksdb" })
    ));
    // asked while the column families are made (600 take RocksDB 6.20 minutes): the opening
    // ends soon after
    let settings = settings(&lib);
    let stop = settings.stop.clone();
    let asked = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        std::time::Instant::now()
    });
    let dir = tempfile::tempdir().unwrap();
    let opened = RocksDbStore::open(dir.path(), &states, &settings);
    let ended = std::time::Instant::now();
    let asked = asked.join().unwrap();
    assert!(
        matches!(opened, Err(StoreError::Interrupted { store: "rocksdb" })),
        "{lib}: {:?}",
        opened.err()
    );
    let waited = ended.saturating_duration_since(asked);
    assert!(
        waited < std::time::Duration::from_secs(3),
        "{lib}: the opening went on {waited:?} after the stop"
    );
}

/// `name=value` pairs of an options string, those in a table factory's braces among them;
/// struct values (a cache's, FIFO compaction's) left out, as OPTIONS files spell them out
/// otherwise.
fn scalar_options(text: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let (mut depth, mut start) = (0, 0);
    let bytes = text.as_bytes();
    for i in 0..=bytes.len() {
        match bytes.get(i) {
            Some(b'{') => depth += 1,
            Some(b'}') => depth -= 1,
            Some(b';') | None if depth == 0 => {
                let pair = &text[start..i];
                start = i + 1;
                let Some((name, value)) = pair.split_once('=') else {
                    continue;
                };
                match value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
                    Some(inner) if name == "block_based_table_factory" => {
                        pairs.extend(scalar_options(inner))
                    }
                    Some(_) => {}
                    None => pairs.push((name.to_string(), value.to_string())),
                }
            }
            _ => {}
        }
    }
    pairs
}

#[test]
fn every_library_opens_with_every_option_set() {
    in_a_process_per_library(
        "store::rocksdb::tests::an_option_set_reaches_every_column_family_and_the_block_cache",
    );
}

#[test]
fn an_option_set_reaches_every_column_family_and_the_block_cache() {
    use gadget::config::store_settings::ROCKSDB_OPTION_SETS;
    let lib = library_under_test();
    for set in ROCKSDB_OPTION_SETS {
        let dir = tempfile::tempdir().unwrap();
        let settings = StoreSettings {
            rocksdb_options: set.to_string(),
            ..settings(&lib)
        };
        let states = vec!["a".to_string(), "b".to_string()];
        let opened = RocksDbStore::open(dir.path(), &states, &settings);
        let memory = options::shared_memory(&settings);
        if memory.is_some() && lib.release().is_none() {
            // no RocksJava build: Flink's cache and write buffer manager cannot be made
            let e = opened.map(|_| ()).unwrap_err().to_string();
            assert!(
                e.contains("choose a library that is") && e.contains("flink-1.20"),
                "{lib} {set}: {e}"
            );
            continue;
        }
        let mut store = opened.unwrap_or_else(|e| panic!("{lib} {set}: {e}"));
        // a memtable's first arena block is charged to the cache in 256 KiB entries by a
        // write buffer manager; without one, nothing is in the cache before a read
        for i in 0..100u32 {
            store.put(0, &i.to_be_bytes(), &[7; 1000]).unwrap();
        }
        let mut usage = 0u64;
        // SAFETY: the database and its column family are live while the store holds them.
        let found = unsafe {
            let property = c"rocksdb.block-cache-usage".as_ptr();
            (store.api.property_int_cf)(store.db.db, store.families[0], property, &mut usage)
        };
        assert_eq!(found, 0, "{lib} {set}: no rocksdb.block-cache-usage");
        let charged = usage >= 256 << 10;
        assert_eq!(
            charged,
            memory.is_some(),
            "{lib} {set}: {usage} bytes in the cache"
        );
        drop(store);
        let file = library::latest_options_file(dir.path()).unwrap();
        let expanded = options::expanded(set, settings.block_cache);
        let wanted = scalar_options(&expanded);
        assert!(wanted.len() >= 3, "{set}: {wanted:?}");
        for (name, value) in wanted {
            let line = format!("{name}={value}");
            let found = file.lines().filter(|l| l.trim() == line).count();
            // DB options once; column-family and table options in each of the three families
            assert!(
                found == 1 || found == 3,
                "{lib} {set}: {line} found {found} times"
            );
        }
        let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
        let cache = memory.map_or(settings.block_cache, |m| m.cache);
        let capacity = format!("capacity : {cache}");
        assert!(log.contains(&capacity), "{lib} {set}: {capacity}");
        let ratio = match memory {
            Some(memory) => format!("high_pri_pool_ratio: {:.3}", memory.high_pri_pool_ratio),
            None => "high_pri_pool_ratio: 0.000".to_string(),
        };
        assert!(log.contains(&ratio), "{lib} {set}: {ratio}");
    }
}

#[test]
fn options_rocksdb_refuses_are_an_error_that_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let settings = StoreSettings {
        rocksdb_options: "max_open_files=7;no_such_option=1".into(),
        ..settings(&library_under_test())
    };
    let e = RocksDbStore::open(dir.path(), &["a".to_string()], &settings)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--rocksdb-options") && e.contains("no_such_option"),
        "{e}"
    );
}
