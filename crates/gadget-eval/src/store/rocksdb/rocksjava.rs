//! Flink's shared memory, made as Flink makes it: the slot's LRU block cache with its
//! high-priority pool, and the write buffer manager that charges every memtable to that cache.
//! Flink makes both through RocksJava (`new LRUCache(capacity, -1, false, ratio)` and
//! `new WriteBufferManager(capacity, cache)` in `RocksDBMemoryControllerUtils`), whose native
//! functions the JNI builds export beside the C API; RocksDB 6.20's C API can make neither (it
//! has no high-priority pool and no write buffer manager). Gadget calls the same native
//! functions. None of them touches its `JNIEnv` or class argument, which are passed null.
//!
//! A handle RocksJava returns is a `std::shared_ptr` allocated on its own, the layout of the C
//! API's `rocksdb_cache_t` (a struct of one `shared_ptr<Cache>`), so the cache goes to the C API
//! as it is and is released by `rocksdb_cache_destroy`.

use std::ffi::c_void;

use super::api::{Cache, Options};
use super::library::Library;
use super::options;
use crate::store::rocksdb_lib::RocksDbLib;
use crate::store::spec::Refusal;
use crate::store::StoreSettings;

/// `newLRUCache(capacity, num_shard_bits, strict_capacity_limit, high_pri_pool_ratio
/// [, low_pri_pool_ratio])`: 6.20 takes one ratio, 8.x and later two; the second is passed in a
/// register the older function does not read.
type NewLruCache = unsafe extern "C" fn(*mut c_void, *mut c_void, i64, i32, u8, f64, f64) -> i64;

/// `newWriteBufferManager(buffer_size, cache [, allow_stall])`: 6.20 without `allow_stall`,
/// which is passed in a register it does not read.
type NewWriteBufferManager = unsafe extern "C" fn(*mut c_void, *mut c_void, i64, i64, u8) -> i64;

/// `DBOptions.setWriteBufferManager(options, manager)`.
type SetWriteBufferManager = unsafe extern "C" fn(*mut c_void, *mut c_void, i64, i64);

/// `WriteBufferManager.disposeInternal(manager)` (`disposeInternalJni` since 9.x).
type Dispose = unsafe extern "C" fn(*mut c_void, *mut c_void, i64);

/// The Java packages RocksJava builds are compiled for: RocksDB's and ForSt's.
const PACKAGES: [&str; 2] = ["Java_org_rocksdb_", "Java_org_forstdb_"];

/// Why `settings` cannot open the store, known before it opens: Flink's shared memory asked of
/// a named library that is no RocksJava build (a library given by its path is known only once
/// loaded, and refused then, by [`not_rocksjava`]'s message).
pub(super) fn refusal(settings: &StoreSettings) -> Option<Refusal> {
    let library = &settings.rocksdb_lib;
    let named = !matches!(library, RocksDbLib::Path(_));
    let cannot = named && library.release().is_none();
    (cannot && options::shared_memory(settings).is_some()).then(|| Refusal {
        setting: "rocksdb_options",
        why: not_rocksjava(settings, &library.name()),
    })
}

/// Why `library` (as messages name it) cannot make the block cache and write buffer manager
/// `settings`' option set asks for, and what to choose instead, in words that fit a flag, a
/// config's line and an experiment's alike.
pub(super) fn not_rocksjava(settings: &StoreSettings, library: &str) -> String {
    let places = gadget::config::store_settings::store_setting("rocksdb_lib")
        .map_or_else(String::new, |s| format!(" ({})", s.places()));
    format!(
        "the RocksDB options `{}` make the block cache and write buffer manager as Flink makes \
         them, through RocksJava's native functions, and the library {library} is no RocksJava \
         build: choose a library that is{places}: {}",
        settings.rocksdb_options,
        RocksDbLib::rocksjava_builds().join(", ")
    )
}

/// RocksJava's native functions Flink's shared memory is made with, from one library.
pub(super) struct RocksJava {
    new_lru_cache: NewLruCache,
    new_write_buffer_manager: NewWriteBufferManager,
    set_write_buffer_manager: SetWriteBufferManager,
    dispose_write_buffer_manager: Dispose,
}

impl RocksJava {
    /// The functions of `library`, or `None` when it is no JNI build (Debian's, Lethe's).
    pub(super) fn of(library: &Library) -> Option<RocksJava> {
        PACKAGES.iter().find_map(|package| {
            let name = |class_method: &str| format!("{package}{class_method}\0").into_bytes();
            // SAFETY: each symbol is RocksJava's native function of that name, whose C
            // signature (RocksJava's `rocksjni/*.cc`) the type states, extra trailing
            // arguments aside (see the types).
            unsafe {
                Some(RocksJava {
                    new_lru_cache: library.function(&name("LRUCache_newLRUCache"))?,
                    new_write_buffer_manager: library
                        .function(&name("WriteBufferManager_newWriteBufferManager"))?,
                    set_write_buffer_manager: library
                        .function(&name("DBOptions_setWriteBufferManager"))?,
                    dispose_write_buffer_manager: library
                        .function(&name("WriteBufferManager_disposeInternal"))
                        .or_else(|| {
                            library.function(&name("WriteBufferManager_disposeInternalJni"))
                        })?,
                })
            }
        })
    }

    /// A new LRU cache of `capacity` bytes, its shards as RocksDB chooses (`-1`), no strict
    /// limit, with a high-priority pool of `high_pri_pool_ratio`; the caller releases it with
    /// `rocksdb_cache_destroy`.
    pub(super) fn lru_cache(&self, capacity: usize, high_pri_pool_ratio: f64) -> *mut Cache {
        let capacity = i64::try_from(capacity).unwrap_or(i64::MAX);
        // SAFETY: the function only reads its scalar arguments and allocates the handle.
        let handle = unsafe {
            (self.new_lru_cache)(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                capacity,
                -1,
                0,
                high_pri_pool_ratio,
                0.0,
            )
        };
        handle as usize as *mut Cache
    }

    /// A write buffer manager of `capacity` bytes charging memtables to `cache`, set on the
    /// database options `options`; it lives until the returned value is dropped.
    ///
    /// # Safety
    /// `cache` must be a live cache and `options` live options of this library.
    pub(super) unsafe fn write_buffer_manager(
        &self,
        capacity: usize,
        cache: *mut Cache,
        options: *mut Options,
    ) -> WriteBufferManager {
        let capacity = i64::try_from(capacity).unwrap_or(i64::MAX);
        let null = std::ptr::null_mut();
        // SAFETY: the caller's pointers are live; the handle is RocksJava's, as the setter
        // takes it, and `rocksdb_options_t` starts with its `Options`, whose first base is the
        // `DBOptions` the setter writes.
        unsafe {
            let handle = (self.new_write_buffer_manager)(null, null, capacity, cache as i64, 0);
            (self.set_write_buffer_manager)(null, null, options as i64, handle);
            WriteBufferManager {
                handle,
                dispose: self.dispose_write_buffer_manager,
            }
        }
    }
}

/// A write buffer manager RocksJava made; released when dropped (the options and database
/// that use it keep their own references).
pub(super) struct WriteBufferManager {
    handle: i64,
    dispose: Dispose,
}

impl Drop for WriteBufferManager {
    fn drop(&mut self) {
        // SAFETY: the handle was made by the same library and is released once.
        unsafe { (self.dispose)(std::ptr::null_mut(), std::ptr::null_mut(), self.handle) }
    }
}
