//! SQLite (the amalgamation bundled by `rusqlite`): one database file (`sqlite.db` under the
//! store directory), one table `(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID` per state, every
//! request a prepared statement from the connection's statement cache.
//!
//! Write-ahead-log journal mode with `synchronous = OFF`: commits are not fsynced, matching
//! Flink's RocksDB with its write-ahead log off. The page cache gets RocksDB's memory budget:
//! the block cache plus all write buffers of [`StoreSettings`].
//!
//! Every point write is a transaction of its own (SQLite's autocommit); a merge reads the
//! value, appends and writes it back inside one write transaction (SQLite has no merge
//! operator). A write batch is one transaction. Seek selects the first row `>=` the key; SQLite
//! statements cannot stay open across the writes in between, so `next` selects the first row
//! past the last key returned: a fresh B-tree descent every time. Range queries and range
//! deletes are single statements over `k >= start AND k < end`; a dropped state's table is
//! emptied by one `DELETE FROM` without a condition (SQLite's truncate optimization).
//!
//! Operator instances sharing one database ([`SharedSqlite`]) each get their own tables and
//! their own connection, with an equal share of the page-cache budget; they take turns at
//! SQLite's single writer (a writer waits for the lock instead of failing).

use super::batch::PendingBatch;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gadget::access::{Op, StateId};
use rusqlite::{Connection, OptionalExtension};

use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};

/// The SQLite this build compiled in, with its version: `SQLite 3.50.2, the amalgamation
/// compiled in through rusqlite 0.41.1`.
pub(crate) fn library() -> String {
    format!(
        "SQLite {}, the amalgamation compiled in through rusqlite {}",
        rusqlite::version(),
        env!("GADGET_RUSQLITE_VERSION")
    )
}

/// SQLite takes RocksDB's memory budget: its write buffers and block cache.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "sqlite",
    about: "SQLite tables",
    reads: &["write_buffer_mb", "write_buffers", "block_cache_mb"],
    applied: |s, applied| super::spec::buffers_and_cache(s, applied, true),
    library: |_| library(),
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        Ok(std::sync::Arc::new(SharedSqlite::open(
            dir, instances, settings,
        )?))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// The statements of one state's table.
struct Sql {
    get: String,
    put: String,
    delete: String,
    seek: String,
    next: String,
    range_query: String,
    range_delete: String,
    /// Every row: SQLite's truncate optimization drops the table's pages at once.
    drop: String,
}

impl Sql {
    fn new(table: &str) -> Self {
        let select = format!("SELECT k, v FROM {table} WHERE k");
        Sql {
            get: format!("SELECT v FROM {table} WHERE k = ?1"),
            put: format!(
                "INSERT INTO {table} (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
            ),
            delete: format!("DELETE FROM {table} WHERE k = ?1"),
            seek: format!("{select} >= ?1 ORDER BY k LIMIT 1"),
            next: format!("{select} > ?1 ORDER BY k LIMIT 1"),
            range_query: format!("SELECT v FROM {table} WHERE k >= ?1 AND k < ?2 ORDER BY k"),
            range_delete: format!("DELETE FROM {table} WHERE k >= ?1 AND k < ?2"),
            drop: format!("DELETE FROM {table}"),
        }
    }
}

/// A SQLite database with one table per state.
pub struct SqliteStore {
    conn: Connection,
    sql: Vec<Sql>,
    /// Per state, whether an iterator is open, and the key it stands on.
    open: Vec<bool>,
    last: Vec<Vec<u8>>,
    /// Where the next landing key is written before it becomes a state's `last`.
    spare: Vec<u8>,
    batch: PendingBatch,
    /// The merged value being built.
    scratch: Vec<u8>,
    path: PathBuf,
}

fn request_error(op: Op) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| StoreError::Request {
        store: "sqlite",
        op,
        message: e.to_string(),
    }
}

/// Runs `f` inside one write transaction; rolls back if it fails.
fn in_transaction<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let done = f(conn).and_then(|v| conn.prepare_cached("COMMIT")?.execute([]).map(|_| v));
    if done.is_err() && !conn.is_autocommit() {
        // the error that matters is the first one
        let _ = conn
            .prepare_cached("ROLLBACK")
            .and_then(|mut s| s.execute([]));
    }
    done
}

/// Runs `select` (key and value of one row) from `from`; the row's key goes to `key`.
fn land(
    conn: &Connection,
    select: &str,
    from: &[u8],
    key: &mut Vec<u8>,
) -> rusqlite::Result<Option<usize>> {
    let mut stmt = conn.prepare_cached(select)?;
    let mut rows = stmt.query([from])?;
    let Some(row) = rows.next()? else {
        return Ok(None);
    };
    key.clear();
    key.extend_from_slice(row.get_ref(0)?.as_bytes()?);
    Ok(Some(row.get_ref(1)?.as_bytes()?.len()))
}

fn put(conn: &Connection, sql: &Sql, key: &[u8], value: &[u8]) -> rusqlite::Result<()> {
    conn.prepare_cached(&sql.put)?.execute((key, value))?;
    Ok(())
}

fn delete(conn: &Connection, sql: &Sql, key: &[u8]) -> rusqlite::Result<()> {
    conn.prepare_cached(&sql.delete)?.execute([key])?;
    Ok(())
}

/// The statements of `state`.
fn sql(sql: &[Sql], state: StateId) -> Result<&Sql, StoreError> {
    sql.get(state as usize).ok_or(StoreError::UnknownState {
        state,
        states: sql.len(),
    })
}

/// How long a writer waits for another instance's write to finish (shared databases).
const SHARED_WRITER_WAIT: Duration = Duration::from_secs(600);

/// One SQLite database file that several operator instances share (the paper's §6.4), each
/// through its own [`SqliteStore`]: its own connection and tables in one file and one
/// write-ahead log.
pub struct SharedSqlite {
    file: PathBuf,
    /// Table names per instance, by state.
    tables: Vec<Vec<String>>,
    /// Each connection's page cache, KiB.
    cache_kib: i64,
}

impl SharedSqlite {
    /// Creates (or opens) the database file under `dir` with a table per state of every
    /// instance (`instances[i]` lists instance `i`'s states).
    pub fn open(
        dir: &Path,
        instances: &[Vec<String>],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        let file = dir.join("sqlite.db");
        let open_error = |e: rusqlite::Error| StoreError::Open {
            store: "sqlite",
            path: file.clone(),
            message: e.to_string(),
        };
        let conn = Connection::open(&file).map_err(open_error)?;
        // WAL mode is a property of the file: every later connection finds it
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(open_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open {
                store: "sqlite",
                path: file,
                message: format!("the file system does not allow WAL mode (got {mode})"),
            });
        }
        let tables: Vec<Vec<String>> = instances
            .iter()
            .enumerate()
            .map(|(instance, states)| {
                (0..states.len())
                    .map(|i| format!("i{instance}_s{i}"))
                    .collect()
            })
            .collect();
        for table in tables.iter().flatten() {
            conn.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {table} (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID"
            ))
            .map_err(open_error)?;
        }
        let cache = settings.memory_budget() / instances.len().max(1);
        Ok(SharedSqlite {
            file,
            tables,
            cache_kib: i64::try_from(cache >> 10).unwrap_or(i64::MAX),
        })
    }

    /// The store of instance `instance`: a connection of its own over its own tables.
    pub fn attach(&self, instance: usize) -> Result<SqliteStore, StoreError> {
        let tables = super::instance_part("sqlite", &self.file, &self.tables, instance)?;
        let open_error = |e: rusqlite::Error| StoreError::Open {
            store: "sqlite",
            path: self.file.clone(),
            message: e.to_string(),
        };
        let conn = Connection::open(&self.file).map_err(open_error)?;
        conn.pragma_update(None, "synchronous", "OFF")
            .map_err(open_error)?;
        // a negative cache size is in KiB
        conn.pragma_update(None, "cache_size", -self.cache_kib)
            .map_err(open_error)?;
        conn.busy_timeout(SHARED_WRITER_WAIT).map_err(open_error)?;
        // begin, commit, rollback and five statements per state stay prepared
        conn.set_prepared_statement_cache_capacity(3 + 5 * tables.len());
        Ok(SqliteStore {
            conn,
            open: vec![false; tables.len()],
            last: vec![Vec::new(); tables.len()],
            sql: tables.iter().map(|t| Sql::new(t)).collect(),
            spare: Vec::new(),
            batch: PendingBatch::default(),
            scratch: Vec::new(),
            path: self.file.clone(),
        })
    }
}

impl super::SharedStore for SharedSqlite {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedSqlite::attach(self, instance)?))
    }
}

impl SqliteStore {
    /// Creates (or opens) the database file under `dir` with a table per state.
    pub fn open(
        dir: &Path,
        states: &[String],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        SharedSqlite::open(dir, &[states.to_vec()], settings)?.attach(0)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, state: StateId) -> Result<&Sql, StoreError> {
        sql(&self.sql, state)
    }

    /// Moves the iterator of `state` to the row `select` finds from `from` (`None` when
    /// `from` is the state's own last key).
    fn land(
        &mut self,
        state: StateId,
        op: Op,
        from: Option<&[u8]>,
    ) -> Result<Option<usize>, StoreError> {
        let s = state as usize;
        let sql = &self.sql[s];
        let found = match from {
            Some(key) => land(&self.conn, &sql.seek, key, &mut self.spare),
            None => land(&self.conn, &sql.next, &self.last[s], &mut self.spare),
        }
        .map_err(request_error(op))?;
        self.open[s] = found.is_some();
        if found.is_some() {
            std::mem::swap(&mut self.last[s], &mut self.spare);
        }
        Ok(found)
    }
}

impl Store for SqliteStore {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let sql = self.sql(state)?;
        let get = || -> rusqlite::Result<Option<usize>> {
            let mut stmt = self.conn.prepare_cached(&sql.get)?;
            stmt.query_row([key], |row| Ok(row.get_ref(0)?.as_bytes()?.len()))
                .optional()
        };
        get().map_err(request_error(Op::Get))
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let sql = self.sql(state)?;
        put(&self.conn, sql, key, value).map_err(request_error(Op::Put))
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let sql = sql(&self.sql, state)?;
        let scratch = &mut self.scratch;
        in_transaction(&self.conn, |conn| {
            scratch.clear();
            let mut stmt = conn.prepare_cached(&sql.get)?;
            let mut rows = stmt.query([key])?;
            if let Some(row) = rows.next()? {
                scratch.extend_from_slice(row.get_ref(0)?.as_bytes()?);
                scratch.push(MERGE_DELIMITER);
            }
            drop(rows);
            scratch.extend_from_slice(value);
            put(conn, sql, key, scratch)
        })
        .map_err(request_error(Op::Merge))
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let sql = self.sql(state)?;
        delete(&self.conn, sql, key).map_err(request_error(Op::Delete))
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.sql(state)?;
        self.land(state, Op::Seek, Some(key))
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.sql(state)?;
        if !self.open[state as usize] {
            return Ok(None);
        }
        self.land(state, Op::Next, None)
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.sql(state)?;
        self.batch.put(state, key, value);
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.sql(state)?;
        self.batch.delete(state, key);
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        let (batch, sql) = (&self.batch, &self.sql);
        let result = in_transaction(&self.conn, |conn| {
            for w in batch.writes() {
                let sql = &sql[w.state as usize];
                match w.value {
                    Some(value) => put(conn, sql, w.key, value)?,
                    None => delete(conn, sql, w.key)?,
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
        let sql = self.sql(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let query = || -> rusqlite::Result<usize> {
            let mut stmt = self.conn.prepare_cached(&sql.range_query)?;
            let mut rows = stmt.query([start, end])?;
            let mut entries = 0;
            while let Some(row) = rows.next()? {
                std::hint::black_box(row.get_ref(0)?.as_bytes()?);
                entries += 1;
            }
            Ok(entries)
        };
        query().map_err(request_error(Op::RangeQuery))
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        let sql = self.sql(state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        let delete = || -> rusqlite::Result<()> {
            self.conn
                .prepare_cached(&sql.range_delete)?
                .execute([start, end])?;
            Ok(())
        };
        delete().map_err(request_error(Op::RangeDelete))
    }

    /// `DELETE FROM` the state's table without a condition, which SQLite runs as a truncate
    /// (the table's pages freed, not its rows deleted one by one). Prepared afresh each time:
    /// a rare statement that must not push a hot one out of the statement cache.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let sql = self.sql(state)?;
        self.conn
            .execute(&sql.drop, [])
            .map_err(request_error(Op::Drop))?;
        self.open[state as usize] = false;
        Ok(())
    }

    fn emulated(&self) -> &'static [Op] {
        &[Op::Merge, Op::Next, Op::Checkpoint]
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        // moves the write-ahead log into the database file
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(request_error(Op::BatchCommit))
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract;
    use super::*;

    fn store(dir: &Path) -> SqliteStore {
        let states = vec!["window-contents".to_string(), "timers".to_string()];
        let settings = StoreSettings {
            write_buffer_size: 1 << 20,
            block_cache: 1 << 20,
            ..StoreSettings::default()
        };
        SqliteStore::open(dir, &states, &settings).unwrap()
    }

    #[test]
    fn merge_appends_with_flinks_delimiter() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::merge_appends_with_flinks_delimiter(&mut s);
        assert_eq!(s.emulated(), &[Op::Merge, Op::Next, Op::Checkpoint]);
    }

    #[test]
    fn states_are_separate_tables() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::states_are_separate(&mut s);
        assert!(matches!(s.next(2), Err(StoreError::UnknownState { .. })));
    }

    #[test]
    fn a_drop_empties_its_table_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::a_drop_empties_its_state_and_nothing_else(&mut s);
        contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(&mut s);
        assert!(!s.emulated().contains(&Op::Drop));
    }

    #[test]
    fn keys_compare_as_bytes_and_a_failed_merge_leaves_no_transaction_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        s.put(0, &[0xff], b"1").unwrap();
        s.put(0, &[0x00, 0x01], b"22").unwrap();
        assert_eq!(s.seek(0, &[0x00]).unwrap(), Some(2));
        assert_eq!(s.next(0).unwrap(), Some(1));
        s.conn.execute_batch("DROP TABLE i0_s1").unwrap();
        assert!(matches!(
            s.merge(1, b"k", b"v"),
            Err(StoreError::Request { op: Op::Merge, .. })
        ));
        assert!(s.conn.is_autocommit());
        s.merge(0, &[0xff], b"v").unwrap();
        assert_eq!(s.get(0, &[0xff]).unwrap(), Some(3));
    }
}
