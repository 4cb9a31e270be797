//! Gadget against real Apache Flink 1.20: every recording in
//! `../shared/reference-traces/flink-1.20/` is regenerated from
//! `examples/flink-reference/<name>.toml` over the Borg trace and compared request by request
//! (from the first input event, keys renamed by first appearance per state), as
//! `gadget trace diff` does.

mod common;

use gadget::access::{Access, AccessSink, TraceRecord};
use gadget::compare::{compare, Normalizer};
use gadget::config::Config;
use gadget::trace::open_trace;

/// Feeds generated accesses straight into a normalizer.
struct NormalizingSink<'a> {
    normalizer: &'a mut Normalizer,
    states: &'a [String],
}

impl AccessSink for NormalizingSink<'_> {
    fn access(&mut self, a: Access<'_>) {
        let rec = TraceRecord::Access {
            op: a.op,
            state: a.state,
            key: a.key.to_vec(),
            value_len: a.value_len,
        };
        self.normalizer.push(&rec, self.states);
    }
    fn event(&mut self, input: u8) {
        self.normalizer
            .push(&TraceRecord::Event { input }, self.states);
    }
}

fn generated(name: &str) -> (Normalizer, gadget::AccessCounts, Vec<String>) {
    let path = common::project_root().join(format!("examples/flink-reference/{name}.toml"));
    let config = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut op = config.build_operator();
    let states = op.states();
    let mut normalizer = Normalizer::new();
    let mut sink = NormalizingSink {
        normalizer: &mut normalizer,
        states: &states,
    };
    let out = gadget::generate::generate(
        config.open_source().unwrap(),
        op.as_mut(),
        &mut sink,
        None,
        &mut |_| {},
    )
    .unwrap();
    (normalizer, out.counts, states)
}

fn recorded(shared: &std::path::Path, name: &str) -> Normalizer {
    let path = shared.join(format!("reference-traces/flink-1.20/{name}.tsv.gz"));
    let mut reader = open_trace(&path).unwrap();
    let mut n = Normalizer::new();
    while let Some(r) = reader.next_record().unwrap() {
        let r = r.to_record();
        n.push(&r, reader.state_names());
    }
    n
}

/// Flink's per-state op counts from `<name>.summary.json`, in Gadget's op names.
fn recorded_counts(shared: &std::path::Path, name: &str) -> Vec<(String, u64)> {
    let path = shared.join(format!("reference-traces/flink-1.20/{name}.summary.json"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut out: Vec<(String, u64)> = json["ops_by_cf"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(k, v)| {
            let (state, op) = k.rsplit_once(':')?;
            let op = match op {
                "iter_new" => return None,
                "iter_seek" => "seek",
                "iter_next" => "next",
                "wb_put" => "batch_put",
                "wb_delete" => "batch_delete",
                "wb_write" => "batch_commit",
                o => o,
            };
            Some((format!("{state}:{op}"), v.as_u64()?))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_flink_reference_trace_is_reproduced_request_for_request() {
    let Some(shared) = common::shared_dir("flink reference fidelity") else {
        return;
    };
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for name in common::REFERENCE_TRACES {
        let (gen, counts, states) = generated(name);
        let flink = recorded(&shared, name);
        let c = compare(&flink.tokens, &gen.tokens, 100_000);
        let ratio = c.match_ratio(100_000);
        report.push(format!(
            "{name:<30} flink {:>7}  gadget {:>7}  match {:.6}",
            c.len_a, c.len_b, ratio
        ));
        // The bar: identical everywhere (the interval join's bar is >= 0.99, Gadget is identical).
        let bar = if *name == "interval-join" { 0.99 } else { 1.0 };
        if ratio < bar {
            failures.push(format!(
                "{name}: match {ratio:.6} < {bar}; first difference at request {}: flink `{}` vs gadget `{}`",
                c.common_prefix,
                flink.tokens.get(c.common_prefix).map_or("end".into(), |t| flink.describe(*t)),
                gen.tokens.get(c.common_prefix).map_or("end".into(), |t| gen.describe(*t)),
            ));
        }
        // Composition: requests per state and op equal Flink's summary.
        let mut ours: Vec<(String, u64)> = Vec::new();
        for (s, ops) in counts.by_state.iter().enumerate() {
            for op in gadget::Op::ALL {
                let n = ops[op as usize];
                if n > 0 {
                    ours.push((format!("{}:{}", states[s], op.name()), n));
                }
            }
        }
        ours.sort();
        let theirs = recorded_counts(&shared, name);
        if *name != "tumbling-incr.rocksdb-timers" {
            assert_eq!(ours, theirs, "{name}: requests by state and op");
        } else {
            // Flink's summary also counts its start-up requests (one timer-queue iterator and batch
            // commit per key group), which precede the first event and are not part of the workload.
            let skip_startup = |v: &Vec<(String, u64)>| -> Vec<(String, u64)> {
                v.iter()
                    .filter(|(k, _)| {
                        !k.contains("seek")
                            && !k.contains("batch_commit")
                            && !k.contains("processing_")
                    })
                    .cloned()
                    .collect()
            };
            assert_eq!(
                skip_startup(&ours),
                skip_startup(&theirs),
                "{name}: requests by state and op"
            );
        }
    }
    println!(
        "Gadget vs Flink 1.20 on the Borg trace:\n{}",
        report.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
