//! Comparing two traces state key by state key: each key's requests, in order, with their
//! value sizes, whatever the interleaving of different keys' requests.
//!
//! Where the engine's network decides that interleaving (a window join's or a union's two
//! inputs arrive in network buffers, in an order that depends on when each buffer filled),
//! two runs of the same job issue the same requests per key in different global orders: this
//! comparison says whether each key's are identical. A `next` belongs to the key of the last
//! `seek` on its state (the iterator it steps). Requests before the first input event are
//! left out, as in the full comparison (in a trace without event markers, none is).

use std::collections::HashMap;

use crate::access::{Op, TraceRecord};

/// One state key's requests: op and value size, in order.
type Requests = Vec<(Op, u32)>;

/// The requests of a trace grouped by state key.
#[derive(Debug, Default)]
pub struct ByKey {
    keys: HashMap<(String, Vec<u8>), Requests>,
    /// The key of the last seek per state, which the following `next`s belong to.
    iterating: HashMap<String, Vec<u8>>,
    started: bool,
    /// Whether requests before the first event marker count too (a job's start-up).
    from_start: bool,
    /// Requests grouped.
    pub requests: u64,
}

impl ByKey {
    /// An empty grouping that starts over at the first event marker.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty grouping that keeps what comes before the first event marker: each key's
    /// requests from the trace's first (`--per-key --from-start`).
    pub fn from_start() -> Self {
        ByKey {
            from_start: true,
            ..Self::default()
        }
    }

    /// True once an event marker was fed: the grouping then starts at the first one.
    pub fn saw_events(&self) -> bool {
        self.started
    }

    /// Feeds one record; `state_names` is the trace's state table. Requests are grouped from
    /// the first one on; the first event marker starts over (what came before it is start-up,
    /// left out), so a trace without markers is compared whole.
    pub fn push(&mut self, record: &TraceRecord, state_names: &[String]) {
        match record {
            TraceRecord::Event { .. } if !self.started && self.from_start => {
                self.started = true;
            }
            TraceRecord::Event { .. } if !self.started => {
                self.started = true;
                self.keys.clear();
                self.iterating.clear();
                self.requests = 0;
            }
            TraceRecord::Event { .. } => {}
            TraceRecord::Access {
                op,
                state,
                key,
                value_len,
            } => {
                let name = state_names
                    .get(*state as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("#{state}"));
                let key = match op {
                    Op::Next => self.iterating.get(&name).cloned().unwrap_or_default(),
                    Op::Seek => {
                        self.iterating.insert(name.clone(), key.clone());
                        key.clone()
                    }
                    _ => key.clone(),
                };
                // what a get found is the store's answer, not part of the request
                let asked = if *op == Op::Get { 0 } else { *value_len };
                self.keys.entry((name, key)).or_default().push((*op, asked));
                self.requests += 1;
            }
            _ => {}
        }
    }
}

/// How two traces compare key by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyComparison {
    /// State keys in either trace.
    pub keys: usize,
    /// State keys whose requests are identical in both.
    pub identical: usize,
    /// The first differing key (in state name and key order): state, key, and the first
    /// differing request of each side (`None`: that side's requests end there).
    pub first_difference: Option<KeyDifference>,
}

/// Where one key's requests differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDifference {
    /// The state's name.
    pub state: String,
    /// The key's bytes.
    pub key: Vec<u8>,
    /// The index of the first differing request among the key's.
    pub index: usize,
    /// A's request there.
    pub a: Option<(Op, u32)>,
    /// B's request there.
    pub b: Option<(Op, u32)>,
}

impl KeyComparison {
    /// True when every key's requests are identical.
    pub fn all_identical(&self) -> bool {
        self.identical == self.keys
    }
}

/// Compares `a` and `b` key by key.
pub fn compare_by_key(a: &ByKey, b: &ByKey) -> KeyComparison {
    let mut all: Vec<&(String, Vec<u8>)> = a.keys.keys().chain(b.keys.keys()).collect();
    all.sort_unstable();
    all.dedup();
    let empty = Requests::new();
    let mut identical = 0;
    let mut first_difference = None;
    for k in &all {
        let (x, y) = (
            a.keys.get(*k).unwrap_or(&empty),
            b.keys.get(*k).unwrap_or(&empty),
        );
        if x == y {
            identical += 1;
        } else if first_difference.is_none() {
            let index = x.iter().zip(y).take_while(|(p, q)| p == q).count();
            first_difference = Some(KeyDifference {
                state: k.0.clone(),
                key: k.1.clone(),
                index,
                a: x.get(index).copied(),
                b: y.get(index).copied(),
            });
        }
    }
    KeyComparison {
        keys: all.len(),
        identical,
        first_difference,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(op: Op, state: u16, key: &[u8], value_len: u32) -> TraceRecord {
        TraceRecord::Access {
            op,
            state,
            key: key.to_vec(),
            value_len,
        }
    }

    fn group(records: &[TraceRecord]) -> ByKey {
        let names = vec!["s".to_string()];
        let mut g = ByKey::new();
        for r in records {
            g.push(r, &names);
        }
        g
    }

    #[test]
    fn another_interleaving_of_keys_is_identical_key_by_key_and_a_changed_request_is_not() {
        let ev = TraceRecord::Event { input: 0 };
        let a = group(&[
            ev.clone(),
            access(Op::Merge, 0, b"a", 8),
            access(Op::Merge, 0, b"b", 8),
            access(Op::Get, 0, b"a", 0),
        ]);
        let b = group(&[
            ev.clone(),
            access(Op::Merge, 0, b"b", 8),
            access(Op::Merge, 0, b"a", 8),
            access(Op::Get, 0, b"a", 0),
        ]);
        let c = compare_by_key(&a, &b);
        assert!(c.all_identical() && c.keys == 2, "{c:?}");
        let d = group(&[
            ev,
            access(Op::Merge, 0, b"a", 8),
            access(Op::Merge, 0, b"b", 9),
            access(Op::Get, 0, b"a", 0),
        ]);
        let c = compare_by_key(&a, &d);
        assert_eq!(c.identical, 1);
        let diff = c.first_difference.unwrap();
        assert_eq!((diff.key.as_slice(), diff.index), (&b"b"[..], 0));
        assert_eq!(
            (diff.a, diff.b),
            (Some((Op::Merge, 8)), Some((Op::Merge, 9)))
        );
    }

    #[test]
    fn a_trace_without_event_markers_is_grouped_whole() {
        let a = group(&[access(Op::Put, 0, b"k", 1), access(Op::Get, 0, b"k", 0)]);
        let b = group(&[access(Op::Put, 0, b"k", 2), access(Op::Get, 0, b"k", 0)]);
        assert_eq!((a.requests, a.saw_events()), (2, false));
        let c = compare_by_key(&a, &b);
        assert!(!c.all_identical(), "{c:?}");
        assert_eq!(c.first_difference.unwrap().a, Some((Op::Put, 1)));
    }

    #[test]
    fn a_next_belongs_to_its_seek_and_requests_before_the_first_event_are_left_out() {
        let g = group(&[
            access(Op::Put, 0, b"preload", 1),
            TraceRecord::Event { input: 0 },
            access(Op::Seek, 0, b"k", 0),
            access(Op::Next, 0, b"k2", 0),
        ]);
        assert_eq!(g.requests, 2);
        assert_eq!(g.keys[&("s".to_string(), b"k".to_vec())].len(), 2);
    }

    #[test]
    fn from_the_start_the_requests_before_the_first_event_count_too() {
        let names = vec!["s".to_string()];
        let mut g = ByKey::from_start();
        for r in [
            access(Op::Put, 0, b"preload", 1),
            TraceRecord::Event { input: 0 },
            access(Op::Get, 0, b"preload", 0),
        ] {
            g.push(&r, &names);
        }
        assert_eq!(g.requests, 2);
        assert_eq!(g.keys[&("s".to_string(), b"preload".to_vec())].len(), 2);
    }
}
