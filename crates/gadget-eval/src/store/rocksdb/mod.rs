//! RocksDB, set up as Flink's RocksDB state backend sets it up: a column family per state, a
//! string-append merge operator with `,` as delimiter, the write-ahead log off; and the paper's
//! sizes by default (two 128 MB write buffers, a 64 MB block cache), all configurable through
//! [`StoreSettings`].
//!
//! RocksDB is not linked into Gadget: the library [`StoreSettings::rocksdb_lib`] names is
//! loaded at run time and driven through RocksDB's C API ([`library`]). By default that is the
//! release build of frocksdb 6.20.3 that Flink 1.x ships; `--rocksdb-lib` compares it with
//! Flink 2.x's RocksDB and ForSt, current RocksDB and the system's library in one binary.
//!
//! A dropped state ([`Store::drop_state`]) is RocksDB's own drop: its column family is
//! dropped and created again under its name with its options, as Kafka Streams deletes a
//! segment's whole RocksDB instance rather than its keys.
//!
//! One concept, the RocksDB store over the C API: the database and its column families in
//! `database.rs`, each request in `requests.rs`, the options in `options.rs`, and the
//! library loading in `library.rs`.

mod api;
mod database;
mod families;
pub mod library;
mod merge;
mod options;
mod rep;
mod requests;
mod rocksjava;

use std::ffi::c_char;
use std::path::{Path, PathBuf};
use std::ptr::null_mut;
use std::sync::Arc;

use gadget::access::{Op, StateId};

use self::api::{
    Api, Family, FlushOptions, Iterator, PairWrite, PerfContext, ReadOptions, WriteBatch,
    WriteOptions, HELD, TOMBSTONES_IN_FILES,
};
use self::library::Library;
use super::rocksdb_lib::RocksDbLib;
use super::{StoreError, StoreSettings};
use database::Database;
pub(crate) use database::Flavour;
pub use database::SharedRocksDb;

/// RocksDB set up as Flink sets it up: the library it loads (with its version and
/// compression), write buffers, block cache, write-ahead log and counters.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "rocksdb",
    about: "embedded, as Flink uses it; the default",
    reads: &[
        "rocksdb_lib",
        "write_buffer_mb",
        "write_buffers",
        "block_cache_mb",
        "rocksdb_options",
        "wal",
        "store_counters",
    ],
    applied: |s, applied| {
        applied_on(&s.rocksdb_lib, s, applied);
        if !s.rocksdb_options.is_empty() {
            let options = options::expanded(&s.rocksdb_options, s.block_cache);
            super::spec::set(applied, "rocksdb_options", options);
        }
        if let Some(memory) = options::shared_memory(s) {
            // Flink's shared cache, sized from the whole budget, replaces the block cache
            // `applied_on` recorded from `block_cache_mb`
            super::spec::set(applied, "block_cache_bytes", memory.cache);
            let ratio = memory.high_pri_pool_ratio;
            super::spec::set(applied, "block_cache_high_pri_pool_ratio", ratio);
            let charged = memory.write_buffer_manager;
            super::spec::set(applied, "write_buffer_manager_bytes", charged);
        }
    },
    library: |s| {
        library::loaded(&s.rocksdb_lib).map_or_else(
            || format!("{}: not loaded", s.rocksdb_lib.name()),
            |l| l.describe(),
        )
    },
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        Ok(Arc::new(SharedRocksDb::open(dir, instances, settings)?))
    }),
    refuses: rocksjava::refusal,
};

/// What a store on RocksDB's C API applied of the settings, as results show it: its library
/// (with version and compression once loaded), buffers, cache, write-ahead log, merge operator
/// and counters.
pub(crate) fn applied_on(
    choice: &RocksDbLib,
    s: &StoreSettings,
    applied: &mut std::collections::BTreeMap<String, String>,
) {
    use super::spec::set;
    set(applied, "library", choice.name());
    if let Some(library) = library::loaded(choice) {
        set(applied, "rocksdb_version", library.version());
        set(applied, "compression", library.compression());
    }
    super::spec::buffers_and_cache(s, applied, true);
    set(applied, "wal", s.wal);
    set(
        applied,
        "merge_operator",
        "string append with ',' (Flink's list state)",
    );
    set(applied, "counters", s.counters);
}

/// A RocksDB database with one column family per state.
pub struct RocksDbStore {
    db: Arc<Database>,
    api: &'static Api,
    library: &'static Library,
    /// The operator instance whose column families these are.
    instance: usize,
    /// Each state's column family, as an index into the database's.
    own: Vec<usize>,
    /// Each state's column family handle; null once a drop could not create it again.
    families: Vec<*mut Family>,
    /// Each state's open iterator; null when none is open.
    iterators: Vec<*mut Iterator>,
    batch: *mut WriteBatch,
    write_options: *mut WriteOptions,
    /// Reused for every point read and seek.
    read_options: *mut ReadOptions,
    /// Reused for range queries, whose upper bound it is given for each.
    range_options: *mut ReadOptions,
    flush_options: *mut FlushOptions,
    /// The attaching thread's perf context, when counting (else null).
    perf: *mut PerfContext,
    path: PathBuf,
}

fn request_error(store: &'static str, op: Op, message: String) -> StoreError {
    StoreError::Request { store, op, message }
}

impl Drop for RocksDbStore {
    fn drop(&mut self) {
        let api = self.api;
        // SAFETY: each object was made by this store and is released once, before the
        // database (held through `self.db`) can close.
        unsafe {
            for &it in &self.iterators {
                if !it.is_null() {
                    (api.iter_destroy)(it);
                }
            }
            (api.writebatch_destroy)(self.batch);
            (api.writeoptions_destroy)(self.write_options);
            (api.readoptions_destroy)(self.read_options);
            (api.readoptions_destroy)(self.range_options);
            (api.flushoptions_destroy)(self.flush_options);
            if !self.perf.is_null() {
                (api.perfcontext_destroy)(self.perf);
            }
        }
        // the last checkpoint taken, if any (a copy made of hard links: cheap to leave, but
        // not the store's)
        let _ = std::fs::remove_dir_all(self.checkpoint_dir());
        self.db.families().attached[self.instance] -= 1;
    }
}

impl RocksDbStore {
    /// Creates (or opens) a database under `dir` with a column family per state.
    pub fn open(
        dir: &Path,
        states: &[String],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        SharedRocksDb::open(dir, &[states.to_vec()], settings)?.attach(0)
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The library the store runs on.
    pub fn library(&self) -> &'static Library {
        self.library
    }

    /// The column family of `state`.
    /// Where this store's checkpoints go: beside the database, one per operator instance.
    fn checkpoint_dir(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".checkpoint-{}", self.instance));
        PathBuf::from(name)
    }

    fn family(&self, state: StateId) -> Result<*mut Family, StoreError> {
        let family =
            self.families
                .get(state as usize)
                .copied()
                .ok_or(StoreError::UnknownState {
                    state,
                    states: self.families.len(),
                })?;
        if family.is_null() {
            return Err(request_error(
                self.db.store,
                Op::Drop,
                format!(
                    "state #{state} has no column family since RocksDB failed to create it again \
                     after a drop (see that request's error); run again on a fresh directory"
                ),
            ));
        }
        Ok(family)
    }

    /// The id RocksDB gave `family`, read from a scratch batch holding one put into it
    /// (`rocksdb_column_family_handle_get_id` came after RocksDB 6.20).
    fn family_id(&self, family: *mut Family) -> Result<u32, StoreError> {
        let api = self.api;
        // SAFETY: the scratch batch is made, read while it lives and destroyed here; the
        // family is a live handle of this database.
        let found = unsafe {
            let scratch = (api.writebatch_create)();
            (api.writebatch_put_cf)(
                scratch,
                family,
                b"".as_ptr().cast(),
                0,
                b"".as_ptr().cast(),
                0,
            );
            let mut size = 0;
            let data = (api.writebatch_data)(scratch, &mut size);
            let found = rep::first_family(std::slice::from_raw_parts(data.cast::<u8>(), size));
            (api.writebatch_destroy)(scratch);
            found
        };
        match found {
            Ok(Some(id)) => Ok(id),
            Ok(None) => Err(request_error(
                self.db.store,
                Op::Drop,
                "a write batch holding one put reads back empty".into(),
            )),
            Err(e) => Err(request_error(self.db.store, Op::Drop, e)),
        }
    }

    /// Moves the pending batch's entries of column family `from` to `to` (the ids of a state's
    /// column family before and after a drop), so that its commit writes them into the new
    /// column family rather than fail on the dropped one.
    fn retarget_batch(&mut self, from: u32, to: u32) -> Result<(), StoreError> {
        let api = self.api;
        // SAFETY: the batch's contents are read while it lives and copied before it goes.
        let moved = unsafe {
            let mut size = 0;
            let data = (api.writebatch_data)(self.batch, &mut size);
            rep::retarget(
                std::slice::from_raw_parts(data.cast::<u8>(), size),
                from,
                to,
            )
        };
        let moved = moved.map_err(|e| {
            request_error(
                self.db.store,
                Op::Drop,
                format!(
                    "the pending write batch holds entries of the dropped state that cannot be \
                     moved to its new column family ({e}); its commit will fail"
                ),
            )
        })?;
        // SAFETY: the new batch copies the bytes; the old one is this store's, released once.
        unsafe {
            let batch = (api.writebatch_create_from)(moved.as_ptr().cast(), moved.len());
            (api.writebatch_destroy)(self.batch);
            self.batch = batch;
        }
        Ok(())
    }

    /// Fails with what a call left in `err`.
    /// What this instance's column families hold now ([`api::HELD`]): bytes in live files and
    /// tombstones in memtables and in files, summed over them. Deletes that are still held are
    /// what Lethe's delete persistence bounds.
    fn held(&self) -> Vec<(&'static str, u64)> {
        let api = self.api;
        let live: Vec<*mut Family> = self
            .families
            .iter()
            .copied()
            .filter(|f| !f.is_null())
            .collect();
        let mut held: Vec<(&'static str, u64)> = HELD
            .iter()
            .map(|&(name, properties)| {
                let mut sum = 0u64;
                for &family in &live {
                    for property in properties {
                        let mut value = 0u64;
                        // SAFETY: a live handle of this database; the name is NUL-terminated.
                        let ok = unsafe {
                            (api.property_int_cf)(
                                self.db.db,
                                family,
                                property.as_ptr().cast(),
                                &mut value,
                            )
                        };
                        if ok == 0 {
                            sum += value;
                        }
                    }
                }
                (name, sum)
            })
            .collect();
        let in_files = live
            .iter()
            .map(|&family| {
                // SAFETY: as above; the returned string is the library's, freed through it.
                let text = unsafe {
                    (api.property_value_cf)(
                        self.db.db,
                        family,
                        c"rocksdb.aggregated-table-properties".as_ptr(),
                    )
                };
                if text.is_null() {
                    return 0;
                }
                // SAFETY: a NUL-terminated string the library allocated.
                let deletions =
                    api::deletions(&unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy());
                // SAFETY: allocated by the library, freed once.
                unsafe { (api.free)(text.cast()) };
                deletions
            })
            .sum();
        held.push((TOMBSTONES_IN_FILES, in_files));
        held
    }

    fn checked(&self, op: Op, err: *mut c_char) -> Result<(), StoreError> {
        match self.api.take_error(err) {
            Some(message) => Err(request_error(self.db.store, op, message)),
            None => Ok(()),
        }
    }

    /// The length of the value `it` stands on, `None` when it is past the end (or failed).
    fn value_at(&self, op: Op, it: *mut Iterator) -> Result<Option<usize>, StoreError> {
        let api = self.api;
        // SAFETY: `it` is a live iterator of this store.
        unsafe {
            if (api.iter_valid)(it) != 0 {
                let mut length = 0;
                (api.iter_value)(it, &mut length);
                return Ok(Some(length));
            }
            let mut err = null_mut();
            (api.iter_get_error)(it, &mut err);
            self.checked(op, err)?;
        }
        Ok(None)
    }

    /// A write of two byte strings to `state` (put and merge: key and value; range delete:
    /// start and end) through `call`, with this store's write options.
    fn write_pair(
        &mut self,
        op: Op,
        call: PairWrite,
        state: StateId,
        first: &[u8],
        second: &[u8],
    ) -> Result<(), StoreError> {
        let family = self.family(state)?;
        let mut err = null_mut();
        // SAFETY: both byte strings outlive the call, which copies them.
        unsafe {
            call(
                self.db.db,
                self.write_options,
                family,
                first.as_ptr().cast(),
                first.len(),
                second.as_ptr().cast(),
                second.len(),
                &mut err,
            );
        }
        self.checked(op, err)
    }
}

#[cfg(test)]
mod tests;
