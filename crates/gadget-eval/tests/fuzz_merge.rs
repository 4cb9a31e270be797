//! Fuzzing of `gadget merge`: results files, valid and with extreme fields (histogram counts
//! up to what their encoding holds, `requests` up to u64::MAX, wall clocks at the end of
//! time, shards and subtasks no run could be), mutated at random, are merged alone and with a
//! valid shard of the same run, and the merged results are written as `merge` writes them.
//! Merging must give a value or an error, never a panic, within a memory bound; see
//! `crates/gadget/tests/fuzz/mod.rs` for the budget and how to replay a case.

#[path = "../../gadget/tests/fuzz/mod.rs"]
mod fuzz;

use std::collections::BTreeMap;

use gadget::access::Op;
use gadget_eval::export::{self, Json, Text};
use gadget_eval::measure::Recorder;
use gadget_eval::merge::{merge, parse_results, MergeOptions};
use gadget_results::context::{RunContext, WorkloadUsed};
use gadget_results::hdr::{self, Histogram, MAX_COUNT};
use gadget_results::host::Host;
use gadget_results::RunReport;
use gadget_results::WallClock;
use serde_json::{json, Value};

/// A time zero on the wall clock (2026-11-25).
const ZERO: u64 = 1_795_583_751_000_000_000;

/// The results of a shard with `seed` and `args` on its command line: `n` requests of three
/// ops over two states, one every ms.
fn shard(seed: u64, n: u64, args: &[&str]) -> RunReport {
    let mut r = Recorder::new(1_000_000_000, false, false);
    r.start(0);
    for i in 0..n {
        let x = (i + 1) * 2_654_435_761 + seed * 40_503;
        let latency = 1 + (x % 1_000) * 10u64.pow((x / 7 % 6) as u32);
        r.record(
            Op::ALL[(x % 3) as usize],
            latency,
            latency / 2 + 1,
            (i + 1) * 1_000_000,
        );
        r.record_state((x / 3 % 2) as usize, latency);
    }
    let end = (n + 1) * 1_000_000;
    r.finish(end);
    let seconds = end as f64 / 1e9;
    let (latency, service) = r.summary(seconds);
    let names = vec!["window-contents".to_string(), "lookup".to_string()];
    let stores = vec!["rocksdb".to_string(), "redis".to_string()];
    let gadget_eval::placed::Placed {
        per_state,
        per_store,
        ..
    } = gadget_eval::placed::parts(&r, seconds, &names, &stores, false);
    let mut command_line = vec!["gadget".to_string(), "run".to_string()];
    command_line.extend(args.iter().map(|a| a.to_string()));
    RunReport {
        gadget_version: "0.1.0".into(),
        store: "memory".into(),
        arrival: "constant 1000 req/s".into(),
        open_loop: true,
        target_rate: Some(1000.0),
        seed,
        value_compression_ratio: Some(0.5),
        partial: false,
        partial_reason: None,
        warmup_requests: 2,
        requests: n,
        seconds,
        throughput: n as f64 / seconds,
        sustained: Some(true),
        max_start_lag_ns: 10,
        producer_stalls: 1,
        producer_stall_ns: 100,
        emulated_ops: vec!["merge".into()],
        reads_found: 3,
        reads_empty: 4,
        bytes_read: 500,
        latency,
        service,
        latency_spectrum: r.spectra(),
        time_series: r.series.clone(),
        time_series_truncated: false,
        store_counters: BTreeMap::from([("blocks_read".to_string(), 7)]),
        per_state,
        per_store,
        instances: Vec::new(),
        context: Some(RunContext {
            label: None,
            command_line,
            started_at: "2026-11-25T05:15:51Z".into(),
            gadget_commit: None,
            workloads: vec![WorkloadUsed {
                kind: "config".into(),
                path: "workload.toml".into(),
                seed: Some(seed),
                limit: Some(1000),
                config: Some("seed = 1\n[ycsb]\nrecordcount = 1000\n".into()),
                bytes: None,
                states: names.clone(),
            }],
            store_settings: BTreeMap::from([("pipeline".to_string(), "1".to_string())]),
            store_libraries: Vec::new(),
            host: Host::default(),
        }),
        wall_clock: Some(WallClock {
            zero_unix_ns: ZERO,
            measure_start_ns: 0,
            measure_end_ns: end,
            interval_ns: 1_000_000_000,
        }),
        histograms: Some(gadget_results::RunHistograms {
            per_state: gadget_eval::placed::parts(&r, 1.0, &names, &stores, true).histograms,
            ..r.histograms()
        }),
        shards: Vec::new(),
    }
}

/// A histogram of Gadget's bounds holding `counts` of 1 µs, 1 ms and 1 s, encoded.
fn encoded(counts: [u64; 3]) -> String {
    let mut h: Histogram<u64> = Histogram::new_with_bounds(
        1,
        gadget_results::summary::HIGHEST_NS,
        gadget_results::summary::SIGNIFICANT_DIGITS,
    )
    .unwrap();
    for (value, count) in [1_000, 1_000_000, 1_000_000_000].into_iter().zip(counts) {
        h.record_n(value, count).unwrap();
    }
    hdr::encode(&h)
}

/// `r` as JSON, edited by `edit`.
fn edited(r: &RunReport, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v = serde_json::to_value(r).unwrap();
    edit(&mut v);
    serde_json::to_vec_pretty(&v).unwrap()
}

/// The latency and service time of one op holding `counts`, and `requests` as said.
fn holding(v: &mut Value, ops: &[(&str, [u64; 3])], requests: u64) {
    let list: Vec<Value> = ops
        .iter()
        .map(|(op, counts)| json!({"op": op, "hdr": encoded(*counts)}))
        .collect();
    v["histograms"]["latency"] = Value::from(list.clone());
    v["histograms"]["service"] = Value::from(list);
    v["requests"] = requests.into();
}

/// Valid results of seed 1 and edits of them to the extremes, as bytes.
fn seeds(a: &RunReport) -> Vec<Vec<u8>> {
    let half = MAX_COUNT / 2;
    vec![
        serde_json::to_vec_pretty(a).unwrap(),
        // consistent, but with any other shard beyond what a bucket counts
        edited(a, |v| {
            holding(v, &[("get", [MAX_COUNT - 1, 0, 0])], MAX_COUNT - 1);
            v["histograms"]["per_state"] = json!([]);
        }),
        // buckets adding up to u64::MAX − 1, and one past
        edited(a, |v| {
            holding(
                v,
                &[("get", [MAX_COUNT, 0, 0]), ("put", [0, MAX_COUNT, 0])],
                u64::MAX - 1,
            )
        }),
        edited(a, |v| {
            holding(v, &[("get", [half, half, 2]), ("put", [0, 0, 1])], u64::MAX)
        }),
        // service time and states counting otherwise than the latency
        edited(a, |v| {
            v["histograms"]["service"][0]["hdr"] = encoded([MAX_COUNT, 1, 0]).into();
            v["histograms"]["per_state"][1]["hdr"] = encoded([0, MAX_COUNT, MAX_COUNT]).into();
        }),
        // the end of time, an interval of 1 ns, every counter at its largest
        edited(a, |v| {
            v["wall_clock"] = json!({"zero_unix_ns": u64::MAX, "measure_start_ns": u64::MAX,
                "measure_end_ns": u64::MAX, "interval_ns": 1});
            for field in [
                "warmup_requests",
                "producer_stalls",
                "producer_stall_ns",
                "reads_found",
                "bytes_read",
                "max_start_lag_ns",
            ] {
                v[field] = u64::MAX.into();
            }
            v["store_counters"]["blocks_read"] = u64::MAX.into();
            v["seconds"] = 1e308.into();
            v["target_rate"] = 1e308.into();
        }),
        // parts no run could be, and the most there may be
        edited(a, |v| {
            let line = v["context"]["command_line"].as_array_mut().unwrap();
            line.extend(["--shard", "3/3"].map(Value::from));
        }),
        edited(a, |v| {
            let line = v["context"]["command_line"].as_array_mut().unwrap();
            line.extend(["--shard", "4095/4096", "--subtask", "7"].map(Value::from));
        }),
        edited(a, |v| {
            let line = v["context"]["command_line"].as_array_mut().unwrap();
            line.extend(["--parallelism", "32768", "--subtask", "32767"].map(Value::from));
        }),
        // several instances, one of them a copy of the partner's seed
        edited(a, |v| {
            let one = v.clone();
            let mut two = v.clone();
            two["seed"] = 2.into();
            v["instances"] = json!([one, two]);
        }),
    ]
}

/// JSON pointers to every value inside `v` (not `v` itself).
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        Value::Array(list) => {
            for (i, x) in list.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        _ => {}
    }
}

/// A count as large as they come, or small.
fn count(rng: &mut gadget::source::random::Rng) -> u64 {
    let picks = [0, 1, 7, MAX_COUNT / 2, MAX_COUNT - 1, MAX_COUNT];
    if rng.chance(0.2) {
        rng.below(MAX_COUNT)
    } else {
        picks[rng.below(picks.len() as u64) as usize]
    }
}

/// One to four edits of results' fields: numbers made extreme, histograms made to count up
/// to what their encoding holds (with `requests` to match, or not), command lines given
/// shards and subtasks, keys and array elements removed or repeated.
fn edit_fields(v: &mut Value, rng: &mut gadget::source::random::Rng) {
    let numbers: [Value; 10] = [
        0.into(),
        1.into(),
        u64::MAX.into(),
        (u64::MAX - 1).into(),
        MAX_COUNT.into(),
        (MAX_COUNT + 1).into(),
        (-1).into(),
        i64::MIN.into(),
        1e308.into(),
        0.5.into(),
    ];
    for _ in 0..1 + rng.below(4) {
        let mut all = Vec::new();
        pointers(v, String::new(), &mut all);
        if all.is_empty() {
            return;
        }
        let at = all[rng.below(all.len() as u64) as usize].clone();
        match rng.below(7) {
            0 | 1 => {
                if let Some(x) = v.pointer_mut(&at) {
                    *x = match x {
                        Value::String(_) if at.ends_with("/hdr") => {
                            encoded([count(rng), count(rng), count(rng)]).into()
                        }
                        _ => numbers[rng.below(numbers.len() as u64) as usize].clone(),
                    };
                }
            }
            2 => {
                // every op (and state) counting the same, with `requests` to match or not
                let hdr = encoded([count(rng), count(rng), count(rng)]);
                let ops = 1 + rng.below(3);
                let list: Vec<Value> = ["get", "put", "merge"][..ops as usize]
                    .iter()
                    .map(|op| json!({"op": op, "hdr": hdr}))
                    .collect();
                let held = Histogram::<u64>::len(&hdr::decode(&hdr).unwrap());
                let Some(map) = v.as_object_mut() else {
                    continue;
                };
                map.insert("requests".into(), held.saturating_mul(ops).into());
                if let Some(h) = map.get_mut("histograms").and_then(Value::as_object_mut) {
                    h.insert("latency".into(), Value::from(list.clone()));
                    h.insert("service".into(), Value::from(list));
                    if rng.chance(0.5) {
                        h.insert("per_state".into(), json!([]));
                    }
                }
            }
            3 => {
                let flags = [
                    format!("--shard={}/{}", count(rng) % 5000, count(rng) % 5000),
                    format!("--shard={}/3", rng.below(4)),
                    format!("--subtask={}", count(rng) % 40_000),
                    format!("--parallelism={}", count(rng) % 40_000),
                    "--shard=x/y".into(),
                ];
                let flag = flags[rng.below(flags.len() as u64) as usize].clone();
                if let Some(line) = v
                    .pointer_mut("/context/command_line")
                    .and_then(Value::as_array_mut)
                {
                    line.push(flag.into());
                }
            }
            4 => {
                // a key removed
                if let Some((parent, key)) = at.rsplit_once('/') {
                    if let Some(Value::Object(map)) = v.pointer_mut(parent) {
                        map.remove(&key.replace("~1", "/").replace("~0", "~"));
                    }
                }
            }
            _ => {
                // an array element repeated
                if let Some(Value::Array(list)) = v.pointer_mut(&at) {
                    if let Some(first) = list.first().cloned() {
                        for _ in 0..1 + rng.below(8) {
                            list.push(first.clone());
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn merging_any_results_gives_a_value_or_an_error_without_panic_in_bounded_memory() {
    let a = shard(1, 300, &[]);
    let partner = shard(2, 200, &[]);
    let seeds = seeds(&a);
    let options = MergeOptions::default();
    let merge_and_write = |inputs: Vec<(String, RunReport)>| {
        if let Ok(m) = merge(inputs, &options) {
            let _ = export::render(&Text, &m);
            let text = export::render(&Json, &m);
            let _ = m.warnings();
            // merged results read back, and refused as merged already
            if let Ok(back) = parse_results("merged.json", text.as_bytes()) {
                assert!(merge(vec![("merged.json".into(), back)], &options).is_err());
            }
        }
    };
    // alone, then before and after the partner (`which` picks one of the three)
    let merge_all = |bytes: &[u8], which: Option<u64>| {
        let Ok(r) = parse_results("fuzzed.json", bytes) else {
            return;
        };
        let p = ("partner.json".to_string(), partner.clone());
        let r = ("fuzzed.json".to_string(), r);
        let orders = [vec![r.clone()], vec![r.clone(), p.clone()], vec![p, r]];
        for (i, inputs) in orders.into_iter().enumerate() {
            if which.is_none_or(|w| w == i as u64) {
                merge_and_write(inputs);
            }
        }
    };
    let parsed: Vec<Value> = seeds
        .iter()
        .map(|s| serde_json::from_slice(s).unwrap())
        .collect();
    // each case merges its mutated bytes (which rarely stay JSON); one in ten also merges
    // a seed whose fields it edits, chosen and edited as the case's bytes say (so a case
    // replays alone). A merge takes tens of milliseconds in a debug build: HdrHistograms of
    // Gadget's bounds hold 34,000 counts, which decoding, adding and encoding each go over.
    let read = |bytes: &[u8]| {
        let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
        let mut rng = gadget::source::random::Rng::new(hash);
        merge_all(bytes, Some(rng.below(3)));
        if hash % 10 != 0 {
            return;
        }
        let mut v = parsed[rng.below(parsed.len() as u64) as usize].clone();
        edit_fields(&mut v, &mut rng);
        merge_all(&serde_json::to_vec(&v).unwrap(), Some(rng.below(3)));
    };
    // every seed merges or is refused as it is
    for seed in &seeds {
        merge_all(seed, None);
    }
    // each input's histograms (a quarter of a megabyte each, decoded), the merged ones and
    // their renderings: a fixed part and a few thousand bytes per input byte
    let bound = |len: usize| (64 << 20) + 4_000 * len;
    fuzz::fuzz("merged results", &seeds, bound, read);
}
