//! Latency and throughput per state and per store: a workload's states can live in different
//! stores (a window's state in embedded RocksDB, a lookup table in Redis), and each part is
//! measured on its own beside the total.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::measure::{histogram, OpSummary, Recorder};

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

/// Per state (in state order) and per store (in order of first state; only when the states
/// live in more than one store), from `recorder`'s per-state histograms. `states[i]` names
/// state `i` and `stores[i]` the store it lives in.
pub fn parts(
    recorder: &Recorder,
    seconds: f64,
    states: &[String],
    stores: &[String],
) -> (Vec<PartSummary>, Vec<PartSummary>) {
    let mut per_state = Vec::new();
    let mut per_store: Vec<(String, Histogram<u64>)> = Vec::new();
    for (i, name) in states.iter().enumerate() {
        let Some(h) = recorder.state_histogram(i) else {
            continue;
        };
        let store = stores.get(i).cloned().unwrap_or_default();
        per_state.push(PartSummary {
            name: name.clone(),
            store: store.clone(),
            latency: OpSummary::from_histogram("all", h, seconds),
        });
        match per_store.iter_mut().find(|s| s.0 == store) {
            Some(s) => s.1.add(h).expect("same bounds"),
            None => {
                let mut sum = histogram();
                sum.add(h).expect("same bounds");
                per_store.push((store, sum));
            }
        }
    }
    (per_state, per_stores(per_store, seconds))
}

/// One summary per store from each store's histogram over `seconds`; none when every state
/// lives in one store (the run's own table says it all).
pub(crate) fn per_stores(stores: Vec<(String, Histogram<u64>)>, seconds: f64) -> Vec<PartSummary> {
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
