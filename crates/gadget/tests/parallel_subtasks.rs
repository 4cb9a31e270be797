//! A parallel job's subtasks against the same job at parallelism 1, on the Flink reference
//! workloads over the Borg trace.
//!
//! What must hold, and is checked here:
//! - every event reaches exactly one subtask, the one whose key groups hold its key, and every
//!   subtask sees every watermark of the job;
//! - every state key of a subtask's trace lies in its key groups;
//! - per state key, the requests (op, value size, in order) of the subtask that owns it are
//!   exactly the parallelism-1 trace's, for every operator whose subtask sees its keys' events
//!   in the order the whole job sees them (one input, or two inputs in source order): windows
//!   fire at the same watermarks whatever else a subtask holds;
//! - with RocksDB timers, more: per key group, the requests (the timers' write-batch entries
//!   and cache reloads, a reload's `next`s with the seek before them) are exactly the
//!   parallelism-1 trace's, since each key group has a timer queue of its own. Only where the
//!   shared write batch is committed (a commit every 500 entries, counted over the subtask's
//!   key groups) depends on what else the subtask holds; the entries committed add up;
//! - a two-input operator that alternates its inputs (round robin) does so over the subtask's
//!   own inputs, as a Flink subtask reads its own channels: each key's events of each input
//!   still reach it in order, but the order of a key's left and right events can differ from
//!   the parallelism-1 trace's, and so can its requests;
//! - one pass over the job generates each subtask exactly as generating it alone does.

mod common;

use common::trace;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use gadget::access::{Op, StateId, TraceRecord, VecSink};
use gadget::config::Config;
use gadget::key::Key;
use gadget::parallel::AllSubtasks;
use gadget::source::{ElementStream, StreamElement};

/// The reference config `name`, run as `parallelism` subtasks; `edit` changes its text.
fn job(name: &str, parallelism: u32, edit: &dyn Fn(String) -> String) -> Config {
    let path = common::project_root().join(format!("examples/flink-reference/{name}.toml"));
    let text = edit(std::fs::read_to_string(&path).unwrap());
    let mut config = Config::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
    config.set_parallelism(parallelism).unwrap();
    config
}

fn unchanged(text: String) -> String {
    text
}

/// The job at parallelism 1 and each of its subtasks' traces.
fn traces(
    name: &str,
    p: u32,
    edit: &dyn Fn(String) -> String,
) -> (Vec<TraceRecord>, Vec<Vec<TraceRecord>>) {
    let whole = trace(&job(name, 1, edit));
    let job = job(name, p, edit);
    assert_eq!(job.max_parallelism, 128);
    let subtasks = (0..p)
        .map(|i| trace(&job.for_subtask(i).unwrap()))
        .collect();
    (whole, subtasks)
}

/// The requests of one state key or key group, in order: op, state, key, value size.
type Requests = Vec<(Op, StateId, Vec<u8>, u32)>;

/// A trace's requests split by `part` of their key (a `next`, which has no key, goes with the
/// seek before it), and the entries its write-batch commits committed.
fn split<P: Ord + Clone>(
    records: &[TraceRecord],
    part: impl Fn(StateId, &[u8]) -> P,
) -> (BTreeMap<P, Requests>, u64) {
    let mut parts: BTreeMap<P, Requests> = BTreeMap::new();
    let mut committed = 0;
    let mut seek: Option<P> = None;
    for r in records {
        let TraceRecord::Access {
            op,
            state,
            key,
            value_len,
        } = r
        else {
            continue;
        };
        let request = (*op, *state, key.clone(), *value_len);
        match op {
            Op::BatchCommit => committed += u64::from(*value_len),
            Op::Next if key.is_empty() => {
                let at = seek.clone().expect("a next follows a seek");
                parts.get_mut(&at).expect("the seek's part").push(request);
            }
            _ => {
                assert!(!key.is_empty(), "a {op:?} without a key");
                let at = part(*state, key);
                if *op == Op::Seek {
                    seek = Some(at.clone());
                }
                parts.entry(at).or_default().push(request);
            }
        }
    }
    (parts, committed)
}

fn by_key_group(records: &[TraceRecord]) -> (BTreeMap<u8, Requests>, u64) {
    // 128 key groups: a one-byte prefix
    split(records, |_, key| key[0])
}

fn by_state_key(records: &[TraceRecord]) -> (BTreeMap<(StateId, Vec<u8>), Requests>, u64) {
    split(records, |state, key| (state, key.to_vec()))
}

fn events(records: &[TraceRecord]) -> [u64; 3] {
    let mut n = [0; 3];
    for r in records {
        if let TraceRecord::Event { input } = r {
            n[usize::from(*input)] += 1;
        }
    }
    n
}

fn watermarks(records: &[TraceRecord]) -> Vec<i64> {
    records
        .iter()
        .filter_map(|r| match r {
            TraceRecord::Watermark { timestamp } => Some(*timestamp),
            _ => None,
        })
        .collect()
}

/// Every event in exactly one subtask, every watermark in all, every state key in its
/// subtask's key groups.
fn check_partition(name: &str, whole: &[TraceRecord], subtasks: &[Vec<TraceRecord>]) {
    let p = subtasks.len() as u32;
    let mut sum = [0; 3];
    for (i, t) in subtasks.iter().enumerate() {
        let n = events(t);
        assert!(
            n.iter().sum::<u64>() > 0,
            "{name}: subtask {i} of {p} has events"
        );
        for (s, x) in sum.iter_mut().zip(n) {
            *s += x;
        }
        assert_eq!(
            watermarks(t),
            watermarks(whole),
            "{name}: subtask {i} of {p}"
        );
        let groups = gadget::key::KeyGroupRange::of_subtask(128, p, i as u32);
        for (g, _) in by_key_group(t).0 {
            assert!(
                groups.contains(u32::from(g)),
                "{name}: key group {g} in subtask {i} of {p}"
            );
        }
    }
    assert_eq!(sum, events(whole), "{name}: events by input, p = {p}");
}

/// The requests of each part (key group or state key) are those of the parallelism-1 trace,
/// each in the trace of the subtask that owns it; the committed entries add up.
fn check_parts<P: Ord + Clone + std::fmt::Debug>(
    name: &str,
    whole: &[TraceRecord],
    subtasks: &[Vec<TraceRecord>],
    split: impl Fn(&[TraceRecord]) -> (BTreeMap<P, Requests>, u64),
) {
    let (expected, committed) = split(whole);
    let mut union: BTreeMap<P, Requests> = BTreeMap::new();
    let mut sum = 0;
    for t in subtasks {
        let (parts, c) = split(t);
        sum += c;
        for (part, requests) in parts {
            assert!(
                union.insert(part.clone(), requests).is_none(),
                "{name}: {part:?} in two subtasks"
            );
        }
    }
    assert_eq!(
        union.len(),
        expected.len(),
        "{name}: parts, p = {}",
        subtasks.len()
    );
    for (part, requests) in &expected {
        assert!(
            union.get(part) == Some(requests),
            "{name}: the requests of {part:?} differ from parallelism 1's, p = {}",
            subtasks.len()
        );
    }
    assert_eq!(
        sum,
        committed,
        "{name}: entries committed, p = {}",
        subtasks.len()
    );
}

#[test]
fn with_rocksdb_timers_each_key_group_has_the_requests_it_has_at_parallelism_one() {
    if common::shared_dir("parallel_subtasks").is_none() {
        return;
    }
    let name = "tumbling-incr.rocksdb-timers";
    for p in [2, 3, 4] {
        let (whole, subtasks) = traces(name, p, &unchanged);
        check_partition(name, &whole, &subtasks);
        check_parts(name, &whole, &subtasks, by_key_group);
        // a commit every 500 entries of the subtask's own: the commits are not the job's
        let commits = |t: &[TraceRecord]| {
            t.iter()
                .filter(|r| {
                    matches!(
                        r,
                        TraceRecord::Access {
                            op: Op::BatchCommit,
                            ..
                        }
                    )
                })
                .count()
        };
        assert!(commits(&whole) > 0 && subtasks.iter().all(|t| commits(t) > 0));
    }
}

#[test]
fn each_state_key_has_the_requests_it_has_at_parallelism_one() {
    if common::shared_dir("parallel_subtasks").is_none() {
        return;
    }
    let source_order = |text: String| text.replace("\"round-robin\"", "\"source-order\"");
    for (name, p, edit) in [
        ("tumbling-incr", 3, &unchanged as &dyn Fn(String) -> String),
        ("sliding-hol", 2, &unchanged),
        ("session-incr", 4, &unchanged),
        ("aggregation", 3, &unchanged),
        ("tumbling-incr.rocksdb-timers", 3, &unchanged),
        ("interval-join", 3, &source_order),
    ] {
        let (whole, subtasks) = traces(name, p, edit);
        check_partition(name, &whole, &subtasks);
        check_parts(name, &whole, &subtasks, by_state_key);
    }
}

/// Each key's events of each input, in order: `(key, input) -> timestamps`.
fn events_by_key(stream: ElementStream) -> BTreeMap<(Key, u8), Vec<i64>> {
    let mut by_key: BTreeMap<(Key, u8), Vec<i64>> = BTreeMap::new();
    for e in stream {
        if let StreamElement::Event(e) = e.unwrap() {
            by_key
                .entry((e.key, e.input))
                .or_default()
                .push(e.timestamp);
        }
    }
    by_key
}

#[test]
fn a_round_robin_join_alternates_each_subtasks_own_inputs() {
    if common::shared_dir("parallel_subtasks").is_none() {
        return;
    }
    let name = "interval-join";
    let (whole, subtasks) = traces(name, 2, &unchanged);
    check_partition(name, &whole, &subtasks);
    // each key's events of each input reach its subtask in order
    let job = job(name, 2, &unchanged);
    let expected = events_by_key(job.open_source().unwrap());
    let mut union = BTreeMap::new();
    for i in 0..2 {
        let part = events_by_key(job.for_subtask(i).unwrap().open_source().unwrap());
        for (k, v) in part {
            assert!(union.insert(k, v).is_none(), "a key in two subtasks");
        }
    }
    assert_eq!(union, expected);
    // and the subtask's interleaving is its own: some key's requests differ
    let differ = |t: &[TraceRecord]| {
        let (whole_keys, _) = by_state_key(&whole);
        by_state_key(t)
            .0
            .iter()
            .filter(|(k, r)| whole_keys.get(*k) != Some(*r))
            .count()
    };
    assert!(
        subtasks.iter().map(|t| differ(t)).sum::<usize>() > 0,
        "round robin over a subtask's inputs is not round robin over the job's"
    );
}

#[test]
fn one_pass_over_the_job_gives_each_subtask_its_trace() {
    if common::shared_dir("parallel_subtasks").is_none() {
        return;
    }
    for (name, p) in [("tumbling-incr.rocksdb-timers", 3), ("interval-join", 2)] {
        let job = job(name, p, &unchanged);
        let configs: Vec<Config> = (0..p).map(|i| job.for_subtask(i).unwrap()).collect();
        let build = |i: u32| configs[i as usize].build_operator();
        let mut sinks: Vec<VecSink> = (0..p).map(|_| VecSink::default()).collect();
        let all = AllSubtasks {
            router: job.subtask_router(),
            build_operator: &build,
            limit: None,
            threads: 2,
        };
        all.generate(
            job.open_job_inputs().unwrap(),
            &mut sinks,
            &mut |_| {},
            &AtomicBool::new(false),
        )
        .unwrap();
        for (i, sink) in sinks.iter().enumerate() {
            assert!(
                sink.records == trace(&configs[i]),
                "{name}: subtask {i} of {p} in one pass"
            );
        }
    }
}
