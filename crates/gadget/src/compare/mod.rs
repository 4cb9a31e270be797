//! Comparing two traces request by request: Gadget's against a Flink recording, or any two.
//!
//! Both sides are normalized the same way: from the first input event on (from the first
//! request in a trace without event markers, which are optional), requests only (markers
//! dropped), each key renamed by its first appearance within its state, `next` compared by op
//! and state only. The match is `1 − (requests only on one side of a minimal diff) ÷ (both
//! lengths)`.

use std::collections::HashMap;

pub mod per_instance;
pub mod per_key;
pub mod reads;

use crate::access::{Op, ReadLen, TraceRecord};

/// Turns trace records into comparable tokens.
#[derive(Debug, Default)]
pub struct Normalizer {
    states: HashMap<String, u16>,
    keys: HashMap<(u16, Vec<u8>), u32>,
    next_key: HashMap<u16, u32>,
    started: bool,
    /// Whether requests before the first event marker count too (a job's start-up).
    from_start: bool,
    /// Ops left out of the comparison.
    skipped: Vec<Op>,
    /// `open` and `drop` requests seen, skipped or not.
    pub lifecycle_requests: u64,
    /// The normalized sequence: `op << 56 | state << 40 | key number`.
    pub tokens: Vec<u64>,
    /// What each get among the tokens found, with its token's index, in order.
    pub reads: Vec<(usize, ReadLen)>,
}

impl Normalizer {
    /// A normalizer that starts over at the first event marker.
    pub fn new() -> Self {
        Self::default()
    }

    /// A normalizer that leaves requests of `ops` out (a recording that cannot see them:
    /// the recorder sees no `open` or `drop` of a Kafka Streams segment).
    pub fn skipping(ops: &[Op]) -> Self {
        Normalizer {
            skipped: ops.to_vec(),
            ..Self::default()
        }
    }

    /// A normalizer that keeps what comes before the first event marker: the requests a job
    /// issues at start-up (Flink's RocksDB timer service loading every key group) compared
    /// too.
    pub fn from_start(ops: &[Op]) -> Self {
        Normalizer {
            from_start: true,
            ..Self::skipping(ops)
        }
    }

    /// True once an event marker was fed: the tokens then start at the first one.
    pub fn saw_events(&self) -> bool {
        self.started
    }

    /// Feeds one record; `state_names` is the trace's state table.
    ///
    /// Requests are normalized from the first one on; the first event marker starts over
    /// (what came before it is start-up, left out), so a trace without markers is compared
    /// whole.
    pub fn push(&mut self, record: &TraceRecord, state_names: &[String]) {
        if let TraceRecord::Access { op, .. } = record {
            if op.is_state_lifecycle() {
                self.lifecycle_requests += 1;
            }
        }
        match record {
            TraceRecord::Event { .. } if !self.started && self.from_start => {
                self.started = true;
            }
            TraceRecord::Event { .. } if !self.started => {
                self.started = true;
                self.states.clear();
                self.keys.clear();
                self.next_key.clear();
                self.tokens.clear();
                self.reads.clear();
            }
            TraceRecord::Event { .. } | TraceRecord::Watermark { .. } => {}
            TraceRecord::Access {
                op,
                state,
                key,
                value_len,
            } if !self.skipped.contains(op) => {
                if *op == Op::Get {
                    self.reads
                        .push((self.tokens.len(), ReadLen::from_value_len(*value_len)));
                }
                let name = state_names
                    .get(*state as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("#{state}"));
                let n = self.states.len() as u16;
                let s = *self.states.entry(name).or_insert(n);
                let key_no = if *op == Op::Next {
                    0
                } else {
                    let counter = self.next_key.entry(s).or_insert(0);
                    *self.keys.entry((s, key.clone())).or_insert_with(|| {
                        *counter += 1;
                        *counter
                    })
                };
                self.tokens
                    .push((*op as u64) << 56 | (s as u64) << 40 | key_no as u64);
            }
            TraceRecord::Access { .. } => {}
        }
    }

    /// Describes a token for humans: `op state #key`.
    pub fn describe(&self, token: u64) -> String {
        let op = Op::from_code((token >> 56) as u8).map_or("?", |o| o.name());
        let s = ((token >> 40) & 0xffff) as u16;
        let name = self
            .states
            .iter()
            .find(|(_, v)| **v == s)
            .map_or("?", |(k, _)| k.as_str());
        format!("{op} {name} #{}", token & 0xff_ffff_ffff)
    }
}

/// The outcome of comparing two normalized sequences.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Requests on side A.
    pub len_a: usize,
    /// Requests on side B.
    pub len_b: usize,
    /// Requests only on one side of a minimal diff; `None` if it exceeds the search bound.
    pub distance: Option<usize>,
    /// Length of the common prefix (index of the first difference).
    pub common_prefix: usize,
}

impl Comparison {
    /// `1 − distance ÷ (len_a + len_b)`; with an unknown distance (more than `bound`, the
    /// search's), the upper bound of the match.
    pub fn match_ratio(&self, bound: usize) -> f64 {
        let total = self.len_a + self.len_b;
        if total == 0 {
            return 1.0;
        }
        let d = self.distance.unwrap_or(bound + 1).min(total);
        1.0 - d as f64 / total as f64
    }

    /// True when both sequences are identical.
    pub fn identical(&self) -> bool {
        self.distance == Some(0)
    }
}

/// The most requests that may be on one side only for two sequences of `len_a` and `len_b`
/// requests to match at least `min_match`: a search for a minimal diff can give up past it,
/// since a larger distance fails anyway. Below an exact match it is one more than the exact
/// figure, against rounding; an exact match allows none.
///
/// ```
/// use gadget::compare::allowed_distance;
/// assert_eq!(allowed_distance(500, 500, 0.99), 11);
/// assert_eq!(allowed_distance(500, 500, 1.0), 0);
/// ```
pub fn allowed_distance(len_a: usize, len_b: usize, min_match: f64) -> usize {
    if min_match >= 1.0 {
        return 0;
    }
    let total = (len_a + len_b) as f64;
    ((1.0 - min_match.max(0.0)) * total).floor() as usize + 1
}

/// Compares two token sequences with Myers' O((N+M)·D) algorithm, giving up past `max_distance`.
pub fn compare(a: &[u64], b: &[u64], max_distance: usize) -> Comparison {
    let common_prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max_d = max_distance.min(a.len() + b.len()) as isize;
    let offset = max_d + 1;
    let mut v = vec![0isize; 2 * max_d as usize + 3];
    let mut distance = None;
    'search: for d in 0..=max_d {
        let mut k = -d;
        while k <= d {
            let idx = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
                v[idx + 1]
            } else {
                v[idx - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[idx] = x;
            if x >= n && y >= m {
                distance = Some(d as usize);
                break 'search;
            }
            k += 2;
        }
    }
    Comparison {
        len_a: a.len(),
        len_b: b.len(),
        distance,
        common_prefix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_lines_on_one_side() {
        assert_eq!(compare(&[1, 2, 3], &[1, 2, 3], 10).distance, Some(0));
        assert_eq!(compare(&[1, 2, 3], &[1, 3], 10).distance, Some(1));
        assert_eq!(compare(&[1, 2, 3], &[1, 4, 3], 10).distance, Some(2));
        assert_eq!(compare(&[], &[7, 7], 10).distance, Some(2));
        assert_eq!(compare(&[1, 2, 3, 4], &[5, 6, 7, 8], 3).distance, None);
        let c = compare(&[1, 2, 3], &[1, 4, 3], 10);
        assert_eq!(c.common_prefix, 1);
        assert!((c.match_ratio(0) - (1.0 - 2.0 / 6.0)).abs() < 1e-12);
    }

    #[test]
    fn a_search_bounded_by_the_required_match_gives_up_early_but_never_wrongly() {
        let a: Vec<u64> = (0..1000).collect();
        let mut b = a.clone();
        b[10] = 5000;
        b[900] = 6000;
        // four requests on one side only: 0.998 of 2,000
        let exact = compare(&a, &b, 100);
        assert_eq!(exact.distance, Some(4));
        let enough = allowed_distance(a.len(), b.len(), 0.998);
        assert_eq!(compare(&a, &b, enough).distance, Some(4));
        let identical_only = allowed_distance(a.len(), b.len(), 1.0);
        assert_eq!(compare(&a, &b, identical_only).distance, None);
        assert!(compare(&a, &b, identical_only).match_ratio(identical_only) < 1.0);
    }

    #[test]
    fn keys_are_renamed_per_state_by_first_appearance() {
        let names = vec!["s".to_string()];
        let acc = |op, key: &[u8]| TraceRecord::Access {
            op,
            state: 0,
            key: key.to_vec(),
            value_len: 0,
        };
        let mut a = Normalizer::new();
        let mut b = Normalizer::new();
        for r in [
            acc(Op::Get, b"before"),
            TraceRecord::Event { input: 0 },
            acc(Op::Get, b"x"),
            acc(Op::Put, b"x"),
            acc(Op::Get, b"y"),
        ] {
            a.push(&r, &names);
        }
        for r in [
            TraceRecord::Event { input: 0 },
            acc(Op::Get, b"p"),
            acc(Op::Put, b"p"),
            acc(Op::Get, b"q"),
        ] {
            b.push(&r, &names);
        }
        assert_eq!(a.tokens, b.tokens);
        assert_eq!(a.tokens.len(), 3);
    }

    #[test]
    fn traces_without_event_markers_are_compared_from_their_first_request() {
        let names = vec!["s".to_string()];
        let acc = |op, key: &[u8]| TraceRecord::Access {
            op,
            state: 0,
            key: key.to_vec(),
            value_len: 0,
        };
        let normalized = |records: &[TraceRecord]| {
            let mut n = Normalizer::new();
            for r in records {
                n.push(r, &names);
            }
            n
        };
        let a = normalized(&[acc(Op::Get, b"x"), acc(Op::Put, b"x")]);
        let b = normalized(&[acc(Op::Get, b"x"), acc(Op::Delete, b"x")]);
        assert_eq!((a.tokens.len(), a.saw_events()), (2, false));
        assert!(!compare(&a.tokens, &b.tokens, 10).identical());
        // a start-up before the first event is still left out
        let with_start_up = [
            acc(Op::Put, b"boot"),
            TraceRecord::Event { input: 0 },
            acc(Op::Get, b"y"),
            acc(Op::Put, b"y"),
        ];
        let c = normalized(&with_start_up);
        assert_eq!(c.tokens, a.tokens);
        // unless it is asked for
        let mut whole = Normalizer::from_start(&[]);
        for r in &with_start_up {
            whole.push(r, &names);
        }
        let put = (Op::Put as u64) << 56;
        assert_eq!(whole.tokens, vec![put | 1, 2, put | 2]);
    }
}
