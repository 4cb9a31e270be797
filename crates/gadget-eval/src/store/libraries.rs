//! What each store runs on, with its version, as results' `context.store_libraries` name it:
//! the library a store loads (RocksDB, LevelDB, BerkeleyDB: the file the loader found), the
//! crate compiled in (LMDB through heed, redb, fjall, SQLite, FASTER) or the server that
//! answered (Redis). Each store's own file says how; this is the one dispatch.

use super::{StoreKind, StoreSettings};

impl StoreKind {
    /// What this store, opened with `settings`, runs on, then what each store of
    /// `settings.routes` runs on, each once. Call it after the run opened the store, so that a
    /// library loaded at run time is the one named.
    pub fn libraries(self, settings: &StoreSettings) -> Vec<String> {
        let mut found = vec![self.library(settings)];
        for route in &settings.routes {
            for l in route.kind.libraries(&route.settings) {
                if !found.contains(&l) {
                    found.push(l);
                }
            }
        }
        found
    }

    /// What this store alone runs on, as its file says.
    fn library(self, settings: &StoreSettings) -> String {
        (self.spec().library)(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_names_what_it_runs_on_with_a_version() {
        let settings = StoreSettings {
            redis_url: "redis://127.0.0.1:1".into(),
            ..StoreSettings::default()
        };
        for &kind in StoreKind::all() {
            let libraries = kind.libraries(&settings);
            assert_eq!(libraries.len(), 1, "{kind:?}: {libraries:?}");
            let named = &libraries[0];
            assert!(!named.is_empty(), "{kind:?}");
            match kind.name() {
                // no server listens there: the failure is said, not a version made up
                "redis" | "redis-cluster" => {
                    assert!(named.contains("version unknown"), "{named}")
                }
                // loaded by the run, not by this test
                "rocksdb" => assert!(named.contains("flink-1.20"), "{named}"),
                "lethe" => assert!(named.starts_with("lethe"), "{named}"),
                _ => assert!(
                    named.contains(|c: char| c.is_ascii_digit()) && !named.contains("unknown"),
                    "{kind:?}: {named}"
                ),
            }
        }
    }
}
