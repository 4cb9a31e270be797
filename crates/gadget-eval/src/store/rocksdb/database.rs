//! The RocksDB database under the stores: one database, opened once on the library the settings
//! name, with a column family per state of every operator instance ([`SharedRocksDb`]), each
//! instance's [`RocksDbStore`] attached to its own families.

use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::ptr::null_mut;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::api::{Api, Cache, Db, Family, Options, TableOptions, PERF_ENABLE_COUNT};
use super::library::{self, Library};
use super::options::SharedMemory;
use super::rocksjava::{self, RocksJava, WriteBufferManager};
use super::{families, options, RocksDbStore};
use crate::store::rocksdb_lib::RocksDbLib;
use crate::store::{Store, StoreError, StoreSettings};

/// An open database with its column families; closed when the last handle lets go of it.
pub(super) struct Database {
    /// The store's name (`rocksdb`, `lethe`), as its errors name it.
    pub(super) store: &'static str,
    pub(super) api: &'static Api,
    /// Null until opened.
    pub(super) db: *mut Db,
    /// The column families' handles and who holds them; a drop replaces a handle.
    pub(super) families: Mutex<Families>,
    /// Every column family's name, `default` first, to create it again after a drop.
    pub(super) names: Vec<CString>,
    /// The database's options and each column family's (copies of one another), also those
    /// a dropped column family is created again with.
    pub(super) options: Vec<*mut Options>,
    pub(super) table: *mut TableOptions,
    pub(super) cache: *mut Cache,
    /// The write buffer manager charging memtables to `cache` (Flink's); released after the
    /// database closes, as fields drop after [`Drop::drop`].
    pub(super) write_buffer_manager: Option<WriteBufferManager>,
}

/// The column families' handles, and how many stores hold each instance's copies of them.
pub(super) struct Families {
    /// Every column family's handle, `default` first; null for one whose drop could not
    /// create it again.
    pub(super) handles: Vec<*mut Family>,
    /// Per instance, its stores attached now: a drop replaces a handle, which only the
    /// instance's one store may do (another would keep the destroyed one).
    pub(super) attached: Vec<usize>,
}

impl Database {
    /// The handles, also after a thread panicked holding them (they are only replaced whole).
    pub(super) fn families(&self) -> MutexGuard<'_, Families> {
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
    /// The block cache and write buffer manager made as Flink makes them (`--rocksdb-options
    /// flink`), in place of a plain LRU cache; `None` for that plain cache.
    pub(crate) memory: Option<SharedMemory>,
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
            memory: options::shared_memory(settings),
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
        let java = match flavour.memory {
            Some(memory) => {
                let java = RocksJava::of(library).ok_or_else(|| {
                    open_error(rocksjava::not_rocksjava(settings, &library.describe()))
                })?;
                Some((java, memory))
            }
            None => None,
        };
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
            let cache = match &java {
                Some((java, memory)) => java.lru_cache(memory.cache, memory.high_pri_pool_ratio),
                None => (api.cache_create_lru)(settings.block_cache),
            };
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
                write_buffer_manager: None,
            }
        };
        // SAFETY: the table options are live, owned by `database`, as are the options made.
        database.options = unsafe {
            options::column_families(api, flavour, settings, database.table, names.len())
        }
        .map_err(open_error)?;
        let db_options = database.options[0];
        if let Some((java, memory)) = &java {
            // SAFETY: the cache and the database options are live, owned by `database`.
            database.write_buffer_manager = Some(unsafe {
                java.write_buffer_manager(memory.write_buffer_manager, database.cache, db_options)
            });
        }
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
        let own =
            crate::store::instance_part(self.db.store, &self.path, &self.instances, instance)?;
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

impl crate::store::SharedStore for SharedRocksDb {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedRocksDb::attach(self, instance)?))
    }
}
