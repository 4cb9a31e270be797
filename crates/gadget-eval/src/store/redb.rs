//! redb: one table per state in one database file (`redb` under the store directory).
//! Operator instances sharing one database ([`SharedRedb`]) each get their own tables and take
//! turns at redb's single write transaction.
//!
//! Commits are non-durable (`Durability::None`: no fsync), matching Flink's RocksDB with the
//! write-ahead log off, except every [`DURABLE_EVERY`]th commit, which is durable: redb frees
//! the pages that earlier commits replaced only in a durable commit, so without them the file
//! grows without bound. The cache gets RocksDB's memory budget: the block cache plus all write
//! buffers of [`StoreSettings`].
//!
//! Every point write is a write transaction of its own; a merge reads the value, appends and
//! writes it back inside one write transaction (redb has no merge operator). A write batch is
//! one write transaction. Seek opens a read transaction and a range, which `next` steps.
//! Range queries and range deletes are redb's own (`range`, `retain_in`); a dropped state's
//! table is deleted and created again in one write transaction.

// redb's own error type is 160 bytes; passing it up by value only costs on the failure path
#![allow(clippy::result_large_err)]

use super::batch::PendingBatch;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gadget::access::{Op, StateId};
use redb::{
    Database, Durability, ReadableTable, Table, TableDefinition, TableError, WriteTransaction,
};

use super::cursor::Cursors;
use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};

/// Every this many commits, one is durable so that redb can free replaced pages. Each
/// non-durable commit leaves about 64 KiB of pages behind until then (measured with redb 2.6),
/// so the file carries up to ~16 MiB of garbage; without durable commits it grows by that much
/// per 256 writes, for good.
pub const DURABLE_EVERY: u32 = 256;

type Range = redb::Range<'static, &'static [u8], &'static [u8]>;
type Def<'a> = TableDefinition<'a, &'static [u8], &'static [u8]>;

/// The redb this build compiled in, with its version.
pub(crate) fn library() -> String {
    format!("redb {}, compiled in", env!("GADGET_REDB_VERSION"))
}

/// redb takes RocksDB's memory budget: its write buffers and block cache.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "redb",
    about: "a B-tree in Rust",
    reads: &["write_buffer_mb", "write_buffers", "block_cache_mb"],
    applied: |s, applied| super::spec::buffers_and_cache(s, applied, true),
    library: |_| library(),
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        Ok(Arc::new(SharedRedb::open(dir, instances, settings)?))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// A handle on a redb database with one table per state.
pub struct RedbStore {
    db: Arc<Database>,
    /// Table names, by state.
    tables: Vec<String>,
    cursors: Cursors<Range>,
    batch: PendingBatch,
    /// The merged value being built.
    scratch: Vec<u8>,
    /// Commits since the last durable one.
    commits: u32,
    path: PathBuf,
}

fn request_error(op: Op) -> impl Fn(redb::Error) -> StoreError {
    move |e| StoreError::Request {
        store: "redb",
        op,
        message: e.to_string(),
    }
}

/// Runs `write` in a write transaction of its own and commits it, durably every
/// [`DURABLE_EVERY`] commits.
fn write(
    db: &Database,
    commits: &mut u32,
    write: impl FnOnce(&WriteTransaction) -> Result<(), redb::Error>,
) -> Result<(), redb::Error> {
    let mut txn = db.begin_write()?;
    *commits += 1;
    if *commits >= DURABLE_EVERY {
        *commits = 0;
        txn.set_durability(Durability::Immediate);
    } else {
        txn.set_durability(Durability::None);
    }
    write(&txn)?;
    txn.commit()?;
    Ok(())
}

fn open_table<'t>(
    txn: &'t WriteTransaction,
    name: &str,
) -> Result<Table<'t, &'static [u8], &'static [u8]>, TableError> {
    txn.open_table(Def::new(name))
}

/// Opens a read transaction and a range over table `name` from `from`.
fn open_range(db: &Database, name: &str, from: Bound<&[u8]>) -> Result<Range, redb::Error> {
    let txn = db.begin_read()?;
    let table = txn.open_table(Def::new(name))?;
    Ok(table.range::<&[u8]>((from, Bound::Unbounded))?)
}

/// Steps a range: the value length of the entry it lands on, its key copied into `last`.
fn step_range(range: &mut Range, last: &mut Vec<u8>) -> Result<Option<usize>, redb::Error> {
    match range.next() {
        None => Ok(None),
        Some(Err(e)) => Err(e.into()),
        Some(Ok((k, v))) => {
            last.clear();
            last.extend_from_slice(k.value());
            Ok(Some(v.value().len()))
        }
    }
}

/// One redb database that several operator instances share (the paper's §6.4), each through
/// its own [`RedbStore`] over its own tables: they share one file and cache and take turns at
/// redb's single write transaction.
pub struct SharedRedb {
    db: Arc<Database>,
    /// Table names per instance, by state.
    tables: Vec<Vec<String>>,
    path: PathBuf,
}

impl SharedRedb {
    /// Creates (or opens) the database file under `dir` with a table per state of every
    /// instance (`instances[i]` lists instance `i`'s states).
    pub fn open(
        dir: &Path,
        instances: &[Vec<String>],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        let file = dir.join("redb");
        let open_error = |e: redb::Error| StoreError::Open {
            store: "redb",
            path: file.clone(),
            message: e.to_string(),
        };
        let cache = settings.memory_budget();
        let db = Database::builder()
            .set_cache_size(cache)
            .create(&file)
            .map_err(|e| open_error(e.into()))?;
        // table names must be unique; a trace's state names are, but be safe
        let tables: Vec<Vec<String>> = instances
            .iter()
            .enumerate()
            .map(|(instance, states)| {
                states
                    .iter()
                    .enumerate()
                    .map(|(i, n)| format!("{instance}/{i}:{n}"))
                    .collect()
            })
            .collect();
        let mut commits = 0;
        write(&db, &mut commits, |txn| {
            for name in tables.iter().flatten() {
                open_table(txn, name)?;
            }
            Ok(())
        })
        .map_err(open_error)?;
        Ok(SharedRedb {
            db: Arc::new(db),
            tables,
            path: file,
        })
    }

    /// The store of instance `instance`: its own tables, cursors and write batch.
    pub fn attach(&self, instance: usize) -> Result<RedbStore, StoreError> {
        let tables = super::instance_part("redb", &self.path, &self.tables, instance)?;
        Ok(RedbStore {
            db: Arc::clone(&self.db),
            cursors: Cursors::new(tables.len()),
            tables,
            batch: PendingBatch::default(),
            scratch: Vec::new(),
            commits: 0,
            path: self.path.clone(),
        })
    }
}

impl super::SharedStore for SharedRedb {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedRedb::attach(self, instance)?))
    }
}

impl RedbStore {
    /// Creates (or opens) the database file under `dir` with a table per state.
    pub fn open(
        dir: &Path,
        states: &[String],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        SharedRedb::open(dir, &[states.to_vec()], settings)?.attach(0)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The table name of `state`.
fn table(tables: &[String], state: StateId) -> Result<&str, StoreError> {
    tables
        .get(state as usize)
        .map(String::as_str)
        .ok_or(StoreError::UnknownState {
            state,
            states: tables.len(),
        })
}

impl Store for RedbStore {
    fn name(&self) -> &'static str {
        "redb"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let name = table(&self.tables, state)?;
        let get = || -> Result<Option<usize>, redb::Error> {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(Def::new(name))?;
            let found = table.get(key)?.map(|v| v.value().len());
            Ok(found)
        };
        get().map_err(request_error(Op::Get))
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let name = table(&self.tables, state)?;
        self.cursors.suspend_all();
        write(&self.db, &mut self.commits, |txn| {
            open_table(txn, name)?.insert(key, value)?;
            Ok(())
        })
        .map_err(request_error(Op::Put))
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let name = table(&self.tables, state)?;
        self.cursors.suspend_all();
        let scratch = &mut self.scratch;
        write(&self.db, &mut self.commits, |txn| {
            let mut table = open_table(txn, name)?;
            scratch.clear();
            if let Some(old) = table.get(key)? {
                scratch.extend_from_slice(old.value());
                scratch.push(MERGE_DELIMITER);
            }
            scratch.extend_from_slice(value);
            table.insert(key, scratch.as_slice())?;
            Ok(())
        })
        .map_err(request_error(Op::Merge))
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let name = table(&self.tables, state)?;
        self.cursors.suspend_all();
        write(&self.db, &mut self.commits, |txn| {
            open_table(txn, name)?.remove(key)?;
            Ok(())
        })
        .map_err(request_error(Op::Delete))
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let name = table(&self.tables, state)?;
        let (db, error) = (&self.db, request_error(Op::Seek));
        self.cursors.seek(
            state,
            key,
            |from| open_range(db, name, from).map_err(&error),
            |r, last| step_range(r, last).map_err(&error),
        )
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        let name = table(&self.tables, state)?;
        let (db, error) = (&self.db, request_error(Op::Next));
        self.cursors.next(
            state,
            |from| open_range(db, name, from).map_err(&error),
            |r, last| step_range(r, last).map_err(&error),
        )
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        table(&self.tables, state)?;
        self.batch.put(state, key, value);
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        table(&self.tables, state)?;
        self.batch.delete(state, key);
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        self.cursors.suspend_all();
        let (batch, tables) = (&self.batch, &self.tables);
        let result = write(&self.db, &mut self.commits, |txn| {
            // a table can be open once per transaction: open each state's when first needed
            let mut open: Vec<Option<Table<&[u8], &[u8]>>> = tables.iter().map(|_| None).collect();
            for w in batch.writes() {
                let table = match &mut open[w.state as usize] {
                    Some(t) => t,
                    slot => slot.insert(open_table(txn, &tables[w.state as usize])?),
                };
                match w.value {
                    Some(value) => {
                        table.insert(w.key, value)?;
                    }
                    None => {
                        table.remove(w.key)?;
                    }
                }
            }
            Ok(())
        });
        // a failed batch is dropped as RocksDB drops it
        self.batch.clear();
        result.map_err(request_error(Op::BatchCommit))
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        let name = table(&self.tables, state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let query = || -> Result<usize, redb::Error> {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(Def::new(name))?;
            let mut entries = 0;
            for entry in table.range::<&[u8]>((Bound::Included(start), Bound::Excluded(end)))? {
                let (_, v) = entry?;
                std::hint::black_box(v.value());
                entries += 1;
            }
            Ok(entries)
        };
        query().map_err(request_error(Op::RangeQuery))
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        let name = table(&self.tables, state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        self.cursors.suspend_all();
        write(&self.db, &mut self.commits, |txn| {
            open_table(txn, name)?
                .retain_in::<&[u8], _>((Bound::Included(start), Bound::Excluded(end)), |_, _| {
                    false
                })?;
            Ok(())
        })
        .map_err(request_error(Op::RangeDelete))
    }

    /// Deletes the state's table and creates it again, in one write transaction.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let name = table(&self.tables, state)?;
        self.cursors.suspend_all();
        self.cursors.close(state);
        write(&self.db, &mut self.commits, |txn| {
            txn.delete_table(Def::new(name))?;
            open_table(txn, name)?;
            Ok(())
        })
        .map_err(request_error(Op::Drop))
    }

    fn emulated(&self) -> &'static [Op] {
        &[Op::Merge, Op::Checkpoint]
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.cursors.suspend_all();
        // an empty durable commit makes every earlier one durable and frees their pages
        self.commits = DURABLE_EVERY;
        write(&self.db, &mut self.commits, |_| Ok(())).map_err(request_error(Op::BatchCommit))
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract;
    use super::*;

    fn store(dir: &Path) -> RedbStore {
        let states = vec!["window-contents".to_string(), "timers".to_string()];
        let settings = StoreSettings {
            write_buffer_size: 1 << 20,
            block_cache: 1 << 20,
            ..StoreSettings::default()
        };
        RedbStore::open(dir, &states, &settings).unwrap()
    }

    #[test]
    fn merge_appends_with_flinks_delimiter() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::merge_appends_with_flinks_delimiter(&mut s);
        assert_eq!(s.emulated(), &[Op::Merge, Op::Checkpoint]);
    }

    #[test]
    fn states_are_separate_tables() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::states_are_separate(&mut s);
        assert!(matches!(
            s.batch_delete(2, b"k"),
            Err(StoreError::UnknownState { .. })
        ));
    }

    #[test]
    fn seek_and_next_walk_in_key_order_and_batches_apply_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        s.batch_put(1, b"b", b"22").unwrap();
        s.batch_put(1, b"a", b"1").unwrap();
        s.batch_put(0, b"a", b"333").unwrap();
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
        assert_eq!(s.seek(0, b"").unwrap(), Some(3));
        s.flush().unwrap();
    }

    #[test]
    fn next_after_a_write_sees_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::next_after_a_write_sees_the_write(&mut s);
    }

    #[test]
    fn a_drop_deletes_and_recreates_its_table_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::a_drop_empties_its_state_and_nothing_else(&mut s);
        contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(&mut s);
        assert!(!s.emulated().contains(&Op::Drop));
    }

    #[test]
    fn many_small_commits_do_not_grow_the_file_without_bound() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        let value = [1u8; 100];
        // 16 times the garbage a run of non-durable commits leaves: ~256 MiB if never freed
        for i in 0..(16 * DURABLE_EVERY) {
            s.put(0, &(i % 16).to_be_bytes(), &value).unwrap();
        }
        s.flush().unwrap();
        let size = std::fs::metadata(s.path()).unwrap().len();
        assert!(size < 48 << 20, "redb file is {size} bytes for 16 keys");
    }
}
