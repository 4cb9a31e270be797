//! Generation throughput: synthetic Zipf keys through tumbling and sliding incremental windows,
//! and YCSB workload A (load and run phases), into a counting sink and into the binary trace
//! writer (discarding its bytes).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gadget::access::AccessCounts;
use gadget::config::Config;
use gadget::trace::{BinaryTraceWriter, TraceHeader};

const REQUESTS: u64 = 1_000_000;

fn config(kind: &str, timers: &str) -> Config {
    let slide = if kind == "sliding" {
        "slide = 1000"
    } else {
        ""
    };
    let text = format!(
        r#"seed = 42
[source]
type = "synthetic"
key_space = 100000
[source.keys]
distribution = "zipf"
s = 0.99
[source.gaps]
distribution = "exponential"
rate = 10.0
[operator]
type = "{kind}"
size = 5000
{slide}
timers = "{timers}"
"#
    );
    Config::parse(&text, std::path::Path::new("bench.toml")).expect("valid bench config")
}

/// YCSB-A as shipped in `examples/ycsb/`, a million records and a million operations.
fn ycsb_a() -> Config {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ycsb/workloada.toml");
    let overrides = [
        "recordcount=1000000".to_string(),
        "operationcount=1000000".to_string(),
    ];
    Config::load_with_overrides(&path, &overrides).expect("valid YCSB-A example")
}

/// KVBench-II as shipped in `examples/kvbench/`, a million operations (a million requests:
/// inserts, updates, point deletes and empty point queries are one request each).
fn kvbench_ii() -> Config {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/kvbench/kvbench-2.toml");
    let text = std::fs::read_to_string(&path)
        .expect("the KVBench-II example")
        .replace("operations = 100000", "operations = 1000000");
    Config::parse(&text, &path).expect("valid KVBench-II example")
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("generate");
    group.throughput(Throughput::Elements(REQUESTS));
    group.sample_size(10);
    let mut workloads: Vec<(String, Config)> = Vec::new();
    for kind in ["tumbling", "sliding"] {
        for timers in ["heap", "rocksdb"] {
            workloads.push((format!("{kind}-incr/{timers}-timers"), config(kind, timers)));
        }
    }
    workloads.push(("ycsb-a".to_string(), ycsb_a()));
    workloads.push(("kvbench-ii".to_string(), kvbench_ii()));
    for (id, cfg) in &workloads {
        let kind = cfg.operator_name.as_str();
        group.bench_function(BenchmarkId::new("count", id), |b| {
            b.iter(|| {
                let mut op = cfg.build_operator();
                let mut sink = AccessCounts::default();
                gadget::generate::generate(
                    cfg.open_source().unwrap(),
                    op.as_mut(),
                    &mut sink,
                    Some(REQUESTS),
                    &mut |_| {},
                )
                .unwrap()
            })
        });
        group.bench_function(BenchmarkId::new("binary", id), |b| {
            b.iter(|| {
                let mut op = cfg.build_operator();
                let header = TraceHeader::new(kind, op.states(), Some(42), serde_json::Value::Null);
                let mut w = BinaryTraceWriter::new(std::io::sink(), &header).unwrap();
                gadget::generate::generate(
                    cfg.open_source().unwrap(),
                    op.as_mut(),
                    &mut w,
                    Some(REQUESTS),
                    &mut |_| {},
                )
                .unwrap();
                w.finish(gadget::trace::TraceFooter::new(true)).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
