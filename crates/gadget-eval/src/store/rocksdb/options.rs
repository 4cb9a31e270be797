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
/// where an option set makes its own cache; empty for none.
pub(super) fn expanded(given: &str, block_cache: usize) -> String {
    match given {
        "db_bench" => db_bench(block_cache),
        "flink" => flink(block_cache),
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
/// `RocksDBResourceContainer` and `RocksDBMemoryControllerUtils` make them: two background
/// jobs, no limit on open files, its log files' size and number, no statistics dump, level
/// compaction with Snappy at every level and its file and level sizes, and the slot's shared
/// LRU cache with a high-priority pool of 0.1 that holds the index and filter blocks, level 0's
/// pinned. The sizes stay Gadget's (`--write-buffer-mb`, `--write-buffers`, the cache of
/// `--block-cache-mb`): Flink derives them from the slot's managed memory. Not made: the
/// write buffer manager that charges memtables to that cache (RocksDB's options string and C
/// API of Flink's frocksdb cannot make one).
fn flink(block_cache: usize) -> String {
    format!(
        "max_background_jobs=2;max_open_files=-1;max_log_file_size=26214400;\
         keep_log_file_num=4;stats_dump_period_sec=0;use_fsync=false;\
         avoid_flush_during_shutdown=true;compaction_style=kCompactionStyleLevel;\
         compression_per_level=kSnappyCompression;level_compaction_dynamic_level_bytes=false;\
         target_file_size_base=67108864;max_bytes_for_level_base=268435456;\
         min_write_buffer_number_to_merge=1;\
         block_based_table_factory={{block_cache={{capacity={block_cache};\
         high_pri_pool_ratio=0.1}};block_size=4096;metadata_block_size=4096;\
         cache_index_and_filter_blocks=true;cache_index_and_filter_blocks_with_high_priority=true;\
         pin_l0_filter_and_index_blocks_in_cache=true}}"
    )
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
            assert!(text.contains("capacity=12345"), "{set}: {text}");
        }
        assert_eq!(expanded("max_open_files=7", 1), "max_open_files=7");
    }
}
