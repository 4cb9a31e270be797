//! One part of a workload driven by one of several clients: `--shard i/N`.
//!
//! Every shard reads the whole request stream and keeps the requests it owns: a request
//! belongs to the shard its key hashes to (the hash every distinct-key count uses, mapped
//! onto `0..N` by multiplication, so every shard agrees without talking),
//! an iterator's `next` to the shard of the `seek` that opened it, and a batch commit to
//! every shard that added writes to the batch since the last commit. A batch is the store's, whatever states its writes went to
//! (Flink's timers are batch writes to their timer state, committed under `default`). Every
//! request but a commit is issued by exactly one shard.
//!
//! A shard's stream keeps its own requests ([`crate::workload::Production::shard`]), each
//! with how many went to other shards before it. An open-loop schedule is drawn for the whole
//! workload, one intended start per request, and each shard keeps the starts of its own
//! requests: the shards' superposition is the schedule one client would have followed, for
//! every arrival process, with each request's start decided globally and deterministically by
//! the seed.

use std::fmt;
use std::str::FromStr;

use gadget::access::Op;
use gadget::summary::DistinctCounter;

/// Shard `index` of `count` (`--shard index/count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: u32,
    /// How many shards the workload is split into.
    pub count: u32,
}

/// The most shards a workload is split into.
pub const MAX_SHARDS: u32 = 4096;

/// A `--shard` that does not name a shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--shard {given:?}: {why}; give INDEX/COUNT with 0 <= INDEX < COUNT <= {MAX_SHARDS}, such as 0/4")]
pub struct ShardError {
    given: String,
    why: &'static str,
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let error = |why| ShardError {
            given: s.to_string(),
            why,
        };
        let (index, count) = s.split_once('/').ok_or_else(|| error("no `/`"))?;
        let index: u32 = index
            .trim()
            .parse()
            .map_err(|_| error("the index is not a whole number"))?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| error("the count is not a whole number"))?;
        if count == 0 || count > MAX_SHARDS {
            return Err(error("the count is out of range"));
        }
        if index >= count {
            return Err(error("the index is not below the count"));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The shard a key belongs to: the key's hash ([`DistinctCounter::hash`], the one every
    /// count of distinct keys uses: a word at a time, finalised to spread every bit) mapped
    /// onto `0..count` by multiplication.
    #[inline]
    pub fn of_key(key: &[u8], count: u32) -> u32 {
        ((u128::from(DistinctCounter::hash(key)) * u128::from(count)) >> 64) as u32
    }
}

/// Decides, request by request, whether this shard issues it; keeps what iterators and
/// batches need across requests (a fixed table per state, no allocation per request).
#[derive(Debug, Clone)]
pub struct ShardFilter {
    shard: Shard,
    /// Per state: whether this shard opened the state's current iterator.
    iterating: Vec<bool>,
    /// Whether this shard added writes to the store's open batch.
    batching: bool,
}

impl ShardFilter {
    /// A filter for `shard`.
    pub fn new(shard: Shard) -> ShardFilter {
        ShardFilter {
            shard,
            iterating: Vec::new(),
            batching: false,
        }
    }

    /// The shard it filters for.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// Whether this shard issues the request `op` on `state` with `key`.
    #[inline(always)]
    pub fn owns(&mut self, op: Op, state: gadget::access::StateId, key: &[u8]) -> bool {
        let s = usize::from(state);
        if s >= self.iterating.len() {
            self.iterating.resize(s + 1, false);
        }
        match op {
            Op::Next => self.iterating[s],
            Op::BatchCommit => std::mem::replace(&mut self.batching, false),
            _ => {
                let mine = Shard::of_key(key, self.shard.count) == self.shard.index;
                match op {
                    Op::Seek => self.iterating[s] = mine,
                    Op::BatchPut | Op::BatchDelete => self.batching |= mine,
                    _ => {}
                }
                mine
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_parsed_and_bad_ones_say_what_to_give() {
        assert_eq!("1/4".parse(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "1", "a/4", "0/0", "1/-2", "0/5000"] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains("INDEX/COUNT") && e.contains(bad), "{e}");
        }
        assert_eq!(Shard { index: 2, count: 3 }.to_string(), "2/3");
    }

    #[test]
    fn every_request_is_issued_by_exactly_one_shard() {
        let count = 3;
        let mut filters: Vec<ShardFilter> = (0..count)
            .map(|index| ShardFilter::new(Shard { index, count }))
            .collect();
        let mut per_shard = [0u32; 3];
        for i in 0..3000u32 {
            let key = format!("user{i}");
            let ops = [Op::Get, Op::Put, Op::Seek, Op::Next, Op::Next, Op::Delete];
            let op = ops[(i % 6) as usize];
            let owners: Vec<usize> = filters
                .iter_mut()
                .enumerate()
                .filter_map(|(n, f)| f.owns(op, 0, key.as_bytes()).then_some(n))
                .collect();
            assert_eq!(owners.len(), 1, "{op:?} {key}: {owners:?}");
            per_shard[owners[0]] += 1;
        }
        for n in per_shard {
            assert!((800..1200).contains(&n), "{per_shard:?}");
        }
    }

    #[test]
    fn keys_of_every_length_spread_evenly_over_the_shards() {
        for len in 0..=40usize {
            let mut per_shard = [0u32; 4];
            for i in 0..4000u32 {
                // keys that differ in their last bytes only, as YCSB's and Flink's do
                let mut key = vec![b'k'; len];
                let tail = i.to_be_bytes();
                let n = len.min(4);
                key[len - n..].copy_from_slice(&tail[4 - n..]);
                per_shard[Shard::of_key(&key, 4) as usize] += 1;
            }
            if len >= 2 {
                for n in per_shard {
                    assert!((850..1150).contains(&n), "length {len}: {per_shard:?}");
                }
            }
        }
        assert_eq!(Shard::of_key(b"", 1), 0);
        assert_eq!(Shard::of_key(b"user12345678901234567", 1), 0);
    }

    #[test]
    fn a_next_goes_where_its_seek_went_and_a_commit_to_every_writer() {
        let count = 2;
        let key_of = |shard: u32| {
            (0..)
                .map(|i| format!("k{i}"))
                .find(|k| Shard::of_key(k.as_bytes(), count) == shard)
                .unwrap()
        };
        let (a, b) = (key_of(0), key_of(1));
        let mut f0 = ShardFilter::new(Shard { index: 0, count });
        let mut f1 = ShardFilter::new(Shard { index: 1, count });
        assert!(f0.owns(Op::Seek, 0, a.as_bytes()) && !f1.owns(Op::Seek, 0, a.as_bytes()));
        assert!(f0.owns(Op::Next, 0, b"") && !f1.owns(Op::Next, 0, b""));
        assert!(!f0.owns(Op::Seek, 0, b.as_bytes()) && f1.owns(Op::Seek, 0, b.as_bytes()));
        assert!(!f0.owns(Op::Next, 0, b"") && f1.owns(Op::Next, 0, b""));
        // a batch with writes of both shards is committed by both; one with none by neither
        assert!(f0.owns(Op::BatchPut, 1, a.as_bytes()) & !f1.owns(Op::BatchPut, 1, a.as_bytes()));
        assert!(!f0.owns(Op::BatchPut, 1, b.as_bytes()) & f1.owns(Op::BatchPut, 1, b.as_bytes()));
        assert!(f0.owns(Op::BatchCommit, 1, b"") && f1.owns(Op::BatchCommit, 1, b""));
        assert!(!f0.owns(Op::BatchCommit, 1, b"") && !f1.owns(Op::BatchCommit, 1, b""));
        // the batch is the store's: Flink commits its timers' batch writes under another state
        assert!(
            f0.owns(Op::BatchDelete, 2, a.as_bytes()) & !f1.owns(Op::BatchDelete, 2, a.as_bytes())
        );
        assert!(f0.owns(Op::BatchCommit, 0, b"") && !f1.owns(Op::BatchCommit, 0, b""));
    }
}
