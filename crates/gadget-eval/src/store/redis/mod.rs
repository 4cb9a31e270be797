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
//! - drop: the state's keys read from its index (`ZRANGE`), then deleted with the index in
//!   one `MULTI`/`EXEC`: two round trips, reported as emulated (Redis has no keyspaces);
//! - write batches: `MULTI`/`EXEC` at commit;
//! - pipelining: with a depth above 1, point writes are queued and sent together when the
//!   depth is reached or before the next read (the request that sends them pays for all);
//! - every round trip has a timeout (`StoreSettings::redis_timeout`): a server that stops
//!   answering fails the request, which ends the run as a partial one, instead of hanging it;
//!   and a stop request (Ctrl-C, `StoreSettings::stop`) ends the wait within 50 ms.
//!
//! Gadget speaks RESP2 itself ([`connection`], [`reply`]): commands are written into reused
//! buffers and replies read in place, so a request allocates nothing, and every wait is cut
//! into slices that look at the stop flag.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use gadget::access::{Op, StateId};

use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};
use connection::{Commands, Connection, Failure};

pub mod cluster;
mod connection;
pub mod local_cluster;
mod reply;
mod slot;
mod url;

const MERGE_SCRIPT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('APPEND', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('ZADD', KEYS[2], 0, ARGV[3])
return 0
";

/// The most keys one `DEL` of a dropped state names.
const DROP_CHUNK: usize = 10_000;

/// The most a run's key cleanup waits for a silent server after a stop request: the user
/// asked to stop, so the results are not held back for the whole timeout (a server that
/// answers at all answers a SCAN or UNLINK far sooner).
const CLEANUP_AFTER_STOP: Duration = Duration::from_millis(100);

/// A Redis server used as the state store.
pub struct RedisStore {
    con: Connection,
    server: Server,
    /// `g<run>:<state>:` per state.
    prefixes: Vec<Vec<u8>>,
    /// The sorted-set index key per state.
    indexes: Vec<Vec<u8>>,
    /// Per state, the key the open iterator stands on (empty with `false`: none).
    cursors: Vec<(bool, Vec<u8>)>,
    merge_sha: Vec<u8>,
    /// Point writes written into the connection and not sent yet.
    pending_writes: usize,
    depth: usize,
    /// The open write batch's commands, sent in `MULTI`/`EXEC` at commit.
    batch: Commands,
    run_tag: String,
    /// Keys read from an index, one after the other, and where each ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    delimited: Vec<u8>,
}

/// Where the server is and how long a round trip may take, for connections and messages.
#[derive(Debug, Clone)]
struct Server {
    target: url::Target,
    /// The URL as messages show it (no password).
    shown: String,
    timeout: Duration,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// What went wrong with a request, said so that a user knows where to look.
    fn describe(&self, f: &Failure) -> String {
        describe(f, &self.shown)
    }

    /// A failed request as the run reports it; a stop request is not a failure.
    fn request_error(&self, op: Op, f: Failure) -> StoreError {
        match f {
            Failure::Stopped => StoreError::Interrupted { store: "redis" },
            f => StoreError::Request {
                store: "redis",
                op,
                message: self.describe(&f),
            },
        }
    }
}

/// The longest the question for a server's version waits (less when the run's timeout is).
const VERSION_TIMEOUT: Duration = Duration::from_secs(1);

/// The Redis server at `settings.redis_url` with its version, as `INFO server` gives it:
/// `Redis 7.0.15 (redis_mode standalone) at redis://127.0.0.1:6379`; what went wrong when it
/// does not answer.
pub(crate) fn library(settings: &StoreSettings) -> String {
    let shown = url::redacted(&settings.redis_url);
    if settings.stop.load(std::sync::atomic::Ordering::Relaxed) {
        return format!("Redis at {shown}, version not asked: the run was stopped");
    }
    let info = url::parse(&settings.redis_url).and_then(|target| {
        // a version is not worth a long wait on a server that stopped answering
        let timeout = settings.redis_timeout.min(VERSION_TIMEOUT);
        let mut con = Connection::open(&target, timeout, settings.stop.clone())
            .map_err(|f| describe(&f, "the server"))?;
        con.command(2).arg(b"INFO").arg(b"server");
        con.round_trip()
            .and_then(|r| Ok(String::from_utf8_lossy(r.bulk()?.unwrap_or_default()).into_owned()))
            .map_err(|f| describe(&f, "the server"))
    });
    let field = |info: &str, key: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    };
    match info {
        Ok(info) => format!(
            "Redis {} ({} mode) at {shown}",
            field(&info, "redis_version").unwrap_or_else(|| "of unknown version".into()),
            field(&info, "redis_mode").unwrap_or_else(|| "unknown".into()),
        ),
        Err(why) => format!("Redis at {shown}, version unknown: {why}"),
    }
}

/// `url` as messages and results show it: without its password.
pub fn shown_url(url: &str) -> String {
    url::redacted(url)
}

/// A standalone Redis server: its URL, pipelining and timeout; its version from `INFO`.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "redis",
    about: "external, on --redis-url",
    reads: &["redis_url", "redis_pipeline", "redis_timeout"],
    applied,
    library,
    open: super::spec::Opener::PerInstance(|_, states, settings| {
        Ok(Box::new(RedisStore::open(states, settings)?))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// What a Redis store (standalone or a cluster) applied: the URL without its password, the
/// pipeline depth and the timeout.
pub(crate) fn applied(s: &StoreSettings, applied: &mut std::collections::BTreeMap<String, String>) {
    super::spec::set(applied, "url", shown_url(&s.redis_url));
    super::spec::set(applied, "pipeline", s.redis_pipeline);
    super::spec::set(applied, "timeout", format!("{:?}", s.redis_timeout));
}

/// What went wrong with a request to `server`.
fn describe(f: &Failure, server: &str) -> String {
    match f {
        Failure::Timeout(t) => format!(
            "no answer from {server} within {t:?} (is the server frozen or overloaded? --redis-timeout sets the limit)"
        ),
        Failure::Lost(e) => format!("connection to {server} lost ({e})"),
        Failure::Server(e) => format!("{server} answered with an error: {e}"),
        Failure::Protocol(_) | Failure::Stopped => format!("{server}: {f}"),
    }
}

impl RedisStore {
    /// Connects to `settings.redis_url` and prepares a keyspace per state.
    pub fn open(states: &[String], settings: &StoreSettings) -> Result<Self, StoreError> {
        let shown = url::redacted(&settings.redis_url);
        let open_error = |message: String| StoreError::Open {
            store: "redis",
            path: Path::new(&shown).to_path_buf(),
            message,
        };
        let target = url::parse(&settings.redis_url).map_err(open_error)?;
        let server = Server {
            target,
            shown: shown.clone(),
            timeout: settings.redis_timeout,
            stop: settings.stop.clone(),
        };
        let opened = |f: Failure| {
            match f {
            Failure::Stopped => StoreError::Interrupted { store: "redis" },
            Failure::Lost(_) | Failure::Timeout(_) => open_error(format!(
                "{}; is redis-server running there? (start one with `redis-server --port 6379 --save ''`)",
                describe(&f, "the server")
            )),
            f => open_error(describe(&f, "the server")),
        }
        };
        let mut con = Connection::open(&server.target, server.timeout, server.stop.clone())
            .map_err(opened)?;
        con.command(3)
            .arg(b"SCRIPT")
            .arg(b"LOAD")
            .arg(MERGE_SCRIPT.as_bytes());
        let merge_sha = con
            .round_trip()
            .and_then(|r| Ok(r.bulk()?.unwrap_or_default().to_vec()))
            .map_err(opened)?;
        let run_tag = run_tag();
        let prefixes = state_prefixes(&run_tag, states.len());
        let indexes = (0..states.len())
            .map(|i| format!("{run_tag}#{i}").into_bytes())
            .collect();
        Ok(RedisStore {
            con,
            server,
            prefixes,
            indexes,
            cursors: vec![(false, Vec::new()); states.len()],
            merge_sha,
            pending_writes: 0,
            depth: settings.redis_pipeline.max(1),
            batch: Commands::default(),
            run_tag,
            keys: Vec::new(),
            key_ends: Vec::new(),
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

    /// Writes a write of `key` in `state` and its index entry into `out`: `SET` + `ZADD` for
    /// a value, `DEL` + `ZREM` for `None`.
    fn stage(out: &mut Commands, prefix: &[u8], index: &[u8], key: &[u8], value: Option<&[u8]>) {
        match value {
            Some(v) => out
                .command(3)
                .arg(b"SET")
                .arg_parts(prefix, key)
                .arg(v)
                .command(4)
                .arg(b"ZADD")
                .arg(index)
                .arg(b"0")
                .arg(key),
            None => out
                .command(2)
                .arg(b"DEL")
                .arg_parts(prefix, key)
                .command(3)
                .arg(b"ZREM")
                .arg(index)
                .arg(key),
        };
    }

    /// Sends the queued point writes with the command written after them (if any) and
    /// reads their replies; the request that sends them pays for all.
    fn exchange(&mut self, op: Op) -> Result<(), StoreError> {
        self.pending_writes = 0;
        self.con
            .exchange()
            .map_err(|f| self.server.request_error(op, f))
    }

    /// Counts a queued write and sends the queue when it reaches the pipelining depth.
    fn queued(&mut self, op: Op) -> Result<(), StoreError> {
        self.pending_writes += 1;
        if self.pending_writes >= self.depth {
            self.exchange(op)?;
        }
        Ok(())
    }

    /// The value length of `key` in `state` (`GET`).
    fn value_len(
        &mut self,
        state: StateId,
        key_in: KeyIn,
        op: Op,
    ) -> Result<Option<usize>, StoreError> {
        let prefix = &self.prefixes[state as usize];
        let key = match key_in {
            KeyIn::Cursor => &self.cursors[state as usize].1,
            KeyIn::Given(k) => k,
        };
        self.con.command(2).arg(b"GET").arg_parts(prefix, key);
        let server = &self.server;
        let reply = ask(&mut self.con, &mut self.pending_writes, server, op)?;
        reply
            .bulk()
            .map(|v| v.map(<[u8]>::len))
            .map_err(|e| server.request_error(op, e.into()))
    }

    /// Moves the iterator of `state` to the first indexed key in the lexicographic range
    /// starting at `mark` (`[` inclusive, `(` exclusive) `from` (the cursor's key when
    /// `None`); the value length there.
    fn land(
        &mut self,
        state: StateId,
        mark: u8,
        from: Option<&[u8]>,
        op: Op,
    ) -> Result<Option<usize>, StoreError> {
        let s = state as usize;
        let from = from.unwrap_or(&self.cursors[s].1);
        self.con
            .command(8)
            .arg(b"ZRANGE")
            .arg(&self.indexes[s])
            .arg_parts(&[mark], from)
            .arg(b"+")
            .arg(b"BYLEX")
            .arg(b"LIMIT")
            .arg(b"0")
            .arg(b"1");
        let cursor = &mut self.cursors[s];
        let server = &self.server;
        let reply = ask(&mut self.con, &mut self.pending_writes, server, op)?;
        let first = reply
            .items()
            .and_then(|mut items| items.next().transpose())
            .and_then(|r| r.map(|r| r.bulk()).transpose())
            .map_err(|e| server.request_error(op, e.into()))?;
        match first.flatten() {
            None => {
                cursor.0 = false;
                Ok(None)
            }
            Some(key) => {
                cursor.0 = true;
                cursor.1.clear();
                cursor.1.extend_from_slice(key);
                self.value_len(state, KeyIn::Cursor, op)
            }
        }
    }

    /// Reads the indexed keys of `state` in `[start, end)` (`end` `None`: every key from
    /// `start` on) into `keys`/`key_ends` with `ZRANGE … BYLEX`, after the queued writes; how
    /// many there are.
    fn keys_in(
        &mut self,
        op: Op,
        state: StateId,
        start: &[u8],
        end: Option<&[u8]>,
    ) -> Result<usize, StoreError> {
        let c = self
            .con
            .command(5)
            .arg(b"ZRANGE")
            .arg(&self.indexes[state as usize])
            .arg_parts(b"[", start);
        match end {
            Some(end) => c.arg_parts(b"(", end),
            None => c.arg(b"+"),
        }
        .arg(b"BYLEX");
        let server = &self.server;
        let reply = ask(&mut self.con, &mut self.pending_writes, server, op)?;
        self.keys.clear();
        self.key_ends.clear();
        for item in reply
            .items()
            .map_err(|e| server.request_error(op, e.into()))?
        {
            let key = item
                .and_then(|i| i.bulk())
                .map_err(|e| server.request_error(op, e.into()))?
                .unwrap_or_default();
            self.keys.extend_from_slice(key);
            self.key_ends.push(self.keys.len());
        }
        Ok(self.key_ends.len())
    }
}

/// The keys that [`RedisStore::keys_in`] read into `keys`, each ending at its `ends` entry.
fn split_keys<'a>(keys: &'a [u8], ends: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    std::iter::once(0)
        .chain(ends.iter().copied())
        .zip(ends.iter().copied())
        .map(|(a, b)| &keys[a..b])
}

/// Sends the queued point writes and the command written after them in one round trip; the
/// reply to that command (the request that sends the writes pays for them).
fn ask<'c>(
    con: &'c mut Connection,
    pending_writes: &mut usize,
    server: &Server,
    op: Op,
) -> Result<reply::Reply<'c>, StoreError> {
    *pending_writes = 0;
    con.round_trip().map_err(|f| server.request_error(op, f))
}

/// Where the key of a `GET` is.
enum KeyIn<'a> {
    /// The state's iterator stands on it.
    Cursor,
    /// The request gives it.
    Given(&'a [u8]),
}

impl Store for RedisStore {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.value_len(state, KeyIn::Given(key), Op::Get)
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let s = state as usize;
        Self::stage(
            self.con.commands(),
            &self.prefixes[s],
            &self.indexes[s],
            key,
            Some(value),
        );
        self.queued(Op::Put)
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let s = state as usize;
        self.delimited.clear();
        self.delimited.push(MERGE_DELIMITER);
        self.delimited.extend_from_slice(value);
        self.con
            .command(8)
            .arg(b"EVALSHA")
            .arg(&self.merge_sha)
            .arg(b"2")
            .arg_parts(&self.prefixes[s], key)
            .arg(&self.indexes[s])
            .arg(&self.delimited)
            .arg(value)
            .arg(key);
        self.queued(Op::Merge)
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let s = state as usize;
        Self::stage(
            self.con.commands(),
            &self.prefixes[s],
            &self.indexes[s],
            key,
            None,
        );
        self.queued(Op::Delete)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.land(state, b'[', Some(key), Op::Seek)
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        if !self.cursors[state as usize].0 {
            return Ok(None);
        }
        self.land(state, b'(', None, Op::Next)
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let s = state as usize;
        Self::stage(
            &mut self.batch,
            &self.prefixes[s],
            &self.indexes[s],
            key,
            Some(value),
        );
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        let s = state as usize;
        Self::stage(
            &mut self.batch,
            &self.prefixes[s],
            &self.indexes[s],
            key,
            None,
        );
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        if !self.batch.is_empty() {
            let out = self.con.commands();
            out.command(1).arg(b"MULTI");
            out.append(&self.batch);
            out.command(1).arg(b"EXEC");
            self.batch.clear();
        }
        self.exchange(Op::BatchCommit)
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
        let n = self.keys_in(Op::RangeQuery, state, start, Some(end))?;
        if n == 0 {
            return Ok(0);
        }
        let prefix = &self.prefixes[state as usize];
        let out = self.con.command(1 + n).arg(b"MGET");
        for key in split_keys(&self.keys, &self.key_ends) {
            out.arg_parts(prefix, key);
        }
        let server = &self.server;
        let reply = ask(
            &mut self.con,
            &mut self.pending_writes,
            server,
            Op::RangeQuery,
        )?;
        let mut found = 0;
        for item in reply
            .items()
            .map_err(|e| server.request_error(Op::RangeQuery, e.into()))?
        {
            let value = item
                .and_then(|i| i.bulk())
                .map_err(|e| server.request_error(Op::RangeQuery, e.into()))?;
            found += usize::from(value.is_some());
        }
        Ok(found)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        let n = self.keys_in(Op::RangeDelete, state, start, Some(end))?;
        if n == 0 {
            return Ok(());
        }
        let s = state as usize;
        let out = self.con.commands();
        out.command(1).arg(b"MULTI");
        out.command(1 + n).arg(b"DEL");
        for key in split_keys(&self.keys, &self.key_ends) {
            out.arg_parts(&self.prefixes[s], key);
        }
        out.command(2 + n).arg(b"ZREM").arg(&self.indexes[s]);
        for key in split_keys(&self.keys, &self.key_ends) {
            out.arg(key);
        }
        out.command(1).arg(b"EXEC");
        self.exchange(Op::RangeDelete)
    }

    /// Reads every key of the state from its index, then deletes them and the index in one
    /// `MULTI`/`EXEC` (Redis has no keyspaces to drop): two round trips.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.check(state)?;
        let s = state as usize;
        self.cursors[s].0 = false;
        let n = self.keys_in(Op::Drop, state, &[], None)?;
        if n == 0 {
            return Ok(());
        }
        let out = self.con.commands();
        out.command(1).arg(b"MULTI");
        // a command of at most DROP_CHUNK keys: Redis limits a command's arguments
        let mut from = 0;
        for chunk in self.key_ends.chunks(DROP_CHUNK) {
            out.command(1 + chunk.len()).arg(b"DEL");
            for &end in chunk {
                out.arg_parts(&self.prefixes[s], &self.keys[from..end]);
                from = end;
            }
        }
        out.command(2).arg(b"DEL").arg(&self.indexes[s]);
        out.command(1).arg(b"EXEC");
        self.exchange(Op::Drop)
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
        if self.pending_writes > 0 {
            self.exchange(Op::Put)?;
        }
        Ok(())
    }
}

/// How a run's keys are unlinked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unlink {
    /// One `UNLINK` of every key a `SCAN` found.
    Together,
    /// One `UNLINK` per key, pipelined: a cluster refuses a command whose keys lie in
    /// different slots.
    OneByOne,
}

/// Removes every key matching `pattern` on the server behind `con`.
fn remove_keys(con: &mut Connection, pattern: &[u8], unlink: Unlink) -> Result<(), Failure> {
    let mut cursor = b"0".to_vec();
    let mut keys = Commands::default();
    loop {
        con.command(6)
            .arg(b"SCAN")
            .arg(&cursor)
            .arg(b"MATCH")
            .arg(pattern)
            .arg(b"COUNT")
            .arg(b"10000");
        let reply = con.round_trip()?;
        let mut items = reply.items()?;
        let (Some(next), Some(found)) = (items.next(), items.next()) else {
            return Err(reply::ProtocolError {
                offset: 0,
                message: "a SCAN reply without a cursor and keys",
            }
            .into());
        };
        cursor.clear();
        cursor.extend_from_slice(next?.bulk()?.unwrap_or(b"0"));
        let found = found?;
        let count = found.items()?.count();
        if count > 0 {
            keys.clear();
            if unlink == Unlink::Together {
                keys.command(1 + count).arg(b"UNLINK");
            }
            for key in found.items()? {
                if unlink == Unlink::OneByOne {
                    keys.command(2).arg(b"UNLINK");
                }
                keys.arg(key?.bulk()?.unwrap_or_default());
            }
            con.commands().append(&keys);
            con.exchange()?;
        }
        if cursor == b"0" {
            return Ok(());
        }
    }
}

impl Drop for RedisStore {
    /// Removes every key the run wrote. After a failed request the connection may hold a late
    /// answer, so a fresh one does it; a server that still does not answer is named with the
    /// command that removes the keys later. After a stop request the server is waited for at
    /// most [`CLEANUP_AFTER_STOP`].
    fn drop(&mut self) {
        let pattern = format!("{}[:#]*", self.run_tag);
        self.con.discard_unsent();
        let stopped = self.server.stop.load(std::sync::atomic::Ordering::Relaxed);
        let timeout = if stopped {
            self.server.timeout.min(CLEANUP_AFTER_STOP)
        } else {
            self.server.timeout
        };
        let cleaned = if self.con.is_broken() || stopped {
            // the run's stop flag is set: the cleanup has one of its own
            Connection::open(&self.server.target, timeout, Arc::default())
                .and_then(|mut fresh| remove_keys(&mut fresh, pattern.as_bytes(), Unlink::Together))
        } else {
            remove_keys(&mut self.con, pattern.as_bytes(), Unlink::Together)
        };
        if let Err(e) = cleaned {
            let url = &self.server.shown;
            eprintln!(
                "warning: the run's keys are left on {url}: {}; remove them later with \
                 redis-cli -u {url} --scan --pattern '{pattern}' | xargs -r redis-cli -u {url} unlink",
                self.server.describe(&e),
            );
        }
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.server.shown)
            .finish()
    }
}

/// A tag no other run shares (process id and start time), under which a run keeps its keys.
pub(crate) fn run_tag() -> String {
    format!(
        "g{:x}{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}

/// Each state's key prefix under `run_tag`: `TAG:STATE:`.
pub(crate) fn state_prefixes(run_tag: &str, states: usize) -> Vec<Vec<u8>> {
    (0..states)
        .map(|s| format!("{run_tag}:{s}:").into_bytes())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::process::{Child, Command, Stdio};

    use super::*;
    use crate::store::contract;

    /// A plain `redis-server` on a free loopback port, killed when dropped.
    struct Server {
        child: Child,
        url: String,
        _dir: tempfile::TempDir,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Starts one, or `None` (skipped) when `redis-server` is missing outside CI.
    fn server(test: &str) -> Option<Server> {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "{test}: redis-server is missing, but CI=true: .ci/run installs it"
            );
            eprintln!("skipping {test}: redis-server is not installed");
            return None;
        }
        for _attempt in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .unwrap()
                .port();
            let dir = tempfile::tempdir().unwrap();
            let mut child = Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while child.try_wait().unwrap().is_none()
                && std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
            {
                assert!(std::time::Instant::now() < deadline, "{test}: no server");
                std::thread::sleep(Duration::from_millis(20));
            }
            // a port taken between choosing and binding it makes the server exit
            std::thread::sleep(Duration::from_millis(50));
            if child.try_wait().unwrap().is_none() {
                return Some(Server {
                    child,
                    url: format!("redis://127.0.0.1:{port}"),
                    _dir: dir,
                });
            }
        }
        panic!("{test}: redis-server did not start on any of 5 free loopback ports");
    }

    fn open(url: &str, pipeline: usize) -> RedisStore {
        let settings = StoreSettings {
            redis_url: url.to_string(),
            redis_pipeline: pipeline,
            ..StoreSettings::default()
        };
        RedisStore::open(&["s0".to_string(), "s1".to_string()], &settings).unwrap()
    }

    #[test]
    fn a_drop_deletes_its_states_keys_and_index_only() {
        let Some(server) = server("the redis drop contract") else {
            return;
        };
        for pipeline in [1, 16] {
            let mut s = open(&server.url, pipeline);
            contract::a_drop_empties_its_state_and_nothing_else(&mut s);
            contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(&mut s);
            assert!(s.emulated().contains(&Op::Drop));
            // another run on the same server (another instance) keeps its keys, and the
            // dropped state's keys and index are gone from the server
            let mut other = open(&server.url, pipeline);
            for i in 0..12_000u32 {
                s.put(0, &i.to_be_bytes(), b"v").unwrap();
                other.put(0, &i.to_be_bytes(), b"w").unwrap();
            }
            s.drop_state(0).unwrap();
            assert_eq!(s.range_query(0, b"", &[0xff; 5]).unwrap(), 0);
            assert_eq!(other.range_query(0, b"", &[0xff; 5]).unwrap(), 12_000);
            let pattern = format!("{}[:#]0*", s.run_tag);
            s.con
                .command(6)
                .arg(b"SCAN")
                .arg(b"0")
                .arg(b"MATCH")
                .arg(pattern.as_bytes())
                .arg(b"COUNT")
                .arg(b"1000000");
            let reply = s.con.round_trip().unwrap();
            let mut items = reply.items().unwrap();
            items.next();
            let left = items.next().unwrap().unwrap().items().unwrap().count();
            assert_eq!(left, 0, "state 0's keys or index are left");
        }
    }
}
