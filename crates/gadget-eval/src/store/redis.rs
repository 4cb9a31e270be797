//! Redis as an external state store (seed 003: state kept in Redis beside Flink), over a
//! real `redis-server` reached through a URL (`redis://127.0.0.1:6379` by default).
//!
//! Keys are prefixed by a per-run tag and the state (`g<run>:<state>:<key>`), and everything
//! the run wrote is removed when the store is dropped, so a shared server is left as it was.
//!
//! - merge: one server-side script appends `,value` to an existing value or sets it (Redis
//!   has `APPEND` but no delimiter), so it stays one round trip;
//! - seek/next: Redis keys have no order, so each state keeps a sorted-set index of its keys
//!   (`ZADD`/`ZREM` pipelined with every write, one round trip) and iteration walks it with
//!   `ZRANGE … BYLEX`, then reads the value: both are reported as emulated;
//! - range query: `ZRANGE … BYLEX` over the index, then `MGET` of the keys found; range
//!   delete: the same `ZRANGE`, then `DEL` and `ZREM` of those keys in one `MULTI`/`EXEC`:
//!   two round trips each, reported as emulated;
//! - write batches: `MULTI`/`EXEC` at commit;
//! - pipelining: with a depth above 1, point writes are queued and sent together when the
//!   depth is reached or before the next read (the request that sends them pays for all).

use std::path::Path;

use gadget::access::{Op, StateId};
use redis::{Connection, Pipeline};

use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};

const MERGE_SCRIPT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('APPEND', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('ZADD', KEYS[2], 0, ARGV[3])
return 0
";

/// A Redis server used as the state store.
pub struct RedisStore {
    con: Connection,
    url: String,
    /// `g<run>:<state>:` per state.
    prefixes: Vec<Vec<u8>>,
    /// The sorted-set index key per state.
    indexes: Vec<Vec<u8>>,
    /// Per state, the key the open iterator stands on.
    cursors: Vec<Option<Vec<u8>>>,
    merge_sha: String,
    pending: Pipeline,
    pending_writes: usize,
    depth: usize,
    batch: Pipeline,
    run_tag: String,
    scratch: Vec<u8>,
    delimited: Vec<u8>,
}

fn request_error(op: Op, e: redis::RedisError) -> StoreError {
    StoreError::Request {
        store: "redis",
        op,
        message: e.to_string(),
    }
}

impl RedisStore {
    /// Connects to `settings.redis_url` and prepares a keyspace per state.
    pub fn open(states: &[String], settings: &StoreSettings) -> Result<Self, StoreError> {
        let url = settings.redis_url.clone();
        let open_error = |message: String| StoreError::Open {
            store: "redis",
            path: Path::new(&url).to_path_buf(),
            message,
        };
        let client = redis::Client::open(url.as_str())
            .map_err(|e| open_error(format!("{e}; give a URL such as redis://127.0.0.1:6379")))?;
        let mut con = client.get_connection().map_err(|e| {
            open_error(format!(
                "{e}; is redis-server running there? (start one with `redis-server --port 6379 --save ''`)"
            ))
        })?;
        let merge_sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(MERGE_SCRIPT)
            .query(&mut con)
            .map_err(|e| open_error(e.to_string()))?;
        let run_tag = format!(
            "g{:x}{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let prefixes = (0..states.len())
            .map(|i| format!("{run_tag}:{i}:").into_bytes())
            .collect();
        let indexes = (0..states.len())
            .map(|i| format!("{run_tag}#{i}").into_bytes())
            .collect();
        let mut batch = redis::pipe();
        batch.atomic();
        Ok(RedisStore {
            con,
            url,
            prefixes,
            indexes,
            cursors: vec![None; states.len()],
            merge_sha,
            pending: redis::pipe(),
            pending_writes: 0,
            depth: settings.redis_pipeline.max(1),
            batch,
            run_tag,
            scratch: Vec::new(),
            delimited: Vec::new(),
        })
    }

    fn check(&self, state: StateId) -> Result<(), StoreError> {
        let states = self.prefixes.len();
        if (state as usize) < states {
            Ok(())
        } else {
            Err(StoreError::UnknownState { state, states })
        }
    }

    /// The full Redis key of `key` in `state`, in `self.scratch`.
    fn full_key(&mut self, state: StateId, key: &[u8]) {
        self.scratch.clear();
        self.scratch
            .extend_from_slice(&self.prefixes[state as usize]);
        self.scratch.extend_from_slice(key);
    }

    /// Adds a write of `key` in `state` (the full key in `scratch`) and its index entry to
    /// `pipe`: `SET` + `ZADD` for a value, `DEL` + `ZREM` for `None`.
    fn stage(pipe: &mut Pipeline, scratch: &[u8], index: &[u8], key: &[u8], value: Option<&[u8]>) {
        match value {
            Some(v) => pipe
                .cmd("SET")
                .arg(scratch)
                .arg(v)
                .ignore()
                .cmd("ZADD")
                .arg(index)
                .arg(0)
                .arg(key)
                .ignore(),
            None => pipe
                .cmd("DEL")
                .arg(scratch)
                .ignore()
                .cmd("ZREM")
                .arg(index)
                .arg(key)
                .ignore(),
        };
    }

    /// Sends queued point writes.
    fn send_pending(&mut self, op: Op) -> Result<(), StoreError> {
        if self.pending_writes > 0 {
            self.pending
                .query::<()>(&mut self.con)
                .map_err(|e| request_error(op, e))?;
            self.pending.clear();
            self.pending_writes = 0;
        }
        Ok(())
    }

    /// Counts a queued write and sends the queue when it reaches the pipelining depth.
    fn queued(&mut self, op: Op) -> Result<(), StoreError> {
        self.pending_writes += 1;
        if self.pending_writes >= self.depth {
            self.send_pending(op)?;
        }
        Ok(())
    }

    /// The first indexed key of `state` in the lexicographic range starting at `from`
    /// (`[key` inclusive, `(key` exclusive), with its value length.
    fn land(&mut self, state: StateId, from: &[u8], op: Op) -> Result<Option<usize>, StoreError> {
        self.send_pending(op)?;
        let s = state as usize;
        let found: Vec<Vec<u8>> = redis::cmd("ZRANGE")
            .arg(&self.indexes[s])
            .arg(from)
            .arg("+")
            .arg("BYLEX")
            .arg("LIMIT")
            .arg(0)
            .arg(1)
            .query(&mut self.con)
            .map_err(|e| request_error(op, e))?;
        let Some(key) = found.into_iter().next() else {
            self.cursors[s] = None;
            return Ok(None);
        };
        self.full_key(state, &key);
        let value: Option<Vec<u8>> = redis::cmd("GET")
            .arg(&self.scratch)
            .query(&mut self.con)
            .map_err(|e| request_error(op, e))?;
        self.cursors[s] = Some(key);
        Ok(value.map(|v| v.len()))
    }
}

impl RedisStore {
    /// The indexed keys of `state` in `[start, end)`, read with `ZRANGE … BYLEX` after the
    /// queued writes are sent.
    fn keys_in(
        &mut self,
        op: Op,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        self.send_pending(op)?;
        let bound = |mark: u8, key: &[u8]| {
            let mut b = Vec::with_capacity(key.len() + 1);
            b.push(mark);
            b.extend_from_slice(key);
            b
        };
        redis::cmd("ZRANGE")
            .arg(&self.indexes[state as usize])
            .arg(bound(b'[', start))
            .arg(bound(b'(', end))
            .arg("BYLEX")
            .query(&mut self.con)
            .map_err(|e| request_error(op, e))
    }

    /// The full keys (`g<run>:<state>:<key>`) of `keys`.
    fn full_keys(&self, state: StateId, keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let prefix = &self.prefixes[state as usize];
        keys.iter()
            .map(|k| [prefix.as_slice(), k].concat())
            .collect()
    }
}

impl Store for RedisStore {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.send_pending(Op::Get)?;
        self.full_key(state, key);
        let value: Option<Vec<u8>> = redis::cmd("GET")
            .arg(&self.scratch)
            .query(&mut self.con)
            .map_err(|e| request_error(Op::Get, e))?;
        Ok(value.map(|v| v.len()))
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.full_key(state, key);
        let index = &self.indexes[state as usize];
        Self::stage(&mut self.pending, &self.scratch, index, key, Some(value));
        self.queued(Op::Put)
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.full_key(state, key);
        self.delimited.clear();
        self.delimited.push(MERGE_DELIMITER);
        self.delimited.extend_from_slice(value);
        self.pending
            .cmd("EVALSHA")
            .arg(&self.merge_sha)
            .arg(2)
            .arg(&self.scratch)
            .arg(&self.indexes[state as usize])
            .arg(&self.delimited)
            .arg(value)
            .arg(key)
            .ignore();
        self.queued(Op::Merge)
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.full_key(state, key);
        let index = &self.indexes[state as usize];
        Self::stage(&mut self.pending, &self.scratch, index, key, None);
        self.queued(Op::Delete)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        let mut from = Vec::with_capacity(key.len() + 1);
        from.push(b'[');
        from.extend_from_slice(key);
        self.land(state, &from, Op::Seek)
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        let Some(at) = self.cursors[state as usize].take() else {
            return Ok(None);
        };
        let mut from = Vec::with_capacity(at.len() + 1);
        from.push(b'(');
        from.extend_from_slice(&at);
        self.land(state, &from, Op::Next)
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.full_key(state, key);
        let index = &self.indexes[state as usize];
        Self::stage(&mut self.batch, &self.scratch, index, key, Some(value));
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.full_key(state, key);
        let index = &self.indexes[state as usize];
        Self::stage(&mut self.batch, &self.scratch, index, key, None);
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        self.send_pending(Op::BatchCommit)?;
        self.batch
            .query::<()>(&mut self.con)
            .map_err(|e| request_error(Op::BatchCommit, e))?;
        self.batch.clear();
        self.batch.atomic();
        Ok(())
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let keys = self.keys_in(Op::RangeQuery, state, start, end)?;
        if keys.is_empty() {
            return Ok(0);
        }
        let values: Vec<Option<Vec<u8>>> = redis::cmd("MGET")
            .arg(self.full_keys(state, &keys))
            .query(&mut self.con)
            .map_err(|e| request_error(Op::RangeQuery, e))?;
        Ok(values.iter().flatten().count())
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        let keys = self.keys_in(Op::RangeDelete, state, start, end)?;
        if keys.is_empty() {
            return Ok(());
        }
        redis::pipe()
            .atomic()
            .cmd("DEL")
            .arg(self.full_keys(state, &keys))
            .ignore()
            .cmd("ZREM")
            .arg(&self.indexes[state as usize])
            .arg(keys)
            .ignore()
            .query::<()>(&mut self.con)
            .map_err(|e| request_error(Op::RangeDelete, e))
    }

    fn emulated(&self) -> &'static [Op] {
        &[Op::Seek, Op::Next, Op::RangeDelete, Op::RangeQuery]
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.send_pending(Op::Put)
    }
}

impl Drop for RedisStore {
    /// Removes every key the run wrote (best effort: the server may be gone).
    fn drop(&mut self) {
        let pattern = format!("{}[:#]*", self.run_tag);
        let mut cursor: u64 = 0;
        loop {
            let Ok((next, keys)) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(10_000)
                .query::<(u64, Vec<Vec<u8>>)>(&mut self.con)
            else {
                return;
            };
            if !keys.is_empty()
                && redis::cmd("UNLINK")
                    .arg(keys)
                    .query::<()>(&mut self.con)
                    .is_err()
            {
                return;
            }
            if next == 0 {
                return;
            }
            cursor = next;
        }
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.url)
            .finish()
    }
}
