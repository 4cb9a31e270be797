//! Checks every store must pass. [`every_store_of_the_build_keeps_the_contract`] runs them on
//! every store of [`StoreKind::all`], so a new store is held to them by being listed; a store's
//! own tests run them where they need more (Redis against a server, a store's emulated ops),
//! and the shared stores' checks run on every store that can be shared.

use super::{open_shared_store, SharedStore, Store, StoreError, StoreKind, StoreSettings};

/// Merge appends with Flink's `,` delimiter (or sets a missing value); put replaces; delete
/// removes.
pub(crate) fn merge_appends_with_flinks_delimiter(s: &mut dyn Store) {
    s.merge(0, b"k", b"abc").unwrap();
    s.merge(0, b"k", b"de").unwrap();
    assert_eq!(s.get(0, b"k").unwrap(), Some(6));
    s.put(0, b"k", b"z").unwrap();
    s.merge(0, b"k", b"").unwrap();
    assert_eq!(s.get(0, b"k").unwrap(), Some(2));
    s.delete(0, b"k").unwrap();
    assert_eq!(s.get(0, b"k").unwrap(), None);
}

/// The same key in two states is two keys; a third state is an error.
pub(crate) fn states_are_separate(s: &mut dyn Store) {
    s.put(0, b"k", b"1").unwrap();
    assert_eq!(s.get(1, b"k").unwrap(), None);
    assert!(matches!(
        s.get(2, b"k"),
        Err(StoreError::UnknownState {
            state: 2,
            states: 2
        })
    ));
}

/// Batched writes apply on commit, and seek/next walk a state in key order.
pub(crate) fn seek_and_next_walk_in_key_order_and_batches_apply_on_commit(s: &mut dyn Store) {
    s.batch_put(1, b"b", b"22").unwrap();
    s.batch_put(1, b"a", b"1").unwrap();
    s.batch_put(1, b"d", b"4444").unwrap();
    assert_eq!(s.seek(1, b"").unwrap(), None);
    s.batch_commit().unwrap();
    assert_eq!(s.seek(1, b"b").unwrap(), Some(2));
    assert_eq!(s.next(1).unwrap(), Some(4));
    assert_eq!(s.next(1).unwrap(), None);
    assert_eq!(s.next(1).unwrap(), None);
    s.batch_delete(1, b"a").unwrap();
    s.batch_commit().unwrap();
    assert_eq!(s.seek(1, b"").unwrap(), Some(2));
    s.flush().unwrap();
}

/// A `next` after a write between it and its seek sees the write, as the memory store does.
pub(crate) fn next_after_a_write_sees_the_write(s: &mut dyn Store) {
    for k in [b"a", b"c", b"e", b"f"] {
        s.put(0, k, k).unwrap();
    }
    assert_eq!(s.seek(0, b"a").unwrap(), Some(1));
    s.put(0, b"b", b"bb").unwrap();
    s.delete(0, b"c").unwrap();
    assert_eq!(s.next(0).unwrap(), Some(2));
    s.range_delete(0, b"e", b"f").unwrap();
    s.put(0, b"f", b"fff").unwrap();
    assert_eq!(s.next(0).unwrap(), Some(3));
    assert_eq!(s.next(0).unwrap(), None);
}

/// Range ops cover `[start, end)` of one state, and nothing when `start >= end`; a range
/// delete leaves the pending write batch alone.
pub(crate) fn range_ops_cover_start_up_to_end(s: &mut dyn Store) {
    for k in [&b"a"[..], b"b", b"bb", b"c", b"d"] {
        s.put(0, k, k).unwrap();
    }
    s.put(1, b"b", b"other").unwrap();
    assert_eq!(s.range_query(0, b"b", b"d").unwrap(), 3);
    assert_eq!(s.range_query(0, b"", b"zz").unwrap(), 5);
    assert_eq!(s.range_query(0, b"b", b"b").unwrap(), 0);
    assert_eq!(s.range_query(0, b"d", b"b").unwrap(), 0);
    assert_eq!(s.range_query(1, b"a", b"c").unwrap(), 1);

    s.batch_put(0, b"bc", b"batched").unwrap();
    s.range_delete(0, b"b", b"c").unwrap();
    s.range_delete(0, b"d", b"a").unwrap();
    assert_eq!(s.get(0, b"b").unwrap(), None);
    assert_eq!(s.get(0, b"bb").unwrap(), None);
    assert_eq!(s.get(0, b"a").unwrap(), Some(1));
    assert_eq!(s.get(0, b"c").unwrap(), Some(1));
    assert_eq!(s.get(0, b"d").unwrap(), Some(1));
    assert_eq!(s.get(1, b"b").unwrap(), Some(5));
    s.batch_commit().unwrap();
    assert_eq!(s.get(0, b"bc").unwrap(), Some(7));
    assert_eq!(s.range_query(0, b"", b"zz").unwrap(), 4);
    s.range_delete(0, b"", b"zz").unwrap();
    assert_eq!(s.range_query(0, b"", b"zz").unwrap(), 0);
    s.flush().unwrap();
}

/// A drop empties its state and nothing else: the other state keeps its entries and its
/// iterator, the dropped state's iterator is closed, its pending batch entries apply at the
/// next commit, and it takes writes again; dropping an empty state (twice) is fine.
pub(crate) fn a_drop_empties_its_state_and_nothing_else(s: &mut dyn Store) {
    for k in [&b"a"[..], b"b", b"c"] {
        s.put(0, k, k).unwrap();
        s.put(1, k, b"other").unwrap();
    }
    s.merge(0, b"m", b"x").unwrap();
    s.merge(0, b"m", b"y").unwrap();
    s.batch_put(0, b"b", b"batch").unwrap();
    s.batch_put(1, b"d", b"later").unwrap();
    s.batch_delete(1, b"c").unwrap();
    assert_eq!(s.seek(0, b"a").unwrap(), Some(1));
    assert_eq!(s.seek(1, b"a").unwrap(), Some(5));

    s.drop_state(0).unwrap();
    assert_eq!(
        s.next(0).unwrap(),
        None,
        "a drop closes the state's iterator"
    );
    for k in [&b"a"[..], b"b", b"c", b"m"] {
        assert_eq!(s.get(0, k).unwrap(), None, "{:?} is gone", k);
    }
    assert_eq!(s.seek(0, b"").unwrap(), None);
    assert_eq!(s.next(0).unwrap(), None);
    assert_eq!(s.range_query(0, b"", b"zz").unwrap(), 0);
    // the other state keeps its entries and its iterator
    assert_eq!(s.next(1).unwrap(), Some(5));
    assert_eq!(s.get(1, b"a").unwrap(), Some(5));
    assert_eq!(s.range_query(1, b"", b"zz").unwrap(), 3);

    // the pending batch was left alone: its entries of both states apply now
    s.batch_commit().unwrap();
    assert_eq!(s.get(0, b"b").unwrap(), Some(5));
    assert_eq!(s.range_query(0, b"", b"zz").unwrap(), 1);
    assert_eq!(s.get(1, b"d").unwrap(), Some(5));
    assert_eq!(s.get(1, b"c").unwrap(), None);

    // the dropped state takes every kind of write again
    s.put(0, b"a", b"new").unwrap();
    s.merge(0, b"m", b"x").unwrap();
    s.merge(0, b"m", b"y").unwrap();
    assert_eq!(s.get(0, b"a").unwrap(), Some(3));
    assert_eq!(s.get(0, b"m").unwrap(), Some(3));
    assert_eq!(s.seek(0, b"").unwrap(), Some(3));
    assert_eq!(s.next(0).unwrap(), Some(5));
    assert_eq!(s.next(0).unwrap(), Some(3));
    assert_eq!(s.next(0).unwrap(), None);

    // an empty state drops as well, twice in a row; an unknown one is an error
    s.drop_state(0).unwrap();
    assert_eq!(s.range_query(0, b"", b"zz").unwrap(), 0);
    s.drop_state(0).unwrap();
    assert_eq!(s.seek(0, b"").unwrap(), None);
    assert!(matches!(
        s.drop_state(2),
        Err(StoreError::UnknownState {
            state: 2,
            states: 2
        })
    ));
    assert_eq!(s.range_query(1, b"", b"zz").unwrap(), 3);
    s.flush().unwrap();
}

/// The stores that can be shared between instances.
fn shared_kinds() -> Vec<StoreKind> {
    vec![
        #[cfg(feature = "rocksdb")]
        StoreKind::RocksDb,
        #[cfg(feature = "fjall")]
        StoreKind::Fjall,
        #[cfg(feature = "lmdb")]
        StoreKind::Lmdb,
        #[cfg(feature = "leveldb")]
        StoreKind::LevelDb,
        #[cfg(feature = "redb")]
        StoreKind::Redb,
        #[cfg(feature = "sqlite")]
        StoreKind::Sqlite,
        #[cfg(feature = "faster")]
        StoreKind::Faster,
        #[cfg(feature = "berkeleydb")]
        StoreKind::BerkeleyDbBTree,
        #[cfg(feature = "berkeleydb")]
        StoreKind::BerkeleyDbHash,
    ]
}

/// Small sizes for shared stores under test.
fn shared_settings() -> StoreSettings {
    StoreSettings {
        write_buffer_size: 1 << 20,
        block_cache: 1 << 20,
        lmdb_map_size: 64 << 20,
        ..StoreSettings::default()
    }
}

/// Runs `check` on each store that can be shared (with its name), opened in a directory of its
/// own for three instances of two states.
fn for_every_shared_store(check: impl Fn(&dyn SharedStore, &str)) {
    let states = vec!["window-contents".to_string(), "timers".to_string()];
    for kind in shared_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let shared = open_shared_store(
            kind,
            dir.path(),
            &vec![states.clone(); 3],
            &shared_settings(),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        check(shared.as_ref(), kind.name());
    }
}

/// Every store that can be shared passes [`a_drop_leaves_the_other_instances_alone`].
#[test]
fn a_drop_in_one_instance_of_every_shared_store_leaves_the_others_alone() {
    for_every_shared_store(a_drop_leaves_the_other_instances_alone);
}

/// Three instances of a shared store fill both their states; then instance 1 drops its state
/// 0, the others keep theirs, and instance 1 keeps its state 1 and writes state 0 again. Each
/// instance has its own thread (FASTER's sessions are per thread), and the phases are kept
/// apart by a barrier.
fn a_drop_leaves_the_other_instances_alone(shared: &dyn SharedStore, store: &str) {
    let phase = std::sync::Barrier::new(3);
    std::thread::scope(|scope| {
        for instance in 0..3usize {
            let phase = &phase;
            scope.spawn(move || {
                let mut s = shared.attach(instance).unwrap();
                for i in 0..200u32 {
                    s.put(0, &i.to_be_bytes(), &vec![b'v'; instance + 1])
                        .unwrap();
                    s.put(1, &i.to_be_bytes(), b"t").unwrap();
                }
                phase.wait();
                if instance == 1 {
                    s.drop_state(0).unwrap();
                }
                phase.wait();
                let left = if instance == 1 { 0 } else { 200 };
                let all = |s: &mut dyn Store, state| s.range_query(state, b"", &[0xff; 5]).unwrap();
                assert_eq!(all(s.as_mut(), 0), left, "{store}, instance {instance}");
                assert_eq!(all(s.as_mut(), 1), 200, "{store}, instance {instance}");
                assert_eq!(
                    s.get(0, &7u32.to_be_bytes()).unwrap(),
                    (instance != 1).then_some(instance + 1),
                    "{store}, instance {instance}"
                );
                if instance == 1 {
                    assert_eq!(s.seek(0, b"").unwrap(), None, "{store}");
                    s.put(0, &7u32.to_be_bytes(), b"again").unwrap();
                    assert_eq!(s.seek(0, b"").unwrap(), Some(5), "{store}");
                    assert_eq!(s.next(0).unwrap(), None, "{store}");
                }
                s.flush().unwrap();
            });
        }
    });
}

/// Every store that can be shared passes [`shared_instances_are_separate`].
#[test]
fn instances_of_every_shared_store_are_separate() {
    for_every_shared_store(|shared, _| shared_instances_are_separate(shared));
}

/// Instances of a shared store (opened for three instances of two states each) write and read
/// at once, on their own threads, each in its own keyspaces; an instance beyond those opened
/// is an error.
fn shared_instances_are_separate(shared: &dyn SharedStore) {
    std::thread::scope(|scope| {
        for instance in 0..3usize {
            scope.spawn(move || {
                let mut s = shared.attach(instance).unwrap();
                for i in 0..500u32 {
                    let value = vec![b'v'; instance + 1];
                    s.put(0, &i.to_be_bytes(), &value).unwrap();
                    s.merge(1, b"list", b"x").unwrap();
                }
                for i in 0..500u32 {
                    assert_eq!(s.get(0, &i.to_be_bytes()).unwrap(), Some(instance + 1));
                }
                assert_eq!(s.get(1, b"list").unwrap(), Some(2 * 500 - 1));
                assert_eq!(s.seek(0, b"").unwrap(), Some(instance + 1));
                // an iterator stops at the end of its instance's state, before the next one's
                assert_eq!(s.seek(1, b"").unwrap(), Some(2 * 500 - 1));
                assert_eq!(s.next(1).unwrap(), None);
                s.flush().unwrap();
            });
        }
    });
    assert!(shared.attach(3).is_err());
}

/// A flush and a checkpoint keep every entry and the open iterator, and the state takes
/// writes after them; a second checkpoint replaces the first.
pub(crate) fn a_flush_and_a_checkpoint_keep_every_entry_and_iterator(s: &mut dyn Store) {
    for k in [&b"\xfe1"[..], b"\xfe2", b"\xfe3"] {
        s.put(0, k, b"v").unwrap();
    }
    assert_eq!(s.seek(0, b"\xfe1").unwrap(), Some(1));
    s.flush_state(0).unwrap();
    assert_eq!(
        s.next(0).unwrap(),
        Some(1),
        "a flush leaves the state's iterator where it was"
    );
    s.checkpoint_state(0).unwrap();
    s.put(0, b"\xfe4", b"vv").unwrap();
    s.checkpoint_state(0).unwrap();
    for k in [&b"\xfe1"[..], b"\xfe2", b"\xfe3"] {
        assert_eq!(s.get(0, k).unwrap(), Some(1), "{k:?} kept");
    }
    assert_eq!(s.get(0, b"\xfe4").unwrap(), Some(2));
    s.flush_state(1).unwrap();
}

/// One check of a store.
type Check = fn(&mut dyn Store);

/// One check of a store that instances share.
#[cfg(feature = "lethe")]
type SharedCheck = fn(&dyn SharedStore);

/// Every check every store must pass, by name. ([`next_after_a_write_sees_the_write`] is not
/// among them: RocksDB's and LevelDB's iterators read a snapshot, as Flink's do; the stores
/// whose iterators re-open after a write run it in their own tests.)
const CHECKS: &[(&str, Check)] = &[
    (
        "merge_appends_with_flinks_delimiter",
        merge_appends_with_flinks_delimiter,
    ),
    ("states_are_separate", states_are_separate),
    (
        "seek_and_next_walk_in_key_order_and_batches_apply_on_commit",
        seek_and_next_walk_in_key_order_and_batches_apply_on_commit,
    ),
    (
        "range_ops_cover_start_up_to_end",
        range_ops_cover_start_up_to_end,
    ),
    (
        "a_drop_empties_its_state_and_nothing_else",
        a_drop_empties_its_state_and_nothing_else,
    ),
    (
        "a_flush_and_a_checkpoint_keep_every_entry_and_iterator",
        a_flush_and_a_checkpoint_keep_every_entry_and_iterator,
    ),
];

/// Every store of the build that runs on this machine alone (Redis needs a server: its own
/// tests run the checks against one) passes every check, each on a fresh store of two states
/// opened as a run opens it: a new store is held to the contract by being listed.
#[test]
fn every_store_of_the_build_keeps_the_contract() {
    let states = vec!["window-contents".to_string(), "timers".to_string()];
    for &kind in StoreKind::all() {
        // Lethe is a second RocksDB library, which a process that runs one cannot load: its
        // checks run in a process of their own (lethe_keeps_the_contract_in_a_process_of_its_own)
        if kind.name().starts_with("redis") || kind.name() == "lethe" {
            continue;
        }
        for (check_name, check) in CHECKS {
            let dir = tempfile::tempdir().unwrap();
            let mut store = super::open_store(kind, dir.path(), &states, &shared_settings())
                .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
            let checked =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(store.as_mut())));
            if let Err(why) = checked {
                let why = why
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| why.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("{} fails {check_name}: {why}", kind.name());
            }
        }
    }
}

/// Lethe passes every check and the shared stores' checks too, in a test process of its own:
/// the test runs this test binary again with only itself selected, since a process that runs
/// one RocksDB library (the other checks' rocksdb store) cannot load a second. Without Lethe's
/// library it fails under `CI=true` and elsewhere skips, saying how to build it.
#[cfg(feature = "lethe")]
#[test]
fn lethe_keeps_the_contract_in_a_process_of_its_own() {
    const CHILD: &str = "GADGET_LETHE_CONTRACT_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let states = vec!["window-contents".to_string(), "timers".to_string()];
        for (check_name, check) in CHECKS {
            let dir = tempfile::tempdir().unwrap();
            let mut store =
                super::open_store(StoreKind::Lethe, dir.path(), &states, &shared_settings())
                    .unwrap_or_else(|e| panic!("lethe: {e}"));
            eprintln!("lethe: {check_name}");
            check(store.as_mut());
        }
        let shared_checks: [(&str, SharedCheck); 2] = [
            ("a_drop_leaves_the_other_instances_alone", |shared| {
                a_drop_leaves_the_other_instances_alone(shared, "lethe")
            }),
            (
                "shared_instances_are_separate",
                shared_instances_are_separate,
            ),
        ];
        for (check_name, check) in shared_checks {
            let dir = tempfile::tempdir().unwrap();
            let shared = open_shared_store(
                StoreKind::Lethe,
                dir.path(),
                &vec![states.clone(); 3],
                &shared_settings(),
            )
            .unwrap_or_else(|e| panic!("lethe: {e}"));
            eprintln!("lethe: {check_name}");
            check(shared.as_ref());
        }
        return;
    }
    let Some(text) = super::lethe::rerun_in_own_process(
        CHILD,
        &[
            "store::contract::lethe_keeps_the_contract_in_a_process_of_its_own",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ],
    ) else {
        return;
    };
    // the child ran the checks, not zero tests
    assert!(text.contains("1 passed"), "{text}");
    assert!(
        text.contains("lethe: a_flush_and_a_checkpoint_keep_every_entry_and_iterator"),
        "{text}"
    );
}
