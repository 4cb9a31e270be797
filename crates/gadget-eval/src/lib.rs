//! Gadget's performance evaluator: drives real state stores with a state-access stream and
//! measures them honestly (open-loop arrivals, coordinated-omission-correct latency, HDR
//! histograms per op).

pub mod store;
