//! Every metric against a brute-force implementation on random small key sequences.

use std::collections::HashSet;

use gadget_analyze::distance::popularity_distance;
use gadget_analyze::ephemerality::Lifetimes;
use gadget_analyze::locality::StackDistances;
use gadget_analyze::sequences::unique_sequences;
use proptest::prelude::*;

/// Random key sequences over a small key space, so keys repeat.
fn sequence() -> impl Strategy<Value = Vec<u32>> {
    (1u32..12).prop_flat_map(|keys| prop::collection::vec(0..keys, 0..200))
}

/// Renumbers keys densely in order of first appearance, as the trace scan does.
fn dense(ids: &[u32]) -> (Vec<u32>, usize) {
    let mut map = std::collections::HashMap::new();
    let out = ids
        .iter()
        .map(|k| {
            let n = map.len() as u32;
            *map.entry(*k).or_insert(n)
        })
        .collect();
    (out, map.len())
}

/// Stack distances by moving keys in an explicit LRU list.
fn brute_stack(ids: &[u32]) -> (Vec<u64>, u64) {
    let mut stack: Vec<u32> = Vec::new();
    let mut counts = Vec::new();
    let mut cold = 0;
    for &id in ids {
        match stack.iter().position(|&k| k == id) {
            Some(p) => {
                let d = stack.len() - 1 - p;
                if d >= counts.len() {
                    counts.resize(d + 1, 0);
                }
                counts[d] += 1;
                stack.remove(p);
            }
            None => cold += 1,
        }
        stack.push(id);
    }
    (counts, cold)
}

/// Hits of an LRU cache of `size` entries.
fn brute_lru_hits(ids: &[u32], size: usize) -> u64 {
    let mut cache: Vec<u32> = Vec::new();
    let mut hits = 0;
    for &id in ids {
        if let Some(p) = cache.iter().position(|&k| k == id) {
            hits += 1;
            cache.remove(p);
        } else if cache.len() == size {
            cache.remove(0);
        }
        cache.push(id);
    }
    hits
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn stack_distances_stay_exact_across_renumbering(
        ids in (1u32..40).prop_flat_map(|keys| prop::collection::vec(0..keys, 2000..6000))
    ) {
        // a tree of 1024 positions for under 512 keys is renumbered every few hundred accesses
        let (ids, distinct) = dense(&ids);
        let s = StackDistances::of(&ids, distinct);
        let (counts, cold) = brute_stack(&ids);
        prop_assert_eq!(&s.counts, &counts);
        prop_assert_eq!(s.cold, cold);
    }
}

proptest! {
    #[test]
    fn stack_distances_match_an_lru_list(ids in sequence()) {
        let (ids, distinct) = dense(&ids);
        let s = StackDistances::of(&ids, distinct);
        let (counts, cold) = brute_stack(&ids);
        prop_assert_eq!(&s.counts, &counts);
        prop_assert_eq!(s.cold, cold);
    }

    #[test]
    fn hit_ratios_match_an_lru_cache(ids in sequence(), size in 1usize..14) {
        let (ids, distinct) = dense(&ids);
        let s = StackDistances::of(&ids, distinct);
        let expected = if ids.is_empty() { 0.0 } else { brute_lru_hits(&ids, size) as f64 / ids.len() as f64 };
        prop_assert!((s.hit_ratio(size as u64) - expected).abs() < 1e-12);
        for (size, ratio) in s.hit_ratio_curve() {
            let expected = if ids.is_empty() { 0.0 } else { brute_lru_hits(&ids, size as usize) as f64 / ids.len() as f64 };
            prop_assert!((ratio - expected).abs() < 1e-12, "size {}: {} vs {}", size, ratio, expected);
        }
    }

    #[test]
    fn unique_sequences_match_a_set_of_windows(
        ids in prop_oneof![sequence(), (1u32..6).prop_flat_map(|k| prop::collection::vec(0..k, 5000..20000))],
        max_len in 1usize..12,
    ) {
        // every id is below 12 (the strategies' largest key space)
        let got = unique_sequences(&ids, 12, max_len);
        let expected: Vec<u64> = (1..=max_len)
            .map(|len| ids.windows(len).collect::<HashSet<_>>().len() as u64)
            .collect();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn working_set_and_ttl_match_a_scan(ids in sequence(), every in 1u64..20) {
        let (ids, distinct) = dense(&ids);
        let mut l = Lifetimes::default();
        for (pos, &id) in ids.iter().enumerate() {
            l.touch(id, pos as u32, pos as i64 * 10);
        }
        let first = |k: u32| ids.iter().position(|&x| x == k).unwrap() as u64;
        let last = |k: u32| ids.iter().rposition(|&x| x == k).unwrap() as u64;
        for (p, alive) in l.working_set(ids.len() as u64, every) {
            let expected = (0..distinct as u32).filter(|&k| first(k) <= p && p <= last(k)).count() as u64;
            prop_assert_eq!(alive, expected, "at {}", p);
        }
        let ttl = l.ttl();
        let mut spans: Vec<u64> = (0..distinct as u32).map(|k| last(k) - first(k)).collect();
        spans.sort_unstable();
        prop_assert_eq!(ttl.keys, distinct as u64);
        if distinct > 0 {
            prop_assert_eq!(ttl.requests.max, *spans.last().unwrap());
            prop_assert_eq!(ttl.requests.p50, spans[distinct.div_ceil(2) - 1]);
            prop_assert_eq!(ttl.event_time_ms.max, spans.last().unwrap() * 10);
        }
    }

    #[test]
    fn popularity_distance_matches_a_fine_grid(
        a in prop::collection::vec(1u64..50, 1..8),
        b in prop::collection::vec(1u64..50, 1..8),
    ) {
        let d = popularity_distance(&a, &b);
        let (mut sa, mut sb) = (a.clone(), b.clone());
        sa.sort_unstable_by(|x, y| y.cmp(x));
        sb.sort_unstable_by(|x, y| y.cmp(x));
        let domain = sa.len().max(sb.len()) as f64;
        let cdf = |s: &[u64], x: f64| {
            let n: u64 = s.iter().sum();
            s.iter().enumerate()
                .filter(|(i, _)| *i as f64 * domain / s.len() as f64 <= x + 1e-12)
                .map(|(_, c)| *c as f64 / n as f64)
                .sum::<f64>()
        };
        // every breakpoint is a multiple of domain / (|a| |b|): the CDFs are constant between
        let cells = sa.len() * sb.len();
        let step = domain / cells as f64;
        let (mut ks, mut w) = (0.0f64, 0.0f64);
        for i in 0..cells {
            let x = i as f64 * step;
            let gap = (cdf(&sa, x) - cdf(&sb, x)).abs();
            ks = ks.max(gap);
            w += gap * step;
        }
        prop_assert!((d.ks_statistic - ks).abs() < 1e-9, "ks {} vs {}", d.ks_statistic, ks);
        prop_assert!((d.wasserstein - w).abs() < 1e-9, "w {} vs {}", d.wasserstein, w);
    }
}
