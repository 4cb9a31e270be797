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
//!   depth is reached or before the next read (the request that sends them pays for all);
//! - every round trip has a timeout (`StoreSettings::redis_timeout`): a server that stops
//!   answering fails the request, which ends the run as a partial one, instead of hanging it.

use std::path::Path;
use std::time::Duration;

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
    client: redis::Client,
    server: Server,
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

/// Where the server is and how long a round trip may take, for connections and messages.
#[derive(Debug, Clone)]
struct Server {
    url: String,
    timeout: Duration,
}

impl Server {
    /// What went wrong with a request, said so that a user knows where to look.
    fn describe(&self, e: &redis::RedisError) -> String {
        if e.is_timeout() {
            format!(
                "no answer from {} within {:?} (is the server frozen or overloaded? --redis-timeout sets the limit)",
                self.url, self.timeout
            )
        } else if e.is_connection_dropped() || e.is_connection_refusal() || e.is_io_error() {
            format!("connection to {} lost ({e})", self.url)
        } else {
            format!("{} answered with an error: {e}", self.url)
        }
    }
}

fn request_error(server: &Server, op: Op, e: redis::RedisError) -> StoreError {
    StoreError::Request {
        store: "redis",
        op,
        message: server.describe(&e),
    }
}

impl RedisStore {
    /// Connects to `settings.redis_url` and prepares a keyspace per state.
    pub fn open(states: &[String], settings: &StoreSettings) -> Result<Self, StoreError> {
        let url = settings.redis_url.clone();
        let server = Server {
            url: url.clone(),
            timeout: settings.redis_timeout,
        };
        let open_error = |message: String| StoreError::Open {
            store: "redis",
            path: Path::new(&url).to_path_buf(),
            message,
        };
        let client = redis::Client::open(url.as_str())
            .map_err(|e| open_error(format!("{e}; give a URL such as redis://127.0.0.1:6379")))?;
        let mut con = connect(&client, &server).map_err(|e| {
            open_error(format!(
                "{}; is redis-server running there? (start one with `redis-server --port 6379 --save ''`)",
                server.describe(&e)
            ))
        })?;
        let merge_sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(MERGE_SCRIPT)
            .query(&mut con)
            .map_err(|e| open_error(server.describe(&e)))?;
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
            client,
            server,
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
            execute(&mut self.con, &self.pending, false)
                .map_err(|e| request_error(&self.server, op, e))?;
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
            .map_err(|e| request_error(&self.server, op, e))?;
        let Some(key) = found.into_iter().next() else {
            self.cursors[s] = None;
            return Ok(None);
        };
        self.full_key(state, &key);
        let value: Option<Vec<u8>> = redis::cmd("GET")
            .arg(&self.scratch)
            .query(&mut self.con)
            .map_err(|e| request_error(&self.server, op, e))?;
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
            .map_err(|e| request_error(&self.server, op, e))
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
            .map_err(|e| request_error(&self.server, Op::Get, e))?;
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
        execute(&mut self.con, &self.batch, true)
            .map_err(|e| request_error(&self.server, Op::BatchCommit, e))?;
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
            .map_err(|e| request_error(&self.server, Op::RangeQuery, e))?;
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
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("DEL")
            .arg(self.full_keys(state, &keys))
            .ignore()
            .cmd("ZREM")
            .arg(&self.indexes[state as usize])
            .arg(keys)
            .ignore();
        execute(&mut self.con, &pipe, true)
            .map_err(|e| request_error(&self.server, Op::RangeDelete, e))
    }

    fn emulated(&self) -> &'static [Op] {
        &[Op::Seek, Op::Next, Op::RangeDelete, Op::RangeQuery]
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.send_pending(Op::Put)
    }
}

/// Connects to the server with the timeout on the connection and on every round trip.
///
/// The client's own handshake reads its answer with no timeout, so a server that accepts
/// connections but does not answer (frozen) would hang it: a `PING` with the timeout goes
/// first.
fn connect(client: &redis::Client, server: &Server) -> redis::RedisResult<Connection> {
    ping(&client.get_connection_info().addr, server.timeout)?;
    let con = client.get_connection_with_timeout(server.timeout)?;
    con.set_read_timeout(Some(server.timeout))?;
    con.set_write_timeout(Some(server.timeout))?;
    Ok(con)
}

/// Sends `PING` to the server at `addr` on a connection of its own and waits at most
/// `timeout` for any answer (an error such as `NOAUTH` counts: the server is alive).
fn ping(addr: &redis::ConnectionAddr, timeout: Duration) -> redis::RedisResult<()> {
    use std::io::{Read, Write};
    fn exchange(mut s: impl Read + Write) -> std::io::Result<()> {
        s.write_all(b"PING\r\n")?;
        let mut answer = [0u8; 1];
        s.read_exact(&mut answer)
    }
    match addr {
        redis::ConnectionAddr::Tcp(host, port) => {
            let mut last = None;
            for a in std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), *port))? {
                match std::net::TcpStream::connect_timeout(&a, timeout) {
                    Ok(s) => {
                        s.set_read_timeout(Some(timeout))?;
                        s.set_write_timeout(Some(timeout))?;
                        return Ok(exchange(s)?);
                    }
                    Err(e) => last = Some(e),
                }
            }
            Err(last
                .unwrap_or_else(|| std::io::Error::other(format!("{host} has no address")))
                .into())
        }
        #[cfg(unix)]
        redis::ConnectionAddr::Unix(path) => {
            let s = std::os::unix::net::UnixStream::connect(path)?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            Ok(exchange(s)?)
        }
        // TLS: the client's own connection, whose handshake has its own limits
        _ => Ok(()),
    }
}

/// Sends `pipe` (in `MULTI`/`EXEC` when `atomic`) and reads its answers, failing at the first
/// error or timeout.
///
/// The client's own pipeline goes on reading every answer after a timeout, so a frozen
/// server would hold a run for the timeout once per command (minutes for a write batch);
/// here the first timeout ends the request, and the store with it.
fn execute(con: &mut Connection, pipe: &redis::Pipeline, atomic: bool) -> redis::RedisResult<()> {
    /// An error answer anywhere in `value` (`EXEC` answers with one per command).
    fn check(value: &redis::Value) -> redis::RedisResult<()> {
        match value {
            redis::Value::ServerError(e) => Err(e.clone().into()),
            redis::Value::Array(items) => items.iter().try_for_each(check),
            _ => Ok(()),
        }
    }
    let commands = pipe.cmd_iter().count();
    con.send_packed_command(&pipe.get_packed_pipeline())?;
    // MULTI's OK, then QUEUED per command and EXEC's array; or an answer per command
    let answers = if atomic { commands + 2 } else { commands };
    for _ in 0..answers {
        check(&con.recv_response()?)?;
    }
    Ok(())
}

/// Removes every key matching `pattern` over `con`.
fn remove_keys(con: &mut Connection, pattern: &str) -> redis::RedisResult<()> {
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(10_000)
            .query(con)?;
        if !keys.is_empty() {
            redis::cmd("UNLINK").arg(keys).query::<()>(con)?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

impl Drop for RedisStore {
    /// Removes every key the run wrote. After a failed request the connection may hold a late
    /// answer, so a fresh one does it; a server that still does not answer is named with the
    /// command that removes the keys later.
    fn drop(&mut self) {
        let pattern = format!("{}[:#]*", self.run_tag);
        let cleaned = remove_keys(&mut self.con, &pattern).or_else(|_| {
            let mut fresh = connect(&self.client, &self.server)?;
            remove_keys(&mut fresh, &pattern)
        });
        if let Err(e) = cleaned {
            eprintln!(
                "warning: the run's keys are left on {}: {}; remove them later with \
                 redis-cli -u {} --scan --pattern '{pattern}' | xargs -r redis-cli -u {} unlink",
                self.server.url,
                self.server.describe(&e),
                self.server.url,
                self.server.url
            );
        }
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.server.url)
            .finish()
    }
}
