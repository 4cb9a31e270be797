//! Time series of shards on one wall clock: each shard's intervals fall in the merged run's
//! intervals (of the same length, from the earliest shard's time zero), where counts and rates
//! add up.
//!
//! Shards that started together (a common time zero) have intervals on the same boundaries,
//! which line up exactly; otherwise each shard interval counts in the merged interval that
//! holds its middle. Interval percentiles cannot be added: a merged interval's are the largest
//! of its shards' (an upper bound, as for concurrent instances), while the run's totals come
//! from the exactly merged histograms.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use gadget::access::Op;

use gadget_results::summary::{IntervalOp, IntervalStats, MAX_INTERVALS};

/// One shard's time series, and how far its time zero lies after the merged run's, ns.
pub(crate) struct ShardSeries<'a> {
    /// Its time zero after the merged run's.
    pub offset_ns: u64,
    /// Its intervals, times in seconds after its own time zero.
    pub series: &'a [IntervalStats],
}

/// Seconds as nanoseconds (negative and non-finite times as 0).
fn ns(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1e9).round() as u64
    } else {
        0
    }
}

/// The merged time series on intervals of `interval_ns` from the merged time zero, with empty
/// intervals where no shard ran, and true when it was cut at [`MAX_INTERVALS`].
pub(crate) fn merge_series(
    shards: &[ShardSeries<'_>],
    interval_ns: u64,
) -> (Vec<IntervalStats>, bool) {
    let interval_ns = interval_ns.max(1);
    let mut bins: BTreeMap<u64, IntervalStats> = BTreeMap::new();
    for shard in shards {
        for i in shard.series {
            let start = shard.offset_ns.saturating_add(ns(i.start_s));
            let end = shard.offset_ns.saturating_add(ns(i.end_s)).max(start);
            let bin = (start + (end - start) / 2) / interval_ns;
            let (start_s, end_s) = (start as f64 / 1e9, end as f64 / 1e9);
            match bins.entry(bin) {
                Entry::Vacant(v) => {
                    v.insert(IntervalStats {
                        start_s,
                        end_s,
                        ..i.clone()
                    });
                }
                Entry::Occupied(mut o) => add(o.get_mut(), i, start_s, end_s),
            }
        }
    }
    let (Some(&first), Some(&last)) = (bins.keys().next(), bins.keys().next_back()) else {
        return (Vec::new(), false);
    };
    let mut merged = Vec::new();
    for bin in first..=last {
        if merged.len() == MAX_INTERVALS {
            return (merged, true);
        }
        let mut interval = bins.remove(&bin).unwrap_or_else(|| empty(bin, interval_ns));
        interval
            .ops
            .sort_by_key(|o| Op::from_name(&o.op).map_or(usize::MAX, |op| op as usize));
        merged.push(interval);
    }
    (merged, false)
}

/// Adds a shard's interval, lying from `start_s` to `end_s` of the merged run, to `into`.
fn add(into: &mut IntervalStats, other: &IntervalStats, start_s: f64, end_s: f64) {
    into.start_s = into.start_s.min(start_s);
    into.end_s = into.end_s.max(end_s);
    add_op(&mut into.all, &other.all);
    for o in &other.ops {
        match into.ops.iter_mut().find(|m| m.op == o.op) {
            Some(m) => add_op(m, o),
            None => into.ops.push(o.clone()),
        }
    }
}

/// Counts and rates add up (the shards ran side by side); percentiles are the larger.
fn add_op(into: &mut IntervalOp, other: &IntervalOp) {
    into.ops = into.ops.saturating_add(other.ops);
    into.ops_per_s += other.ops_per_s;
    into.p50_ns = into.p50_ns.max(other.p50_ns);
    into.p99_ns = into.p99_ns.max(other.p99_ns);
    into.p999_ns = into.p999_ns.max(other.p999_ns);
}

/// An interval in which no shard ran.
fn empty(bin: u64, interval_ns: u64) -> IntervalStats {
    IntervalStats {
        start_s: bin.saturating_mul(interval_ns) as f64 / 1e9,
        end_s: bin.saturating_add(1).saturating_mul(interval_ns) as f64 / 1e9,
        all: IntervalOp {
            op: "all".into(),
            ops: 0,
            ops_per_s: 0.0,
            p50_ns: 0,
            p99_ns: 0,
            p999_ns: 0,
        },
        ops: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, ops: u64, p99_ns: u64) -> IntervalOp {
        IntervalOp {
            op: name.into(),
            ops,
            ops_per_s: ops as f64,
            p50_ns: p99_ns / 2,
            p99_ns,
            p999_ns: p99_ns,
        }
    }

    fn interval(start_s: f64, end_s: f64, ops: &[(&str, u64, u64)]) -> IntervalStats {
        let total = ops.iter().map(|o| o.1).sum();
        let p99 = ops.iter().map(|o| o.2).max().unwrap_or(0);
        IntervalStats {
            start_s,
            end_s,
            all: op("all", total, p99),
            ops: ops.iter().map(|&(n, c, p)| op(n, c, p)).collect(),
        }
    }

    #[test]
    fn shards_started_together_line_up_interval_for_interval() {
        let a = [
            interval(0.2, 1.0, &[("get", 10, 100)]),
            interval(1.0, 2.0, &[("get", 20, 300)]),
        ];
        let b = [
            interval(0.3, 1.0, &[("put", 5, 500)]),
            interval(1.0, 1.5, &[("get", 7, 200)]),
        ];
        let (merged, cut) = merge_series(
            &[
                ShardSeries {
                    offset_ns: 0,
                    series: &a,
                },
                ShardSeries {
                    offset_ns: 0,
                    series: &b,
                },
            ],
            1_000_000_000,
        );
        assert!(!cut);
        assert_eq!(merged.len(), 2);
        assert_eq!((merged[0].start_s, merged[0].end_s), (0.2, 1.0));
        assert_eq!(merged[0].all.ops, 15);
        assert_eq!(
            merged[0].all.p99_ns, 500,
            "the larger of the shards' percentiles"
        );
        let names: Vec<&str> = merged[0].ops.iter().map(|o| o.op.as_str()).collect();
        assert_eq!(names, ["get", "put"], "ops in op order");
        assert_eq!(merged[1].all.ops, 27);
        assert_eq!(merged[1].ops[0].ops_per_s, 27.0);
    }

    #[test]
    fn a_later_shard_lands_on_the_wall_clock_with_empty_intervals_between() {
        let a = [interval(0.0, 1.0, &[("get", 10, 100)])];
        let b = [interval(0.0, 1.0, &[("get", 4, 100)])];
        let (merged, _) = merge_series(
            &[
                ShardSeries {
                    offset_ns: 0,
                    series: &a,
                },
                ShardSeries {
                    offset_ns: 3_000_000_000,
                    series: &b,
                },
            ],
            1_000_000_000,
        );
        let counts: Vec<u64> = merged.iter().map(|i| i.all.ops).collect();
        assert_eq!(counts, [10, 0, 0, 4]);
        assert_eq!((merged[3].start_s, merged[3].end_s), (3.0, 4.0));
        assert_eq!((merged[1].start_s, merged[1].end_s), (1.0, 2.0));
    }

    #[test]
    fn a_shard_off_the_boundaries_counts_where_its_intervals_middle_falls() {
        let a = [interval(0.0, 1.0, &[("get", 10, 100)])];
        let b = [
            interval(0.0, 1.0, &[("get", 1, 100)]),
            interval(1.0, 2.0, &[("get", 2, 100)]),
        ];
        let (merged, _) = merge_series(
            &[
                ShardSeries {
                    offset_ns: 0,
                    series: &a,
                },
                ShardSeries {
                    offset_ns: 400_000_000,
                    series: &b,
                },
            ],
            1_000_000_000,
        );
        let counts: Vec<u64> = merged.iter().map(|i| i.all.ops).collect();
        assert_eq!(counts, [11, 2]);
        assert_eq!(merged[0].end_s, 1.4);
        assert!(merge_series(&[], 1).0.is_empty());
    }
}
