use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::measure::Recorder;
use gadget_results::context::{RunContext, WorkloadUsed};
use gadget_results::host::Host;
use gadget_results::OpHistogram;

const SECOND: u64 = 1_000_000_000;
/// A time zero on the wall clock (2026-11-25).
const ZERO: u64 = 1_795_583_751 * SECOND;

/// What a shard recorded: each request's op, latency and state (0 or 1), one every 1 ms.
fn recorder(requests: &[(Op, u64, usize)]) -> (Recorder, u64) {
    let mut r = Recorder::new(SECOND, false, false);
    r.start(0);
    for (i, &(op, latency, state)) in requests.iter().enumerate() {
        r.record(op, latency, latency / 2 + 1, (i as u64 + 1) * 1_000_000);
        r.record_state(state, latency);
    }
    let end = (requests.len() as u64 + 1) * 1_000_000;
    r.finish(end);
    (r, end)
}

fn states() -> (Vec<String>, Vec<String>) {
    (
        vec!["window-contents".into(), "lookup".into()],
        vec!["rocksdb".into(), "redis".into()],
    )
}

/// The results of a shard with `seed` that recorded `requests` from `zero_unix_ns` on.
fn shard(seed: u64, requests: &[(Op, u64, usize)], zero_unix_ns: u64) -> RunReport {
    let (r, end) = recorder(requests);
    let seconds = end as f64 / 1e9;
    let (latency, service) = r.summary(seconds);
    let (names, stores) = states();
    let crate::placed::Placed {
        per_state,
        per_store,
        ..
    } = crate::placed::parts(&r, seconds, &names, &stores, false);
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
        requests: requests.len() as u64,
        seconds,
        throughput: requests.len() as f64 / seconds,
        sustained: Some(true),
        max_start_lag_ns: seed * 10,
        producer_stalls: 1,
        producer_stall_ns: 100,
        emulated_ops: if seed == 2 {
            vec!["merge".into()]
        } else {
            vec![]
        },
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
            command_line: vec!["gadget".into(), "run".into()],
            started_at: "2026-11-25T05:15:51Z".into(),
            gadget_commit: None,
            workloads: vec![WorkloadUsed {
                kind: "config".into(),
                path: format!("/node-{seed}/workload.toml"),
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
            zero_unix_ns,
            measure_start_ns: 0,
            measure_end_ns: end,
            interval_ns: SECOND,
        }),
        histograms: Some(RunHistograms {
            per_state: crate::placed::parts(&r, 1.0, &names, &stores, true).histograms,
            ..r.histograms()
        }),
        shards: Vec::new(),
    }
}

/// Requests with latencies spread over six orders of magnitude, every op and state.
fn constructed(n: u64, salt: u64) -> Vec<(Op, u64, usize)> {
    (0..n)
        .map(|i| {
            let x = (i + 1) * 2_654_435_761 + salt * 40_503;
            let op = Op::ALL[(x % 3) as usize];
            let latency = 1 + (x % 1_000) * 10u64.pow((x / 7 % 6) as u32);
            (op, latency, (x / 3 % 2) as usize)
        })
        .collect()
}

fn merged(inputs: Vec<(&str, RunReport)>) -> Result<RunReport, MergeError> {
    merge(
        inputs
            .into_iter()
            .map(|(f, r)| (f.to_string(), r))
            .collect(),
        &MergeOptions::default(),
    )
}

/// The merged run's histograms equal, bucket for bucket, those of one recorder of every
/// request, and so do every percentile, minimum, maximum and mean derived from them.
fn assert_exact(shards: &[Vec<(Op, u64, usize)>]) {
    let inputs = shards
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("shard-{i}.json"), shard(i as u64 + 1, s, ZERO)))
        .collect();
    let m = merge(inputs, &MergeOptions::default()).unwrap();
    let everything: Vec<(Op, u64, usize)> = shards.iter().flatten().copied().collect();
    let (all, _) = recorder(&everything);
    let h = m.histograms.as_ref().unwrap();
    for (kind, list) in [("latency", &h.latency), ("service", &h.service)] {
        let ops: Vec<Op> = Op::ALL.into_iter().filter(|o| all.occurred(*o)).collect();
        assert_eq!(list.len(), ops.len(), "{kind}");
        for (o, op) in list.iter().zip(ops) {
            assert_eq!(o.op, op.name());
            let expected = all.op_histograms(op).unwrap();
            let expected = if kind == "latency" {
                expected.latency
            } else {
                expected.service
            };
            assert_eq!(hdr::decode(&o.hdr).unwrap(), expected, "{kind} of {}", o.op);
        }
    }
    let (latency, service) = all.summary(m.seconds);
    assert_eq!(m.latency, latency);
    assert_eq!(m.service, service);
    assert_eq!(m.latency_spectrum, all.spectra());
    let (names, stores) = states();
    let crate::placed::Placed {
        per_state,
        per_store,
        ..
    } = crate::placed::parts(&all, m.seconds, &names, &stores, false);
    assert_eq!(m.per_state, per_state);
    assert_eq!(m.per_store, per_store);
    assert_eq!(m.requests, everything.len() as u64);
}

#[test]
fn merged_histograms_are_the_histograms_of_all_the_requests() {
    assert_exact(&[constructed(5_000, 1), constructed(3_000, 2)]);
    assert_exact(&[
        constructed(1, 3),
        constructed(700, 4),
        constructed(0, 5),
        constructed(2_000, 6),
    ]);
    assert_exact(&[constructed(10, 7)]);
}

#[test]
fn the_merged_p99_lies_between_the_shards_and_is_the_p99_of_the_summed_histogram() {
    // one shard fast, the other slow
    let fast: Vec<(Op, u64, usize)> = (1..=1_000).map(|i| (Op::Get, 1_000 + i, 0)).collect();
    let slow: Vec<(Op, u64, usize)> = (1..=1_000)
        .map(|i| (Op::Get, 1_000_000 + i * 1_000, 0))
        .collect();
    let (a, b) = (shard(1, &fast, ZERO), shard(2, &slow, ZERO));
    let p99 = |r: &RunReport| r.latency.last().unwrap().p99_ns;
    let m = merged(vec![("a.json", a.clone()), ("b.json", b.clone())]).unwrap();
    assert!(
        p99(&a) <= p99(&m) && p99(&m) <= p99(&b),
        "{} {} {}",
        p99(&a),
        p99(&m),
        p99(&b)
    );
    let mut sum = histogram();
    for r in [&a, &b] {
        sum.add(hdr::decode(&r.histograms.as_ref().unwrap().latency[0].hdr).unwrap())
            .unwrap();
    }
    assert_eq!(p99(&m), sum.value_at_quantile(0.99));
    // the average of the two p99s would be far off: the merged p99 is the slow shard's 98th
    assert_ne!(p99(&m), (p99(&a) + p99(&b)) / 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_split_of_any_requests_merges_exactly(
        requests in prop::collection::vec((0usize..5, 1u64..u64::MAX, 0usize..2), 1..400),
        cuts in prop::collection::vec(0usize..400, 0..4),
    ) {
        let requests: Vec<(Op, u64, usize)> = requests
            .into_iter()
            .map(|(op, latency, state)| (Op::ALL[op], latency >> (latency % 64), state))
            .collect();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (requests.len() + 1)).collect();
        cuts.push(0);
        cuts.push(requests.len());
        cuts.sort_unstable();
        let shards: Vec<Vec<(Op, u64, usize)>> =
            cuts.windows(2).map(|w| requests[w[0]..w[1]].to_vec()).collect();
        assert_exact(&shards);
    }
}

#[test]
fn counts_add_up_and_throughput_is_over_the_wall_clock_span() {
    let a = shard(1, &constructed(1_000, 1), ZERO);
    // b started 2 s after a, on the wall clock
    let b = shard(2, &constructed(500, 2), ZERO + 2 * SECOND);
    let m = merged(vec![("a.json", a.clone()), ("b.json", b.clone())]).unwrap();
    assert_eq!(m.requests, 1_500);
    assert_eq!(m.warmup_requests, 4);
    assert_eq!((m.reads_found, m.reads_empty, m.bytes_read), (6, 8, 1_000));
    assert_eq!((m.producer_stalls, m.producer_stall_ns), (2, 200));
    assert_eq!(m.max_start_lag_ns, 20);
    assert_eq!(m.store_counters["blocks_read"], 14);
    assert_eq!(m.emulated_ops, ["merge"]);
    let clock = m.wall_clock.unwrap();
    assert_eq!(clock.zero_unix_ns, ZERO);
    let span = 2 * SECOND + b.wall_clock.unwrap().measure_end_ns;
    assert_eq!(clock.measure_end_ns - clock.measure_start_ns, span);
    assert_eq!(m.seconds, span as f64 / 1e9);
    assert_eq!(m.throughput, 1_500.0 / m.seconds);
    assert_eq!(m.target_rate, Some(2_000.0));
    assert_eq!(
        m.sustained,
        Some(false),
        "2.5 s for 1,500 requests at 2,000/s"
    );
    assert_eq!(m.arrival, "2 shards, each constant 1000 req/s");
    assert_eq!(m.seed, 1);
    // a ran its first second and a bit, b from 2 s on: the series on the wall clock
    let counts: Vec<u64> = m.time_series.iter().map(|i| i.all.ops).collect();
    assert_eq!(counts.iter().sum::<u64>(), 1_500);
    assert_eq!(counts, [999, 1, 500]);
    assert_eq!(m.time_series[2].start_s, 2.0);
    // every shard kept beside, without its histograms
    assert_eq!(m.shards.len(), 2);
    assert_eq!(m.shards[1].file, "b.json");
    assert_eq!(m.shards[1].results.histograms, None);
    assert_eq!(m.shards[1].results.requests, 500);
    let c = m.context.as_ref().unwrap();
    assert_eq!(c.workloads.len(), 2);
    assert_eq!(c.workloads[1].seed, Some(2));
    // it reads back as results, and analysis of it sees a run like any other
    let text = serde_json::to_string(&m).unwrap();
    let back = parse_results("m.json", text.as_bytes()).unwrap();
    assert_eq!((back.requests, back.shards.len()), (1_500, 2));
    assert_eq!(
        (back.histograms, back.wall_clock),
        (m.histograms, m.wall_clock)
    );
}

#[test]
fn a_partial_shard_makes_the_merge_partial_and_says_why() {
    let a = shard(1, &constructed(10, 1), ZERO);
    let mut b = shard(2, &constructed(10, 2), ZERO);
    b.partial = true;
    b.partial_reason = Some("the redis store failed".into());
    let m = merged(vec![("a.json", a), ("b.json", b)]).unwrap();
    assert!(m.partial);
    assert_eq!(
        m.partial_reason.as_deref(),
        Some("b.json: the redis store failed")
    );
}

/// A change to a shard's results.
type Change = Box<dyn Fn(&mut RunReport)>;

#[test]
fn results_of_different_runs_are_refused_naming_both_files_and_the_field() {
    let a = shard(1, &constructed(10, 1), ZERO);
    let cases: Vec<(&str, Change)> = vec![
        ("store", Box::new(|r| r.store = "rocksdb".into())),
        ("arrival", Box::new(|r| r.arrival = "closed loop".into())),
        (
            "context.workloads[0].config",
            Box::new(|r| {
                r.context.as_mut().unwrap().workloads[0].config = Some("seed = 2\n".into())
            }),
        ),
        (
            "context.store_settings.pipeline",
            Box::new(|r| {
                r.context
                    .as_mut()
                    .unwrap()
                    .store_settings
                    .insert("pipeline".into(), "8".into());
            }),
        ),
        (
            "wall_clock.interval_ns",
            Box::new(|r| r.wall_clock.as_mut().unwrap().interval_ns = SECOND / 10),
        ),
        (
            "context.workloads",
            Box::new(|r| {
                let w = r.context.as_ref().unwrap().workloads[0].clone();
                r.context.as_mut().unwrap().workloads.push(w);
            }),
        ),
    ];
    for (field, change) in cases {
        let mut b = shard(2, &constructed(10, 2), ZERO);
        change(&mut b);
        let e = merged(vec![("a.json", a.clone()), ("b.json", b)]).unwrap_err();
        let said = e.to_string();
        assert!(matches!(e, MergeError::DifferentRuns { .. }), "{said}");
        assert!(
            said.contains("a.json") && said.contains("b.json") && said.contains(field),
            "{field}: {said}"
        );
    }
}

#[test]
fn the_same_shard_twice_is_refused() {
    let a = shard(1, &constructed(10, 1), ZERO);
    let e = merged(vec![("a.json", a.clone()), ("copy.json", a.clone())]).unwrap_err();
    assert!(matches!(e, MergeError::Duplicate { .. }), "{e}");
    assert!(e.to_string().contains("seed 1"), "{e}");
    // a run of two instances (seeds 5 and 6) and a shard that ran seed 6 again
    let mut two = shard(5, &constructed(10, 1), ZERO);
    two.instances = vec![shard(5, &[], ZERO), shard(6, &[], ZERO)];
    let six = shard(6, &constructed(10, 1), ZERO);
    let e = merged(vec![("two.json", two), ("six.json", six)]).unwrap_err();
    assert!(e.to_string().contains("both ran seed 6"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.json");
    std::fs::write(&path, serde_json::to_vec(&a).unwrap()).unwrap();
    let same = dir.path().join(".").join("a.json");
    let e = merge_files(&[path, same], &MergeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("one file"), "{e}");
}

#[test]
fn results_that_cannot_be_merged_say_what_to_do() {
    let a = shard(1, &constructed(10, 1), ZERO);
    let mut old = shard(2, &constructed(10, 2), ZERO);
    old.histograms = None;
    let e = merged(vec![("a.json", a.clone()), ("old.json", old)]).unwrap_err();
    assert!(e.to_string().contains("old.json cannot be merged"), "{e}");
    assert!(e.to_string().contains("run the shard again"), "{e}");

    let mut old = shard(2, &constructed(10, 2), ZERO);
    old.wall_clock = None;
    let e = merged(vec![("a.json", a.clone()), ("old.json", old)]).unwrap_err();
    assert!(e.to_string().contains("wall-clock"), "{e}");

    let m = merged(vec![("a.json", a.clone())]).unwrap();
    let e = merged(vec![("m.json", m)]).unwrap_err();
    assert!(e.to_string().contains("merged results already"), "{e}");

    let mut damaged = shard(2, &constructed(10, 2), ZERO);
    damaged.histograms.as_mut().unwrap().latency[1].hdr = "HISTFAAAAB".into();
    let e = merged(vec![("a.json", a.clone()), ("d.json", damaged)]).unwrap_err();
    assert!(matches!(e, MergeError::BadField { .. }), "{e}");
    assert!(
        e.to_string().contains("d.json: `histograms.latency[1].hdr"),
        "{e}"
    );

    let mut edited = shard(2, &constructed(10, 2), ZERO);
    edited.requests += 1;
    let e = merged(vec![("a.json", a), ("e.json", edited)]).unwrap_err();
    assert!(e.to_string().contains("hold 10 requests"), "{e}");

    assert!(matches!(merged(Vec::new()), Err(MergeError::Nothing)));
}

#[test]
fn a_file_that_is_not_results_is_named_with_the_byte_where_it_breaks() {
    let text = b"{\n  \"store\": \"memory\",\n  \"arrival\": tru\n}";
    let e = parse_results("x.json", text).unwrap_err();
    let MergeError::NotResults { offset, file, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(file, "x.json");
    // the byte where `tru` stopped being `true`
    assert!(text[..*offset].ends_with(b"tru"), "{e}");
    assert!(e.to_string().contains(&format!("at byte {offset}")), "{e}");
    let e = parse_results("y.json", br#"{"store": "memory"}"#).unwrap_err();
    assert!(e.to_string().contains("missing field"), "{e}");
    let cut = &text[..20];
    let e = parse_results("w.json", cut).unwrap_err();
    assert!(e.to_string().contains("at byte 20"), "{e}");
    let e = parse_results("z.json", b"\xff\xfe").unwrap_err();
    assert!(
        e.to_string()
            .contains("z.json is not gadget run/replay results"),
        "{e}"
    );
    let e = read_results(Path::new("/no/such/results.json")).unwrap_err();
    assert!(
        e.to_string().contains("cannot read /no/such/results.json"),
        "{e}"
    );
}

/// `shard(…)` run with `args` on its command line.
fn with_args(mut r: RunReport, args: &[&str]) -> RunReport {
    let c = r.context.as_mut().unwrap();
    c.command_line.extend(args.iter().map(|a| a.to_string()));
    r
}

#[test]
fn the_parts_of_a_split_run_share_a_seed_and_each_comes_once() {
    let part = |i: u64, args: &[&str]| with_args(shard(7, &constructed(100, i), ZERO), args);
    // --shard I/N: one seed, every part once
    let m = merged(vec![
        ("s0.json", part(0, &["--shard", "0/3"])),
        ("s1.json", part(1, &["--shard=1/3"])),
        ("s2.json", part(2, &["--shard", "2/3"])),
    ])
    .unwrap();
    assert_eq!((m.requests, m.partial), (300, false));
    // a part missing: partial, and said
    let m = merged(vec![
        ("s0.json", part(0, &["--shard", "0/3"])),
        ("s2.json", part(2, &["--shard", "2/3"])),
    ])
    .unwrap();
    assert!(m.partial);
    assert_eq!(
        m.partial_reason.as_deref(),
        Some("shard 1/3 missing: the merge covers part of the run only")
    );
    // a part twice
    let e = merged(vec![
        ("s0.json", part(0, &["--shard", "0/3"])),
        ("again.json", part(1, &["--shard", "0/3"])),
    ])
    .unwrap_err();
    assert!(
        e.to_string().contains("both are shard 0/3 of seed 7"),
        "{e}"
    );
    // another split, another seed, a part and a whole
    for (other, field) in [
        (part(1, &["--shard", "1/4"]), "split into shards"),
        (
            with_args(shard(8, &constructed(100, 1), ZERO), &["--shard", "1/3"]),
            "seeds (one for all the parts of a run)",
        ),
        (part(1, &[]), "split into shards"),
    ] {
        let e = merged(vec![
            ("s0.json", part(0, &["--shard", "0/3"])),
            ("x.json", other),
        ])
        .unwrap_err();
        assert!(matches!(e, MergeError::DifferentRuns { .. }), "{e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
    // --subtask I of --parallelism P
    let m = merged(vec![
        (
            "t0.json",
            part(0, &["--parallelism", "2", "--subtask", "0"]),
        ),
        (
            "t1.json",
            part(1, &["--parallelism", "2", "--subtask", "1"]),
        ),
    ])
    .unwrap();
    assert!(!m.partial, "{:?}", m.partial_reason);
    let m = merged(vec![(
        "t1.json",
        part(1, &["--parallelism", "2", "--subtask", "1"]),
    )])
    .unwrap();
    assert_eq!(
        m.partial_reason.as_deref(),
        Some("subtask 0 missing: the merge covers part of the run only")
    );
    let e = merged(vec![
        ("t0.json", part(0, &["--subtask", "0"])),
        ("t0b.json", part(1, &["--subtask", "0"])),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("both are subtask 0"), "{e}");
    // shards of subtasks
    let m = merged(vec![
        ("a.json", part(0, &["--subtask", "0", "--shard", "0/2"])),
        ("b.json", part(1, &["--subtask", "0", "--shard", "1/2"])),
        ("c.json", part(2, &["--subtask", "1", "--shard", "0/2"])),
    ])
    .unwrap();
    assert_eq!(
        m.partial_reason.as_deref(),
        Some("shard 1/2 of subtask 1 missing: the merge covers part of the run only")
    );
}

#[test]
fn absurd_times_and_counts_are_merged_without_overflowing() {
    let a = shard(1, &constructed(10, 1), ZERO);
    let mut b = shard(2, &constructed(10, 2), ZERO);
    b.wall_clock = Some(WallClock {
        zero_unix_ns: u64::MAX,
        measure_start_ns: u64::MAX,
        measure_end_ns: u64::MAX,
        interval_ns: SECOND,
    });
    b.reads_found = u64::MAX;
    b.store_counters.insert("blocks_read".into(), u64::MAX);
    let m = merged(vec![("a.json", a), ("b.json", b)]).unwrap();
    assert_eq!(m.reads_found, u64::MAX);
    assert_eq!(m.store_counters["blocks_read"], u64::MAX);
    assert!(m.time_series_truncated);
    assert_eq!(m.time_series.len(), gadget_results::summary::MAX_INTERVALS);
}

/// `r` with one `get` histogram (latency and service alike) of `count` requests at 1 µs, and
/// `requests` to match.
fn holding(mut r: RunReport, count: u64) -> RunReport {
    let mut h = histogram();
    h.record_n(1_000, count).unwrap();
    let one = vec![OpHistogram {
        op: "get".into(),
        hdr: hdr::encode(&h),
    }];
    let histograms = r.histograms.as_mut().unwrap();
    histograms.latency = one.clone();
    histograms.service = one;
    histograms.per_state.clear();
    r.requests = count;
    r
}

#[test]
fn counts_that_add_up_beyond_what_a_histogram_holds_are_refused_naming_the_file() {
    // each file alone is consistent; together a bucket would count beyond i64::MAX, which
    // HdrHistogram's encoding cannot write (a panic in `hdr::encode` before)
    let a = holding(shard(1, &constructed(10, 1), ZERO), hdr::MAX_COUNT - 5);
    let b = holding(shard(2, &constructed(10, 2), ZERO), 10);
    let e = merged(vec![("a.json", a.clone()), ("b.json", b)]).unwrap_err();
    assert!(matches!(e, MergeError::BadField { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("b.json: `histograms.latency` brings the requests merged to")
            && text.contains("9223372036854775807"),
        "{text}"
    );
    // alone it merges, its counts kept
    let m = merged(vec![("a.json", a)]).unwrap();
    assert_eq!(m.requests, hdr::MAX_COUNT - 5);
    // a file whose buckets add up beyond u64::MAX says its count does not match
    let mut huge = holding(shard(3, &constructed(10, 3), ZERO), hdr::MAX_COUNT);
    let twice = huge.histograms.as_ref().unwrap().latency[0].clone();
    huge.histograms.as_mut().unwrap().latency.push(OpHistogram {
        op: "put".into(),
        ..twice.clone()
    });
    huge.histograms.as_mut().unwrap().service.push(OpHistogram {
        op: "put".into(),
        ..twice
    });
    huge.requests = u64::MAX;
    let e = merged(vec![("huge.json", huge)]).unwrap_err();
    assert!(e.to_string().contains("`histograms.latency` hold"), "{e}");
}

#[test]
fn service_time_and_per_state_histograms_are_checked_against_the_requests() {
    let a = shard(1, &constructed(10, 1), ZERO);
    // a service-time histogram edited to hold other counts than its op's latency
    let mut edited = shard(2, &constructed(10, 2), ZERO);
    let h = edited.histograms.as_mut().unwrap();
    h.service[0].hdr = holding(shard(2, &[], ZERO), 1_000_000)
        .histograms
        .unwrap()
        .latency[0]
        .hdr
        .clone();
    let op = h.service[0].op.clone();
    let e = merged(vec![("a.json", a.clone()), ("e.json", edited)]).unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "e.json: `histograms.service[0].hdr ({op})` holds 1000000"
        )),
        "{e}"
    );
    // one left out
    let mut edited = shard(2, &constructed(10, 2), ZERO);
    edited.histograms.as_mut().unwrap().service.pop();
    let e = merged(vec![("a.json", a.clone()), ("e.json", edited)]).unwrap_err();
    assert!(e.to_string().contains("`histograms.service` has no"), "{e}");
    // the states holding more requests than the run
    let mut edited = shard(2, &constructed(10, 2), ZERO);
    let h = edited.histograms.as_mut().unwrap();
    h.per_state[0].hdr = holding(shard(2, &[], ZERO), u64::from(u32::MAX))
        .histograms
        .unwrap()
        .latency[0]
        .hdr
        .clone();
    let e = merged(vec![("a.json", a), ("e.json", edited)]).unwrap_err();
    assert!(
        e.to_string()
            .contains("e.json: `histograms.per_state` hold 4294967"),
        "{e}"
    );
}

#[test]
fn a_part_no_run_could_have_been_is_refused_naming_the_file_and_what_is_allowed() {
    let part = |i: u64, args: &[&str]| with_args(shard(7, &constructed(100, i), ZERO), args);
    for (args, said) in [
        (&["--shard", "3/3"][..], "the index is not below the count"),
        (&["--shard", "5/3"], "the index is not below the count"),
        (&["--shard=0/0"], "the count is out of range"),
        (&["--shard", "x/3"], "not a whole number"),
        (&["--subtask", "2", "--parallelism", "2"], "from 0 to 1"),
        (&["--subtask", "-1"], "not a whole number from 0"),
        (&["--parallelism", "0", "--subtask", "0"], "from 1"),
        // (the subtasks missing were listed one by one: 4 billion of them)
        (
            &["--parallelism", "4294967295", "--subtask", "0"],
            "above the 32768 a job may have",
        ),
    ] {
        let e = merged(vec![
            ("s0.json", part(0, &["--shard", "0/3"])),
            ("bad.json", part(1, args)),
        ])
        .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, MergeError::BadField { .. }), "{args:?}: {text}");
        assert!(
            text.contains("bad.json: `context.command_line` says") && text.contains(said),
            "{args:?}: {text}"
        );
    }
    let e = merged(vec![("s.json", part(0, &["--shard", "3/3"]))]).unwrap_err();
    assert!(
        e.to_string()
            .contains("give INDEX/COUNT with 0 <= INDEX < COUNT"),
        "{e}"
    );
}
