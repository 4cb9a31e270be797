//! Latency and throughput per state and per store, as results give them: a workload's states
//! can live in different stores (a window's state in embedded RocksDB, a lookup table in
//! Redis), and each part is measured on its own beside the total.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::summary::OpSummary;

/// The requests of one state, or of every state one store holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartSummary {
    /// The state's name, or the store's.
    pub name: String,
    /// The store it lives in (for a store: its kind).
    pub store: String,
    /// Its requests' latency and rate (`op` is `all`).
    pub latency: OpSummary,
}

/// One summary per store from each store's histogram over `seconds`; none when every state
/// lives in one store (the run's own table says it all).
pub fn per_stores(stores: Vec<(String, Histogram<u64>)>, seconds: f64) -> Vec<PartSummary> {
    if stores.len() <= 1 {
        return Vec::new();
    }
    stores
        .into_iter()
        .map(|(store, h)| PartSummary {
            name: store.clone(),
            store,
            latency: OpSummary::from_histogram("all", &h, seconds),
        })
        .collect()
}
