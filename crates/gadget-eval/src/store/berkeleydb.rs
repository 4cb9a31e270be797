//! BerkeleyDB 5.3 (Debian's `libdb5.3-dev`) through a small C shim of our own
//! (`csrc/bdb_shim.c`; the `libdb` crate lacks delete and seek): one environment with the
//! paper's 256 MB cache, one database per state, B-tree or hash access method, no
//! transactions or locking (one thread per handle). Operator instances sharing one
//! environment ([`SharedBerkeleyDb`]) each get databases of their own and share its cache.
//!
//! - merge: get + append `,` + put (BerkeleyDB has no merge operator);
//! - write batches: buffered and applied one by one at commit (no transactions, so not
//!   atomic): `batch_commit` is reported as emulated;
//! - seek/next: a B-tree cursor (`DB_SET_RANGE`, `DB_NEXT`); a hash database has no key
//!   order, so there seek and next scan the whole database for the next key in order, and
//!   are reported as emulated;
//! - range query: a cursor from `DB_SET_RANGE` to the end bound (a hash database scans every
//!   key: emulated); range delete: the same walk deleting through the cursor (emulated, as
//!   BerkeleyDB has no range delete);
//! - drop: `DB->truncate` of the state's database (native).

use super::batch::PendingBatch;
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gadget::access::{Op, StateId};

use super::{empty_range, Store, StoreError, MERGE_DELIMITER};

extern "C" {
    fn db_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) -> *const c_char;
}

/// The BerkeleyDB library this process runs, with its version: `Berkeley DB 5.3.28:
/// (September  9, 2013) (libdb-5.3.so)`.
pub(crate) fn library() -> String {
    // SAFETY: db_version returns a pointer to a static string and accepts null out-pointers
    let none = std::ptr::null_mut();
    let version = unsafe { CStr::from_ptr(db_version(none, none, none)) };
    format!(
        "{} ({})",
        version.to_string_lossy(),
        gadget_results::host::loaded_libraries("libdb").join(", ")
    )
}

/// BerkeleyDB with B-tree databases: its cache is the paper's, not a setting.
pub(crate) const BTREE_SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "berkeleydb",
    about: "BerkeleyDB B-trees",
    reads: &[],
    applied: |s, applied| super::spec::set(applied, "cache_bytes", s.bdb_cache),
    library: |_| library(),
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        open_shared(dir, instances, settings, AccessMethod::BTree)
    }),
    refuses: crate::store::spec::refuses_none,
};

/// BerkeleyDB with hash databases.
pub(crate) const HASH_SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "berkeleydb-hash",
    about: "BerkeleyDB hash tables",
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        open_shared(dir, instances, settings, AccessMethod::Hash)
    }),
    ..BTREE_SPEC
};

/// One environment under `dir` for `instances` (each instance's states), its databases of
/// `method`, with the settings' cache.
fn open_shared(
    dir: &Path,
    instances: &[Vec<String>],
    settings: &super::StoreSettings,
    method: AccessMethod,
) -> Result<Arc<dyn super::SharedStore>, StoreError> {
    let counts = super::spec::state_counts(instances);
    let cache = settings.bdb_cache as u64;
    Ok(Arc::new(SharedBerkeleyDb::open(
        dir, &counts, method, cache,
    )?))
}

/// The BerkeleyDB cache of the paper's setup.
pub const CACHE_BYTES: u64 = 256 << 20;

extern "C" {
    fn gbdb_env_open(
        home: *const c_char,
        cache_bytes: c_ulonglong,
        err: *mut c_char,
        errlen: c_int,
    ) -> *mut c_void;
    fn gbdb_env_close(env: *mut c_void);
    fn gbdb_attach(
        env: *mut c_void,
        first_file: c_int,
        states: c_int,
        hash: c_int,
        err: *mut c_char,
        errlen: c_int,
    ) -> *mut c_void;
    fn gbdb_close(h: *mut c_void);
    fn gbdb_get(
        h: *mut c_void,
        state: c_int,
        k: *const c_void,
        klen: c_uint,
        v: *mut *const c_void,
        vlen: *mut c_uint,
    ) -> c_int;
    fn gbdb_put(
        h: *mut c_void,
        state: c_int,
        k: *const c_void,
        klen: c_uint,
        v: *const c_void,
        vlen: c_uint,
    ) -> c_int;
    fn gbdb_del(h: *mut c_void, state: c_int, k: *const c_void, klen: c_uint) -> c_int;
    fn gbdb_seek(
        h: *mut c_void,
        state: c_int,
        k: *const c_void,
        klen: c_uint,
        vlen: *mut c_uint,
    ) -> c_int;
    fn gbdb_next(h: *mut c_void, state: c_int, vlen: *mut c_uint) -> c_int;
    fn gbdb_range(
        h: *mut c_void,
        state: c_int,
        start: *const c_void,
        slen: c_uint,
        end: *const c_void,
        elen: c_uint,
        del: c_int,
        count: *mut c_ulonglong,
    ) -> c_int;
    fn gbdb_truncate(h: *mut c_void, state: c_int, count: *mut c_ulonglong) -> c_int;
    fn gbdb_strerror(ret: c_int) -> *const c_char;
}

/// The access method of every state's database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessMethod {
    /// `DB_BTREE`: ordered keys.
    BTree,
    /// `DB_HASH`: no key order.
    Hash,
}

/// A handle on a BerkeleyDB environment with a database per state.
pub struct BerkeleyDbStore {
    handle: *mut c_void,
    /// Closed after `handle` (fields drop after `Drop::drop` runs).
    _environment: Arc<Environment>,
    method: AccessMethod,
    states: usize,
    batch: PendingBatch,
    value: Vec<u8>,
}

fn message(ret: c_int) -> String {
    // SAFETY: db_strerror returns a static string for any code.
    unsafe {
        CStr::from_ptr(gbdb_strerror(ret))
            .to_string_lossy()
            .into_owned()
    }
}

fn request_error(op: Op, ret: c_int) -> StoreError {
    StoreError::Request {
        store: "berkeleydb",
        op,
        message: message(ret),
    }
}

/// Lengths passed to BerkeleyDB are 32-bit.
fn len32(op: Op, n: usize) -> Result<c_uint, StoreError> {
    c_uint::try_from(n).map_err(|_| StoreError::Request {
        store: "berkeleydb",
        op,
        message: format!("{n} bytes is more than BerkeleyDB takes in one key or value"),
    })
}

/// An open BerkeleyDB environment (its cache), closed when the last handle on it is dropped.
struct Environment(*mut c_void);

impl Drop for Environment {
    fn drop(&mut self) {
        // SAFETY: the environment came from gbdb_env_open, is closed exactly once, and every
        // handle on it is closed first (each holds an `Arc` to this).
        unsafe { gbdb_env_close(self.0) };
    }
}

// SAFETY: the environment is opened free-threaded (DB_THREAD): handles on several threads may
// use it at once.
unsafe impl Send for Environment {}
// SAFETY: as above.
unsafe impl Sync for Environment {}

/// Reads the shim's NUL-terminated error message.
fn shim_error(err: &[c_char]) -> String {
    // SAFETY: the shim wrote a NUL-terminated message into `err` (zeroed, so terminated).
    unsafe { CStr::from_ptr(err.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// One BerkeleyDB environment that several operator instances share (the paper's §6.4), each
/// through its own [`BerkeleyDbStore`] over databases of its own: they share one cache.
pub struct SharedBerkeleyDb {
    environment: Arc<Environment>,
    method: AccessMethod,
    /// Per instance: the number of its first database file and its number of states.
    files: Vec<(usize, usize)>,
    path: PathBuf,
}

impl SharedBerkeleyDb {
    /// Creates (or opens) an environment under `dir` for several operator instances
    /// (`instances[i]` is instance `i`'s number of states).
    pub fn open(
        dir: &Path,
        instances: &[usize],
        method: AccessMethod,
        cache_bytes: u64,
    ) -> Result<Self, StoreError> {
        let home =
            CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| StoreError::Open {
                store: "berkeleydb",
                path: dir.to_path_buf(),
                message: "the path contains a NUL byte".into(),
            })?;
        let mut err = vec![0 as c_char; 512];
        // SAFETY: `home` and `err` are live for the call; the environment is owned below.
        let env = unsafe {
            gbdb_env_open(
                home.as_ptr(),
                cache_bytes,
                err.as_mut_ptr(),
                err.len() as c_int,
            )
        };
        if env.is_null() {
            return Err(StoreError::Open {
                store: "berkeleydb",
                path: dir.to_path_buf(),
                message: shim_error(&err),
            });
        }
        let mut files = Vec::with_capacity(instances.len());
        let mut next = 0;
        for &states in instances {
            files.push((next, states));
            next += states;
        }
        Ok(SharedBerkeleyDb {
            environment: Arc::new(Environment(env)),
            method,
            files,
            path: dir.to_path_buf(),
        })
    }

    /// The store of instance `instance`: its own databases and cursors.
    pub fn attach(&self, instance: usize) -> Result<BerkeleyDbStore, StoreError> {
        let (first_file, states) =
            super::instance_part("berkeleydb", &self.path, &self.files, instance)?;
        let open_error = |message: String| StoreError::Open {
            store: "berkeleydb",
            path: self.path.clone(),
            message,
        };
        let to_int = |n: usize| {
            c_int::try_from(n).map_err(|_| open_error(format!("{n} databases are too many")))
        };
        let (first, count) = (to_int(first_file)?, to_int(first_file + states)?);
        let mut err = vec![0 as c_char; 512];
        // SAFETY: the environment is live (held by `self`); `err` is live for the call; the
        // handle is owned by the store.
        let handle = unsafe {
            gbdb_attach(
                self.environment.0,
                first,
                count - first,
                (self.method == AccessMethod::Hash) as c_int,
                err.as_mut_ptr(),
                err.len() as c_int,
            )
        };
        if handle.is_null() {
            return Err(open_error(shim_error(&err)));
        }
        Ok(BerkeleyDbStore {
            handle,
            _environment: Arc::clone(&self.environment),
            method: self.method,
            states,
            batch: PendingBatch::default(),
            value: Vec::new(),
        })
    }
}

impl super::SharedStore for SharedBerkeleyDb {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedBerkeleyDb::attach(self, instance)?))
    }
}

impl BerkeleyDbStore {
    /// Creates (or opens) an environment under `dir` with a database per state.
    pub fn open(
        dir: &Path,
        states: usize,
        method: AccessMethod,
        cache_bytes: u64,
    ) -> Result<Self, StoreError> {
        SharedBerkeleyDb::open(dir, &[states], method, cache_bytes)?.attach(0)
    }

    fn check(&self, state: StateId) -> Result<(), StoreError> {
        if (state as usize) < self.states {
            Ok(())
        } else {
            Err(StoreError::UnknownState {
                state,
                states: self.states,
            })
        }
    }

    /// Reads `key` of `state` into `self.value`; false when absent.
    fn read(&mut self, op: Op, state: StateId, key: &[u8]) -> Result<bool, StoreError> {
        let mut v: *const c_void = std::ptr::null();
        let mut vlen: c_uint = 0;
        // SAFETY: the handle is live; the value pointer refers to the shim's buffer, copied
        // before the next call.
        let ret = unsafe {
            gbdb_get(
                self.handle,
                state as c_int,
                key.as_ptr().cast(),
                len32(op, key.len())?,
                &mut v,
                &mut vlen,
            )
        };
        match ret {
            0 => Ok(false),
            1 => {
                self.value.clear();
                if vlen > 0 {
                    // SAFETY: the shim returned `vlen` readable bytes at `v`.
                    self.value.extend_from_slice(unsafe {
                        std::slice::from_raw_parts(v.cast::<u8>(), vlen as usize)
                    });
                }
                Ok(true)
            }
            e => Err(request_error(op, e)),
        }
    }

    fn write(
        &mut self,
        op: Op,
        state: StateId,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        let klen = len32(op, key.len())?;
        // SAFETY: the handle is live; pointers and lengths come from live slices.
        let ret = unsafe {
            match value {
                Some(v) => gbdb_put(
                    self.handle,
                    state as c_int,
                    key.as_ptr().cast(),
                    klen,
                    v.as_ptr().cast(),
                    len32(op, v.len())?,
                ),
                None => gbdb_del(self.handle, state as c_int, key.as_ptr().cast(), klen),
            }
        };
        if ret == 0 {
            Ok(())
        } else {
            Err(request_error(op, ret))
        }
    }

    /// Walks `[start, end)` of `state`, deleting what it passes when `delete` is set; how
    /// many entries it passed.
    fn range(
        &mut self,
        op: Op,
        state: StateId,
        start: &[u8],
        end: &[u8],
        delete: bool,
    ) -> Result<usize, StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let mut count = 0;
        // SAFETY: the handle is live; both bounds are live slices for the call.
        let ret = unsafe {
            gbdb_range(
                self.handle,
                state as c_int,
                start.as_ptr().cast(),
                len32(op, start.len())?,
                end.as_ptr().cast(),
                len32(op, end.len())?,
                c_int::from(delete),
                &mut count,
            )
        };
        match ret {
            0 => Ok(count as usize),
            e => Err(request_error(op, e)),
        }
    }

    fn found(op: Op, ret: c_int, vlen: c_uint) -> Result<Option<usize>, StoreError> {
        match ret {
            0 => Ok(None),
            1 => Ok(Some(vlen as usize)),
            e => Err(request_error(op, e)),
        }
    }
}

impl Store for BerkeleyDbStore {
    fn name(&self) -> &'static str {
        match self.method {
            AccessMethod::BTree => "berkeleydb",
            AccessMethod::Hash => "berkeleydb-hash",
        }
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        Ok(self.read(Op::Get, state, key)?.then_some(self.value.len()))
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.write(Op::Put, state, key, Some(value))
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        if self.read(Op::Merge, state, key)? {
            self.value.push(MERGE_DELIMITER);
        } else {
            self.value.clear();
        }
        self.value.extend_from_slice(value);
        let merged = std::mem::take(&mut self.value);
        let r = self.write(Op::Merge, state, key, Some(&merged));
        self.value = merged;
        r
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.write(Op::Delete, state, key, None)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        let mut vlen = 0;
        // SAFETY: the handle is live; the key slice is live for the call.
        let ret = unsafe {
            gbdb_seek(
                self.handle,
                state as c_int,
                key.as_ptr().cast(),
                len32(Op::Seek, key.len())?,
                &mut vlen,
            )
        };
        Self::found(Op::Seek, ret, vlen)
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        let mut vlen = 0;
        // SAFETY: the handle is live.
        let ret = unsafe { gbdb_next(self.handle, state as c_int, &mut vlen) };
        Self::found(Op::Next, ret, vlen)
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
        PendingBatch::commit_into(
            self,
            |s| &mut s.batch,
            |s, w| s.write(Op::BatchCommit, w.state, w.key, w.value),
        )
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        self.range(Op::RangeQuery, state, start, end, false)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.range(Op::RangeDelete, state, start, end, true)
            .map(|_| ())
    }

    /// Empties the state's database with BerkeleyDB's `DB->truncate`, its iterator closed
    /// first.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.check(state)?;
        let mut count = 0;
        // SAFETY: the handle is live; the state is one of its databases.
        match unsafe { gbdb_truncate(self.handle, state as c_int, &mut count) } {
            0 => Ok(()),
            e => Err(request_error(Op::Drop, e)),
        }
    }

    fn emulated(&self) -> &'static [Op] {
        match self.method {
            AccessMethod::BTree => &[
                Op::Merge,
                Op::BatchCommit,
                Op::RangeDelete,
                Op::Flush,
                Op::Checkpoint,
            ],
            AccessMethod::Hash => &[
                Op::Merge,
                Op::Seek,
                Op::Next,
                Op::BatchCommit,
                Op::RangeDelete,
                Op::RangeQuery,
                Op::Flush,
                Op::Checkpoint,
            ],
        }
    }
}

impl Drop for BerkeleyDbStore {
    fn drop(&mut self) {
        // SAFETY: the handle came from gbdb_attach and is closed exactly once, before its
        // environment (held by `_environment`, dropped after this).
        unsafe { gbdb_close(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_access_methods_walk_key_ranges() {
        for method in [AccessMethod::BTree, AccessMethod::Hash] {
            let dir = tempfile::tempdir().unwrap();
            let mut s = BerkeleyDbStore::open(dir.path(), 2, method, 8 << 20).unwrap();
            super::super::contract::range_ops_cover_start_up_to_end(&mut s);
            assert!(s.emulated().contains(&Op::RangeDelete));
        }
    }

    #[test]
    fn both_access_methods_merge_iterate_in_order_and_batch() {
        for method in [AccessMethod::BTree, AccessMethod::Hash] {
            let dir = tempfile::tempdir().unwrap();
            let mut s = BerkeleyDbStore::open(dir.path(), 2, method, 8 << 20).unwrap();
            s.merge(0, b"k", b"abc").unwrap();
            s.merge(0, b"k", b"de").unwrap();
            assert_eq!(s.get(0, b"k").unwrap(), Some(6));
            assert_eq!(s.get(1, b"k").unwrap(), None);
            s.delete(0, b"k").unwrap();
            s.delete(0, b"k").unwrap();
            assert_eq!(s.get(0, b"k").unwrap(), None);
            s.batch_put(1, b"b", b"22").unwrap();
            s.batch_put(1, b"a", b"1").unwrap();
            s.batch_put(1, b"d", b"4444").unwrap();
            assert_eq!(s.seek(1, b"").unwrap(), None, "{method:?}");
            s.batch_commit().unwrap();
            assert_eq!(s.seek(1, b"b").unwrap(), Some(2), "{method:?}");
            assert_eq!(s.next(1).unwrap(), Some(4), "{method:?}");
            assert_eq!(s.next(1).unwrap(), None, "{method:?}");
            assert_eq!(s.next(1).unwrap(), None, "{method:?}");
            assert_eq!(s.seek(1, b"").unwrap(), Some(1), "{method:?}");
            assert!(matches!(
                s.get(2, b"k"),
                Err(StoreError::UnknownState { .. })
            ));
        }
    }

    #[test]
    fn both_access_methods_truncate_a_dropped_state_only() {
        for method in [AccessMethod::BTree, AccessMethod::Hash] {
            let dir = tempfile::tempdir().unwrap();
            let mut s = BerkeleyDbStore::open(dir.path(), 2, method, 8 << 20).unwrap();
            super::super::contract::a_drop_empties_its_state_and_nothing_else(&mut s);
            super::super::contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(&mut s);
            assert!(!s.emulated().contains(&Op::Drop), "{method:?}");
        }
    }

    #[test]
    fn an_unusable_directory_is_an_error_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let Err(e) = BerkeleyDbStore::open(&file, 1, AccessMethod::BTree, 1 << 20) else {
            panic!("opened an environment in a file");
        };
        assert!(e.to_string().contains(file.to_str().unwrap()), "{e}");
    }
}
