//! The settings each store runs with, as results record them.

use std::collections::BTreeMap;

use super::{StoreKind, StoreSettings};

impl StoreSettings {
    /// The settings `kind` reads, as Gadget applies them, by name; secrets (a Redis
    /// password) are left out.
    pub fn applied(&self, kind: StoreKind) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        let mut set = |name: &str, value: String| {
            s.insert(name.to_string(), value);
        };
        match kind.name() {
            "rocksdb" => {
                set("library", self.rocksdb_lib.name());
                #[cfg(feature = "rocksdb")]
                if let Some(library) = super::rocksdb::library::loaded(&self.rocksdb_lib) {
                    set("rocksdb_version", library.version().to_string());
                    set("compression", library.compression().to_string());
                }
                set("write_buffer_bytes", self.write_buffer_size.to_string());
                set("write_buffers", self.max_write_buffers.to_string());
                set("block_cache_bytes", self.block_cache.to_string());
                set("wal", self.wal.to_string());
                set(
                    "merge_operator",
                    "string append with ',' (Flink's list state)".to_string(),
                );
                set("counters", self.counters.to_string());
            }
            "leveldb" => {
                set("write_buffer_bytes", self.write_buffer_size.to_string());
                set("block_cache_bytes", self.block_cache.to_string());
            }
            "fjall" => {
                set("write_buffer_bytes", self.write_buffer_size.to_string());
                set("write_buffers", self.max_write_buffers.to_string());
                set("block_cache_bytes", self.block_cache.to_string());
            }
            "redb" | "sqlite" => {
                set("write_buffer_bytes", self.write_buffer_size.to_string());
                set("write_buffers", self.max_write_buffers.to_string());
            }
            "berkeleydb" | "berkeleydb-hash" => {
                set("cache_bytes", self.bdb_cache.to_string());
            }
            "lmdb" => set("map_bytes", self.lmdb_map_size.to_string()),
            "faster" => {
                set("log_bytes", self.faster_log_size.to_string());
                set("index_bytes", self.faster_index_size.to_string());
            }
            #[cfg(feature = "redis")]
            "redis" | "redis-cluster" => {
                set("url", super::redis::shown_url(&self.redis_url));
                set("pipeline", self.redis_pipeline.to_string());
                set("timeout", format!("{:?}", self.redis_timeout));
                if kind.name() == "redis-cluster" {
                    set("placement", self.redis_placement.name().to_string());
                }
            }
            _ => {}
        }
        for r in &self.routes {
            let mut of_route = r.settings.applied(r.kind);
            of_route.insert("kind".into(), r.kind.name().into());
            if let Some(spec) = &r.remote {
                let far = if r.kind.name() == "redis-cluster" {
                    format!(
                        "every node but an instance's own behind a delaying proxy, {:?} ± {:?} added each way",
                        spec.delay, spec.jitter
                    )
                } else {
                    format!(
                        "in a network namespace of its own, {:?} ± {:?} added each way, {} Mbit/s",
                        spec.delay,
                        spec.jitter,
                        spec.rate_bits_per_s / 1_000_000
                    )
                };
                of_route.insert("remote".into(), far);
            }
            for (k, v) in of_route {
                s.insert(format!("stores.{}.{k}", r.name), v);
            }
            for state in &r.states {
                s.insert(format!("states.{state}"), r.name.clone());
            }
        }
        s
    }
}
