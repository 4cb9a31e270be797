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
//! One concept, the RocksDB store (its options, column families, batches and iterators over
//! the C API); the library loading is in `library.rs`.

mod api;
mod families;
pub mod library;
mod merge;
mod options;
mod rep;

use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::ptr::null_mut;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use gadget::access::{Op, StateId};

use self::api::{
    Api, Cache, Db, Family, FlushOptions, Iterator, Options, PairWrite, PerfContext, ReadOptions,
    TableOptions, WriteBatch, WriteOptions, HELD, PERF_COUNTERS, PERF_ENABLE_COUNT,
    TOMBSTONES_IN_FILES,
};
use self::library::Library;
use super::rocksdb_lib::RocksDbLib;
use super::{empty_range, Store, StoreError, StoreSettings};

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

/// An open database with its column families; closed when the last handle lets go of it.
struct Database {
    /// The store's name (`rocksdb`, `lethe`), as its errors name it.
    store: &'static str,
    api: &'static Api,
    /// Null until opened.
    db: *mut Db,
    /// The column families' handles and who holds them; a drop replaces a handle.
    families: Mutex<Families>,
    /// Every column family's name, `default` first, to create it again after a drop.
    names: Vec<CString>,
    /// The database's options and each column family's (copies of one another), also those
    /// a dropped column family is created again with.
    options: Vec<*mut Options>,
    table: *mut TableOptions,
    cache: *mut Cache,
}

/// The column families' handles, and how many stores hold each instance's copies of them.
struct Families {
    /// Every column family's handle, `default` first; null for one whose drop could not
    /// create it again.
    handles: Vec<*mut Family>,
    /// Per instance, its stores attached now: a drop replaces a handle, which only the
    /// instance's one store may do (another would keep the destroyed one).
    attached: Vec<usize>,
}

impl Database {
    /// The handles, also after a thread panicked holding them (they are only replaced whole).
    fn families(&self) -> MutexGuard<'_, Families> {
        self.families.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

// SAFETY: RocksDB's database and column-family handles are safe to use from several threads
// at once; the options, table options and cache are only touched when opening and closing.
unsafe impl Send for Database {}
// SAFETY: as for Send.
unsafe impl Sync for Database {}

impl Drop for Database {
    fn drop(&mut self) {
        let api = self.api;
        // SAFETY: every pointer was made by this library and is released once, handles before
        // the database they belong to; store handles (and their iterators) are gone already,
        // as they hold this database through an Arc.
        unsafe {
            let families = self
                .families
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            for &family in families.handles.iter().filter(|f| !f.is_null()) {
                (api.column_family_handle_destroy)(family);
            }
            if !self.db.is_null() {
                (api.close)(self.db);
            }
            for &options in &self.options {
                (api.options_destroy)(options);
            }
            (api.block_based_options_destroy)(self.table);
            (api.cache_destroy)(self.cache);
        }
    }
}

/// One RocksDB database that several operator instances share (the paper's §6.4), each
/// through its own [`RocksDbStore`] over its own column families: they compete for one block
/// cache, one set of background compactions and one write path.
pub struct SharedRocksDb {
    db: Arc<Database>,
    library: &'static Library,
    path: PathBuf,
    wal: bool,
    /// Whether attached stores keep RocksDB's perf-context counters.
    counters: bool,
    /// Each instance's column families, as indices into [`Database::families`].
    instances: Vec<Vec<usize>>,
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

/// A store that runs on RocksDB's C API: its name, its library and what it sets beyond the
/// options Flink sets (the rocksdb store itself, and Lethe's fork with its compaction).
pub(crate) struct Flavour<'a> {
    /// The store's name, as its errors and results name it.
    pub(crate) store: &'static str,
    /// The library it runs on.
    pub(crate) library: &'a RocksDbLib,
    /// RocksDB options in RocksDB's options-string form (`compaction_pri=kFADE`), set on every
    /// column family before Flink's; empty for none.
    pub(crate) options: &'a str,
    /// Options applied after all others (`--rocksdb-options`, as [`options::expanded`] spells
    /// an option set out); empty for none.
    pub(crate) last: String,
    /// Run once the library is loaded and before the database opens (Lethe's process-wide
    /// tuning); an error message stops the opening.
    pub(crate) prepare: fn(&'static Library, &StoreSettings) -> Result<(), String>,
}

impl SharedRocksDb {
    /// Creates (or opens) a database under `dir` with a column family per state of every
    /// instance (`instances[i]` lists instance `i`'s states), on the library
    /// `settings.rocksdb_lib` names.
    pub fn open(
        dir: &Path,
        instances: &[Vec<String>],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        let flavour = Flavour {
            store: "rocksdb",
            library: &settings.rocksdb_lib,
            options: "",
            last: options::expanded(&settings.rocksdb_options, settings.block_cache),
            prepare: |_, _| Ok(()),
        };
        Self::open_as(dir, instances, settings, &flavour)
    }

    /// [`SharedRocksDb::open`] for a store built on RocksDB (`flavour`).
    pub(crate) fn open_as(
        dir: &Path,
        instances: &[Vec<String>],
        settings: &StoreSettings,
        flavour: &Flavour<'_>,
    ) -> Result<Self, StoreError> {
        let store = flavour.store;
        let open_error = |message: String| StoreError::Open {
            store,
            path: dir.to_path_buf(),
            message,
        };
        let library = library::load(flavour.library).map_err(|e| open_error(e.to_string()))?;
        (flavour.prepare)(library, settings).map_err(open_error)?;
        if settings.counters && !library.keeps_counters() {
            let e = library::LibraryError::NoCounters {
                library: library.describe(),
            };
            return Err(open_error(e.to_string()));
        }
        let api = &library.api;
        // column-family names must be unique: number them by instance and state
        let mut names = vec!["default".to_string()];
        let mut indices = Vec::with_capacity(instances.len());
        for (i, states) in instances.iter().enumerate() {
            let mut own = Vec::with_capacity(states.len());
            for (s, state) in states.iter().enumerate() {
                own.push(names.len());
                names.push(if instances.len() == 1 {
                    format!("{s}:{state}")
                } else {
                    format!("{i}:{s}:{state}")
                });
            }
            indices.push(own);
        }
        let c_names = names
            .iter()
            .map(|n| CString::new(n.as_bytes()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| open_error(format!("a state's name holds a NUL byte: {e}")))?;
        let c_dir = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|e| open_error(format!("the directory's name holds a NUL byte: {e}")))?;
        // SAFETY: everything made here is owned by `database`, whose Drop releases it (also
        // when opening fails below).
        let mut database = unsafe {
            let cache = (api.cache_create_lru)(settings.block_cache);
            let table = (api.block_based_options_create)();
            (api.block_based_options_set_block_cache)(table, cache);
            Database {
                store,
                api,
                db: null_mut(),
                families: Mutex::new(Families {
                    handles: Vec::new(),
                    attached: vec![0; instances.len()],
                }),
                names: Vec::new(),
                options: Vec::new(),
                table,
                cache,
            }
        };
        // SAFETY: the table options are live, owned by `database`, as are the options made.
        database.options = unsafe {
            options::column_families(api, flavour, settings, database.table, names.len())
        }
        .map_err(open_error)?;
        let db_options = database.options[0];
        // open with the column families the directory holds (none but `default` in a new
        // one), then create the missing ones, looking at the stop flag between calls
        let existing = families::existing(api, db_options, &c_dir);
        let (opened, missing): (Vec<usize>, Vec<usize>) =
            (0..names.len()).partition(|&i| i == 0 || existing.contains(c_names[i].as_bytes()));
        let name_pointers: Vec<*const c_char> =
            opened.iter().map(|&i| c_names[i].as_ptr()).collect();
        let family_options: Vec<*const Options> = opened
            .iter()
            .map(|&i| database.options[i].cast_const())
            .collect();
        let mut handles = vec![null_mut(); opened.len()];
        let mut err = null_mut();
        // SAFETY: names, options and handles are arrays of `opened.len()` entries.
        unsafe {
            (api.options_set_create_if_missing)(db_options, 1);
            database.db = (api.open_column_families)(
                db_options,
                c_dir.as_ptr(),
                opened.len() as i32,
                name_pointers.as_ptr(),
                family_options.as_ptr(),
                handles.as_mut_ptr(),
                &mut err,
            );
        }
        if let Some(message) = api.take_error(err) {
            return Err(open_error(message));
        }
        {
            let mut shared = database.families();
            shared.handles = vec![null_mut(); names.len()];
            for (&i, handle) in opened.iter().zip(handles) {
                shared.handles[i] = handle;
            }
            families::create_missing(
                api,
                database.db,
                &c_names,
                &database.options,
                &missing,
                &mut shared.handles,
                &settings.stop,
            )
            .map_err(|unfinished| match unfinished {
                families::Unfinished::Stopped => StoreError::Interrupted { store },
                families::Unfinished::Failed(message) => open_error(message),
            })?;
        }
        database.names = c_names;
        Ok(SharedRocksDb {
            db: Arc::new(database),
            library,
            path: dir.to_path_buf(),
            wal: settings.wal,
            counters: settings.counters,
            instances: indices,
        })
    }

    /// The library the database runs on.
    pub fn library(&self) -> &'static Library {
        self.library
    }

    /// The store of instance `instance`: its own column families, iterators and write batch.
    pub fn attach(&self, instance: usize) -> Result<RocksDbStore, StoreError> {
        let own = super::instance_part(self.db.store, &self.path, &self.instances, instance)?;
        let api = &self.library.api;
        let families: Vec<*mut Family> = {
            let mut shared = self.db.families();
            shared.attached[instance] += 1;
            own.iter().map(|&i| shared.handles[i]).collect()
        };
        // SAFETY: each object is made here and released by the store's Drop.
        unsafe {
            let write_options = (api.writeoptions_create)();
            (api.writeoptions_disable_WAL)(write_options, i32::from(!self.wal));
            let perf = if self.counters {
                // the perf context is the calling thread's: it counts what this thread asks
                (api.set_perf_level)(PERF_ENABLE_COUNT);
                let perf = (api.perfcontext_create)();
                (api.perfcontext_reset)(perf);
                perf
            } else {
                null_mut()
            };
            Ok(RocksDbStore {
                db: self.db.clone(),
                api,
                library: self.library,
                instance,
                own,
                iterators: vec![null_mut(); families.len()],
                families,
                batch: (api.writebatch_create)(),
                write_options,
                read_options: (api.readoptions_create)(),
                range_options: (api.readoptions_create)(),
                flush_options: (api.flushoptions_create)(),
                perf,
                path: self.path.clone(),
            })
        }
    }
}

impl super::SharedStore for SharedRocksDb {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedRocksDb::attach(self, instance)?))
    }
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

impl Store for RocksDbStore {
    fn name(&self) -> &'static str {
        self.db.store
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        if self.perf.is_null() {
            return Vec::new();
        }
        let mut counters: Vec<(&'static str, u64)> = PERF_COUNTERS
            .iter()
            // SAFETY: the perf context is live; the metric numbers are c.h's enum values.
            .map(|&(name, metric)| {
                (name, unsafe {
                    (self.api.perfcontext_metric)(self.perf, metric)
                })
            })
            .collect();
        counters.extend(self.held());
        counters
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let family = self.family(state)?;
        let api = self.api;
        let mut err = null_mut();
        // SAFETY: the key outlives the call; the pinned value is released at once.
        unsafe {
            let pinned = (api.get_pinned_cf)(
                self.db.db,
                self.read_options,
                family,
                key.as_ptr().cast(),
                key.len(),
                &mut err,
            );
            self.checked(Op::Get, err)?;
            if pinned.is_null() {
                return Ok(None);
            }
            let mut length = 0;
            (api.pinnableslice_value)(pinned, &mut length);
            (api.pinnableslice_destroy)(pinned);
            Ok(Some(length))
        }
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.write_pair(Op::Put, self.api.put_cf, state, key, value)
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.write_pair(Op::Merge, self.api.merge_cf, state, key, value)
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let family = self.family(state)?;
        let mut err = null_mut();
        // SAFETY: the key outlives the call, which copies it.
        unsafe {
            (self.api.delete_cf)(
                self.db.db,
                self.write_options,
                family,
                key.as_ptr().cast(),
                key.len(),
                &mut err,
            );
        }
        self.checked(Op::Delete, err)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let family = self.family(state)?;
        let api = self.api;
        let s = state as usize;
        // SAFETY: Flink opens a new iterator for every seek; the old one is released first.
        let it = unsafe {
            if !self.iterators[s].is_null() {
                (api.iter_destroy)(self.iterators[s]);
            }
            let it = (api.create_iterator_cf)(self.db.db, self.read_options, family);
            (api.iter_seek)(it, key.as_ptr().cast(), key.len());
            it
        };
        self.iterators[s] = it;
        self.value_at(Op::Seek, it)
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.family(state)?;
        let it = self.iterators[state as usize];
        // SAFETY: a non-null entry is a live iterator of this store.
        if it.is_null() || unsafe { (self.api.iter_valid)(it) } == 0 {
            return Ok(None);
        }
        // SAFETY: as above.
        unsafe { (self.api.iter_next)(it) };
        self.value_at(Op::Next, it)
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let family = self.family(state)?;
        // SAFETY: the batch copies key and value.
        unsafe {
            (self.api.writebatch_put_cf)(
                self.batch,
                family,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            );
        }
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let family = self.family(state)?;
        // SAFETY: the batch copies the key.
        unsafe {
            (self.api.writebatch_delete_cf)(self.batch, family, key.as_ptr().cast(), key.len())
        };
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        let mut err = null_mut();
        // SAFETY: the batch is this store's; it is emptied for reuse whether or not it applied.
        unsafe {
            (self.api.write)(self.db.db, self.write_options, self.batch, &mut err);
            (self.api.writebatch_clear)(self.batch);
        }
        self.checked(Op::BatchCommit, err)
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        let family = self.family(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let api = self.api;
        let mut entries = 0;
        let mut err = null_mut();
        // SAFETY: an iterator bounded above, as RocksDB's own range scans are; the options
        // refer to `end` only while the iterator lives, and are reset before `end` goes.
        unsafe {
            (api.readoptions_set_iterate_upper_bound)(
                self.range_options,
                end.as_ptr().cast(),
                end.len(),
            );
            let it = (api.create_iterator_cf)(self.db.db, self.range_options, family);
            (api.iter_seek)(it, start.as_ptr().cast(), start.len());
            while (api.iter_valid)(it) != 0 {
                let mut length = 0;
                std::hint::black_box((api.iter_value)(it, &mut length));
                entries += 1;
                (api.iter_next)(it);
            }
            (api.iter_get_error)(it, &mut err);
            (api.iter_destroy)(it);
            (api.readoptions_set_iterate_upper_bound)(self.range_options, std::ptr::null(), 0);
        }
        self.checked(Op::RangeQuery, err)?;
        Ok(entries)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.family(state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        self.write_pair(Op::RangeDelete, self.api.delete_range_cf, state, start, end)
    }

    /// Drops the state's column family and creates it again under its name with its
    /// options (merge operator, table options, sizes): RocksDB's own drop. The state's
    /// iterator is released first, as it would keep the dropped column family's data alive;
    /// the pending batch's entries of the state are moved to the new column family.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let family = self.family(state)?;
        let (api, s) = (self.api, state as usize);
        let it = std::mem::replace(&mut self.iterators[s], null_mut());
        if !it.is_null() {
            // SAFETY: a live iterator of this store, released once (its slot is null now).
            unsafe { (api.iter_destroy)(it) };
        }
        let db = Arc::clone(&self.db);
        let mut shared = db.families();
        let holders = shared.attached[self.instance];
        if holders > 1 {
            return Err(request_error(
                self.db.store,
                Op::Drop,
                format!(
                    "{holders} stores hold operator instance {}'s column families, and a drop \
                     replaces state #{state}'s under the others; attach each instance once",
                    self.instance
                ),
            ));
        }
        // SAFETY: the batch is this store's.
        let pending = unsafe { (api.writebatch_count)(self.batch) } > 0;
        let old_id = if pending {
            Some(self.family_id(family)?)
        } else {
            None
        };
        let index = self.own[s];
        let mut err = null_mut();
        // SAFETY: a live column family of the open database; no iterator of this store reads
        // it, and no other store holds its handle (checked above, under the lock).
        unsafe { (api.drop_column_family)(db.db, family, &mut err) };
        self.checked(Op::Drop, err)?;
        // SAFETY: the dropped family's handle, released once: both copies are nulled.
        unsafe { (api.column_family_handle_destroy)(family) };
        shared.handles[index] = null_mut();
        self.families[s] = null_mut();
        let name = &db.names[index];
        // SAFETY: the options and name the column family was opened with, owned by the
        // database; RocksDB copies both.
        let created = unsafe {
            (api.create_column_family)(db.db, db.options[index], name.as_ptr(), &mut err)
        };
        if let Some(message) = api.take_error(err) {
            if !created.is_null() {
                // SAFETY: the handle the failed call made, released once.
                unsafe { (api.column_family_handle_destroy)(created) };
            }
            return Err(request_error(
                self.db.store,
                Op::Drop,
                format!(
                    "the column family {} was dropped but not created again: {message}",
                    name.to_string_lossy()
                ),
            ));
        }
        shared.handles[index] = created;
        self.families[s] = created;
        drop(shared);
        if let Some(from) = old_id {
            let to = self.family_id(created)?;
            self.retarget_batch(from, to)?;
        }
        Ok(())
    }

    fn flush_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let family = self.family(state)?;
        let mut err = null_mut();
        // SAFETY: a column family of the open database; flushing leaves iterators valid.
        unsafe { (self.api.flush_cf)(self.db.db, self.flush_options, family, &mut err) };
        self.checked(Op::Flush, err)
    }

    /// A real checkpoint of the database (RocksDB's `Checkpoint::CreateCheckpoint`: its
    /// memtables flushed, then hard links to its files in a new directory), replacing this
    /// store's previous one, as Spark's commit makes one and removes the last.
    fn checkpoint_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.family(state)?;
        let dir = self.checkpoint_dir();
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(request_error(
                    self.db.store,
                    Op::Checkpoint,
                    format!("removing the previous checkpoint {}: {e}", dir.display()),
                ))
            }
        }
        let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| {
            request_error(
                self.db.store,
                Op::Checkpoint,
                format!("the checkpoint path {} holds a NUL byte", dir.display()),
            )
        })?;
        let api = self.api;
        let mut err = null_mut();
        // SAFETY: the open database; the checkpoint object is released before returning.
        let checkpoint = unsafe { (api.checkpoint_object_create)(self.db.db, &mut err) };
        self.checked(Op::Checkpoint, err)?;
        let mut err = null_mut();
        // SAFETY: a live checkpoint object of this database and a NUL-terminated path; a log
        // size of 0 flushes the memtables first, as Spark's flush before it has done.
        unsafe {
            (api.checkpoint_create)(checkpoint, path.as_ptr(), 0, &mut err);
            (api.checkpoint_object_destroy)(checkpoint);
        }
        self.checked(Op::Checkpoint, err)
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        let api = self.api;
        for it in self.iterators.iter_mut() {
            if !it.is_null() {
                // SAFETY: a live iterator of this store, released once.
                unsafe { (api.iter_destroy)(*it) };
                *it = null_mut();
            }
        }
        for &family in self.families.iter().filter(|f| !f.is_null()) {
            let mut err = null_mut();
            // SAFETY: a column family of the open database.
            unsafe { (api.flush_cf)(self.db.db, self.flush_options, family, &mut err) };
            self.checked(Op::BatchCommit, err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
