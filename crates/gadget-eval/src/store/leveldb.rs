//! LevelDB through Debian's `libleveldb-dev` (1.23) and its C API, declared here (the
//! `leveldb` crate builds its own copy, which fails with GCC 12).
//!
//! LevelDB has no column families: each state's keys carry a two-byte state prefix in one
//! database, and iterators stop at the end of their state. Operator instances sharing one
//! database ([`SharedLevelDb`]) each get their own run of state prefixes. It has no merge operator either:
//! a merge is emulated as get + append `,` + put, and a dropped state by deleting every key
//! under its prefix in one write batch. Write batches are LevelDB write batches.
//! Writes do not sync (as Flink's RocksDB runs with its write-ahead log off, LevelDB's log
//! cannot be turned off, but it is not synced).

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::Arc;

use gadget::access::{Op, StateId};

use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};

#[repr(C)]
struct RawDb(c_void);
#[repr(C)]
struct RawOptions(c_void);
#[repr(C)]
struct RawReadOptions(c_void);
#[repr(C)]
struct RawWriteOptions(c_void);
#[repr(C)]
struct RawBatch(c_void);
#[repr(C)]
struct RawIterator(c_void);
#[repr(C)]
struct RawCache(c_void);

#[link(name = "leveldb")]
extern "C" {
    fn leveldb_major_version() -> i32;
    fn leveldb_minor_version() -> i32;
    fn leveldb_open(
        options: *const RawOptions,
        name: *const c_char,
        err: *mut *mut c_char,
    ) -> *mut RawDb;
    fn leveldb_close(db: *mut RawDb);
    fn leveldb_put(
        db: *mut RawDb,
        options: *const RawWriteOptions,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        err: *mut *mut c_char,
    );
    fn leveldb_delete(
        db: *mut RawDb,
        options: *const RawWriteOptions,
        key: *const c_char,
        keylen: usize,
        err: *mut *mut c_char,
    );
    fn leveldb_write(
        db: *mut RawDb,
        options: *const RawWriteOptions,
        batch: *mut RawBatch,
        err: *mut *mut c_char,
    );
    fn leveldb_get(
        db: *mut RawDb,
        options: *const RawReadOptions,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        err: *mut *mut c_char,
    ) -> *mut c_char;
    fn leveldb_create_iterator(db: *mut RawDb, options: *const RawReadOptions) -> *mut RawIterator;
    fn leveldb_iter_destroy(it: *mut RawIterator);
    fn leveldb_iter_valid(it: *const RawIterator) -> u8;
    fn leveldb_iter_seek(it: *mut RawIterator, k: *const c_char, klen: usize);
    fn leveldb_iter_next(it: *mut RawIterator);
    fn leveldb_iter_key(it: *const RawIterator, klen: *mut usize) -> *const c_char;
    fn leveldb_iter_value(it: *const RawIterator, vlen: *mut usize) -> *const c_char;
    fn leveldb_iter_get_error(it: *const RawIterator, err: *mut *mut c_char);
    fn leveldb_writebatch_create() -> *mut RawBatch;
    fn leveldb_writebatch_destroy(b: *mut RawBatch);
    fn leveldb_writebatch_clear(b: *mut RawBatch);
    fn leveldb_writebatch_put(
        b: *mut RawBatch,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    fn leveldb_writebatch_delete(b: *mut RawBatch, key: *const c_char, klen: usize);
    fn leveldb_options_create() -> *mut RawOptions;
    fn leveldb_options_destroy(o: *mut RawOptions);
    fn leveldb_options_set_create_if_missing(o: *mut RawOptions, v: u8);
    fn leveldb_options_set_write_buffer_size(o: *mut RawOptions, size: usize);
    fn leveldb_options_set_cache(o: *mut RawOptions, cache: *mut RawCache);
    fn leveldb_cache_create_lru(capacity: usize) -> *mut RawCache;
    fn leveldb_cache_destroy(cache: *mut RawCache);
    fn leveldb_readoptions_create() -> *mut RawReadOptions;
    fn leveldb_readoptions_destroy(o: *mut RawReadOptions);
    fn leveldb_writeoptions_create() -> *mut RawWriteOptions;
    fn leveldb_writeoptions_destroy(o: *mut RawWriteOptions);
    fn leveldb_free(ptr: *mut c_void);
}

/// Takes LevelDB's error string, if any, and frees it.
///
/// # Safety
/// `err` is null or a string LevelDB allocated.
unsafe fn take_error(err: *mut c_char) -> Option<String> {
    if err.is_null() {
        return None;
    }
    let message = CStr::from_ptr(err).to_string_lossy().into_owned();
    leveldb_free(err.cast());
    Some(message)
}

/// An open LevelDB database, closed when the last store handle on it is dropped.
struct Database {
    db: *mut RawDb,
    options: *mut RawOptions,
    cache: *mut RawCache,
}

impl Drop for Database {
    fn drop(&mut self) {
        // SAFETY: created in `SharedLevelDb::open`, owned by this value alone and released
        // once; every handle's iterators are gone, since each handle holds an `Arc` to this.
        unsafe {
            leveldb_close(self.db);
            leveldb_options_destroy(self.options);
            leveldb_cache_destroy(self.cache);
        }
    }
}

// SAFETY: a LevelDB database may be used from several threads at once (its documentation:
// "a single leveldb::DB object ... is thread-safe"); the options and cache are only read.
unsafe impl Send for Database {}
// SAFETY: as above.
unsafe impl Sync for Database {}

/// The LevelDB library this process runs, with its version: `LevelDB 1.23 (libleveldb.so.1d)`.
pub(crate) fn library() -> String {
    // SAFETY: the C API's version functions take nothing and read constants
    let (major, minor) = unsafe { (leveldb_major_version(), leveldb_minor_version()) };
    format!(
        "LevelDB {major}.{minor} ({})",
        gadget_results::host::loaded_libraries("libleveldb").join(", ")
    )
}

/// LevelDB reads its write buffer and block cache sizes.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "leveldb",
    about: "LevelDB, embedded",
    reads: &["write_buffer_mb", "block_cache_mb"],
    applied: |s, applied| super::spec::buffers_and_cache(s, applied, false),
    library: |_| library(),
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        let counts = super::spec::state_counts(instances);
        Ok(Arc::new(SharedLevelDb::open(dir, &counts, settings)?))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// One LevelDB database that several operator instances share (the paper's §6.4), each
/// through its own [`LevelDbStore`] whose states have their own prefixes: they share one
/// memtable, log and cache.
pub struct SharedLevelDb {
    database: Arc<Database>,
    /// Per instance: its first state prefix and its number of states.
    prefixes: Vec<(u16, usize)>,
    path: PathBuf,
}

impl SharedLevelDb {
    /// Creates (or opens) a database under `dir` for several instances (`instances[i]` is
    /// instance `i`'s number of states).
    pub fn open(
        dir: &Path,
        instances: &[usize],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        let open_error = |message: String| StoreError::Open {
            store: "leveldb",
            path: dir.to_path_buf(),
            message,
        };
        let mut prefixes = Vec::with_capacity(instances.len());
        let mut next = 0usize;
        for &states in instances {
            let first = u16::try_from(next)
                .ok()
                .filter(|_| next + states <= 1 << 16);
            let first = first.ok_or_else(|| {
                open_error(format!(
                    "{} states in all are more than the 65,536 two-byte state prefixes",
                    instances.iter().sum::<usize>()
                ))
            })?;
            prefixes.push((first, states));
            next += states;
        }
        let name = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| open_error("the path contains a NUL byte".into()))?;
        // SAFETY: plain constructor calls; the objects are destroyed by `Database`'s Drop (or
        // below on error).
        let database = unsafe {
            let options = leveldb_options_create();
            leveldb_options_set_create_if_missing(options, 1);
            leveldb_options_set_write_buffer_size(options, settings.write_buffer_size);
            let cache = leveldb_cache_create_lru(settings.block_cache.max(1 << 20));
            leveldb_options_set_cache(options, cache);
            let mut err = ptr::null_mut();
            let db = leveldb_open(options, name.as_ptr(), &mut err);
            if let Some(message) = take_error(err) {
                leveldb_options_destroy(options);
                leveldb_cache_destroy(cache);
                return Err(open_error(message));
            }
            Database { db, options, cache }
        };
        Ok(SharedLevelDb {
            database: Arc::new(database),
            prefixes,
            path: dir.to_path_buf(),
        })
    }

    /// The store of instance `instance`: its own state prefixes, iterators and write batch.
    pub fn attach(&self, instance: usize) -> Result<LevelDbStore, StoreError> {
        let (first_prefix, states) =
            super::instance_part("leveldb", &self.path, &self.prefixes, instance)?;
        // SAFETY: plain constructor calls; the objects are destroyed in the store's Drop.
        unsafe {
            Ok(LevelDbStore {
                database: Arc::clone(&self.database),
                first_prefix,
                read: leveldb_readoptions_create(),
                write: leveldb_writeoptions_create(),
                batch: leveldb_writebatch_create(),
                iterators: vec![ptr::null_mut(); states],
                key: Vec::new(),
                value: Vec::new(),
                end: Vec::new(),
                range_batch: leveldb_writebatch_create(),
            })
        }
    }
}

impl super::SharedStore for SharedLevelDb {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedLevelDb::attach(self, instance)?))
    }
}

/// A handle on a LevelDB database holding every state under a two-byte state prefix.
///
/// The database is shared through `database`; every other raw pointer is owned by this value
/// and released in `Drop`.
pub struct LevelDbStore {
    database: Arc<Database>,
    /// The prefix of this handle's state 0; state `s` has prefix `first_prefix + s`.
    first_prefix: u16,
    read: *mut RawReadOptions,
    write: *mut RawWriteOptions,
    batch: *mut RawBatch,
    /// The open iterator of each state.
    iterators: Vec<*mut RawIterator>,
    key: Vec<u8>,
    value: Vec<u8>,
    /// The prefixed end bound of a range op.
    end: Vec<u8>,
    /// The deletes of a range delete, written as one batch.
    range_batch: *mut RawBatch,
}

impl LevelDbStore {
    /// Creates (or opens) a database under `dir` for `states` states.
    pub fn open(dir: &Path, states: usize, settings: &StoreSettings) -> Result<Self, StoreError> {
        SharedLevelDb::open(dir, &[states], settings)?.attach(0)
    }

    /// The two-byte key prefix of `state` (checked to be one of this handle's).
    fn prefix(&self, state: StateId) -> [u8; 2] {
        (self.first_prefix + state).to_be_bytes()
    }

    fn check(&self, state: StateId) -> Result<(), StoreError> {
        let states = self.iterators.len();
        if (state as usize) < states {
            Ok(())
        } else {
            Err(StoreError::UnknownState { state, states })
        }
    }

    /// `state`'s prefix and `key` into `self.key`.
    fn prefixed(&mut self, state: StateId, key: &[u8]) {
        let prefix = self.prefix(state);
        self.key.clear();
        self.key.extend_from_slice(&prefix);
        self.key.extend_from_slice(key);
    }

    /// Reads the prefixed key into `self.value`; false when absent.
    fn read_into_value(&mut self, op: Op) -> Result<bool, StoreError> {
        let mut len = 0;
        let mut err = ptr::null_mut();
        // SAFETY: db and read options are live; key points to self.key's bytes; the returned
        // buffer is copied and freed with leveldb_free.
        unsafe {
            let v = leveldb_get(
                self.database.db,
                self.read,
                self.key.as_ptr().cast(),
                self.key.len(),
                &mut len,
                &mut err,
            );
            if let Some(message) = take_error(err) {
                return Err(request_error(op, message));
            }
            if v.is_null() {
                return Ok(false);
            }
            self.value.clear();
            self.value
                .extend_from_slice(std::slice::from_raw_parts(v.cast::<u8>(), len));
            leveldb_free(v.cast());
            Ok(true)
        }
    }

    fn write_prefixed(&mut self, op: Op, value: Option<&[u8]>) -> Result<(), StoreError> {
        let mut err = ptr::null_mut();
        // SAFETY: db and write options are live; pointers and lengths come from live slices.
        unsafe {
            match value {
                Some(v) => leveldb_put(
                    self.database.db,
                    self.write,
                    self.key.as_ptr().cast(),
                    self.key.len(),
                    v.as_ptr().cast(),
                    v.len(),
                    &mut err,
                ),
                None => leveldb_delete(
                    self.database.db,
                    self.write,
                    self.key.as_ptr().cast(),
                    self.key.len(),
                    &mut err,
                ),
            }
            match take_error(err) {
                Some(message) => Err(request_error(op, message)),
                None => Ok(()),
            }
        }
    }

    /// The value length where `state`'s iterator stands, `None` when it left the state.
    fn current(&self, state: StateId, op: Op) -> Result<Option<usize>, StoreError> {
        let it = self.iterators[state as usize];
        // SAFETY: `it` is a live iterator of this database; key and value pointers are only
        // read within this call, before the iterator moves.
        unsafe {
            if leveldb_iter_valid(it) == 0 {
                let mut err = ptr::null_mut();
                leveldb_iter_get_error(it, &mut err);
                return match take_error(err) {
                    Some(message) => Err(request_error(op, message)),
                    None => Ok(None),
                };
            }
            let mut klen = 0;
            let k = leveldb_iter_key(it, &mut klen);
            let key = std::slice::from_raw_parts(k.cast::<u8>(), klen);
            if !key.starts_with(&self.prefix(state)) {
                return Ok(None);
            }
            let mut vlen = 0;
            leveldb_iter_value(it, &mut vlen);
            Ok(Some(vlen))
        }
    }
}

impl LevelDbStore {
    /// Walks `[start, end)` of `state` with a fresh iterator (`end` `None`: to the end of the
    /// state); with `delete`, writes a delete of every key it passes as one batch. How many
    /// entries it passed.
    fn scan_range(
        &mut self,
        op: Op,
        state: StateId,
        start: &[u8],
        end: Option<&[u8]>,
        delete: bool,
    ) -> Result<usize, StoreError> {
        self.check(state)?;
        if end.is_some_and(|end| empty_range(start, end)) {
            return Ok(0);
        }
        let prefix = self.prefix(state);
        self.prefixed(state, end.unwrap_or_default());
        std::mem::swap(&mut self.key, &mut self.end);
        self.prefixed(state, start);
        let mut entries = 0;
        let mut err = ptr::null_mut();
        // SAFETY: the iterator is created, used and destroyed here, over the live database;
        // the key slice is read before the iterator moves; the batch copies what it is given.
        unsafe {
            let it = leveldb_create_iterator(self.database.db, self.read);
            leveldb_iter_seek(it, self.key.as_ptr().cast(), self.key.len());
            while leveldb_iter_valid(it) != 0 {
                let mut klen = 0;
                let k = leveldb_iter_key(it, &mut klen);
                let key = std::slice::from_raw_parts(k.cast::<u8>(), klen);
                let past_end = match end {
                    Some(_) => key >= self.end.as_slice(),
                    None => !key.starts_with(&prefix),
                };
                if past_end {
                    break;
                }
                let mut vlen = 0;
                std::hint::black_box(leveldb_iter_value(it, &mut vlen));
                if delete {
                    leveldb_writebatch_delete(self.range_batch, k, klen);
                }
                entries += 1;
                leveldb_iter_next(it);
            }
            leveldb_iter_get_error(it, &mut err);
            leveldb_iter_destroy(it);
            if let Some(message) = take_error(err) {
                leveldb_writebatch_clear(self.range_batch);
                return Err(request_error(op, message));
            }
            if delete {
                leveldb_write(self.database.db, self.write, self.range_batch, &mut err);
                leveldb_writebatch_clear(self.range_batch);
                if let Some(message) = take_error(err) {
                    return Err(request_error(op, message));
                }
            }
        }
        Ok(entries)
    }
}

fn request_error(op: Op, message: String) -> StoreError {
    StoreError::Request {
        store: "leveldb",
        op,
        message,
    }
}

impl Store for LevelDbStore {
    fn name(&self) -> &'static str {
        "leveldb"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.prefixed(state, key);
        Ok(self.read_into_value(Op::Get)?.then_some(self.value.len()))
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.prefixed(state, key);
        self.write_prefixed(Op::Put, Some(value))
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.prefixed(state, key);
        if self.read_into_value(Op::Merge)? {
            self.value.push(MERGE_DELIMITER);
        } else {
            self.value.clear();
        }
        self.value.extend_from_slice(value);
        let merged = std::mem::take(&mut self.value);
        let r = self.write_prefixed(Op::Merge, Some(&merged));
        self.value = merged;
        r
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.prefixed(state, key);
        self.write_prefixed(Op::Delete, None)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.prefixed(state, key);
        let s = state as usize;
        // SAFETY: the old iterator (if any) is destroyed before its slot is reused; the new
        // one belongs to this live database.
        unsafe {
            if !self.iterators[s].is_null() {
                leveldb_iter_destroy(self.iterators[s]);
            }
            self.iterators[s] = leveldb_create_iterator(self.database.db, self.read);
            leveldb_iter_seek(self.iterators[s], self.key.as_ptr().cast(), self.key.len());
        }
        self.current(state, Op::Seek)
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        let it = self.iterators[state as usize];
        if it.is_null() || self.current(state, Op::Next)?.is_none() {
            return Ok(None);
        }
        // SAFETY: `it` is live and valid (checked just above).
        unsafe { leveldb_iter_next(it) };
        self.current(state, Op::Next)
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.prefixed(state, key);
        // SAFETY: the batch is live; the slices outlive the call (LevelDB copies them).
        unsafe {
            leveldb_writebatch_put(
                self.batch,
                self.key.as_ptr().cast(),
                self.key.len(),
                value.as_ptr().cast(),
                value.len(),
            );
        }
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.prefixed(state, key);
        // SAFETY: as in batch_put.
        unsafe { leveldb_writebatch_delete(self.batch, self.key.as_ptr().cast(), self.key.len()) };
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        let mut err = ptr::null_mut();
        // SAFETY: db, write options and batch are live.
        unsafe {
            leveldb_write(self.database.db, self.write, self.batch, &mut err);
            leveldb_writebatch_clear(self.batch);
            match take_error(err) {
                Some(message) => Err(request_error(Op::BatchCommit, message)),
                None => Ok(()),
            }
        }
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        self.scan_range(Op::RangeQuery, state, start, Some(end), false)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.scan_range(Op::RangeDelete, state, start, Some(end), true)
            .map(|_| ())
    }

    /// Deletes every key under the state's prefix in one write batch, after a scan of the
    /// prefix (LevelDB has no keyspaces to drop), and closes the state's iterator, a snapshot
    /// that would still see them.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.check(state)?;
        let it = std::mem::replace(&mut self.iterators[state as usize], ptr::null_mut());
        if !it.is_null() {
            // SAFETY: a live iterator of this store, released once (its slot is null now).
            unsafe { leveldb_iter_destroy(it) };
        }
        self.scan_range(Op::Drop, state, &[], None, true)
            .map(|_| ())
    }

    fn emulated(&self) -> &'static [Op] {
        &[
            Op::Merge,
            Op::RangeDelete,
            Op::Drop,
            Op::Flush,
            Op::Checkpoint,
        ]
    }
}

impl Drop for LevelDbStore {
    fn drop(&mut self) {
        // SAFETY: every pointer was created in `attach`/`seek`, is owned by this value alone,
        // and is released exactly once; the database outlives them (`self.database` is dropped
        // after this).
        unsafe {
            for it in self.iterators.drain(..) {
                if !it.is_null() {
                    leveldb_iter_destroy(it);
                }
            }
            leveldb_writebatch_destroy(self.batch);
            leveldb_writebatch_destroy(self.range_batch);
            leveldb_readoptions_destroy(self.read);
            leveldb_writeoptions_destroy(self.write);
        }
    }
}

// SAFETY: the handles are owned exclusively by this value (the database is thread-safe, see
// `Database`) and LevelDB's objects may be used from any thread, one at a time; `Store` takes
// `&mut self` for every call.
unsafe impl Send for LevelDbStore {}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path) -> LevelDbStore {
        let settings = StoreSettings {
            write_buffer_size: 1 << 20,
            block_cache: 1 << 20,
            ..StoreSettings::default()
        };
        LevelDbStore::open(dir, 3, &settings).unwrap()
    }

    #[test]
    fn merge_is_emulated_with_flinks_delimiter() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        s.merge(0, b"k", b"abc").unwrap();
        s.merge(0, b"k", b"de").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), Some(6));
        assert_eq!(s.get(1, b"k").unwrap(), None);
        s.delete(0, b"k").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), None);
        assert!(matches!(
            s.get(3, b"k"),
            Err(StoreError::UnknownState { .. })
        ));
    }

    #[test]
    fn iterators_stay_within_their_state_and_batches_apply_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        s.put(2, b"a", b"x").unwrap(); // a later state: the iterator of state 1 must stop before it
        s.batch_put(1, b"b", b"22").unwrap();
        s.batch_put(1, b"a", b"1").unwrap();
        assert_eq!(s.seek(1, b"").unwrap(), None);
        s.batch_commit().unwrap();
        assert_eq!(s.seek(1, b"").unwrap(), Some(1));
        assert_eq!(s.next(1).unwrap(), Some(2));
        assert_eq!(s.next(1).unwrap(), None);
        assert_eq!(s.next(1).unwrap(), None);
    }

    #[test]
    fn range_delete_is_emulated_by_a_scan_and_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        super::super::contract::range_ops_cover_start_up_to_end(&mut s);
        assert_eq!(
            s.emulated(),
            &[
                Op::Merge,
                Op::RangeDelete,
                Op::Drop,
                Op::Flush,
                Op::Checkpoint
            ]
        );
    }

    #[test]
    fn a_drop_deletes_its_prefix_only_even_the_last_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let settings = StoreSettings::default();
        let mut s = LevelDbStore::open(dir.path(), 2, &settings).unwrap();
        super::super::contract::a_drop_empties_its_state_and_nothing_else(&mut s);
        super::super::contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(&mut s);
        // the last of the 65,536 prefixes has no next prefix to stop at; the one before it
        // keeps its keys
        let other = tempfile::tempdir().unwrap();
        let shared = SharedLevelDb::open(other.path(), &[65_534, 2], &settings).unwrap();
        let mut last = shared.attach(1).unwrap();
        last.put(0, b"k", b"v").unwrap();
        last.put(1, b"k", b"vv").unwrap();
        last.drop_state(1).unwrap();
        assert_eq!(last.get(1, b"k").unwrap(), None);
        assert_eq!(last.get(0, b"k").unwrap(), Some(1));
        last.drop_state(0).unwrap();
        assert_eq!(last.seek(0, b"").unwrap(), None);
    }

    #[test]
    fn a_shared_database_has_room_for_65536_states_in_all() {
        let dir = tempfile::tempdir().unwrap();
        let settings = StoreSettings::default();
        let error = SharedLevelDb::open(dir.path(), &[40_000, 30_000], &settings)
            .err()
            .expect("70,000 states do not fit two-byte prefixes");
        assert!(error.to_string().contains("65,536"), "{error}");
        let shared = SharedLevelDb::open(dir.path(), &[40_000, 25_536], &settings).unwrap();
        let mut last = shared.attach(1).unwrap();
        last.put(25_535, b"k", b"v").unwrap();
        assert_eq!(last.get(25_535, b"k").unwrap(), Some(1));
        assert!(shared.attach(2).is_err());
    }
}
