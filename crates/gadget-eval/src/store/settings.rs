//! The settings a store is opened with ([`StoreSettings`]), and how a store setting of the
//! one list (`gadget::config::store_settings`) given by a flag, a config or an experiment
//! sets them ([`StoreSettings::set`]).

use gadget::config::store_settings::{GivenSetting, Value};

use super::placement::Placement;
use super::rocksdb_lib::RocksDbLib;
use super::StoreKind;

/// Settings of the stores; each store reads the ones that concern it.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    /// RocksDB write buffer (memtable) size in bytes; Flink's paper setting is 128 MB.
    pub write_buffer_size: usize,
    /// RocksDB number of write buffers; 2 in the paper.
    pub max_write_buffers: i32,
    /// Block cache in bytes; 64 MB in the paper.
    pub block_cache: usize,
    /// The RocksDB library to run on; Flink 1.x's frocksdb 6.20.3 by default.
    pub rocksdb_lib: RocksDbLib,
    /// `--rocksdb-options`: an option set's name or RocksDB options, applied over the others;
    /// empty for none.
    pub rocksdb_options: String,
    /// Write-ahead log; off in Flink.
    pub wal: bool,
    /// BerkeleyDB cache in bytes; 256 MB in the paper.
    pub bdb_cache: usize,
    /// Where the Redis server is.
    pub redis_url: String,
    /// Redis point writes sent per round trip (1: no pipelining).
    pub redis_pipeline: usize,
    /// The longest a Redis connection or round trip may take before it fails the request.
    pub redis_timeout: std::time::Duration,
    /// Where a Redis Cluster keeps an instance's keys.
    pub redis_placement: Placement,
    /// The operator instance that opens the store (0 for one instance); a Redis Cluster
    /// places instance *i* on node *i*.
    pub instance: usize,
    /// Delayed links to a Redis Cluster's nodes: the instance reaches every node but its own
    /// through the node's link (seed 003's multi-node runs on one machine); empty: all
    /// nodes directly.
    pub redis_links: Vec<crate::remote::NodeLink>,
    /// States placed in stores of their own (`[run.stores.NAME]`, `[run.states]`); the
    /// others live in the run's store.
    pub routes: Vec<Route>,
    /// LMDB map size in bytes: the most the database can hold. The file is sparse, so a large
    /// map costs address space, not disk.
    pub lmdb_map_size: usize,
    /// FASTER's in-memory log in bytes, a multiple of 32 MB; 256 MB in the paper.
    pub faster_log_size: usize,
    /// FASTER's hash index in bytes (64-byte buckets, a power of two of them); 64 MB in the
    /// paper.
    pub faster_index_size: usize,
    /// Lethe's compaction: FADE (true, the default) or RocksDB's own policy.
    pub lethe_fade: bool,
    /// Lethe's delete-persistence threshold D_th.
    pub lethe_delete_persistence: std::time::Duration,
    /// Keep the store's own counters where it has them ([`Store::counters`]); they cost some
    /// throughput (RocksDB's perf context at its counting level).
    pub counters: bool,
    /// Set from elsewhere (Ctrl-C) to end a networked store's waits within 50 ms; a run
    /// shares its [`crate::run::RunOptions::stop`] here.
    pub stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            write_buffer_size: 128 << 20,
            max_write_buffers: 2,
            block_cache: 64 << 20,
            rocksdb_lib: RocksDbLib::default(),
            rocksdb_options: String::new(),
            wal: false,
            bdb_cache: 256 << 20,
            redis_url: std::env::var("GADGET_REDIS_URL")
                .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_string()),
            redis_pipeline: 1,
            redis_timeout: std::time::Duration::from_secs(5),
            redis_placement: Placement::default(),
            instance: 0,
            redis_links: Vec::new(),
            routes: Vec::new(),
            lmdb_map_size: 16 << 30,
            faster_log_size: 256 << 20,
            faster_index_size: 64 << 20,
            lethe_fade: true,
            lethe_delete_persistence: std::time::Duration::from_secs(60),
            counters: false,
            stop: std::sync::Arc::default(),
        }
    }
}

impl StoreSettings {
    /// The memory these settings give RocksDB: its block cache and one set of write buffers
    /// (`--block-cache-mb` + `--write-buffer-mb` × `--write-buffers`). The stores that size one
    /// cache take it (redb, SQLite), and Flink's managed memory is it (`--rocksdb-options
    /// flink`).
    pub fn memory_budget(&self) -> usize {
        let write_buffers = usize::try_from(self.max_write_buffers.max(0)).unwrap_or(0);
        self.block_cache
            .saturating_add(self.write_buffer_size.saturating_mul(write_buffers))
    }

    /// Sets the setting `given` names to its value (already checked against its bounds):
    /// the one place a key of [`gadget::config::store_settings::STORE_SETTINGS`] meets the
    /// field it sets. A key this build has no field for is an error naming it.
    pub fn set(&mut self, given: &GivenSetting) -> Result<(), String> {
        let mib = |n: i64| (n.max(0) as usize).saturating_mul(1 << 20);
        match (given.setting.key, &given.value) {
            ("rocksdb_lib", Value::Text(t)) => {
                self.rocksdb_lib = t.parse().map_err(|e| format!("{}: {e}", given.origin))?;
            }
            ("write_buffer_mb", Value::Int(n)) => self.write_buffer_size = mib(*n),
            ("write_buffers", Value::Int(n)) => {
                self.max_write_buffers = i32::try_from(*n).unwrap_or(i32::MAX)
            }
            ("block_cache_mb", Value::Int(n)) => self.block_cache = mib(*n),
            ("rocksdb_options", Value::Text(t)) => self.rocksdb_options = t.clone(),
            ("wal", Value::Switch(on)) => self.wal = *on,
            ("store_counters", Value::Switch(on)) => self.counters = *on,
            ("redis_url", Value::Text(t)) => self.redis_url = t.clone(),
            ("redis_pipeline", Value::Int(n)) => self.redis_pipeline = (*n).max(1) as usize,
            ("redis_placement", Value::Text(t)) => {
                self.redis_placement = Placement::from_name(t)
                    .ok_or_else(|| format!("{}: no placement `{t}`", given.origin))?;
            }
            ("redis_timeout", Value::Time(ns)) => {
                self.redis_timeout = std::time::Duration::from_nanos(*ns)
            }
            ("lmdb_map_gb", Value::Int(n)) => {
                self.lmdb_map_size = ((*n).max(0) as usize).saturating_mul(1 << 30)
            }
            ("faster_log_mb", Value::Int(n)) => self.faster_log_size = mib(*n),
            ("faster_index_mb", Value::Int(n)) => self.faster_index_size = mib(*n),
            ("lethe_compaction", Value::Text(t)) => self.lethe_fade = t == "fade",
            ("lethe_delete_persistence", Value::Time(ns)) => {
                self.lethe_delete_persistence = std::time::Duration::from_nanos(*ns)
            }
            (key, value) => {
                return Err(format!(
                    "{}: the store setting `{key}` = {value:?} has no field in this build's StoreSettings",
                    given.origin
                ))
            }
        }
        Ok(())
    }
}

/// Some states placed in a store of their own.
#[derive(Debug, Clone)]
pub struct Route {
    /// The store's name in the config (`[run.stores.NAME]`).
    pub name: String,
    /// Its kind.
    pub kind: StoreKind,
    /// Its settings.
    pub settings: StoreSettings,
    /// The states it holds, by name.
    pub states: Vec<String>,
    /// Started by the run in a network namespace of its own behind this link (a Redis
    /// server; [`crate::remote`]); `None` for a store at its configured URL.
    pub remote: Option<crate::remote::RemoteSpec>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget::config::store_settings::{SettingValue, STORE_SETTINGS};

    /// Every setting of the one list sets a field: a value of its type is taken, and
    /// changes what the store is opened with.
    #[test]
    fn every_store_setting_sets_a_field() {
        for setting in STORE_SETTINGS {
            let text = match setting.value {
                SettingValue::Switch => "true",
                SettingValue::Int(b) => {
                    if b.max >= 200.0 {
                        "200"
                    } else {
                        "3"
                    }
                }
                SettingValue::Float(_) => "0.5",
                SettingValue::Time { min_ns, .. } if min_ns > 250_000_000 => "2h",
                SettingValue::Time { .. } => "250ms",
                SettingValue::Library => "current",
                SettingValue::Url => "redis://10.0.0.9:7000",
                SettingValue::Choice(c) => c[c.len() - 1],
                SettingValue::RocksDbOptions => "db_bench",
            };
            let given = GivenSetting {
                setting,
                value: setting.parse(text).unwrap(),
                origin: setting.flag(),
            };
            let mut s = StoreSettings::default();
            let before = format!("{s:?}");
            s.set(&given).unwrap_or_else(|e| panic!("{e}"));
            assert_ne!(format!("{s:?}"), before, "{} changed nothing", setting.key);
        }
    }
}
