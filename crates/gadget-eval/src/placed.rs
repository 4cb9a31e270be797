//! Latency and throughput per state and per store: a workload's states can live in different
//! stores (a window's state in embedded RocksDB, a lookup table in Redis), and each part is
//! measured on its own beside the total.

use gadget_results::summary::{histogram, OpSummary};
use gadget_results::{per_stores, PartSummary};
use hdrhistogram::Histogram;

use crate::measure::Recorder;

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
            latency: OpSummary::from_histogram("all", &h, seconds),
        });
        match per_store.iter_mut().find(|s| s.0 == store) {
            Some(s) => s.1.add(&h).expect("same bounds"),
            None => {
                let mut sum = histogram();
                sum.add(&h).expect("same bounds");
                per_store.push((store, sum));
            }
        }
    }
    (per_state, per_stores(per_store, seconds))
}
