//! Comparing two traces store instance by store instance: each instance's requests (the
//! states whose names share everything before their last `/`, an instance's column
//! families), in order, normalized as the full comparison normalizes a trace, whatever the
//! interleaving of different instances' requests.
//!
//! A Kafka Streams application over several partitions runs a task per partition, each with
//! its own store instances (`<application.id>/0_<i>/…`), and interleaves the tasks as its
//! consumers' polls and its threads decide: two runs issue each task's requests identically
//! and interleave them differently. Each instance is compared from its first request, its
//! opening included: a task may open its stores after another task has processed records.

use std::collections::BTreeMap;

use super::{compare, Comparison, Normalizer};
use crate::access::{Op, TraceRecord};

/// The instance a state belongs to: its name before the last `/` (the whole name without one).
pub fn instance_of(state: &str) -> &str {
    state
        .rsplit_once('/')
        .map_or(state, |(instance, _)| instance)
}

/// The requests of a trace grouped by store instance, each normalized on its own.
#[derive(Debug, Default)]
pub struct ByInstance {
    instances: BTreeMap<String, Normalizer>,
    skipped: Vec<Op>,
    /// Requests grouped (skipped ops left out).
    pub requests: u64,
}

impl ByInstance {
    /// An empty grouping that leaves requests of `skipped` out.
    pub fn skipping(skipped: &[Op]) -> Self {
        ByInstance {
            skipped: skipped.to_vec(),
            ..Self::default()
        }
    }

    /// Feeds one record; `state_names` is the trace's state table. Markers are left out.
    pub fn push(&mut self, record: &TraceRecord, state_names: &[String]) {
        let TraceRecord::Access { op, state, .. } = record else {
            return;
        };
        if self.skipped.contains(op) {
            return;
        }
        let name = state_names.get(*state as usize).map_or("", String::as_str);
        let instance = instance_of(name);
        if !self.instances.contains_key(instance) {
            self.instances
                .insert(instance.to_string(), Normalizer::from_start(&self.skipped));
        }
        if let Some(n) = self.instances.get_mut(instance) {
            n.push(record, state_names);
        }
        self.requests += 1;
    }
}

/// One instance compared: its name, its normalized requests on each side and the comparison.
#[derive(Debug)]
pub struct InstanceComparison<'a> {
    /// The instance's name.
    pub instance: &'a str,
    /// Side A's normalized requests of it (`None`: A has none).
    pub a: Option<&'a Normalizer>,
    /// Side B's.
    pub b: Option<&'a Normalizer>,
    /// The two sequences compared.
    pub comparison: Comparison,
}

impl InstanceComparison<'_> {
    /// Describes the request at `index` of one side, or says there is none.
    pub fn describe(side: Option<&Normalizer>, index: usize) -> String {
        side.and_then(|n| n.tokens.get(index).map(|t| n.describe(*t)))
            .unwrap_or_else(|| "(no more requests)".to_string())
    }
}

/// A side's normalized requests of an instance, none when it has none.
fn tokens(n: Option<&Normalizer>) -> &[u64] {
    n.map_or(&[], |n| n.tokens.as_slice())
}

/// Every instance of either trace compared, by name; an instance on one side only is compared
/// with no requests. `max_distance` bounds each instance's diff.
pub fn compare_by_instance<'a>(
    a: &'a ByInstance,
    b: &'a ByInstance,
    max_distance: usize,
) -> Vec<InstanceComparison<'a>> {
    let mut names: Vec<&String> = a.instances.keys().chain(b.instances.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let (x, y) = (a.instances.get(name), b.instances.get(name));
            InstanceComparison {
                instance: name,
                a: x,
                b: y,
                comparison: compare(tokens(x), tokens(y), max_distance),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(op: Op, state: u16, key: &[u8]) -> TraceRecord {
        TraceRecord::Access {
            op,
            state,
            key: key.to_vec(),
            value_len: 8,
        }
    }

    fn grouped(records: &[TraceRecord], names: &[String]) -> ByInstance {
        let mut g = ByInstance::skipping(&[]);
        for r in records {
            g.push(r, names);
        }
        g
    }

    #[test]
    fn instances_interleaved_differently_compare_identical_and_a_change_in_one_shows() {
        let names: Vec<String> = ["app/0_0/s/data", "app/0_0/s/offsets", "app/0_1/s/data"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let a = [
            access(Op::Get, 0, b"k"),
            access(Op::Put, 2, b"j"),
            access(Op::Put, 1, b"o"),
            access(Op::Get, 2, b"j"),
        ];
        let b = [
            access(Op::Put, 2, b"j"),
            access(Op::Get, 2, b"j"),
            access(Op::Get, 0, b"k"),
            access(Op::Put, 1, b"o"),
        ];
        let (ga, gb) = (grouped(&a, &names), grouped(&b, &names));
        let c = compare_by_instance(&ga, &gb, 100);
        assert_eq!(
            c.iter().map(|i| i.instance).collect::<Vec<_>>(),
            ["app/0_0/s", "app/0_1/s"]
        );
        assert!(c.iter().all(|i| i.comparison.identical()));
        // the order within an instance counts
        let swapped = [b[0].clone(), b[1].clone(), b[3].clone(), b[2].clone()];
        let gs = grouped(&swapped, &names);
        let c = compare_by_instance(&ga, &gs, 100);
        assert!(!c[0].comparison.identical() && c[1].comparison.identical());
        assert_eq!(c[0].comparison.common_prefix, 0);
        // an instance on one side only differs by all its requests
        let gone = grouped(&a[..1], &names);
        let c = compare_by_instance(&ga, &gone, 100);
        assert_eq!(c[1].comparison.distance, Some(2));
        assert_eq!(
            InstanceComparison::describe(c[1].b, 0),
            "(no more requests)"
        );
    }

    #[test]
    fn an_instance_is_its_states_name_before_the_column_family() {
        assert_eq!(
            instance_of("app/0_1/rocksdb/counts/offsets"),
            "app/0_1/rocksdb/counts"
        );
        assert_eq!(instance_of("window"), "window");
    }
}
