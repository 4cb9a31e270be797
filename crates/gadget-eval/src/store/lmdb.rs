//! LMDB through `heed`: one named database per state in one environment, whose memory map
//! ([`StoreSettings::lmdb_map_size`], 16 GiB by default) is sparse on disk.
//!
//! Syncing is off (`MDB_NOSYNC`): a commit writes its pages to the map but does not flush them
//! to disk, as Flink's RocksDB with the write-ahead log off does not. A crash may lose the last
//! commits, never corrupt the database (LMDB's documented guarantee for this flag); this is why
//! heed marks the flag unsafe.
//!
//! Every point write is a write transaction of its own; a merge reads the value, appends and
//! writes it back inside one write transaction (LMDB has no merge operator). A write batch is
//! one write transaction. Seek opens a read transaction and a cursor, which `next` steps. A
//! range query walks a cursor over the range in a read transaction; LMDB has no range delete,
//! so one is emulated by deleting every key of the range through a cursor in one write
//! transaction (heed's `delete_range`). A dropped state's database is emptied in one write
//! transaction (`mdb_drop`, the database kept).

use super::batch::PendingBatch;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use gadget::access::{Op, StateId};
use heed::types::Bytes;
use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions, MdbError, RoRange, RoTxn};
use heed::{RwTxn, WithoutTls};
use self_cell::self_cell;

use super::cursor::Cursors;
use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};

type Db = Database<'static, Bytes, Bytes>;
type Range<'txn> = RoRange<'txn, Bytes, Bytes>;

self_cell!(
    /// A read transaction and a cursor over one database inside it.
    struct OpenRange {
        owner: RoTxn<'static, WithoutTls>,
        #[not_covariant]
        dependent: Range,
    }
);

/// The LMDB this build compiled in, with its version: `LMDB 0.9.70: (December 19, 2015),
/// compiled in through heed 0.23.1`.
pub(crate) fn library() -> String {
    format!(
        "{}, compiled in through heed {}",
        heed::lmdb_version().string,
        env!("GADGET_HEED_VERSION")
    )
}

/// LMDB reads its map size.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "lmdb",
    about: "LMDB, memory-mapped B+ tree",
    reads: &["lmdb_map_gb"],
    applied: |s, applied| super::spec::set(applied, "map_bytes", s.lmdb_map_size),
    library: |_| library(),
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        Ok(std::sync::Arc::new(SharedLmdb::open(
            dir, instances, settings,
        )?))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// An LMDB environment with one named database per state.
pub struct LmdbStore {
    env: Env<WithoutTls>,
    dbs: Vec<Db>,
    cursors: Cursors<OpenRange>,
    batch: PendingBatch,
    /// The merged value being built (LMDB values cannot be appended to in place).
    scratch: Vec<u8>,
    map_size: usize,
    path: PathBuf,
}

/// A store error with what the user can do about it.
fn message(e: heed::Error, map_size: usize) -> String {
    match e {
        heed::Error::Mdb(MdbError::MapFull) => format!(
            "the LMDB map is full ({} MiB); give a larger map size (--lmdb-map-gb)",
            map_size >> 20
        ),
        heed::Error::Mdb(MdbError::BadValSize) => {
            "LMDB takes keys of 1 to 511 bytes; this one is empty or longer".to_string()
        }
        e => e.to_string(),
    }
}

/// One LMDB environment that several operator instances share (the paper's §6.4), each
/// through its own [`LmdbStore`] over its own databases: they share one memory map and take
/// turns at LMDB's single writer.
pub struct SharedLmdb {
    env: Env<WithoutTls>,
    /// Databases per instance.
    dbs: Vec<Vec<Db>>,
    map_size: usize,
    path: PathBuf,
}

impl SharedLmdb {
    /// Creates (or opens) an environment under `dir` with a database per state of every
    /// instance (`instances[i]` lists instance `i`'s states).
    pub fn open(
        dir: &Path,
        instances: &[Vec<String>],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        let map_size = settings.lmdb_map_size;
        let open_error = |e: heed::Error| StoreError::Open {
            store: "lmdb",
            path: dir.to_path_buf(),
            message: message(e, map_size),
        };
        let page = 4096;
        if map_size < page {
            return Err(StoreError::Open {
                store: "lmdb",
                path: dir.to_path_buf(),
                message: format!("map size {map_size} bytes is below one page"),
            });
        }
        let states: usize = instances.iter().map(Vec::len).sum();
        let max_dbs = u32::try_from(states).map_err(|_| StoreError::Open {
            store: "lmdb",
            path: dir.to_path_buf(),
            message: format!("{states} states are more databases than LMDB allows"),
        })?;
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options.map_size(map_size / page * page).max_dbs(max_dbs);
        // SAFETY: NO_SYNC only gives up durability of the last commits on a crash (see the
        // module documentation); nothing else opens this directory while the store runs.
        let env = unsafe {
            options.flags(EnvFlags::NO_SYNC);
            options.open(dir)
        }
        .map_err(open_error)?;
        let mut dbs = Vec::with_capacity(instances.len());
        for (instance, states) in instances.iter().enumerate() {
            let mut own = Vec::with_capacity(states.len());
            for (i, name) in states.iter().enumerate() {
                // database names must be unique; a trace's state names are, but be safe
                let name = if instances.len() == 1 {
                    format!("{i}:{name}")
                } else {
                    format!("{instance}:{i}:{name}")
                };
                let wtxn = env.write_txn().map_err(open_error)?;
                let db: Db = env
                    .create_databases_and_commit(wtxn, |opener, wtxn| {
                        opener
                            .create_database::<Bytes, Bytes>(wtxn, Some(&name))
                            .map(CommitOrAbort::<_, ()>::Commit)
                    })
                    .map_err(open_error)?
                    .unwrap_commit();
                own.push(db);
            }
            dbs.push(own);
        }
        Ok(SharedLmdb {
            env,
            dbs,
            map_size,
            path: dir.to_path_buf(),
        })
    }

    /// The store of instance `instance`: its own databases, cursors and write batch.
    pub fn attach(&self, instance: usize) -> Result<LmdbStore, StoreError> {
        let dbs = super::instance_part("lmdb", &self.path, &self.dbs, instance)?;
        Ok(LmdbStore {
            env: self.env.clone(),
            cursors: Cursors::new(dbs.len()),
            dbs,
            batch: PendingBatch::default(),
            scratch: Vec::new(),
            map_size: self.map_size,
            path: self.path.clone(),
        })
    }
}

impl super::SharedStore for SharedLmdb {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedLmdb::attach(self, instance)?))
    }
}

impl LmdbStore {
    /// Creates (or opens) an environment under `dir` with a database per state.
    pub fn open(
        dir: &Path,
        states: &[String],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        SharedLmdb::open(dir, &[states.to_vec()], settings)?.attach(0)
    }

    /// The environment directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn db(&self, state: StateId) -> Result<Db, StoreError> {
        self.dbs
            .get(state as usize)
            .copied()
            .ok_or(StoreError::UnknownState {
                state,
                states: self.dbs.len(),
            })
    }

    fn error(&self, op: Op) -> impl Fn(heed::Error) -> StoreError {
        let map_size = self.map_size;
        move |e| StoreError::Request {
            store: "lmdb",
            op,
            message: message(e, map_size),
        }
    }

    fn check(&self, state: StateId) -> Result<(), StoreError> {
        self.db(state).map(|_| ())
    }
}

/// Runs `write` in a write transaction of its own and commits it.
fn write(
    env: &Env<WithoutTls>,
    error: impl Fn(heed::Error) -> StoreError,
    write: impl FnOnce(&mut RwTxn) -> heed::Result<()>,
) -> Result<(), StoreError> {
    let mut txn = env.write_txn().map_err(&error)?;
    write(&mut txn).map_err(&error)?;
    txn.commit().map_err(error)
}

/// Opens a read transaction and a range over `db` from `from`.
fn open_range(
    env: &Env<WithoutTls>,
    db: Db,
    from: Bound<&[u8]>,
    error: impl Fn(heed::Error) -> StoreError,
) -> Result<OpenRange, StoreError> {
    let txn = env.clone().static_read_txn().map_err(&error)?;
    // LMDB rejects an empty key, even as a bound; every key is >= the empty one
    let from = match from {
        Bound::Included([]) => Bound::Unbounded,
        from => from,
    };
    OpenRange::try_new(txn, |txn| db.range(txn, &(from, Bound::Unbounded))).map_err(error)
}

/// The start bound of a range from `start`: LMDB rejects an empty key, even as a bound, and
/// every key is `>=` the empty one.
fn lmdb_start(start: &[u8]) -> Bound<&[u8]> {
    match start {
        [] => Bound::Unbounded,
        start => Bound::Included(start),
    }
}

/// Steps a range: the value length of the entry it lands on, its key copied into `last`.
fn step_range(
    range: &mut OpenRange,
    last: &mut Vec<u8>,
    error: impl Fn(heed::Error) -> StoreError,
) -> Result<Option<usize>, StoreError> {
    range.with_dependent_mut(|_, r| match r.next() {
        None => Ok(None),
        Some(Err(e)) => Err(error(e)),
        Some(Ok((k, v))) => {
            last.clear();
            last.extend_from_slice(k);
            Ok(Some(v.len()))
        }
    })
}

impl Store for LmdbStore {
    fn name(&self) -> &'static str {
        "lmdb"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let db = self.db(state)?;
        let error = self.error(Op::Get);
        let txn = self.env.read_txn().map_err(&error)?;
        let found = db.get(&txn, key).map_err(error)?.map(<[u8]>::len);
        Ok(found)
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let db = self.db(state)?;
        self.cursors.suspend_all();
        write(&self.env, self.error(Op::Put), |txn| {
            db.put(txn, key, value)
        })
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let db = self.db(state)?;
        self.cursors.suspend_all();
        let error = self.error(Op::Merge);
        let scratch = &mut self.scratch;
        write(&self.env, error, |txn| {
            scratch.clear();
            if let Some(old) = db.get(txn, key)? {
                scratch.extend_from_slice(old);
                scratch.push(MERGE_DELIMITER);
            }
            scratch.extend_from_slice(value);
            db.put(txn, key, scratch)
        })
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let db = self.db(state)?;
        self.cursors.suspend_all();
        write(&self.env, self.error(Op::Delete), |txn| {
            db.delete(txn, key).map(|_| ())
        })
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let db = self.db(state)?;
        let error = self.error(Op::Seek);
        let env = &self.env;
        self.cursors.seek(
            state,
            key,
            |from| open_range(env, db, from, &error),
            |r, last| step_range(r, last, &error),
        )
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        let db = self.db(state)?;
        let error = self.error(Op::Next);
        let env = &self.env;
        self.cursors.next(
            state,
            |from| open_range(env, db, from, &error),
            |r, last| step_range(r, last, &error),
        )
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.batch.put(state, key, value);
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.batch.delete(state, key);
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        self.cursors.suspend_all();
        let (dbs, batch) = (&self.dbs, &self.batch);
        let result = write(&self.env, self.error(Op::BatchCommit), |txn| {
            for w in batch.writes() {
                let db = dbs[w.state as usize];
                match w.value {
                    Some(value) => db.put(txn, w.key, value)?,
                    None => {
                        db.delete(txn, w.key)?;
                    }
                }
            }
            Ok(())
        });
        // a failed batch is dropped as RocksDB drops it
        self.batch.clear();
        result
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        let db = self.db(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let error = self.error(Op::RangeQuery);
        let txn = self.env.read_txn().map_err(&error)?;
        let mut entries = 0;
        for entry in db
            .range(&txn, &(lmdb_start(start), Bound::Excluded(end)))
            .map_err(&error)?
        {
            std::hint::black_box(entry.map_err(&error)?);
            entries += 1;
        }
        Ok(entries)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        let db = self.db(state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        self.cursors.suspend_all();
        write(&self.env, self.error(Op::RangeDelete), |txn| {
            db.delete_range(txn, &(lmdb_start(start), Bound::Excluded(end)))
                .map(|_| ())
        })
    }

    /// Empties the state's database in one write transaction (LMDB's `mdb_drop` without
    /// deleting the database: it frees the tree's pages, not key by key).
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let db = self.db(state)?;
        self.cursors.suspend_all();
        self.cursors.close(state);
        write(&self.env, self.error(Op::Drop), |txn| db.clear(txn))
    }

    fn emulated(&self) -> &'static [Op] {
        &[Op::Merge, Op::RangeDelete, Op::Checkpoint]
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.cursors.suspend_all();
        self.env.force_sync().map_err(self.error(Op::BatchCommit))
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract;
    use super::*;

    fn store(dir: &Path) -> LmdbStore {
        let states = vec!["window-contents".to_string(), "timers".to_string()];
        let settings = StoreSettings {
            lmdb_map_size: 64 << 20,
            ..StoreSettings::default()
        };
        LmdbStore::open(dir, &states, &settings).unwrap()
    }

    #[test]
    fn merge_appends_with_flinks_delimiter() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::merge_appends_with_flinks_delimiter(&mut s);
        assert_eq!(s.emulated(), &[Op::Merge, Op::RangeDelete, Op::Checkpoint]);
    }

    #[test]
    fn states_are_separate_databases() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::states_are_separate(&mut s);
        assert!(matches!(
            s.batch_put(2, b"k", b"v"),
            Err(StoreError::UnknownState { .. })
        ));
    }

    #[test]
    fn next_after_a_write_sees_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::next_after_a_write_sees_the_write(&mut s);
    }

    #[test]
    fn a_drop_empties_its_database_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::a_drop_empties_its_state_and_nothing_else(&mut s);
        contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(&mut s);
        assert!(!s.emulated().contains(&Op::Drop));
    }

    #[test]
    fn a_full_map_says_how_to_fix_it() {
        let dir = tempfile::tempdir().unwrap();
        let settings = StoreSettings {
            lmdb_map_size: 1 << 20,
            ..StoreSettings::default()
        };
        let mut s = LmdbStore::open(dir.path(), &["s".to_string()], &settings).unwrap();
        let value = vec![7u8; 64 << 10];
        let err = (0u32..64)
            .find_map(|i| s.put(0, &i.to_be_bytes(), &value).err())
            .expect("a 1 MiB map fills up");
        assert!(err.to_string().contains("--lmdb-map-gb"), "{err}");
    }
}
