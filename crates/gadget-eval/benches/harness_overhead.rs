//! What measuring costs: the same requests issued to the in-memory store four ways.
//!
//! - `tight loop`: from requests already in memory, no producer thread, no clock reads, no
//!   histograms; the floor `gadget replay --store memory` is held against (BENCHMARKS.md,
//!   harness overhead).
//! - `tight loop, timed`: the tight loop with the driver's clock read once per request and
//!   nothing else measured: what timing every request costs on its own.
//! - `stream, unmeasured`: from a binary trace through the producer thread and its queue, as
//!   `gadget replay` reads it, but without measuring: what the producer running beside the
//!   store costs.
//! - `driver`: `gadget replay`'s driver itself (closed loop, every request timed and recorded).
//!
//! Criterion runs the four one after the other; on a host whose speed drifts, the
//! `harness_overhead_rounds` bench, which alternates them, gives the steadier ratio.

mod common;

use common::{Workload, SECOND};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn harness_overhead(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let workload = Workload::generate(&dir.path().join("bench.gtrace"));
    let mut group = c.benchmark_group("harness_overhead");
    group.throughput(Throughput::Elements(workload.requests()));
    group.sample_size(10);
    group.bench_function("memory store, tight loop", |b| {
        b.iter(|| workload.tight_loop())
    });
    group.bench_function("memory store, tight loop, timed", |b| {
        b.iter(|| workload.tight_loop_timed())
    });
    group.bench_function("memory store, stream, unmeasured", |b| {
        b.iter(|| workload.stream_unmeasured(None))
    });
    group.bench_function("memory store, driver", |b| {
        b.iter(|| workload.driver(SECOND))
    });
    group.finish();
}

criterion_group!(benches, harness_overhead);
criterion_main!(benches);
