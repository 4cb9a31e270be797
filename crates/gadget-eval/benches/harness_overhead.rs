//! The floor `gadget replay --store memory` is measured against: the same requests issued to
//! the in-memory store in a tight loop, with no producer thread, no queue, no clock reads and
//! no histograms. BENCHMARKS.md sets the two side by side (harness overhead).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gadget::access::{Access, AccessSink};
use gadget::config::Config;
use gadget_eval::run::issue;
use gadget_eval::store::memory::MemoryStore;
use gadget_eval::store::Store;
use gadget_eval::workload::RequestBlock;

/// Requests of the benchmark workload, in blocks as the replay driver receives them.
const REQUESTS: u64 = 2_000_000;

struct Blocks(Vec<RequestBlock>);

impl AccessSink for Blocks {
    fn access(&mut self, a: Access<'_>) {
        if self.0.last().is_none_or(|b| b.is_full()) {
            self.0.push(RequestBlock::default());
        }
        self.0.last_mut().expect("a block").push(&a);
    }
}

fn workload() -> (Vec<RequestBlock>, usize) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/bench/tumbling-incr-zipf.toml");
    let config = Config::load(&path).expect("the bench config loads");
    let mut operator = config.build_operator();
    let states = operator.states().len();
    let mut blocks = Blocks(Vec::new());
    gadget::generate::generate(
        config.open_source().expect("the source opens"),
        operator.as_mut(),
        &mut blocks,
        Some(REQUESTS),
        &mut |_| {},
    )
    .expect("generation succeeds");
    (blocks.0, states)
}

fn tight_loop(c: &mut Criterion) {
    let (blocks, states) = workload();
    let requests: u64 = blocks.iter().map(|b| b.requests.len() as u64).sum();
    let mut group = c.benchmark_group("harness_overhead");
    group.throughput(Throughput::Elements(requests));
    group.sample_size(10);
    group.bench_function("memory store, tight loop", |b| {
        b.iter(|| {
            let mut store = MemoryStore::new(states);
            let mut value = Vec::new();
            let mut found = 0u64;
            for block in &blocks {
                for r in &block.requests {
                    if let Ok(Some(Some(_))) = issue(&mut store, block, r, &mut value) {
                        found += 1;
                    }
                }
            }
            store.flush().expect("flush");
            found
        })
    });
    group.finish();
}

criterion_group!(benches, tight_loop);
criterion_main!(benches);
