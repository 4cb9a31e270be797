//! Redis Cluster as an external state store (seed 003: state in Redis beside Flink, one to
//! three nodes), through a slot-aware client: each command goes to the node that serves its
//! key's slot (hash tags respected), pipelines are split per node and sent to every node
//! before any reply is read, `MOVED` refreshes the slot map and `ASK` follows a migrating
//! slot once ([`nodes`]).
//!
//! Keys are laid out as on one Redis server (`g<run>:<state>:<key>`, see [`super`]), and the
//! operator instance's **placement** decides the node a key lives on. Instance *i* is placed
//! "on" node *i* (modulo the nodes), as the seed places each Flink task beside a Redis node:
//!
//! - `native`: Redis Cluster's own hashing of the key; with *n* nodes about 1/*n* of the
//!   requests stay on the instance's node;
//! - `aligned`: every key of the instance carries a hash tag of a slot its own node serves
//!   (`{tag}g<run>:…`), so all of its requests stay local (the stream partitioned to match);
//! - `replicated`: every write goes to every node (each node's copy under its own tag) and
//!   reads go to the instance's node: reads stay local, writes cost one request per node.
//!
//! The results count the reads and the writes that touched only the instance's node
//! (`reads_local`, `writes_local`) and the others (`reads_remote`, `writes_remote`); a batched
//! write counts when its batch is committed. A replicated write is never local.
//!
//! Iteration keeps a sorted-set index of a state's keys on every node, beside the keys it
//! lists (a script's keys must share a slot, and an index on one node would make every write
//! remote); a seek asks every index the instance's keys can be in and takes the first key.
//! A dropped state's keys are read from its indexes and deleted key by key, as a range delete
//! over the whole state (emulated).
//! A write batch is sent at commit, pipelined to every node at once, but it is not atomic:
//! Redis Cluster refuses a transaction whose keys lie in different slots (`CROSSSLOT`), and a
//! batch's keys (and their index entries) do.

mod nodes;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use gadget::access::{Op, StateId};

use super::connection::{Commands, Failure};
use super::slot::{slot_of, tag_for_slot};
use super::{describe, remove_keys, url, Unlink, CLEANUP_AFTER_STOP};
pub use crate::store::placement::Placement;
use crate::store::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};
use nodes::{Failed, Nodes};

/// Appends `ARGV[1]` to an existing value or sets `ARGV[2]`: Flink's list-state merge.
const MERGE_SCRIPT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('APPEND', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 0
";

const STORE: &str = "redis-cluster";

/// A Redis Cluster used as the state store.
pub struct RedisClusterStore {
    nodes: Nodes,
    shown: String,
    /// `host:port` of the node the URL names.
    seed: String,
    timeout: Duration,
    stop: Arc<AtomicBool>,
    placement: Placement,
    /// The instance's own node.
    home: usize,
    /// Per node, `{tag}` of a slot it serves.
    tags: Vec<Vec<u8>>,
    /// Per state, `g<run>:<state>:`.
    prefixes: Vec<Vec<u8>>,
    /// Per state and node, the index of the state's keys on that node (`{tag}g<run>#<state>`).
    indexes: Vec<Vec<Vec<u8>>>,
    /// Per state, the key the open iterator stands on (`false`: none).
    cursors: Vec<(bool, Vec<u8>)>,
    merge_sha: Vec<u8>,
    run_tag: String,
    depth: usize,
    pending_writes: usize,
    /// The open write batch: its keys and values one after the other, and per entry its
    /// state, where its key ends and where its value ends (`None` for a delete).
    batch_bytes: Vec<u8>,
    batch: Vec<(StateId, usize, Option<usize>)>,
    /// Keys found by index reads, one after the other, and where each ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    tickets: Vec<u32>,
    delimited: Vec<u8>,
    /// The current request touched a node other than the instance's.
    touched_remote: bool,
    /// Requests that stayed on the instance's node or not: reads local, reads remote,
    /// writes local, writes remote.
    counts: [u64; 4],
}

/// Whether a request reads or writes, for the locality counts.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Read,
    Write,
}

impl RedisClusterStore {
    /// Connects to the cluster through `settings.redis_url` (any node of it), as operator
    /// instance `settings.instance` placed by `settings.redis_placement`.
    pub fn open(states: &[String], settings: &StoreSettings) -> Result<Self, StoreError> {
        let shown = url::redacted(&settings.redis_url);
        let open_error = |message: String| StoreError::Open {
            store: STORE,
            path: Path::new(&shown).to_path_buf(),
            message,
        };
        let seed = url::parse(&settings.redis_url).map_err(open_error)?;
        if seed.db != 0 {
            return Err(open_error(
                "a Redis Cluster has only database 0; drop the /db from the URL".into(),
            ));
        }
        let seed_node = match &seed.address {
            url::Address::Tcp(host, port) => format!("{host}:{port}"),
            url::Address::Unix(path) => path.display().to_string(),
        };
        let opened = |f: Failed| {
            let other = f.node.as_ref().filter(|&n| *n != seed_node);
            match (f.failure, other) {
            (Failure::Stopped, _) => StoreError::Interrupted { store: STORE },
            (f @ (Failure::Lost(_) | Failure::Timeout(_)), None) => open_error(format!(
                "{}; is a Redis Cluster node listening there? (`gadget cluster up` starts one on loopback)",
                describe(&f, "the node")
            )),
            (f @ (Failure::Lost(_) | Failure::Timeout(_)), Some(node)) => open_error(format!(
                "{}; the cluster lists that node, but it does not answer (stopped or killed?)",
                describe(&f, &format!("its node redis://{node}"))
            )),
            (Failure::Server(e), None) if e.contains("cluster support disabled") => open_error(format!(
                "{shown} is a Redis server without cluster mode; use --store redis for it, or start a cluster (`gadget cluster up`)"
            )),
            (f, None) => open_error(describe(&f, "the cluster")),
            (f, Some(node)) => open_error(describe(&f, &format!("its node redis://{node}"))),
        }
        };
        let mut nodes =
            Nodes::connect(&seed, settings.redis_timeout, settings.stop.clone()).map_err(opened)?;
        let mut merge_sha = Vec::new();
        nodes
            .each(|con| {
                con.command(3)
                    .arg(b"SCRIPT")
                    .arg(b"LOAD")
                    .arg(MERGE_SCRIPT.as_bytes());
                merge_sha = con.round_trip()?.bulk()?.unwrap_or_default().to_vec();
                Ok(())
            })
            .map_err(opened)?;
        let n = nodes.len();
        let home = settings.instance % n;
        if !settings.redis_links.is_empty() {
            nodes.link(&settings.redis_links, home).map_err(opened)?;
        }
        let tags: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let slot = (0..super::slot::SLOTS as u16)
                    .find(|&s| nodes.of_slot(s) == i)
                    .expect("every node serves a slot");
                format!("{{{}}}", tag_for_slot(slot)).into_bytes()
            })
            .collect();
        let run_tag = super::run_tag();
        let prefixes = super::state_prefixes(&run_tag, states.len());
        let indexes = (0..states.len())
            .map(|s| {
                tags.iter()
                    .map(|t| [t.as_slice(), format!("{run_tag}#{s}").as_bytes()].concat())
                    .collect()
            })
            .collect();
        Ok(RedisClusterStore {
            home,
            nodes,
            shown,
            seed: seed_node,
            timeout: settings.redis_timeout,
            stop: settings.stop.clone(),
            placement: settings.redis_placement,
            tags,
            prefixes,
            indexes,
            cursors: vec![(false, Vec::new()); states.len()],
            merge_sha,
            run_tag,
            depth: settings.redis_pipeline.max(1),
            pending_writes: 0,
            batch_bytes: Vec::new(),
            batch: Vec::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
            tickets: Vec::new(),
            delimited: Vec::new(),
            touched_remote: false,
            counts: [0; 4],
        })
    }

    /// The addresses of the cluster's nodes, in the order instances are placed on them.
    pub fn node_addresses(&self) -> Vec<String> {
        self.nodes.addresses()
    }

    fn check(&self, state: StateId) -> Result<(), StoreError> {
        let states = self.prefixes.len();
        if (state as usize) < states {
            Ok(())
        } else {
            Err(StoreError::UnknownState { state, states })
        }
    }

    fn request_error(&mut self, op: Op, f: Failed) -> StoreError {
        self.nodes.discard();
        match f.failure {
            Failure::Stopped => StoreError::Interrupted { store: STORE },
            ref failure => StoreError::Request {
                store: STORE,
                op,
                message: describe(failure, &self.server(&f)),
            },
        }
    }

    /// The node a failure came from, as messages name it: the URL given when it is that
    /// node (or the cluster as a whole), else the node's own with the URL beside it.
    fn server(&self, f: &Failed) -> String {
        match &f.node {
            Some(node) if *node != self.seed => {
                format!("redis://{node} (a node of the cluster at {})", self.shown)
            }
            _ => self.shown.clone(),
        }
    }

    /// `failure` in a reply of node `n`.
    fn failed_on(&self, n: usize, failure: impl Into<Failure>) -> Failed {
        Failed {
            node: self.nodes.addresses().get(n).cloned(),
            failure: failure.into(),
        }
    }

    /// The tag a key of this instance carries on `node` (none in the native placement).
    fn tag(&self, node: usize) -> &[u8] {
        match self.placement {
            Placement::Native => &[],
            Placement::Aligned | Placement::Replicated => &self.tags[node],
        }
    }

    /// The node and slot a read of `key` in `state` goes to.
    fn read_route(&self, state: StateId, key: &[u8]) -> (usize, u16) {
        let tag = self.tag(self.home);
        let slot = slot_of(&[tag, &self.prefixes[state as usize], key]);
        (self.nodes.of_slot(slot), slot)
    }

    /// The nodes a write of a key goes to: one, or every node when replicated.
    fn write_nodes(&self) -> std::ops::Range<usize> {
        match self.placement {
            Placement::Replicated => 0..self.nodes.len(),
            Placement::Native | Placement::Aligned => self.home..self.home + 1,
        }
    }

    /// Counts the request just made as a local or remote read or write.
    fn tally(&mut self, kind: Kind) {
        let remote = std::mem::take(&mut self.touched_remote);
        let i = match kind {
            Kind::Read => 0,
            Kind::Write => 2,
        } + usize::from(remote);
        self.counts[i] += 1;
    }

    /// Stages a write of `key` in `state` on every node it goes to, each with its index
    /// entry on the same node.
    fn stage_write(&mut self, state: StateId, key: &[u8], write: Write<'_>) {
        let s = state as usize;
        for copy in self.write_nodes() {
            let tag: &[u8] = match self.placement {
                Placement::Native => &[],
                Placement::Aligned | Placement::Replicated => &self.tags[copy],
            };
            let prefix = &self.prefixes[s];
            let slot = slot_of(&[tag, prefix, key]);
            let node = self.nodes.of_slot(slot);
            self.touched_remote |= node != self.home;
            let (sha, delimited) = (&self.merge_sha, &self.delimited);
            self.nodes.stage(slot, false, |c| {
                write_data(c, tag, prefix, key, write, sha, delimited)
            });
            let index = &self.indexes[s][node];
            self.nodes.stage(slot_of(&[index]), false, |c| {
                write_index(c, index, key, write)
            });
        }
    }

    /// Sends what is staged; the request fails on the first error.
    fn flush(&mut self, op: Op) -> Result<(), StoreError> {
        self.pending_writes = 0;
        self.nodes.flush().map_err(|f| self.request_error(op, f))
    }

    /// Counts a staged write and sends the queue when it reaches the pipelining depth.
    fn queued(&mut self, op: Op) -> Result<(), StoreError> {
        self.pending_writes += 1;
        let sent = if self.pending_writes >= self.depth {
            self.flush(op)
        } else {
            Ok(())
        };
        self.tally(Kind::Write);
        sent
    }

    /// The value length of `key` in `state` (`GET` on its node), after what is staged.
    fn value_len(
        &mut self,
        state: StateId,
        key: &[u8],
        op: Op,
    ) -> Result<Option<usize>, StoreError> {
        let (node, slot) = self.read_route(state, key);
        self.touched_remote |= node != self.home;
        let tag: &[u8] = match self.placement {
            Placement::Native => &[],
            Placement::Aligned | Placement::Replicated => &self.tags[self.home],
        };
        let prefix = &self.prefixes[state as usize];
        let (_, ticket) = self.nodes.stage(slot, true, |c| {
            c.command(2).arg(b"GET").arg_parts3(tag, prefix, key);
        });
        self.flush(op)?;
        let ticket = ticket.expect("kept");
        let len = match self.nodes.kept(ticket) {
            Some(r) => r.bulk().map(|v| v.map(<[u8]>::len)),
            None => Ok(None),
        };
        len.map_err(|e| {
            let f = self.failed_on(node, e);
            self.request_error(op, f)
        })
    }

    /// The nodes whose index can hold this instance's keys: all in the native placement,
    /// its own otherwise.
    fn index_nodes(&self) -> std::ops::Range<usize> {
        match self.placement {
            Placement::Native => 0..self.nodes.len(),
            Placement::Aligned | Placement::Replicated => self.home..self.home + 1,
        }
    }

    /// Deletes every key of `state` from `start` up to `end` (or its last), found in its
    /// indexes, on every node it was written to, and the key's index entries; `op` is the
    /// request this does.
    fn delete_indexed(
        &mut self,
        op: Op,
        state: StateId,
        start: &[u8],
        end: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        let n = self.index_keys(op, state, (b'[', Some(start)), end, None)?;
        let keys = std::mem::take(&mut self.keys);
        let mut from = 0;
        for i in 0..n {
            let key = &keys[from..self.key_ends[i]];
            from = self.key_ends[i];
            self.stage_write(state, key, Write::Delete);
        }
        self.keys = keys;
        let sent = self.flush(op);
        self.tally(Kind::Write);
        sent
    }

    /// Asks every index of `state` for its keys from `from` (`[` inclusive, `(` exclusive)
    /// to `to` (`+` for no end; at most `limit`), after what is staged; the keys found, in
    /// order, into `keys`/`key_ends`.
    fn index_keys(
        &mut self,
        op: Op,
        state: StateId,
        from: (u8, Option<&[u8]>),
        to: Option<&[u8]>,
        limit: Option<&[u8]>,
    ) -> Result<usize, StoreError> {
        let s = state as usize;
        self.tickets.clear();
        for node in self.index_nodes() {
            self.touched_remote |= node != self.home;
            let index = &self.indexes[s][node];
            let start = from.1.unwrap_or(&self.cursors[s].1);
            let (_, ticket) = self.nodes.stage(slot_of(&[index]), true, |c| {
                c.command(if limit.is_some() { 8 } else { 5 })
                    .arg(b"ZRANGE")
                    .arg(index)
                    .arg_parts(&[from.0], start);
                match to {
                    Some(end) => c.arg_parts(b"(", end),
                    None => c.arg(b"+"),
                };
                c.arg(b"BYLEX");
                if let Some(n) = limit {
                    c.arg(b"LIMIT").arg(b"0").arg(n);
                }
            });
            self.tickets.push(ticket.expect("kept"));
        }
        self.flush(op)?;
        self.keys.clear();
        self.key_ends.clear();
        let first_node = self.index_nodes().start;
        for i in 0..self.tickets.len() {
            let Some(reply) = self.nodes.kept(self.tickets[i]) else {
                continue;
            };
            let items = match reply.items() {
                Ok(items) => items,
                Err(e) => {
                    let f = self.failed_on(first_node + i, e);
                    return Err(self.request_error(op, f));
                }
            };
            for item in items {
                match item.and_then(|i| i.bulk()) {
                    Ok(key) => {
                        self.keys.extend_from_slice(key.unwrap_or_default());
                        self.key_ends.push(self.keys.len());
                    }
                    Err(e) => {
                        let f = self.failed_on(first_node + i, e);
                        return Err(self.request_error(op, f));
                    }
                }
            }
        }
        Ok(self.key_ends.len())
    }

    /// The smallest key `index_keys` found, as `(start, end)` in `keys`.
    fn first_key(&self) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        let mut start = 0;
        for &end in &self.key_ends {
            if best.is_none_or(|(a, b)| self.keys[start..end] < self.keys[a..b]) {
                best = Some((start, end));
            }
            start = end;
        }
        best
    }

    /// Moves the iterator of `state` to the first key from `from`; the value length there.
    fn land(
        &mut self,
        state: StateId,
        from: (u8, Option<&[u8]>),
        op: Op,
    ) -> Result<Option<usize>, StoreError> {
        let s = state as usize;
        let mut from = from;
        let result = loop {
            if let Err(e) = self.index_keys(op, state, from, None, Some(b"1")) {
                break Err(e);
            }
            let Some((a, b)) = self.first_key() else {
                self.cursors[s].0 = false;
                break Ok(None);
            };
            let mut cursor = std::mem::take(&mut self.cursors[s].1);
            cursor.clear();
            cursor.extend_from_slice(&self.keys[a..b]);
            let len = self.value_len(state, &cursor, op);
            self.cursors[s] = (true, cursor);
            // an index entry left behind on a node its key's slot moved away from names a
            // key that is gone: step over it
            if !matches!(len, Ok(None)) {
                break len;
            }
            from = (b'(', None);
        };
        self.tally(Kind::Read);
        result
    }
}

/// What a write does.
#[derive(Debug, Clone, Copy)]
enum Write<'a> {
    Put(&'a [u8]),
    Delete,
    Merge(&'a [u8]),
}

/// The data command of a write: `SET`, `DEL`, or the merge script.
fn write_data(
    c: &mut Commands,
    tag: &[u8],
    prefix: &[u8],
    key: &[u8],
    write: Write<'_>,
    merge_sha: &[u8],
    delimited: &[u8],
) {
    match write {
        Write::Put(v) => {
            c.command(3).arg(b"SET").arg_parts3(tag, prefix, key).arg(v);
        }
        Write::Delete => {
            c.command(2).arg(b"DEL").arg_parts3(tag, prefix, key);
        }
        Write::Merge(v) => {
            c.command(6)
                .arg(b"EVALSHA")
                .arg(merge_sha)
                .arg(b"1")
                .arg_parts3(tag, prefix, key)
                .arg(delimited)
                .arg(v);
        }
    }
}

/// The index command of a write: `ZADD` of the key, or `ZREM` for a delete.
fn write_index(c: &mut Commands, index: &[u8], key: &[u8], write: Write<'_>) {
    match write {
        Write::Put(_) | Write::Merge(_) => {
            c.command(4).arg(b"ZADD").arg(index).arg(b"0").arg(key);
        }
        Write::Delete => {
            c.command(3).arg(b"ZREM").arg(index).arg(key);
        }
    }
}

impl Store for RedisClusterStore {
    fn name(&self) -> &'static str {
        STORE
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        let len = self.value_len(state, key, Op::Get);
        self.tally(Kind::Read);
        len
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.stage_write(state, key, Write::Put(value));
        self.queued(Op::Put)
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.delimited.clear();
        self.delimited.push(MERGE_DELIMITER);
        self.delimited.extend_from_slice(value);
        self.stage_write(state, key, Write::Merge(value));
        self.queued(Op::Merge)
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.stage_write(state, key, Write::Delete);
        self.queued(Op::Delete)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.land(state, (b'[', Some(key)), Op::Seek)
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        if !self.cursors[state as usize].0 {
            self.tally(Kind::Read);
            return Ok(None);
        }
        self.land(state, (b'(', None), Op::Next)
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.batch_bytes.extend_from_slice(key);
        let key_end = self.batch_bytes.len();
        self.batch_bytes.extend_from_slice(value);
        self.batch
            .push((state, key_end, Some(self.batch_bytes.len())));
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.batch_bytes.extend_from_slice(key);
        self.batch.push((state, self.batch_bytes.len(), None));
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        let batch = std::mem::take(&mut self.batch);
        let bytes = std::mem::take(&mut self.batch_bytes);
        let mut start = 0;
        let mut any_remote = false;
        for &(state, key_end, value_end) in &batch {
            let key = &bytes[start..key_end];
            let write = match value_end {
                Some(v) => Write::Put(&bytes[key_end..v]),
                None => Write::Delete,
            };
            start = value_end.unwrap_or(key_end);
            self.stage_write(state, key, write);
            // each batched write counts where it went, and the commit where any went
            any_remote |= self.touched_remote;
            self.tally(Kind::Write);
        }
        self.touched_remote = any_remote;
        self.batch = batch;
        self.batch.clear();
        self.batch_bytes = bytes;
        self.batch_bytes.clear();
        let sent = self.flush(Op::BatchCommit);
        self.tally(Kind::Write);
        sent
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            self.tally(Kind::Read);
            return Ok(0);
        }
        let n = self.index_keys(Op::RangeQuery, state, (b'[', Some(start)), Some(end), None)?;
        let keys = std::mem::take(&mut self.keys);
        let mut tickets = std::mem::take(&mut self.tickets);
        tickets.clear();
        let mut from = 0;
        for i in 0..n {
            let key = &keys[from..self.key_ends[i]];
            from = self.key_ends[i];
            let (node, slot) = self.read_route(state, key);
            self.touched_remote |= node != self.home;
            let tag: &[u8] = match self.placement {
                Placement::Native => &[],
                Placement::Aligned | Placement::Replicated => &self.tags[self.home],
            };
            let prefix = &self.prefixes[state as usize];
            let (_, t) = self.nodes.stage(slot, true, |c| {
                c.command(2).arg(b"GET").arg_parts3(tag, prefix, key);
            });
            tickets.push(t.expect("kept"));
        }
        let sent = self.flush(Op::RangeQuery);
        let found = tickets
            .iter()
            .filter(|&&t| {
                self.nodes
                    .kept(t)
                    .and_then(|r| r.bulk().ok().flatten())
                    .is_some()
            })
            .count();
        self.keys = keys;
        self.tickets = tickets;
        self.tally(Kind::Read);
        sent.map(|()| found)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            self.tally(Kind::Write);
            return Ok(());
        }
        self.delete_indexed(Op::RangeDelete, state, start, Some(end))
    }

    /// Reads every key of the state from its indexes, then deletes each (and its index
    /// entry) on every node it was written to, as a range delete over the whole state:
    /// Redis Cluster has no keyspaces to drop.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.check(state)?;
        self.cursors[state as usize].0 = false;
        self.delete_indexed(Op::Drop, state, &[], None)
    }

    fn emulated(&self) -> &'static [Op] {
        &[
            Op::Seek,
            Op::Next,
            Op::RangeDelete,
            Op::RangeQuery,
            Op::Drop,
            Op::Checkpoint,
        ]
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        if !self.nodes.is_idle() {
            RedisClusterStore::flush(self, Op::Put)?;
        }
        Ok(())
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("reads_local", self.counts[0]),
            ("reads_remote", self.counts[1]),
            ("writes_local", self.counts[2]),
            ("writes_remote", self.counts[3]),
        ]
    }
}

impl Drop for RedisClusterStore {
    /// Removes every key the run wrote, on every node; after a failure or a stop request
    /// through fresh connections, waiting at most [`CLEANUP_AFTER_STOP`] after a stop.
    fn drop(&mut self) {
        let pattern = format!("*{}[:#]*", self.run_tag);
        self.nodes.discard();
        let stopped = self.stop.load(std::sync::atomic::Ordering::Relaxed);
        let timeout = if stopped {
            self.timeout.min(CLEANUP_AFTER_STOP)
        } else {
            self.timeout
        };
        let cleaned = if self.nodes.is_broken() || stopped {
            self.nodes.each_fresh(timeout, |con| {
                remove_keys(con, pattern.as_bytes(), Unlink::OneByOne)
            })
        } else {
            self.nodes
                .each(|con| remove_keys(con, pattern.as_bytes(), Unlink::OneByOne))
        };
        if let Err(e) = cleaned {
            eprintln!(
                "warning: the run's keys are left on the cluster at {}: {}; remove them later with \
                 redis-cli -c -u URL --scan --pattern '{pattern}' on each node, then unlink them",
                self.shown,
                describe(&e.failure, &self.server(&e)),
            );
        }
    }
}

impl std::fmt::Debug for RedisClusterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisClusterStore")
            .field("url", &self.shown)
            .field("placement", &self.placement)
            .field("home", &self.home)
            .finish()
    }
}

/// A Redis Cluster: a Redis store's settings and where an instance's keys are placed.
pub(crate) const SPEC: crate::store::spec::StoreSpec = crate::store::spec::StoreSpec {
    name: "redis-cluster",
    about: "several Redis servers; `gadget cluster up` starts one",
    reads: &[
        "redis_url",
        "redis_pipeline",
        "redis_timeout",
        "redis_placement",
    ],
    applied: |s, into| {
        super::applied(s, into);
        crate::store::spec::set(into, "placement", s.redis_placement.name());
    },
    library: super::library,
    open: crate::store::spec::Opener::PerInstance(|_, states, settings| {
        Ok(Box::new(RedisClusterStore::open(states, settings)?))
    }),
    refuses: crate::store::spec::refuses_none,
};
