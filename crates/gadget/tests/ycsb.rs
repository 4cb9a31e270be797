//! YCSB's core workload: its distributions (goodness-of-fit at fixed seeds), its operation
//! mix and op mapping (exact bookkeeping), its load phase, and its config errors.

mod common;

use std::collections::HashMap;
use std::path::Path;

use gadget::access::{Op, TraceRecord, VecSink};
use gadget::baseline::ycsb::{YcsbClient, YcsbOperation, YcsbSpec};
use gadget::baseline::ycsb_generators::{
    fnv_hash64, zeta, ScrambledZipfian, Zipfian, SCRAMBLED_ITEM_COUNT, SCRAMBLED_ZETAN,
    ZIPFIAN_CONSTANT,
};
use gadget::config::properties::Properties;
use gadget::config::{Config, ConfigError};
use gadget::source::random::Rng;

/// The requests (and events) a YCSB `.properties` text generates at `seed`.
fn generate(properties: &str, seed: u64) -> (Vec<TraceRecord>, YcsbClient) {
    let text = format!("workload=site.ycsb.workloads.CoreWorkload\n{properties}");
    let (spec, _) = YcsbSpec::from_properties(&Properties::parse_file(&text, Path::new("t")))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut client = YcsbClient::new(&spec, seed);
    let mut sink = VecSink::default();
    gadget::generate::generate(
        Box::new(spec.clock()),
        &mut client,
        &mut sink,
        None,
        &mut |_| {},
    )
    .unwrap();
    (sink.records, client)
}

/// The accesses only, as (op, key, value length).
fn accesses(records: &[TraceRecord]) -> Vec<(Op, &[u8], u32)> {
    records
        .iter()
        .filter_map(|r| match r {
            TraceRecord::Access {
                op, key, value_len, ..
            } => Some((*op, key.as_slice(), *value_len)),
            _ => None,
        })
        .collect()
}

/// The record number of an ordered key (`user123`).
fn number(key: &[u8]) -> i64 {
    std::str::from_utf8(&key[4..]).unwrap().parse().unwrap()
}

/// Record numbers of the reads (gets).
fn read_numbers(records: &[TraceRecord]) -> Vec<i64> {
    accesses(records)
        .into_iter()
        .filter(|(op, _, _)| *op == Op::Get)
        .map(|(_, k, _)| number(k))
        .collect()
}

/// Pearson's χ² of observed counts against expected counts.
fn chi_square(observed: &[f64], expected: &[f64]) -> f64 {
    observed
        .iter()
        .zip(expected)
        .map(|(o, e)| (o - e) * (o - e) / e)
        .sum()
}

/// The χ² value exceeded with probability 0.001 at `df` degrees of freedom
/// (Wilson–Hilferty, accurate to a few percent for df ≥ 2).
fn chi_square_critical(df: usize) -> f64 {
    let k = df as f64;
    let z = 3.090_232; // upper 0.1% point of the standard normal
    k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
}

fn assert_fits(name: &str, observed: &[f64], expected: &[f64]) {
    assert!(
        expected.iter().all(|e| *e >= 5.0),
        "{name}: bins too small for χ²"
    );
    let chi = chi_square(observed, expected);
    let critical = chi_square_critical(observed.len() - 1);
    assert!(
        chi < critical,
        "{name}: χ² = {chi:.1} above the 0.1% critical value {critical:.1} ({} bins)",
        observed.len()
    );
}

/// The exact distribution of YCSB's Zipfian method (Gray et al.) over `items` items:
/// `P(X <= k)`. The first two ranks are Zipf's law exactly; the rest follow the method's
/// closed-form approximation.
fn gray_cdf(items: f64, zetan: f64, k: i64) -> f64 {
    if k < 0 {
        return 0.0;
    }
    let theta = ZIPFIAN_CONSTANT;
    let zeta2 = 1.0 + 0.5f64.powf(theta);
    let eta = (1.0 - (2.0 / items).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
    let special_end = zeta2 / zetan;
    let u_below = 1.0 + (((k + 1) as f64 / items).powf(1.0 - theta) - 1.0) / eta;
    let special = if k == 0 { 1.0 / zetan } else { special_end };
    special + (u_below.min(1.0) - special_end).max(0.0)
}

fn gray_probability(items: f64, zetan: f64, k: i64) -> f64 {
    gray_cdf(items, zetan, k) - gray_cdf(items, zetan, k - 1)
}

#[test]
fn uniform_requests_cover_records_evenly() {
    let (records, _) = generate(
        "recordcount=100\noperationcount=100000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=uniform\ninsertorder=ordered\nphase=run\n",
        11,
    );
    let mut counts = vec![0.0; 100];
    for n in read_numbers(&records) {
        counts[n as usize] += 1.0;
    }
    assert_fits("uniform", &counts, &[1000.0; 100]);
}

#[test]
fn zipfian_rank_frequency_follows_ycsbs_method_and_zipfs_law() {
    let n = 1000u64;
    let draws = 300_000;
    let mut z = Zipfian::new(0, n as i64 - 1);
    let mut rng = Rng::new(5);
    let mut counts = vec![0.0; n as usize];
    for _ in 0..draws {
        counts[z.next(&mut rng) as usize] += 1.0;
    }
    let zetan = zeta(0, n, ZIPFIAN_CONSTANT, 0.0);
    // Goodness of fit against the method's exact distribution, every rank a bin.
    let expected: Vec<f64> = (0..n as i64)
        .map(|k| draws as f64 * gray_probability(n as f64, zetan, k))
        .collect();
    assert_fits("zipfian", &counts, &expected);
    // Against Zipf's law: ranks 0 and 1 exactly (within 4σ), and the rank-frequency slope on
    // log-log axes over ranks 10..500 is −θ = −0.99.
    for rank in 0..2 {
        let p = z.probability(rank);
        let sigma = (draws as f64 * p * (1.0 - p)).sqrt();
        let diff = (counts[rank as usize] - draws as f64 * p).abs();
        assert!(diff < 4.0 * sigma, "rank {rank}: {diff} off");
    }
    let (xs, ys): (Vec<f64>, Vec<f64>) = (10..500)
        .map(|r| (((r + 1) as f64).ln(), counts[r].max(1.0).ln()))
        .unzip();
    let mx = xs.iter().sum::<f64>() / xs.len() as f64;
    let my = ys.iter().sum::<f64>() / ys.len() as f64;
    let slope = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (x - mx) * (y - my))
        .sum::<f64>()
        / xs.iter().map(|x| (x - mx) * (x - mx)).sum::<f64>();
    assert!((slope + 0.99).abs() < 0.05, "log-log slope {slope}");
}

#[test]
fn scrambled_zipfian_ranks_follow_ycsbs_zipfian_over_ten_billion_items() {
    let draws = 200_000;
    let mut z = ScrambledZipfian::new(0, 999);
    let mut rng = Rng::new(6);
    let bins = 30;
    let mut counts = vec![0.0; bins + 1];
    for _ in 0..draws {
        let rank = z.next_rank(&mut rng);
        counts[(rank as usize).min(bins)] += 1.0;
    }
    let items = (SCRAMBLED_ITEM_COUNT + 1) as f64;
    let mut expected: Vec<f64> = (0..bins as i64)
        .map(|k| draws as f64 * gray_probability(items, SCRAMBLED_ZETAN, k))
        .collect();
    expected.push(draws as f64 - expected.iter().sum::<f64>());
    assert_fits("scrambled zipfian ranks", &counts, &expected);
}

#[test]
fn scrambled_zipfian_keys_are_the_ranks_hashed_onto_the_records() {
    // Workload C at 1000 records: the client's keys fit the rank distribution pushed through
    // FNV-64 modulo the key space (1001 items: YCSB adds one; draws past the last record
    // are redrawn), hashed again into key names.
    let n = 1000i64;
    let (records, _) = generate(
        "recordcount=1000\noperationcount=200000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=zipfian\nphase=run\n",
        12,
    );
    let by_key: HashMap<Vec<u8>, usize> = (0..n)
        .map(|i| (format!("user{}", fnv_hash64(i)).into_bytes(), i as usize))
        .collect();
    let mut counts = vec![0.0; n as usize];
    for (op, key, _) in accesses(&records) {
        assert_eq!(op, Op::Get);
        counts[by_key[key]] += 1.0;
    }
    // Item probabilities: the first million ranks exactly, the rest (about 46% of the mass,
    // ten million ranks per item) spread evenly.
    let scramble = ScrambledZipfian::new(0, n);
    let items = (SCRAMBLED_ITEM_COUNT + 1) as f64;
    let head = 1_000_000i64;
    let mut p = vec![0.0; n as usize + 1];
    for rank in 0..head {
        p[scramble.scramble(rank) as usize] += gray_probability(items, SCRAMBLED_ZETAN, rank);
    }
    let tail = 1.0 - gray_cdf(items, SCRAMBLED_ZETAN, head - 1);
    for q in &mut p {
        *q += tail / (n + 1) as f64;
    }
    let kept: f64 = p[..n as usize].iter().sum();
    let total: f64 = counts.iter().sum();
    let expected: Vec<f64> = p[..n as usize].iter().map(|q| total * q / kept).collect();
    assert_fits("scrambled zipfian keys", &counts, &expected);
    // The most popular record is the one rank 0 hashes to.
    let top = (0..n as usize)
        .max_by(|a, b| counts[*a].total_cmp(&counts[*b]))
        .unwrap();
    assert_eq!(top as i64, scramble.scramble(0));
}

#[test]
fn hotspot_sends_the_operation_fraction_to_the_data_fraction() {
    let ops = 100_000.0;
    let (records, _) = generate(
        "recordcount=1000\noperationcount=100000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=hotspot\nhotspotdatafraction=0.2\nhotspotopnfraction=0.8\ninsertorder=ordered\nphase=run\n",
        13,
    );
    let mut counts = vec![0.0; 1000];
    for n in read_numbers(&records) {
        counts[n as usize] += 1.0;
    }
    let hot: f64 = counts[..200].iter().sum();
    let sigma = (ops * 0.8 * 0.2f64).sqrt();
    assert!((hot - 0.8 * ops).abs() < 4.0 * sigma, "{hot} hot of {ops}");
    let expected: Vec<f64> = (0..1000)
        .map(|i| {
            if i < 200 {
                ops * 0.8 / 200.0
            } else {
                ops * 0.2 / 800.0
            }
        })
        .collect();
    assert_fits("hotspot", &counts, &expected);
}

#[test]
fn latest_favours_the_newest_records() {
    // Workload D: the newest record is the most read; offsets from the newest follow YCSB's
    // Zipfian over the records inserted so far (ζ grows with every insert).
    let (records, client) = generate(
        "recordcount=1000\noperationcount=100000\nreadproportion=0.95\nupdateproportion=0\ninsertproportion=0.05\nrequestdistribution=latest\ninsertorder=ordered\nphase=run\n",
        14,
    );
    let mut newest = 999i64;
    let mut zetan = zeta(0, 999, ZIPFIAN_CONSTANT, 0.0);
    let mut counted = 999u64;
    let (mut observed, mut expected) = ([0.0; 3], [0.0; 3]);
    let mut offsets = 0.0;
    for (op, key, _) in accesses(&records) {
        let n = number(key);
        match op {
            Op::Put => {
                assert_eq!(n, newest + 1, "inserts take the next record number");
                newest = n;
            }
            Op::Get => {
                let items = newest as u64;
                zetan = zeta(counted, items.max(counted), ZIPFIAN_CONSTANT, zetan);
                counted = counted.max(items);
                let d = newest - n;
                assert!((0..newest).contains(&d));
                offsets += d as f64;
                observed[(d as usize).min(2)] += 1.0;
                let p0 = 1.0 / zetan;
                let p1 = 0.5f64.powf(ZIPFIAN_CONSTANT) / zetan;
                expected[0] += p0;
                expected[1] += p1;
                expected[2] += 1.0 - p0 - p1;
            }
            other => panic!("workload D issued {other}"),
        }
    }
    assert_fits("latest", &observed, &expected);
    let reads = client.counts().run[YcsbOperation::Read as usize] as f64;
    assert!(
        offsets / reads < 0.25 * newest as f64,
        "mean offset {} of {newest} records",
        offsets / reads
    );
}

#[test]
fn sequential_walks_the_records_in_order() {
    let (records, _) = generate(
        "recordcount=50\noperationcount=120\nreadproportion=1\nupdateproportion=0\nrequestdistribution=sequential\ninsertorder=ordered\nphase=run\n",
        15,
    );
    let expected: Vec<i64> = (0..120).map(|i| i % 50).collect();
    assert_eq!(read_numbers(&records), expected);
}

#[test]
fn exponential_puts_the_percentile_within_the_fraction() {
    let (records, _) = generate(
        "recordcount=1000\noperationcount=50000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=exponential\ninsertorder=ordered\nphase=run\n",
        16,
    );
    let reads = read_numbers(&records);
    let range = 1000.0 * 0.857_142_857_1;
    let gamma = -(0.05f64).ln() / range;
    // offsets past the oldest record are redrawn: condition on offset < 1000
    let within = (1.0 - (-gamma * 857.0).exp()) / (1.0 - (-gamma * 1000.0).exp());
    let near = reads.iter().filter(|n| 999 - **n < 857).count() as f64;
    let total = reads.len() as f64;
    let sigma = (total * within * (1.0 - within)).sqrt();
    assert!(
        (near - total * within).abs() < 4.0 * sigma,
        "{near} of {total}, expected {}",
        total * within
    );
}

#[test]
fn operations_follow_the_proportions_and_map_onto_ops_exactly() {
    let (records, client) = generate(
        "recordcount=1000\noperationcount=50000\nreadproportion=0.2\nupdateproportion=0.2\ninsertproportion=0.2\nscanproportion=0.2\nreadmodifywriteproportion=0.2\nmaxscanlength=10\nfieldcount=4\nfieldlength=25\n",
        17,
    );
    let c = client.counts();
    assert_eq!(c.loaded, 1000);
    assert_eq!(c.run.iter().sum::<u64>(), 50_000);
    for op in YcsbOperation::ALL {
        let n = c.run[op as usize] as f64;
        let sigma = (50_000.0 * 0.2 * 0.8f64).sqrt();
        assert!((n - 10_000.0).abs() < 4.0 * sigma, "{}: {n}", op.name());
    }
    let mut by_op = HashMap::new();
    let mut scan_next = Vec::new();
    for (op, _, len) in accesses(&records) {
        *by_op.entry(op).or_insert(0u64) += 1;
        match op {
            Op::Put => assert_eq!(len, 100, "a put writes the whole record"),
            Op::Seek => scan_next.push(0u64),
            Op::Next => *scan_next.last_mut().unwrap() += 1,
            _ => assert_eq!(len, 0),
        }
    }
    let run = |op: YcsbOperation| c.run[op as usize];
    use YcsbOperation::*;
    assert_eq!(by_op[&Op::Get], run(Read) + run(ReadModifyWrite));
    assert_eq!(
        by_op[&Op::Put],
        c.loaded + run(Update) + run(Insert) + run(ReadModifyWrite)
    );
    assert_eq!(by_op[&Op::Seek], run(Scan));
    assert_eq!(by_op.len(), 4, "no deletes, merges or batches: {by_op:?}");
    // each scan: seek, then length − 1 nexts, the length uniform in [1, 10]
    assert!(scan_next.iter().all(|n| *n <= 9));
    let mean = scan_next.iter().sum::<u64>() as f64 / scan_next.len() as f64;
    assert!((mean - 4.5).abs() < 0.1, "mean nexts per scan {mean}");
    let events = records
        .iter()
        .filter(|r| matches!(r, TraceRecord::Event { .. }))
        .count();
    assert_eq!(events, 51_000, "one event per operation");
}

#[test]
fn a_single_operation_kind_is_all_there_is() {
    let (records, client) = generate(
        "recordcount=100\noperationcount=1000\nreadproportion=1\nupdateproportion=0\nrequestdistribution=zipfian\nphase=run\n",
        18,
    );
    assert_eq!(client.counts().run[YcsbOperation::Read as usize], 1000);
    assert!(accesses(&records).iter().all(|(op, _, _)| *op == Op::Get));
}

#[test]
fn load_phase_inserts_every_record_once() {
    let (records, client) = generate("recordcount=5000\noperationcount=1000\nphase=load\n", 19);
    let a = accesses(&records);
    assert_eq!(a.len(), 5000);
    assert_eq!(client.counts().loaded, 5000);
    assert_eq!(client.counts().run, [0; 5]);
    let mut keys: Vec<&[u8]> = Vec::new();
    for (op, key, len) in &a {
        assert_eq!(*op, Op::Put);
        assert_eq!(*len, 1000, "YCSB's default record: 10 fields of 100 bytes");
        keys.push(key);
    }
    keys.sort_unstable();
    let mut expected: Vec<Vec<u8>> = (0..5000)
        .map(|i| format!("user{}", fnv_hash64(i)).into_bytes())
        .collect();
    expected.sort_unstable();
    assert_eq!(keys, expected.iter().map(Vec::as_slice).collect::<Vec<_>>());
    // insertstart/insertcount load a slice of the records, in order
    let (records, _) = generate(
        "recordcount=100\ninsertstart=40\ninsertcount=10\ninsertorder=ordered\nzeropadding=4\nphase=load\n",
        19,
    );
    let keys: Vec<&[u8]> = accesses(&records).into_iter().map(|(_, k, _)| k).collect();
    let expected: Vec<String> = (40..50).map(|i| format!("user{i:04}")).collect();
    assert_eq!(
        keys,
        expected.iter().map(|s| s.as_bytes()).collect::<Vec<_>>()
    );
}

#[test]
fn the_seed_decides_everything() {
    let props = "recordcount=200\noperationcount=2000\nreadproportion=0.5\nupdateproportion=0.3\nscanproportion=0.2\nmaxscanlength=5\nrequestdistribution=zipfian\nfieldlengthdistribution=uniform\n";
    assert_eq!(generate(props, 3).0, generate(props, 3).0);
    assert_ne!(generate(props, 3).0, generate(props, 4).0);
}

/// The example configs and YCSB's workload files describe the same workloads.
#[test]
fn examples_match_ycsbs_workload_files() {
    let root = common::project_root();
    for w in ["a", "b", "c", "d", "e", "f"] {
        let toml = root.join(format!("examples/ycsb/workload{w}.toml"));
        let props = root.join(format!("crates/gadget/tests/data/ycsb/workload{w}"));
        let run = |config: Config| {
            let mut op = config.build_operator();
            let mut sink = VecSink::default();
            gadget::generate::generate(
                config.open_source().unwrap(),
                op.as_mut(),
                &mut sink,
                None,
                &mut |_| {},
            )
            .unwrap();
            sink.records
        };
        let a = Config::load(&toml).unwrap_or_else(|e| panic!("{e}"));
        let mut b = Config::load(&props).unwrap_or_else(|e| panic!("{e}"));
        assert!(a.warnings.is_empty() && b.warnings.is_empty());
        b.seed = a.seed;
        assert_eq!(run(a), run(b), "workload {w}");
    }
}

fn toml_error(text: &str) -> String {
    match Config::parse(text, Path::new("w.toml")) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn config_errors_name_file_line_key_and_what_is_allowed() {
    let e = toml_error("seed = 1\n[ycsb]\nrecordcount = 10\nrequestdistribution = \"pareto\"\n");
    assert!(e.starts_with("w.toml:4: `requestdistribution`"), "{e}");
    assert!(
        e.contains("uniform, zipfian, latest, hotspot, sequential, exponential"),
        "{e}"
    );
    let e = toml_error("[ycsb]\nrecordcount = -5\n");
    assert!(e.starts_with("w.toml:2: `recordcount`"), "{e}");
    assert!(e.contains("allowed: [1, 2147483647]"), "{e}");
    let e = toml_error("[ycsb]\nrecordcount = [1]\n");
    assert!(
        e.contains("`ycsb.recordcount`: must be a string, a number"),
        "{e}"
    );
    let e = toml_error("[ycsb]\nrocksdb.dir = \"/tmp\"\n");
    assert!(
        e.starts_with("w.toml:2: `rocksdb.dir`: unknown YCSB property"),
        "{e}"
    );
    let e = toml_error("[ycsb]\nreadproportion = 0\nupdateproportion = 0\n");
    assert!(e.contains("every operation proportion is 0"), "{e}");
    let e = toml_error("[ycsb]\nrecordcount = 1\nrequestdistribution = \"latest\"\n");
    assert!(e.contains("latest needs recordcount of at least 2"), "{e}");
    let e =
        toml_error("[ycsb]\nrequestdistribution = \"exponential\"\nexponential.percentile = 100\n");
    assert!(e.contains("`exponential.percentile`"), "{e}");
    let e = toml_error("[ycsb]\nproperties = \"no-such-file\"\n");
    assert!(e.contains("`ycsb.properties`: cannot read"), "{e}");
    let e = toml_error("[ycsb]\n[operator]\ntype = \"tumbling\"\nsize = 5\n");
    assert!(
        e.contains("a [ycsb] workload has no source, operator"),
        "{e}"
    );
    let e = toml_error("[ycsb]\ninsertorder = \"random\"\n");
    assert!(e.contains("use one of: hashed, ordered"), "{e}");
    let e = toml_error("[ycsb]\nphase = \"warmup\"\n");
    assert!(e.contains("use one of: load, run, both"), "{e}");
}

#[test]
fn ycsb_files_report_their_lines_and_overrides_report_themselves() {
    let file = "# a comment\nworkload=site.ycsb.workloads.CoreWorkload\nrecordcount=lots\n";
    let e = Config::parse(file, Path::new("workloadx"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("workloadx:3: `recordcount`: `lots` is not a whole number"),
        "{e}"
    );
    let file = "workload=site.ycsb.workloads.TimeSeriesWorkload\n";
    let e = Config::parse(file, Path::new("ts"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Gadget implements site.ycsb.workloads.CoreWorkload"),
        "{e}"
    );
    // YCSB's measurement and client properties change no access: a warning, not an error
    let file =
        "workload=site.ycsb.workloads.CoreWorkload\nthreadcount=8\nmeasurementtype=hdrhistogram\n";
    let c = Config::parse(file, Path::new("w")).unwrap();
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(c.warnings[0].contains("`threadcount`"));
    // -p overrides win over the file and are named as overrides when wrong
    let file = "workload=site.ycsb.workloads.CoreWorkload\nrecordcount=10\n";
    let over = |o: &[&str]| {
        let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
        Config::parse_with_overrides(file, Path::new("w"), &o)
    };
    let c = over(&["recordcount=20", "phase=load"]).unwrap();
    assert_eq!(c.json["ycsb"]["recordcount"], "20");
    let e = over(&["recordcount=0"]).unwrap_err();
    assert!(matches!(e, ConfigError::Override { .. }));
    assert!(
        e.to_string()
            .starts_with("-p recordcount: 0 is out of range"),
        "{e}"
    );
    let e = over(&["recordcount"]).unwrap_err().to_string();
    assert!(e.contains("write an override as key=value"), "{e}");
    let streaming = "[source]\ntype = \"synthetic\"\nkey_space = 3\n[source.keys]\ndistribution = \"uniform\"\n[source.gaps]\ndistribution = \"constant\"\nvalue = 1\n[operator]\ntype = \"aggregation\"\n";
    let e = Config::parse_with_overrides(streaming, Path::new("s.toml"), &["a=1".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("s.toml is not a YCSB workload"), "{e}");
}
