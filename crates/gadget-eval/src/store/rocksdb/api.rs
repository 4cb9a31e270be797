//! RocksDB's C API (`include/rocksdb/c.h`), the part Gadget calls, resolved by name from a
//! library loaded at run time. Every function here has kept its C signature from RocksDB 6.12
//! (Lethe's) to 10.x, so one table serves every supported library; a library that lacks one is refused
//! with the names of those it lacks. A few later functions are optional: `None` in a library
//! without them (RocksDB 6.20's C API has no `rocksdb_create_column_families`).

use std::ffi::{c_char, c_int, c_uchar, c_void};

/// Declares opaque C types: only ever behind pointers RocksDB hands out.
macro_rules! opaque {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            pub(super) struct $name {
                _private: [u8; 0],
            }
        )*
    };
}

opaque! {
    /// `rocksdb_t`: an open database.
    Db,
    /// `rocksdb_options_t`: database or column-family options.
    Options,
    /// `rocksdb_block_based_table_options_t`.
    TableOptions,
    /// `rocksdb_cache_t`: a block cache.
    Cache,
    /// `rocksdb_column_family_handle_t`.
    Family,
    /// `rocksdb_writeoptions_t`.
    WriteOptions,
    /// `rocksdb_readoptions_t`.
    ReadOptions,
    /// `rocksdb_flushoptions_t`.
    FlushOptions,
    /// `rocksdb_writebatch_t`.
    WriteBatch,
    /// `rocksdb_iterator_t`.
    Iterator,
    /// `rocksdb_pinnableslice_t`: a value read in place.
    Pinned,
    /// `rocksdb_mergeoperator_t`.
    MergeOperator,
    /// `rocksdb_perfcontext_t`: the calling thread's perf context.
    PerfContext,
    /// `rocksdb_checkpoint_t`: makes checkpoints of one database.
    Checkpoint,
}

/// `full_merge` of `rocksdb_mergeoperator_create`.
pub(super) type FullMerge = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    usize,
    *const c_char,
    usize,
    *const *const c_char,
    *const usize,
    c_int,
    *mut c_uchar,
    *mut usize,
) -> *mut c_char;

/// `partial_merge` of `rocksdb_mergeoperator_create`.
pub(super) type PartialMerge = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    usize,
    *const *const c_char,
    *const usize,
    c_int,
    *mut c_uchar,
    *mut usize,
) -> *mut c_char;

/// `delete_value` of `rocksdb_mergeoperator_create`.
pub(super) type DeleteValue = unsafe extern "C" fn(*mut c_void, *const c_char, usize);

/// `name` of `rocksdb_mergeoperator_create`.
pub(super) type Name = unsafe extern "C" fn(*mut c_void) -> *const c_char;

/// `destructor` of `rocksdb_mergeoperator_create`.
pub(super) type Destructor = unsafe extern "C" fn(*mut c_void);

/// `errptr`: where a failing call leaves its message (free it with `free`).
type Err = *mut *mut c_char;

/// `put_cf`, `merge_cf` and `delete_range_cf`: a write of two byte strings to a column family.
pub(super) type PairWrite = unsafe extern "C" fn(
    *mut Db,
    *const WriteOptions,
    *mut Family,
    *const c_char,
    usize,
    *const c_char,
    usize,
    Err,
);

/// Declares [`Api`]: one field per C function `rocksdb_NAME`, and its resolution; the
/// functions after `@optional` are `None` in a library that lacks them.
macro_rules! c_api {
    (
        $($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*
        @optional
        $($oname:ident: fn($($oarg:ty),*) $(-> $oret:ty)?;)*
    ) => {
        /// The C functions, resolved from one library (field `put_cf` is `rocksdb_put_cf`;
        /// `writeoptions_disable_WAL` keeps its C spelling).
        #[allow(non_snake_case)]
        pub(super) struct Api {
            $(
                #[doc = concat!("`rocksdb_", stringify!($name), "`")]
                pub(super) $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,
            )*
            $(
                #[doc = concat!("`rocksdb_", stringify!($oname), "`, if the library has it")]
                pub(super) $oname: Option<unsafe extern "C" fn($($oarg),*) $(-> $oret)?>,
            )*
        }

        impl Api {
            /// Resolves every function from `library`, or names the ones it lacks.
            #[allow(non_snake_case)]
            pub(super) fn resolve(library: &libloading::Library) -> Result<Api, Vec<String>> {
                let mut missing = Vec::new();
                $(
                    let symbol = concat!("rocksdb_", stringify!($name), "\0");
                    // SAFETY: the symbol is RocksDB's C function of this name, whose signature
                    // (c.h, unchanged since RocksDB 6.20) the field's type states.
                    let $name = unsafe {
                        library.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(symbol.as_bytes())
                    }
                    .map(|f| *f)
                    .map_err(|_| missing.push(symbol.trim_end_matches('\0').to_string()))
                    .ok();
                )*
                $(
                    let symbol = concat!("rocksdb_", stringify!($oname), "\0");
                    // SAFETY: as above, for a function the library may lack.
                    let $oname = unsafe {
                        library.get::<unsafe extern "C" fn($($oarg),*) $(-> $oret)?>(symbol.as_bytes())
                    }
                    .map(|f| *f)
                    .ok();
                )*
                match ($($name,)*) {
                    ($(Some($name),)*) => Ok(Api { $($name,)* $($oname,)* }),
                    _ => Err(missing),
                }
            }
        }
    };
}

c_api! {
    free: fn(*mut c_void);
    options_create: fn() -> *mut Options;
    options_destroy: fn(*mut Options);
    options_create_copy: fn(*mut Options) -> *mut Options;
    options_set_create_if_missing: fn(*mut Options, c_uchar);
    options_set_write_buffer_size: fn(*mut Options, usize);
    options_set_max_write_buffer_number: fn(*mut Options, c_int);
    options_set_merge_operator: fn(*mut Options, *mut MergeOperator);
    options_set_block_based_table_factory: fn(*mut Options, *mut TableOptions);
    block_based_options_create: fn() -> *mut TableOptions;
    block_based_options_destroy: fn(*mut TableOptions);
    block_based_options_set_block_cache: fn(*mut TableOptions, *mut Cache);
    cache_create_lru: fn(usize) -> *mut Cache;
    cache_destroy: fn(*mut Cache);
    mergeoperator_create: fn(
        *mut c_void, Destructor, FullMerge, PartialMerge, DeleteValue, Name
    ) -> *mut MergeOperator;
    open: fn(*const Options, *const c_char, Err) -> *mut Db;
    open_column_families: fn(
        *const Options, *const c_char, c_int, *const *const c_char,
        *const *const Options, *mut *mut Family, Err
    ) -> *mut Db;
    close: fn(*mut Db);
    create_column_family: fn(*mut Db, *const Options, *const c_char, Err) -> *mut Family;
    list_column_families: fn(*const Options, *const c_char, *mut usize, Err) -> *mut *mut c_char;
    list_column_families_destroy: fn(*mut *mut c_char, usize);
    drop_column_family: fn(*mut Db, *mut Family, Err);
    column_family_handle_destroy: fn(*mut Family);
    writeoptions_create: fn() -> *mut WriteOptions;
    writeoptions_destroy: fn(*mut WriteOptions);
    writeoptions_disable_WAL: fn(*mut WriteOptions, c_int);
    readoptions_create: fn() -> *mut ReadOptions;
    readoptions_destroy: fn(*mut ReadOptions);
    readoptions_set_iterate_upper_bound: fn(*mut ReadOptions, *const c_char, usize);
    flushoptions_create: fn() -> *mut FlushOptions;
    flushoptions_destroy: fn(*mut FlushOptions);
    get_pinned_cf: fn(
        *mut Db, *const ReadOptions, *mut Family, *const c_char, usize, Err
    ) -> *mut Pinned;
    get_pinned: fn(*mut Db, *const ReadOptions, *const c_char, usize, Err) -> *mut Pinned;
    put: fn(*mut Db, *const WriteOptions, *const c_char, usize, *const c_char, usize, Err);
    pinnableslice_value: fn(*const Pinned, *mut usize) -> *const c_char;
    pinnableslice_destroy: fn(*mut Pinned);
    put_cf: fn(
        *mut Db, *const WriteOptions, *mut Family, *const c_char, usize, *const c_char, usize, Err
    );
    merge_cf: fn(
        *mut Db, *const WriteOptions, *mut Family, *const c_char, usize, *const c_char, usize, Err
    );
    delete_cf: fn(*mut Db, *const WriteOptions, *mut Family, *const c_char, usize, Err);
    delete_range_cf: fn(
        *mut Db, *const WriteOptions, *mut Family, *const c_char, usize, *const c_char, usize, Err
    );
    flush_cf: fn(*mut Db, *const FlushOptions, *mut Family, Err);
    checkpoint_object_create: fn(*mut Db, Err) -> *mut Checkpoint;
    checkpoint_create: fn(*mut Checkpoint, *const c_char, u64, Err);
    checkpoint_object_destroy: fn(*mut Checkpoint);
    create_iterator_cf: fn(*mut Db, *const ReadOptions, *mut Family) -> *mut Iterator;
    iter_destroy: fn(*mut Iterator);
    iter_seek: fn(*mut Iterator, *const c_char, usize);
    iter_valid: fn(*const Iterator) -> c_uchar;
    iter_next: fn(*mut Iterator);
    iter_value: fn(*const Iterator, *mut usize) -> *const c_char;
    iter_get_error: fn(*const Iterator, Err);
    writebatch_create: fn() -> *mut WriteBatch;
    writebatch_destroy: fn(*mut WriteBatch);
    writebatch_clear: fn(*mut WriteBatch);
    writebatch_count: fn(*mut WriteBatch) -> c_int;
    writebatch_data: fn(*mut WriteBatch, *mut usize) -> *const c_char;
    writebatch_create_from: fn(*const c_char, usize) -> *mut WriteBatch;
    writebatch_put_cf: fn(*mut WriteBatch, *mut Family, *const c_char, usize, *const c_char, usize);
    writebatch_delete_cf: fn(*mut WriteBatch, *mut Family, *const c_char, usize);
    write: fn(*mut Db, *const WriteOptions, *mut WriteBatch, Err);
    set_perf_level: fn(c_int);
    perfcontext_create: fn() -> *mut PerfContext;
    perfcontext_reset: fn(*mut PerfContext);
    perfcontext_metric: fn(*mut PerfContext, c_int) -> u64;
    perfcontext_destroy: fn(*mut PerfContext);
    get_options_from_string: fn(*const Options, *const c_char, *mut Options, Err);
    property_int_cf: fn(*mut Db, *mut Family, *const c_char, *mut u64) -> c_int;
    property_value_cf: fn(*mut Db, *mut Family, *const c_char) -> *mut c_char;
    @optional
    create_column_families: fn(
        *mut Db, *const Options, c_int, *const *const c_char, *mut usize, Err
    ) -> *mut *mut Family;
    create_column_families_destroy: fn(*mut *mut Family);
}

/// `rocksdb_enable_count`: the perf level that counts without timing.
pub(super) const PERF_ENABLE_COUNT: c_int = 2;

/// `rocksdb_user_key_comparison_count`: any read counts some, when the perf context counts.
pub(super) const PERF_USER_KEY_COMPARISONS: c_int = 0;

/// The perf-context metrics [`super::RocksDbStore`] reports, by name and C enum value (the
/// first entries of the enum, in place since it appeared).
pub(super) const PERF_COUNTERS: [(&str, c_int); 3] = [
    ("rocksdb.internal_delete_skipped_count", 11),
    ("rocksdb.internal_key_skipped_count", 10),
    ("rocksdb.block_read_count", 2),
];

/// What a store's column families hold when [`super::RocksDbStore`] reports its counters: by
/// name, and the integer property (`rocksdb.*`) summed over them.
pub(super) const HELD: [(&str, &[&str]); 2] = [
    (
        "rocksdb.held.live_sst_bytes",
        &["rocksdb.live-sst-files-size\0"],
    ),
    (
        "rocksdb.held.tombstones_in_memtables",
        &[
            "rocksdb.num-deletes-active-mem-table\0",
            "rocksdb.num-deletes-imm-mem-tables\0",
        ],
    ),
];

/// The deletes still held in a column family's files (tombstones not yet compacted away): the
/// `# deletions` of its files' aggregated table properties, reported under this name.
pub(super) const TOMBSTONES_IN_FILES: &str = "rocksdb.held.tombstones_in_files";

/// The `# deletions` of `rocksdb.aggregated-table-properties` (`# entries=9; # deletions=3;
/// ...`, the same in every version since 6.12); 0 without it.
pub(super) fn deletions(properties: &str) -> u64 {
    properties
        .split(';')
        .filter_map(|entry| entry.trim().strip_prefix("# deletions="))
        .find_map(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

impl Api {
    /// Takes the message a failed call left in `err`, freeing it; `None` when it succeeded.
    pub(super) fn take_error(&self, err: *mut c_char) -> Option<String> {
        if err.is_null() {
            return None;
        }
        // SAFETY: RocksDB leaves a NUL-terminated string it allocated with malloc.
        let message = unsafe { std::ffi::CStr::from_ptr(err) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: allocated by the library, freed once through its own `rocksdb_free`.
        unsafe { (self.free)(err.cast()) };
        Some(message)
    }
}

#[cfg(test)]
mod tests {
    use super::deletions;

    #[test]
    fn the_deletions_of_aggregated_table_properties_are_read_by_name() {
        let text = "# data blocks=4; # entries=120; # deletions=37; # merge operands=0; \
                    # range deletions=0; raw key size=2400";
        assert_eq!(deletions(text), 37);
        assert_eq!(deletions(""), 0);
        assert_eq!(deletions("# entries=5"), 0);
    }
}
