//! The options a RocksDB database opens with, each column family the same: the flavour's own
//! (Lethe's compaction), then Gadget's settings (write buffers, block cache, Flink's merge
//! operator), then `--rocksdb-options` last: RocksDB as another client opens it (an option set
//! of [`ROCKSDB_OPTION_SETS`]) or a user's options string.
//!
//! The options are made once and copied for every column family, so all of them share one
//! block cache, also one an option set makes.

use std::ffi::CString;

use gadget::config::store_settings::ROCKSDB_OPTION_SETS;

use super::api::{Api, Options, TableOptions};
use super::{merge, Flavour};
use crate::store::StoreSettings;

/// The options string `--rocksdb-options` stands for, with `block_cache` bytes of block cache
/// where an option set makes its cache through its options (db_bench's); empty for none.
pub(super) fn expanded(given: &str, block_cache: usize) -> String {
    match given {
        "db_bench" => db_bench(block_cache),
        "flink" => flink(),
        options => options.to_string(),
    }
}

/// What db_bench 7.8 (Debian's `rocksdb-tools`, the native client `scripts/bench-db-bench.sh`
/// runs beside Gadget) sets differently from a RocksDB opened through the C API, given the
/// flags that script gives it. Found by comparing the OPTIONS files and LOGs of the two
/// databases; the script compares them again after every round. Not set: db_bench's own
/// listener, `create_missing_column_families` (Gadget creates its column families itself)
/// and the merge operator (Flink's, which point requests never reach).
fn db_bench(block_cache: usize) -> String {
    format!(
        "enable_pipelined_write=true;table_cache_numshardbits=4;delayed_write_rate=8388608;\
         dump_malloc_stats=true;hard_pending_compaction_bytes_limit=137438953472;\
         compaction_options_fifo={{allow_compaction=true;max_table_files_size=0}};\
         block_based_table_factory={{block_cache={{capacity={block_cache};num_shard_bits=6;\
         high_pri_pool_ratio=0}};index_shortening=kShortenSeparatorsAndSuccessor;\
         pin_top_level_index_and_filter=false}}"
    )
}

/// What Flink 1.20's RocksDB state backend (`EmbeddedRocksDBStateBackend`, managed memory on,
/// predefined options `DEFAULT`) sets on every database and column family, as its
/// `RocksDBResourceContainer` sets them: two background jobs, no limit on open files, its log
/// files' size and number, no statistics dump, level compaction with Snappy at every level and
/// its file and level sizes, and tables that keep their index and filter blocks in the block
/// cache with high priority, level 0's pinned. The block cache and the write buffer manager
/// are not options: [`shared_memory`] says how they are made. The write buffers stay Gadget's
/// (`--write-buffer-mb`, `--write-buffers`).
fn flink() -> String {
    "max_background_jobs=2;max_open_files=-1;max_log_file_size=26214400;\
     keep_log_file_num=4;stats_dump_period_sec=0;use_fsync=false;\
     avoid_flush_during_shutdown=true;compaction_style=kCompactionStyleLevel;\
     compression_per_level=kSnappyCompression;level_compaction_dynamic_level_bytes=false;\
     target_file_size_base=67108864;max_bytes_for_level_base=268435456;\
     min_write_buffer_number_to_merge=1;\
     block_based_table_factory={block_size=4096;metadata_block_size=4096;\
     cache_index_and_filter_blocks=true;cache_index_and_filter_blocks_with_high_priority=true;\
     pin_l0_filter_and_index_blocks_in_cache=true}"
        .to_string()
}

/// Flink's share of memory between the block cache and memtables
/// (`state.backend.rocksdb.memory.write-buffer-ratio`, default 0.5).
const FLINK_WRITE_BUFFER_RATIO: f64 = 0.5;

/// The high-priority pool of Flink's block cache
/// (`state.backend.rocksdb.memory.high-prio-pool-ratio`, default 0.1).
const FLINK_HIGH_PRI_POOL_RATIO: f64 = 0.1;

/// The block cache and write buffer manager an option set makes beside its options, as
/// Flink's `RocksDBMemoryControllerUtils` makes them for a slot's managed memory `M`: an LRU
/// cache of `(3 - r) M / 3` bytes with a high-priority pool, and a write buffer manager of
/// `2 r M / 3` bytes that charges every memtable to that cache (`r`, the write buffer ratio).
/// `M` is the memory the settings give RocksDB ([`StoreSettings::memory_budget`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SharedMemory {
    /// The cache's capacity in bytes.
    pub(crate) cache: usize,
    /// The cache's high-priority pool, a fraction of its capacity.
    pub(crate) high_pri_pool_ratio: f64,
    /// The write buffer manager's capacity in bytes.
    pub(crate) write_buffer_manager: usize,
}

/// What the settings' `--rocksdb-options` makes beside its options: Flink's shared memory for
/// `flink`, nothing otherwise.
pub(super) fn shared_memory(settings: &StoreSettings) -> Option<SharedMemory> {
    let r = FLINK_WRITE_BUFFER_RATIO;
    let managed = settings.memory_budget() as f64;
    (settings.rocksdb_options == "flink").then(|| SharedMemory {
        cache: ((3.0 - r) * managed / 3.0) as usize,
        high_pri_pool_ratio: FLINK_HIGH_PRI_POOL_RATIO,
        write_buffer_manager: (2.0 * managed * r / 3.0) as usize,
    })
}

/// The options of `count` column families (the database's first): the flavour's own, then
/// `settings` with the block-based `table`, then the flavour's last ones. An error names the
/// options RocksDB refused.
///
/// # Safety
/// `table` must be live block-based table options of `api`'s library; the caller owns (and
/// destroys) the options returned.
pub(super) unsafe fn column_families(
    api: &Api,
    flavour: &Flavour<'_>,
    settings: &StoreSettings,
    table: *mut TableOptions,
    count: usize,
) -> Result<Vec<*mut Options>, String> {
    let mut options = (api.options_create)();
    let first = flavour.options;
    if !first.is_empty() {
        options = over(api, options, first).map_err(|e| format!("options {first:?}: {e}"))?;
    }
    (api.options_set_write_buffer_size)(options, settings.write_buffer_size);
    (api.options_set_max_write_buffer_number)(options, settings.max_write_buffers);
    (api.options_set_merge_operator)(options, merge::string_append(api));
    (api.options_set_block_based_table_factory)(options, table);
    let last = &flavour.last;
    if !last.is_empty() {
        let given = &settings.rocksdb_options;
        options = over(api, options, last).map_err(|e| {
            if ROCKSDB_OPTION_SETS.contains(&given.as_str()) {
                format!("--rocksdb-options {given} ({last}): {e}")
            } else {
                format!("--rocksdb-options {given:?}: {e}")
            }
        })?;
    }
    let mut all = Vec::with_capacity(count.max(1));
    all.push(options);
    while all.len() < count {
        all.push((api.options_create_copy)(options));
    }
    Ok(all)
}

/// `options` with `text` applied over them (RocksDB's `GetOptionsFromString`); `options` is
/// released either way.
unsafe fn over(api: &Api, options: *mut Options, text: &str) -> Result<*mut Options, String> {
    let text = CString::new(text).map_err(|e| format!("they hold a NUL byte: {e}"))?;
    let out = (api.options_create)();
    let mut err = std::ptr::null_mut();
    (api.get_options_from_string)(options, text.as_ptr(), out, &mut err);
    (api.options_destroy)(options);
    match api.take_error(err) {
        Some(message) => {
            (api.options_destroy)(out);
            Err(message)
        }
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_set_is_spelt_out_with_the_block_cache_given() {
        for set in ROCKSDB_OPTION_SETS {
            let text = expanded(set, 12345);
            assert_ne!(text, *set, "{set} is spelt out");
            // a cache is made once: by the options, or beside them
            let by_options = text.contains("capacity=12345");
            let settings = StoreSettings {
                rocksdb_options: set.to_string(),
                ..StoreSettings::default()
            };
            assert!(
                by_options != shared_memory(&settings).is_some(),
                "{set}: {text}"
            );
        }
        assert_eq!(expanded("max_open_files=7", 1), "max_open_files=7");
    }

    #[test]
    fn flinks_managed_memory_is_the_budget_five_sixths_cache_a_third_write_buffer_manager() {
        // a budget of 600 (a cache of 200 and two buffers of 200): Flink's managed memory
        let mut settings = StoreSettings {
            block_cache: 200,
            write_buffer_size: 200,
            max_write_buffers: 2,
            rocksdb_options: "flink".into(),
            ..StoreSettings::default()
        };
        let memory = shared_memory(&settings).unwrap();
        assert_eq!((memory.cache, memory.write_buffer_manager), (500, 200));
        assert_eq!(memory.high_pri_pool_ratio, 0.1);
        for other in ["db_bench", "max_open_files=7", ""] {
            settings.rocksdb_options = other.into();
            assert_eq!(shared_memory(&settings), None, "{other}");
        }
    }
}
