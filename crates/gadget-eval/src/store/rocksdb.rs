//! RocksDB, set up as Flink's RocksDB state backend sets it up: a column family per state, a
//! string-append merge operator with `,` as delimiter, the write-ahead log off; and the paper's
//! sizes by default (two 128 MB write buffers, a 64 MB block cache), all configurable through
//! [`StoreSettings`].
//!
//! Built against Debian's `librocksdb-dev` (RocksDB 7.8, close to the 6.20 that Flink 1.20
//! ships) through the `rocksdb` 0.20 crate; `.cargo/config.toml` points the build at it.
//! Flink's merge operator is RocksDB's native `StringAppendOperator`; the `rocksdb` crate does
//! not expose it, so the same operation runs as a Rust callback here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gadget::access::{Op, StateId};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBRawIterator, MergeOperands,
    Options, ReadOptions, WriteBatch, WriteOptions, DB,
};
use self_cell::self_cell;

use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};

/// Column-family handles and open iterators, which borrow the database.
struct Handles<'db> {
    families: Vec<&'db ColumnFamily>,
    iterators: Vec<Option<DBRawIterator<'db>>>,
}

self_cell!(
    struct OpenDb {
        owner: Arc<DB>,
        #[not_covariant]
        dependent: Handles,
    }
);

/// One RocksDB database that several operator instances share (the paper's §6.4), each
/// through its own [`RocksDbStore`] over its own column families: they compete for one block
/// cache, one set of background compactions and one write path.
pub struct SharedRocksDb {
    db: Arc<DB>,
    path: PathBuf,
    wal: bool,
    /// Whether attached stores keep RocksDB's perf-context counters.
    counters: bool,
    /// Column-family names per instance.
    families: Vec<Vec<String>>,
    /// Keeps the block cache alive as long as the database.
    _cache: Cache,
}

/// A RocksDB database with one column family per state.
pub struct RocksDbStore {
    db: OpenDb,
    batch: WriteBatch,
    write_options: WriteOptions,
    /// Reused for every point read (the crate's `get_pinned_cf` builds one per call).
    read_options: ReadOptions,
    path: PathBuf,
    /// Whether RocksDB's perf context counts on the thread that attached the store.
    counters: bool,
    /// Keeps the block cache alive as long as the database.
    _cache: Cache,
}

/// RocksDB's perf-context counters reported by [`Store::counters`], with their names.
const PERF_COUNTERS: [(&str, rocksdb::perf::PerfMetric); 3] = [
    (
        "rocksdb.internal_delete_skipped_count",
        rocksdb::perf::PerfMetric::InternalDeleteSkippedCount,
    ),
    (
        "rocksdb.internal_key_skipped_count",
        rocksdb::perf::PerfMetric::InternalKeySkippedCount,
    ),
    (
        "rocksdb.block_read_count",
        rocksdb::perf::PerfMetric::BlockReadCount,
    ),
];

/// `StringAppendOperator(',')`: the operands appended to the existing value, `,` between.
fn string_append(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    let extra: usize = operands.iter().map(|o| o.len() + 1).sum();
    let mut out = Vec::with_capacity(existing.map_or(0, <[u8]>::len) + extra);
    let mut first = true;
    if let Some(v) = existing {
        out.extend_from_slice(v);
        first = false;
    }
    for op in operands {
        if !first {
            out.push(MERGE_DELIMITER);
        }
        first = false;
        out.extend_from_slice(op);
    }
    Some(out)
}

/// What `Cache::new_lru_cache` returns: a `Result` in the `rocksdb` 0.20 line (Debian's
/// RocksDB), the cache itself in later ones (`bundled-rocksdb/`, RocksDB built from source).
trait NewCache {
    /// The cache, or why it could not be made.
    fn into_cache(self) -> Result<Cache, String>;
}

impl NewCache for Cache {
    fn into_cache(self) -> Result<Cache, String> {
        Ok(self)
    }
}

impl NewCache for Result<Cache, rocksdb::Error> {
    fn into_cache(self) -> Result<Cache, String> {
        self.map_err(rocksdb::Error::into_string)
    }
}

fn request_error(op: Op, e: rocksdb::Error) -> StoreError {
    StoreError::Request {
        store: "rocksdb",
        op,
        message: e.into_string(),
    }
}

impl SharedRocksDb {
    /// Creates (or opens) a database under `dir` with a column family per state of every
    /// instance (`instances[i]` lists instance `i`'s states).
    pub fn open(
        dir: &Path,
        instances: &[Vec<String>],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        let open_error = |message: String| StoreError::Open {
            store: "rocksdb",
            path: dir.to_path_buf(),
            message,
        };
        let cache = Cache::new_lru_cache(settings.block_cache)
            .into_cache()
            .map_err(open_error)?;
        let family_options = || {
            let mut o = Options::default();
            o.set_write_buffer_size(settings.write_buffer_size);
            o.set_max_write_buffer_number(settings.max_write_buffers);
            o.set_merge_operator_associative("stringappendtest", string_append);
            let mut table = BlockBasedOptions::default();
            table.set_block_cache(&cache);
            o.set_block_based_table_factory(&table);
            o
        };
        let mut db_options = family_options();
        db_options.create_if_missing(true);
        db_options.create_missing_column_families(true);
        // column-family names must be unique: number them by instance and state
        let families: Vec<Vec<String>> = instances
            .iter()
            .enumerate()
            .map(|(i, states)| {
                states
                    .iter()
                    .enumerate()
                    .map(|(s, name)| {
                        if instances.len() == 1 {
                            format!("{s}:{name}")
                        } else {
                            format!("{i}:{s}:{name}")
                        }
                    })
                    .collect()
            })
            .collect();
        let descriptors: Vec<ColumnFamilyDescriptor> = families
            .iter()
            .flatten()
            .map(|n| ColumnFamilyDescriptor::new(n.clone(), family_options()))
            .collect();
        let db = DB::open_cf_descriptors(&db_options, dir, descriptors)
            .map_err(|e| open_error(e.into_string()))?;
        Ok(SharedRocksDb {
            db: Arc::new(db),
            path: dir.to_path_buf(),
            wal: settings.wal,
            families,
            counters: settings.counters,
            _cache: cache,
        })
    }

    /// The store of instance `instance`: its own column families, iterators and write batch.
    pub fn attach(&self, instance: usize) -> Result<RocksDbStore, StoreError> {
        let names = super::instance_part("rocksdb", &self.path, &self.families, instance)?;
        let db = OpenDb::try_new(self.db.clone(), |db| {
            let families = names
                .iter()
                .map(|n| {
                    db.cf_handle(n)
                        .ok_or_else(|| format!("column family {n} is missing"))
                })
                .collect::<Result<Vec<_>, String>>()?;
            let iterators = families.iter().map(|_| None).collect();
            Ok::<_, String>(Handles {
                families,
                iterators,
            })
        })
        .map_err(|message| StoreError::Open {
            store: "rocksdb",
            path: self.path.clone(),
            message,
        })?;
        let mut write_options = WriteOptions::default();
        write_options.disable_wal(!self.wal);
        if self.counters {
            // the perf context is the calling thread's: it counts what this thread asks
            rocksdb::perf::set_perf_stats(rocksdb::perf::PerfStatsLevel::EnableCount);
            rocksdb::perf::PerfContext::default().reset();
        }
        Ok(RocksDbStore {
            db,
            batch: WriteBatch::default(),
            write_options,
            read_options: ReadOptions::default(),
            path: self.path.clone(),
            counters: self.counters,
            _cache: self._cache.clone(),
        })
    }
}

impl super::SharedStore for SharedRocksDb {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedRocksDb::attach(self, instance)?))
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

    fn states(&self) -> usize {
        self.db.with_dependent(|_, h| h.families.len())
    }

    fn check(&self, state: StateId) -> Result<(), StoreError> {
        let states = self.states();
        if (state as usize) < states {
            Ok(())
        } else {
            Err(StoreError::UnknownState { state, states })
        }
    }
}

impl Store for RocksDbStore {
    fn name(&self) -> &'static str {
        "rocksdb"
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        if !self.counters {
            return Vec::new();
        }
        let context = rocksdb::perf::PerfContext::default();
        PERF_COUNTERS
            .iter()
            .map(|&(name, metric)| (name, context.metric(metric)))
            .collect()
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        let ro = &self.read_options;
        self.db.with_dependent(|db, h| {
            db.get_pinned_cf_opt(h.families[state as usize], key, ro)
                .map(|v| v.map(|v| v.len()))
                .map_err(|e| request_error(Op::Get, e))
        })
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let wo = &self.write_options;
        self.db.with_dependent(|db, h| {
            db.put_cf_opt(h.families[state as usize], key, value, wo)
                .map_err(|e| request_error(Op::Put, e))
        })
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let wo = &self.write_options;
        self.db.with_dependent(|db, h| {
            db.merge_cf_opt(h.families[state as usize], key, value, wo)
                .map_err(|e| request_error(Op::Merge, e))
        })
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let wo = &self.write_options;
        self.db.with_dependent(|db, h| {
            db.delete_cf_opt(h.families[state as usize], key, wo)
                .map_err(|e| request_error(Op::Delete, e))
        })
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.db.with_dependent_mut(|db, h| {
            let s = state as usize;
            // Flink opens a new iterator for every seek; the old one is closed
            h.iterators[s] = None;
            let mut it = db.raw_iterator_cf(h.families[s]);
            it.seek(key);
            let found = if it.valid() {
                it.value().map(<[u8]>::len)
            } else {
                it.status().map_err(|e| request_error(Op::Seek, e))?;
                None
            };
            h.iterators[s] = Some(it);
            Ok(found)
        })
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.db.with_dependent_mut(|_, h| {
            let Some(it) = h.iterators[state as usize].as_mut() else {
                return Ok(None);
            };
            if !it.valid() {
                return Ok(None);
            }
            it.next();
            if it.valid() {
                Ok(it.value().map(<[u8]>::len))
            } else {
                it.status().map_err(|e| request_error(Op::Next, e))?;
                Ok(None)
            }
        })
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let batch = &mut self.batch;
        self.db
            .with_dependent(|_, h| batch.put_cf(h.families[state as usize], key, value));
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let batch = &mut self.batch;
        self.db
            .with_dependent(|_, h| batch.delete_cf(h.families[state as usize], key));
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        let batch = std::mem::take(&mut self.batch);
        let wo = &self.write_options;
        self.db
            .with_dependent(|db, _| db.write_opt(batch, wo))
            .map_err(|e| request_error(Op::BatchCommit, e))
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        self.db.with_dependent(|db, h| {
            // an iterator bounded above, as RocksDB's own range scans are
            let mut ro = ReadOptions::default();
            ro.set_iterate_upper_bound(end);
            let mut it = db.raw_iterator_cf_opt(h.families[state as usize], ro);
            it.seek(start);
            let mut entries = 0;
            while it.valid() {
                std::hint::black_box(it.value());
                entries += 1;
                it.next();
            }
            it.status().map_err(|e| request_error(Op::RangeQuery, e))?;
            Ok(entries)
        })
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        let wo = &self.write_options;
        self.db.with_dependent(|db, h| {
            db.delete_range_cf_opt(h.families[state as usize], start, end, wo)
                .map_err(|e| request_error(Op::RangeDelete, e))
        })
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.db.with_dependent_mut(|db, h| {
            for it in h.iterators.iter_mut() {
                *it = None;
            }
            for cf in &h.families {
                db.flush_cf(*cf)
                    .map_err(|e| request_error(Op::BatchCommit, e))?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract;
    use super::*;

    fn store(dir: &Path) -> RocksDbStore {
        let states = vec!["window-contents".to_string(), "timers".to_string()];
        let settings = StoreSettings {
            write_buffer_size: 1 << 20,
            block_cache: 1 << 20,
            ..StoreSettings::default()
        };
        RocksDbStore::open(dir, &states, &settings).unwrap()
    }

    #[test]
    fn merge_appends_with_flinks_delimiter() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::merge_appends_with_flinks_delimiter(&mut s);
    }

    #[test]
    fn states_are_separate_column_families() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::states_are_separate(&mut s);
    }

    #[test]
    fn seek_and_next_walk_in_key_order_and_batches_apply_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::seek_and_next_walk_in_key_order_and_batches_apply_on_commit(&mut s);
    }

    #[test]
    fn range_ops_are_native_delete_range_and_bounded_iterators() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::range_ops_cover_start_up_to_end(&mut s);
        assert_eq!(s.emulated(), &[]);
    }
}
