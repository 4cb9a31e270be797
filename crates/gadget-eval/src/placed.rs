//! Latency and throughput per state and per store: a workload's states can live in different
//! stores (a window's state in embedded RocksDB, a lookup table in Redis), and each part is
//! measured on its own beside the total.

use gadget_results::summary::{histogram, OpSummary};
use gadget_results::{hdr, per_stores, PartSummary, StateHistogram};
use hdrhistogram::Histogram;

use crate::measure::Recorder;

/// What a run measured per state and per store.
#[derive(Debug, Default)]
pub struct Placed {
    /// Per state, in state order (the states no request named left out).
    pub per_state: Vec<PartSummary>,
    /// Per store, in order of first state; empty when every state lives in one store.
    pub per_store: Vec<PartSummary>,
    /// Each state's latency histogram, encoded (only when asked for).
    pub histograms: Vec<StateHistogram>,
}

/// Per state and per store from `recorder`'s per-state histograms, each state's histogram
/// built once (and encoded beside its summary when `encode`). `states[i]` names state `i` and
/// `stores[i]` the store it lives in.
pub fn parts(
    recorder: &Recorder,
    seconds: f64,
    states: &[String],
    stores: &[String],
    encode: bool,
) -> Placed {
    let mut placed = Placed::default();
    let mut per_store: Vec<(String, Histogram<u64>)> = Vec::new();
    for (i, name) in states.iter().enumerate() {
        let Some(h) = recorder.state_histogram(i) else {
            continue;
        };
        let store = stores.get(i).cloned().unwrap_or_default();
        placed.per_state.push(PartSummary {
            name: name.clone(),
            store: store.clone(),
            latency: OpSummary::from_histogram("all", &h, seconds),
        });
        if encode {
            placed.histograms.push(StateHistogram {
                name: name.clone(),
                store: store.clone(),
                hdr: hdr::encode(&h),
            });
        }
        match per_store.iter_mut().find(|s| s.0 == store) {
            Some(s) => s.1.add(&h).expect("same bounds"),
            None => {
                let mut sum = histogram();
                sum.add(&h).expect("same bounds");
                per_store.push((store, sum));
            }
        }
    }
    placed.per_store = per_stores(per_store, seconds);
    placed
}
