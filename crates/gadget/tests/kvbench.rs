//! KVBench: exact bookkeeping (updates, non-empty queries and deletes hit existing keys, empty
//! queries never do, range deletes remove exactly what they cover, thresholds hold), the
//! distributions' index mapping (chi-square at fixed seeds), preloading, presets, and config
//! errors.

use std::collections::BTreeSet;
use std::path::Path;

use gadget::access::{Op, TraceRecord, VecSink};
use gadget::baseline::kvbench::{
    KvbenchClient, KvbenchOperation, KvbenchSpec, Preload, Preset, Thresholds,
};
use gadget::baseline::kvbench_generators::{IndexDistribution, IndexSampler, Pick};
use gadget::baseline::ycsb::Phase;
use gadget::config::{Config, ConfigError, OperatorConfig};
use gadget::source::random::Rng;

type Key = Vec<u8>;

/// The accesses of one operation, as (op, key, value length).
fn step(client: &mut KvbenchClient) -> Vec<(Op, Key, u32)> {
    let mut sink = VecSink::default();
    client.next_operation(&mut sink);
    sink.records
        .into_iter()
        .map(|r| match r {
            TraceRecord::Access {
                op, key, value_len, ..
            } => (op, key, value_len),
            other => panic!("an operation issued a marker: {other:?}"),
        })
        .collect()
}

/// A workload with every operation kind and every distribution.
fn mixed() -> KvbenchSpec {
    KvbenchSpec {
        inserts: 3000,
        updates: 1500,
        point_deletes: 400,
        range_deletes: 40,
        range_delete_selectivity: 0.005,
        point_queries: 2000,
        empty_query_fraction: 0.3,
        range_queries: 60,
        range_query_selectivity: 0.01,
        update_distribution: IndexDistribution::Zipfian { alpha: 1.1 },
        existing_query_distribution: IndexDistribution::Normal {
            mean: 0.3,
            stddev: 0.2,
        },
        empty_query_distribution: IndexDistribution::Beta {
            alpha: 0.5,
            beta: 1.0,
        },
        insert_distribution: IndexDistribution::Zipfian { alpha: 1.0 },
        thresholds: Thresholds {
            update: 0.2,
            point_delete: 0.3,
            range_delete: 0.6,
            point_query: 0.5,
            range_query: 0.7,
        },
        ..KvbenchSpec::default()
    }
}

/// Replays `spec` against a model of the store and checks every operation's keys against it.
/// Returns the inserts done when each operation kind first ran.
fn check_bookkeeping(spec: &KvbenchSpec, seed: u64) -> [Option<u64>; 7] {
    let mut client = KvbenchClient::new(spec, seed);
    // Without a load phase, the preloaded keys exist from the start.
    let mut model: BTreeSet<Key> = if spec.load_operations() == 0 {
        client.existing_keys().map(<[u8]>::to_vec).collect()
    } else {
        BTreeSet::new()
    };
    let mut ever = model.clone();
    let mut first_at = [None; 7];
    let mut inserted = 0u64;
    let value = spec.value_size();
    let total = spec.load_operations() + spec.run_operations();
    for _ in 0..total {
        let accesses = step(&mut client);
        let Some(operation) = client.last_operation() else {
            // a load insert
            assert_eq!(accesses.len(), 1);
            let (op, key, len) = &accesses[0];
            assert_eq!((*op, *len), (Op::Put, value));
            assert!(model.insert(key.clone()), "the preload repeats a key");
            ever.insert(key.clone());
            continue;
        };
        first_at[operation as usize].get_or_insert(inserted);
        match operation {
            KvbenchOperation::Insert => {
                let [(Op::Put, key, len)] = &accesses[..] else {
                    panic!("{accesses:?}")
                };
                assert_eq!(*len, value);
                assert!(!ever.contains(key), "an insert of a key that existed");
                model.insert(key.clone());
                ever.insert(key.clone());
                inserted += 1;
            }
            KvbenchOperation::Update => {
                let [(Op::Put, key, len)] = &accesses[..] else {
                    panic!("{accesses:?}")
                };
                assert_eq!(*len, value);
                assert!(model.contains(key), "an update of a missing key");
            }
            KvbenchOperation::PointDelete => {
                let [(Op::Delete, key, 0)] = &accesses[..] else {
                    panic!("{accesses:?}")
                };
                assert!(model.remove(key), "a delete of a missing key");
            }
            KvbenchOperation::ExistingPointQuery => {
                let [(Op::Get, key, 0)] = &accesses[..] else {
                    panic!("{accesses:?}")
                };
                assert!(model.contains(key), "a non-empty query of a missing key");
            }
            KvbenchOperation::EmptyPointQuery => {
                let [(Op::Get, key, 0)] = &accesses[..] else {
                    panic!("{accesses:?}")
                };
                assert!(!ever.contains(key), "an empty query of a key that existed");
            }
            KvbenchOperation::RangeQuery | KvbenchOperation::RangeDelete => {
                let expected_op = if operation == KvbenchOperation::RangeQuery {
                    Op::RangeQuery
                } else {
                    Op::RangeDelete
                };
                let [(op, key, start_len)] = &accesses[..] else {
                    panic!("{accesses:?}")
                };
                assert_eq!(*op, expected_op);
                let (start, end) = key.split_at(*start_len as usize);
                let selectivity = if operation == KvbenchOperation::RangeQuery {
                    spec.range_query_selectivity
                } else {
                    spec.range_delete_selectivity
                };
                let m = ((selectivity * model.len() as f64) as usize).clamp(1, model.len());
                assert!(model.contains(start), "a range starting at a missing key");
                let expected: Vec<Key> = model.range(start.to_vec()..).take(m).cloned().collect();
                assert_eq!(expected.len(), m, "the range runs past the last key");
                let covered: Vec<Key> =
                    model.range(start.to_vec()..end.to_vec()).cloned().collect();
                assert_eq!(covered, expected, "the range covers exactly m keys");
                if operation == KvbenchOperation::RangeDelete {
                    for k in &covered {
                        model.remove(k);
                    }
                }
            }
        }
    }
    let counts = client.counts();
    assert_eq!(counts.stuck, 0);
    assert_eq!(
        counts.run,
        [
            spec.inserts,
            spec.updates,
            spec.point_deletes,
            spec.range_deletes,
            spec.point_queries - spec.empty_queries(),
            spec.empty_queries(),
            spec.range_queries
        ]
    );
    let live: BTreeSet<Key> = client.existing_keys().map(<[u8]>::to_vec).collect();
    assert_eq!(live, model, "the generator's key set is the store's");
    for k in &model {
        assert!(client.exists(k));
    }
    for k in client.empty_query_keys() {
        assert!(!ever.contains(k));
    }
    first_at
}

#[test]
fn every_operation_targets_the_keys_kvbench_promises_and_thresholds_hold() {
    let spec = mixed();
    for seed in [1, 2, 3] {
        let first_at = check_bookkeeping(&spec, seed);
        let t = spec.thresholds;
        let i = spec.inserts as f64;
        for (operation, threshold) in [
            (KvbenchOperation::Update, t.update),
            (KvbenchOperation::PointDelete, t.point_delete),
            (KvbenchOperation::RangeDelete, t.range_delete),
            (KvbenchOperation::ExistingPointQuery, t.point_query),
            (KvbenchOperation::EmptyPointQuery, t.point_query),
            (KvbenchOperation::RangeQuery, t.range_query),
        ] {
            let at = first_at[operation as usize].expect("every kind runs") as f64;
            assert!(
                at >= threshold * i,
                "{operation:?} started after {at} inserts, before its threshold {threshold} × {i}"
            );
            // Interleaved, not sequential: every kind starts before the inserts end.
            assert!(at < i, "{operation:?} only started after every insert");
        }
    }
}

#[test]
fn preloaded_workloads_keep_exact_bookkeeping() {
    for phase in [Phase::Both, Phase::Run] {
        let spec = KvbenchSpec {
            preload: Preload::Generate(2000),
            phase,
            ..mixed()
        };
        check_bookkeeping(&spec, 7);
    }
}

#[test]
fn zero_thresholds_start_everything_with_the_first_insert_and_one_thresholds_wait_for_the_last() {
    let spec = KvbenchSpec {
        thresholds: Thresholds {
            update: 0.0,
            point_delete: 1.0,
            range_delete: 1.0,
            point_query: 0.0,
            range_query: 1.0,
        },
        ..mixed()
    };
    let first_at = check_bookkeeping(&spec, 11);
    let update = first_at[KvbenchOperation::Update as usize].unwrap();
    assert!(
        (1..100).contains(&update),
        "first update after {update} inserts"
    );
    assert_eq!(
        first_at[KvbenchOperation::PointDelete as usize],
        Some(spec.inserts)
    );
    assert_eq!(
        first_at[KvbenchOperation::RangeDelete as usize],
        Some(spec.inserts)
    );
}

#[test]
fn presets_follow_table_5() {
    let counts = |p: Preset| {
        let spec = p.spec(1000);
        let mut client = KvbenchClient::new(&spec, 3);
        let mut sink = VecSink::default();
        for _ in 0..spec.load_operations() + spec.run_operations() {
            client.next_operation(&mut sink);
        }
        (spec, client.counts())
    };
    use KvbenchOperation::*;
    let expect = |p: Preset, loaded: u64, ops: &[(KvbenchOperation, u64)]| {
        let (spec, c) = counts(p);
        assert_eq!(c.loaded, loaded, "{p:?}");
        assert_eq!(c.stuck, 0, "{p:?}");
        let mut run = [0; 7];
        for &(op, n) in ops {
            run[op as usize] = n;
        }
        assert_eq!(c.run, run, "{p:?}");
        spec
    };
    let i = expect(
        Preset::I,
        1000,
        &[(ExistingPointQuery, 200), (EmptyPointQuery, 800)],
    );
    assert!(matches!(
        i.empty_query_distribution,
        IndexDistribution::Beta { .. }
    ));
    expect(
        Preset::II,
        0,
        &[
            (Insert, 500),
            (PointDelete, 100),
            (EmptyPointQuery, 150),
            (Update, 250),
        ],
    );
    let iii = expect(
        Preset::III,
        1000,
        &[
            (Update, 500),
            (ExistingPointQuery, 250),
            (EmptyPointQuery, 250),
        ],
    );
    assert!(matches!(
        iii.update_distribution,
        IndexDistribution::Zipfian { .. }
    ));
    expect(Preset::IV, 1000, &[(Update, 500), (RangeDelete, 500)]);
    let v = expect(Preset::V, 0, &[(Insert, 950), (ExistingPointQuery, 50)]);
    assert!(matches!(
        v.insert_distribution,
        IndexDistribution::Zipfian { .. }
    ));
}

#[test]
fn generation_is_deterministic_by_seed() {
    let trace = |seed| {
        let spec = mixed();
        let mut client = KvbenchClient::new(&spec, seed);
        let mut sink = VecSink::default();
        for _ in 0..spec.operations() {
            client.next_operation(&mut sink);
        }
        sink.records
    };
    assert_eq!(trace(5), trace(5));
    assert_ne!(trace(5), trace(6));
}

// ---------------------------------------------------------------------------------------------
// Distributions
// ---------------------------------------------------------------------------------------------

/// Pearson's chi-square statistic and its degrees of freedom; cells expecting fewer than 5
/// draws are pooled into one.
fn chi_square(observed: &[u64], expected_probability: &[f64]) -> (f64, usize) {
    let n = observed.iter().sum::<u64>() as f64;
    let (mut stat, mut cells) = (0.0, 0);
    let (mut pooled_o, mut pooled_e) = (0.0, 0.0);
    for (&o, &p) in observed.iter().zip(expected_probability) {
        let e = p * n;
        if e < 5.0 {
            pooled_o += o as f64;
            pooled_e += e;
        } else {
            stat += (o as f64 - e).powi(2) / e;
            cells += 1;
        }
    }
    if pooled_e >= 5.0 {
        stat += (pooled_o - pooled_e).powi(2) / pooled_e;
        cells += 1;
    } else {
        assert!(
            pooled_o < 20.0,
            "{pooled_o} draws where {pooled_e} were expected"
        );
    }
    (stat, cells - 1)
}

/// The chi-square critical value at p = 0.001 for `df` degrees of freedom (Wilson–Hilferty).
fn chi_square_critical(df: usize) -> f64 {
    let k = df as f64;
    let z = 3.090_232; // the standard normal's 0.999 quantile
    k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
}

/// The standard normal CDF (Abramowitz and Stegun 7.1.26, error below 1.5e-7).
fn phi(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    0.5 * (1.0 + if x >= 0.0 { erf } else { -erf })
}

/// Sorted indices drawn by `d` among `n`, bucketed into `buckets` equal ranges.
fn sorted_histogram(d: IndexDistribution, n: u64, buckets: u64, draws: usize) -> Vec<u64> {
    let mut sampler = IndexSampler::new(d);
    let mut rng = Rng::new(42);
    let mut h = vec![0u64; buckets as usize];
    for _ in 0..draws {
        let Pick::Sorted(i) = sampler.next(n, &mut rng) else {
            panic!("{d:?} draws in key order")
        };
        assert!(i < n);
        h[(i * buckets / n) as usize] += 1;
    }
    h
}

#[test]
fn normal_index_mapping_fits_the_truncated_normal() {
    let (n, buckets) = (1000u64, 20u64);
    for (mean, stddev) in [(0.3, 0.1), (0.5, 1.0), (0.9, 0.05)] {
        let h = sorted_histogram(
            IndexDistribution::Normal { mean, stddev },
            n,
            buckets,
            100_000,
        );
        // index round(x) is kept iff x ∈ [−0.5, n − 0.5)
        let (mu, sigma) = (mean * n as f64, stddev * n as f64);
        let cdf = |x: f64| phi((x - mu) / sigma);
        let mass = cdf(n as f64 - 0.5) - cdf(-0.5);
        let w = (n / buckets) as f64;
        let p: Vec<f64> = (0..buckets)
            .map(|j| (cdf((j + 1) as f64 * w - 0.5) - cdf(j as f64 * w - 0.5)) / mass)
            .collect();
        let (stat, df) = chi_square(&h, &p);
        assert!(
            stat < chi_square_critical(df),
            "normal({mean}, {stddev}): chi-square {stat}"
        );
    }
}

#[test]
fn beta_index_mapping_fits_the_beta() {
    let (n, buckets) = (1000u64, 20u64);
    // Beta(a, 1) has CDF x^a; Beta(1, b) has CDF 1 − (1 − x)^b.
    type Cdf = fn(f64) -> f64;
    let cases: [(f64, f64, Cdf); 4] = [
        (0.5, 1.0, |x| x.sqrt()),
        (1.0, 0.5, |x| 1.0 - (1.0 - x).sqrt()),
        (1.0, 1.0, |x| x),
        (3.0, 1.0, |x| x.powi(3)),
    ];
    for (alpha, beta, cdf) in cases {
        let h = sorted_histogram(IndexDistribution::Beta { alpha, beta }, n, buckets, 100_000);
        let p: Vec<f64> = (0..buckets)
            .map(|j| cdf((j + 1) as f64 / buckets as f64) - cdf(j as f64 / buckets as f64))
            .collect();
        let (stat, df) = chi_square(&h, &p);
        assert!(
            stat < chi_square_critical(df),
            "beta({alpha}, {beta}): chi-square {stat}"
        );
    }
}

#[test]
fn zipfian_ranks_fit_kvbenchs_probabilities() {
    for (alpha, n) in [(1.0, 50u64), (0.7, 200), (1.3, 30)] {
        let mut sampler = IndexSampler::new(IndexDistribution::Zipfian { alpha });
        let mut rng = Rng::new(9);
        let mut h = vec![0u64; n as usize];
        for _ in 0..200_000 {
            let Pick::Popular(r) = sampler.next(n, &mut rng) else {
                panic!("zipfian draws popularity ranks")
            };
            h[r as usize] += 1;
        }
        // P(i) = (1 / (i + 1)^alpha) / sum_j 1 / j^alpha, i from 0
        let norm: f64 = (1..=n).map(|j| 1.0 / (j as f64).powf(alpha)).sum();
        let p: Vec<f64> = (0..n)
            .map(|i| 1.0 / ((i + 1) as f64).powf(alpha) / norm)
            .collect();
        let (stat, df) = chi_square(&h, &p);
        assert!(
            stat < chi_square_critical(df),
            "zipfian({alpha}) over {n}: chi-square {stat}"
        );
    }
}

/// The generator itself maps beta draws onto positions of its sorted key vectors: the
/// empty-query keys (KVBench-I's `ZD = beta`), checked on the keys it emits.
#[test]
fn generated_empty_queries_follow_the_beta_over_the_sorted_empty_keys() {
    let spec = KvbenchSpec {
        preload: Preload::Generate(1000),
        phase: Phase::Run,
        point_queries: 40_000,
        empty_query_fraction: 1.0,
        unique_empty_query_fraction: 0.05, // 2000 distinct empty keys
        empty_query_distribution: IndexDistribution::Beta {
            alpha: 0.5,
            beta: 1.0,
        },
        ..KvbenchSpec::default()
    };
    let mut client = KvbenchClient::new(&spec, 4);
    let empty: Vec<Key> = client.empty_query_keys().map(<[u8]>::to_vec).collect();
    assert_eq!(empty.len(), 2000);
    let buckets = 20;
    let mut h = vec![0u64; buckets];
    for _ in 0..spec.point_queries {
        let [(Op::Get, key, _)] = &step(&mut client)[..] else {
            panic!()
        };
        let i = empty.binary_search(key).expect("an empty-query key");
        h[i * buckets / empty.len()] += 1;
    }
    let cdf = |x: f64| x.sqrt();
    let p: Vec<f64> = (0..buckets)
        .map(|j| cdf((j + 1) as f64 / buckets as f64) - cdf(j as f64 / buckets as f64))
        .collect();
    let (stat, df) = chi_square(&h, &p);
    assert!(stat < chi_square_critical(df), "chi-square {stat}");
}

/// Updates under a Zipfian follow KVBench's rank probabilities over the shuffled key vector:
/// the most updated keys, ranked by count, carry the Zipfian's top masses, and they are not
/// the smallest keys (the vector is shuffled).
#[test]
fn generated_zipfian_updates_concentrate_on_shuffled_keys() {
    let n = 500u64;
    let spec = KvbenchSpec {
        preload: Preload::Generate(n),
        phase: Phase::Run,
        updates: 100_000,
        update_distribution: IndexDistribution::Zipfian { alpha: 1.0 },
        ..KvbenchSpec::default()
    };
    let mut client = KvbenchClient::new(&spec, 8);
    let keys: Vec<Key> = client.existing_keys().map(<[u8]>::to_vec).collect();
    let mut per_key = vec![0u64; keys.len()];
    for _ in 0..spec.updates {
        let [(Op::Put, key, _)] = &step(&mut client)[..] else {
            panic!()
        };
        per_key[keys.binary_search(key).unwrap()] += 1;
    }
    let top = per_key.iter().enumerate().max_by_key(|(_, c)| **c).unwrap();
    let harmonic: f64 = (1..=n).map(|j| 1.0 / j as f64).sum();
    let share = *top.1 as f64 / spec.updates as f64;
    assert!(
        (share - 1.0 / harmonic).abs() < 0.01,
        "top key share {share}, expected {}",
        1.0 / harmonic
    );
    assert_ne!(top.0, 0, "the most popular key is not the smallest one");
}

// ---------------------------------------------------------------------------------------------
// Configs
// ---------------------------------------------------------------------------------------------

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("kv.toml"))
}

fn error(text: &str) -> String {
    parse(text).expect_err("an invalid config").to_string()
}

#[test]
fn a_kvbench_section_maps_kvbenchs_flags() {
    let config = parse(
        r#"seed = 3
[kvbench]
inserts = 100         # -I
updates = 50          # -U
point_deletes = 10    # -D
range_deletes = 2     # -R
range_delete_selectivity = 0.1  # -y
point_queries = 40    # -Q
empty_query_fraction = 0.25     # -Z
range_queries = 4     # -S
range_query_selectivity = 0.2   # -Y
entry_size = 64       # -E
lambda = 0.25         # -L
update_distribution = "normal"  # --UD 1
update_normal_mean = 0.2        # --UD_NMP
update_normal_stddev = 3.0      # --UD_NDEV
empty_query_distribution = "zipfian"
empty_query_zipf_alpha = 1.1
update_threshold = 0.5
"#,
    )
    .unwrap();
    let OperatorConfig::Kvbench(spec) = &config.operator else {
        panic!("not a KVBench workload")
    };
    assert_eq!(spec.key_size(), 16);
    assert_eq!(spec.value_size(), 48);
    assert_eq!(spec.empty_queries(), 10);
    assert_eq!(
        spec.update_distribution,
        IndexDistribution::Normal {
            mean: 0.2,
            stddev: 3.0
        }
    );
    assert_eq!(
        spec.empty_query_distribution,
        IndexDistribution::Zipfian { alpha: 1.1 }
    );
    assert_eq!(spec.thresholds.update, 0.5);
    assert_eq!(config.operator_name, "kvbench");
    assert_eq!(config.json["kvbench"]["update_normal_stddev"], 3.0);
}

#[test]
fn a_preset_takes_overrides() {
    let config = parse("[kvbench]\npreset = \"II\"\noperations = 200\nupdates = 7\n").unwrap();
    let OperatorConfig::Kvbench(spec) = &config.operator else {
        panic!()
    };
    assert_eq!(
        (spec.inserts, spec.point_deletes, spec.updates),
        (100, 20, 7)
    );
    assert_eq!(spec.preset, Some(Preset::II));
}

#[test]
fn preload_reads_the_inserts_of_a_kvbench_workload_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("workload.txt"),
        "I aaaa v1\nI bbbb v2\nQ aaaa\nI aaaa v3\nI cccc v4\n",
    )
    .unwrap();
    let config_path = dir.path().join("kv.toml");
    std::fs::write(
        &config_path,
        "[kvbench]\npreload = \"workload.txt\"\nupdates = 300\n",
    )
    .unwrap();
    let config = Config::load(&config_path).unwrap();
    let OperatorConfig::Kvbench(spec) = &config.operator else {
        panic!()
    };
    assert_eq!(
        spec.preload.len(),
        3,
        "the I lines, without the repeated key"
    );
    let mut client = KvbenchClient::new(spec, 1);
    let mut loaded = Vec::new();
    for _ in 0..spec.preload.len() {
        for (_, key, _) in step(&mut client) {
            loaded.push(key);
        }
    }
    assert_eq!(
        loaded,
        [b"aaaa".to_vec(), b"bbbb".to_vec(), b"cccc".to_vec()]
    );
    for _ in 0..spec.updates {
        let [(Op::Put, key, _)] = &step(&mut client)[..] else {
            panic!()
        };
        assert!(loaded.contains(key));
    }

    std::fs::write(dir.path().join("workload.txt"), "Q aaaa\n").unwrap();
    let e = Config::load(&config_path).unwrap_err().to_string();
    assert!(e.contains("kv.toml:2: `kvbench.preload`"), "{e}");
    assert!(e.contains("has no insert"), "{e}");
}

#[test]
fn config_errors_name_the_file_line_and_fix() {
    let cases = [
        (
            "[kvbench]\ninserts = 10\npreset = \"VI\"\n",
            "kv.toml:3: `kvbench.preset`: `VI` is not a KVBench preset; use one of: I, II, III, IV, V",
        ),
        (
            "[kvbench]\ninserts = 10\nupdates = 5\nupdate_zipf_alpha = 0.9\n",
            "kv.toml:4: `kvbench.update_zipf_alpha`: applies to update_distribution = \"zipfian\", but the distribution is \"uniform\"",
        ),
        (
            "[kvbench]\ninserts = 10\nupdate_distribution = \"gaussian\"\n",
            "kv.toml:3: `kvbench.update_distribution`: `gaussian` is not allowed; use one of: uniform, normal, beta, zipfian",
        ),
        (
            "[kvbench]\ninserts = 10\nentry_size = 4\nlambda = 0.25\n",
            "kv.toml:4: `kvbench.lambda`: keys of ⌊lambda × entry_size⌋ = 1 bytes",
        ),
        (
            "[kvbench]\nupdates = 10\n",
            "kv.toml:1: `kvbench.inserts`: missing; add `inserts = ...` to [kvbench]: updates, deletes and queries need keys",
        ),
        (
            "[kvbench]\ninserts = 10\noperations = 5\n",
            "kv.toml:3: `kvbench.operations`: scales a preset",
        ),
        (
            "[kvbench]\ninserts = 10\nempty_query_fraction = 1.5\n",
            "kv.toml:3: `kvbench.empty_query_fraction`: 1.5 is out of range; allowed: [0, 1]",
        ),
        (
            "[kvbench]\ninserts = 10\npoint_deletes = 11\n",
            "kv.toml:3: `kvbench.point_deletes`: inserts + preload = 10 is below",
        ),
        (
            "[kvbench]\ninserts = 10\nrange_query_selectivty = 0.1\n",
            "kv.toml:3: `kvbench.range_query_selectivty`: unknown key",
        ),
        (
            "[kvbench]\ninserts = 8000000\n",
            "kv.toml:1: `kvbench.lambda`: 8000000 distinct keys need more than half of the 62^4 possible 4-byte keys",
        ),
        (
            "[kvbench]\ninserts = 10\nupdate_distribution = \"normal\"\nupdate_normal_stddev = 5000\n",
            "kv.toml:4: `kvbench.update_normal_stddev`: 5000 is out of range",
        ),
        (
            "[kvbench]\ninserts = 10\nphase = \"load\"\n",
            "kv.toml:3: `kvbench.phase`: \"load\" issues the preload's inserts, and there is no preload",
        ),
        (
            "[kvbench]\ninserts = 10\n[source]\nfile = \"x\"\n",
            "`source`: a [kvbench] workload has no source",
        ),
    ];
    for (text, expected) in cases {
        let e = error(text);
        assert!(e.contains(expected), "{text}\n→ {e}\nexpected: {expected}");
    }
    let e = Config::parse_with_overrides(
        "[kvbench]\ninserts = 10\n",
        Path::new("kv.toml"),
        &["inserts=5".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a YCSB workload"), "{e}");
}
