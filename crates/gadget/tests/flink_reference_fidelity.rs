//! Gadget against real Apache Flink 1.20: every recording in
//! `../shared/reference-traces/flink-1.20/` is regenerated from
//! `examples/flink-reference/<name>.toml` over the Borg trace and compared request by request
//! from the first request (the start-up of RocksDB timers included; keys renamed by first
//! appearance per state), as `gadget trace diff --from-start` does.

mod common;

use gadget::access::{Access, AccessSink, Op, TraceRecord};
use gadget::compare::{compare, Normalizer};
use gadget::config::Config;
use gadget::trace::open_trace;

/// The requests before the first event, byte for byte: `op state-name key-hex value-length`.
type StartUp = Vec<String>;

/// One start-up request as [`StartUp`] holds it.
fn start_up_line(record: &TraceRecord, states: &[String]) -> Option<String> {
    let TraceRecord::Access {
        op,
        state,
        key,
        value_len,
    } = record
    else {
        return None;
    };
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!(
        "{} {} {hex} {value_len}",
        op.name(),
        states[*state as usize]
    ))
}

/// The value lengths of the writes (put, merge, batch put) in order, which the normalized
/// comparison leaves out: a holistic window's elements are 21-25 bytes by event type.
fn written(record: &TraceRecord, out: &mut Vec<u32>) {
    if let TraceRecord::Access { op, value_len, .. } = record {
        if matches!(op, Op::Put | Op::Merge | Op::BatchPut) {
            out.push(*value_len);
        }
    }
}

/// Feeds generated accesses straight into a normalizer, keeping the start-up as it is.
struct NormalizingSink<'a> {
    normalizer: &'a mut Normalizer,
    states: &'a [String],
    start_up: StartUp,
    written: Vec<u32>,
}

impl NormalizingSink<'_> {
    fn push(&mut self, rec: TraceRecord) {
        if !self.normalizer.saw_events() {
            self.start_up.extend(start_up_line(&rec, self.states));
        }
        written(&rec, &mut self.written);
        self.normalizer.push(&rec, self.states);
    }
}

impl AccessSink for NormalizingSink<'_> {
    fn access(&mut self, a: Access<'_>) {
        self.push(TraceRecord::Access {
            op: a.op,
            state: a.state,
            key: a.key.to_vec(),
            value_len: a.value_len,
        });
    }
    fn event(&mut self, input: u8) {
        self.push(TraceRecord::Event { input });
    }
}

/// A trace as the test compares it: normalized, its start-up, its writes' value lengths.
type Compared = (Normalizer, StartUp, Vec<u32>);

fn generated(name: &str) -> (Compared, gadget::AccessCounts, Vec<String>) {
    let path = common::project_root().join(format!("examples/flink-reference/{name}.toml"));
    let config = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut op = config.build_operator();
    let states = op.states();
    let mut normalizer = Normalizer::from_start(&[]);
    let mut sink = NormalizingSink {
        normalizer: &mut normalizer,
        states: &states,
        start_up: Vec::new(),
        written: Vec::new(),
    };
    let out = gadget::generate::generate(
        config.open_source().unwrap(),
        op.as_mut(),
        &mut sink,
        None,
        &mut |_| {},
    )
    .unwrap();
    let start_up = std::mem::take(&mut sink.start_up);
    let written = std::mem::take(&mut sink.written);
    ((normalizer, start_up, written), out.counts, states)
}

fn recorded(shared: &std::path::Path, name: &str) -> Compared {
    let path = shared.join(format!("reference-traces/flink-1.20/{name}.tsv.gz"));
    let mut reader = open_trace(&path).unwrap();
    let mut n = Normalizer::from_start(&[]);
    let (mut start_up, mut writes) = (Vec::new(), Vec::new());
    while let Some(r) = reader.next_record().unwrap() {
        let r = r.to_record();
        if !n.saw_events() {
            start_up.extend(start_up_line(&r, reader.state_names()));
        }
        written(&r, &mut writes);
        n.push(&r, reader.state_names());
    }
    (n, start_up, writes)
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
        let ((gen, gen_start_up, gen_written), counts, states) = generated(name);
        let (flink, flink_start_up, flink_written) = recorded(&shared, name);
        // the start-up byte for byte (the normalized comparison renames keys): Flink's
        // timer service seeks to each key group's prefix with a zero byte appended
        assert_eq!(gen_start_up, flink_start_up, "{name}: the start-up");
        let rocksdb_timers = name.ends_with(".rocksdb-timers");
        // both queues: a commit and a seek per key group, or nothing on the heap
        assert_eq!(gen_start_up.len(), if rocksdb_timers { 512 } else { 0 });
        // what each write stores, in order
        let first = gen_written
            .iter()
            .zip(&flink_written)
            .position(|(g, f)| g != f);
        assert!(
            first.is_none() && gen_written.len() == flink_written.len(),
            "{name}: value lengths of the writes differ at write {first:?}: gadget {:?}, flink \
             {:?}",
            first.map(|i| gen_written[i]),
            first.map(|i| flink_written[i]),
        );
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
        // Flink's summary counts the start-up too, which Gadget issues as Flink does
        assert_eq!(ours, theirs, "{name}: requests by state and op");
    }
    println!(
        "Gadget vs Flink 1.20 on the Borg trace:\n{}",
        report.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
