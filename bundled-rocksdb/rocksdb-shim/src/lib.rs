//! The current `rocksdb` crate under the name and version gadget-eval's `rocksdb` store
//! depends on (0.20), so that the store builds against RocksDB compiled from source.

pub use current::*;
