//! State stores behind one interface, one file per store.
//!
//! A [`Store`] receives the state-access stream request by request. Stores that lack an op
//! emulate it the way a stream processor would have to (a merge becomes get + append + put, a
//! range delete a scan of the range and a delete of each key in it), and say so through
//! [`Store::emulated`], so results can report it.

use std::path::{Path, PathBuf};

use gadget::access::{Op, StateId};

use crate::clock::RunClock;
use crate::completion::CompletedChunk;
use crate::value::ValueBytes;
use crate::workload::{Request, RequestBlock};

/// Marks helpers only the feature-gated stores call: a build without any of them (the memory
/// store alone, as `scripts/driver-instructions.sh` builds its bench) leaves them unused.
macro_rules! for_gated_stores {
    ($item:item) => {
        #[cfg_attr(
            not(any(
                feature = "rocksdb",
                feature = "redis",
                feature = "leveldb",
                feature = "berkeleydb",
                feature = "lmdb",
                feature = "redb",
                feature = "fjall",
                feature = "sqlite",
                feature = "faster"
            )),
            allow(dead_code)
        )]
        $item
    };
}

mod applied;
mod batch;
#[cfg(feature = "berkeleydb")]
pub mod berkeleydb;
pub mod choice;
#[cfg(test)]
mod contract;
#[cfg(any(feature = "lmdb", feature = "redb", feature = "fjall"))]
mod cursor;
pub mod far;
#[cfg(feature = "faster")]
pub mod faster;
#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "lethe")]
pub mod lethe;
#[cfg(feature = "leveldb")]
pub mod leveldb;
mod libraries;
#[cfg(feature = "lmdb")]
pub mod lmdb;
pub mod memory;
pub mod placement;
mod request;
pub use request::{issue, issue_access};
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
pub mod rocksdb_lib;
pub mod routed;
mod settings;
pub mod spec;
pub use settings::{Route, StoreSettings};
#[cfg(feature = "sqlite")]
pub mod sqlite;

/// A failed store request or a store that could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be created or opened at `path`.
    #[error("cannot open the {store} store at {path}: {message}")]
    Open {
        /// The store's name.
        store: &'static str,
        /// Its data directory.
        path: PathBuf,
        /// What the store said.
        message: String,
    },
    /// A request failed inside the store.
    #[error("the {store} store failed a {op} request: {message}")]
    Request {
        /// The store's name.
        store: &'static str,
        /// The request's op.
        op: Op,
        /// What the store said.
        message: String,
    },
    /// A stop request (Ctrl-C, SIGTERM, SIGHUP; [`StoreSettings::stop`]) ended a wait for
    /// the store: not a failure of the store, the run ends as an interrupted one.
    #[error("stopped (Ctrl-C, SIGTERM or SIGHUP) while waiting for the {store} store")]
    Interrupted {
        /// The store's name.
        store: &'static str,
    },
    /// The trace names a state the store was not opened with.
    #[error("request for state #{state}, but the store was opened with {states} states; the trace is inconsistent")]
    UnknownState {
        /// The state index in the request.
        state: StateId,
        /// How many states the store knows.
        states: usize,
    },
}

/// A state store as a stream processor uses it: one keyspace per state (a column family in
/// RocksDB), point reads and writes, merges, iterators and write batches.
///
/// Reads return the length of the value found, which is what conformance tests compare.
pub trait Store {
    /// The store's name as users select it (`rocksdb`, `memory`, ...).
    fn name(&self) -> &'static str;

    /// Point read; the length of the value, `None` when the key is absent.
    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError>;

    /// Point write.
    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError>;

    /// Appends `value` to the key's value through the merge operator (Flink's list state: a
    /// `,` between elements).
    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError>;

    /// Point delete.
    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError>;

    /// Opens a fresh iterator of the state at the first key `>= key`; the value length of
    /// the entry it lands on, `None` past the end.
    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError>;

    /// Advances the state's current iterator; the value length of the next entry, `None` past
    /// the end or when no iterator is open.
    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError>;

    /// Adds a put to the pending write batch.
    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError>;

    /// Adds a delete to the pending write batch.
    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError>;

    /// Writes the pending batch atomically.
    fn batch_commit(&mut self) -> Result<(), StoreError>;

    /// Reads every entry of the state with `start <= key < end`; how many there were. An
    /// empty or inverted range (`start >= end`) reads nothing.
    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError>;

    /// Deletes every entry of the state with `start <= key < end` (nothing when
    /// `start >= end`). Entries in the pending write batch are not affected.
    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError>;

    /// A state comes into being under `name` ([`Op::Open`]; Kafka Streams opens a RocksDB
    /// instance per window segment). Every state of the trace's table has its keyspace from
    /// the store's opening on, so there is nothing to create; a store that names keyspaces
    /// may use the name.
    fn open_state(&mut self, state: StateId, name: &str) -> Result<(), StoreError> {
        let _ = (state, name);
        Ok(())
    }

    /// Drops every entry of `state` ([`Op::Drop`]; Kafka Streams deletes an expired segment's
    /// RocksDB instance), the way the store can: its keyspace dropped and made again
    /// (RocksDB's column family, redb's table), emptied in one call (LMDB, SQLite,
    /// BerkeleyDB), or its entries deleted one by one, which [`Store::emulated`] reports.
    /// Nothing else is touched: the other states, and in a shared store the other instances'
    /// states, keep their entries.
    ///
    /// The state stays usable, empty, for a later open. Its open iterator is closed: a `next`
    /// before the state's next `seek` returns `None`. Entries of the state in the pending write
    /// batch are not affected, as for [`Store::range_delete`]: the commit writes them into the
    /// emptied state.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError>;

    /// Flushes the state's buffered writes to storage ([`Op::Flush`]; Spark flushes its
    /// RocksDB instance's memtables at every commit, having written with the WAL off). Open
    /// iterators stay usable. The default is the store's own [`Store::flush`], which makes
    /// every state durable; a store that can flush one state does only that (RocksDB: the
    /// state's column family).
    fn flush_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let _ = state;
        self.flush()
    }

    /// Takes a consistent copy of the state ([`Op::Checkpoint`]; Spark creates a RocksDB
    /// checkpoint at every commit and uploads it). RocksDB creates a real checkpoint (hard
    /// links to its files, beside the store, the previous one removed); other stores have no
    /// such copy and flush the state instead, which [`Store::emulated`] reports.
    fn checkpoint_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.flush_state(state)
    }

    /// The store that holds `state`: this one's name, or, for states placed in several
    /// stores, the one the state lives in.
    fn store_of(&self, state: StateId) -> &str {
        let _ = state;
        self.name()
    }

    /// Issues `chunk`'s requests (of `block`) in order, noting each one's completion in
    /// `done`, and stops at the first that fails: a closed loop's per-request path. Leave it to
    /// its default, which is compiled for each store, so that the loop calls the store's own
    /// methods directly rather than through the `dyn Store` the driver holds (26 instructions
    /// a request on the memory store: `BENCHMARKS.md`, "Harness overhead").
    fn issue_chunk(
        &mut self,
        block: &RequestBlock,
        chunk: &[Request],
        values: &mut ValueBytes,
        clock: &RunClock,
        done: &mut CompletedChunk,
    ) -> Result<(), StoreError> {
        for r in chunk {
            let read = issue(self, block, r, values)?;
            done.complete(clock, r, read);
        }
        Ok(())
    }

    /// Ops this store does not have natively and emulates.
    fn emulated(&self) -> &'static [Op] {
        &[]
    }

    /// Flushes buffered writes before the store is closed or measured for size.
    fn flush(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The store's own counters of the work behind the requests so far, by name, when it was
    /// opened with [`StoreSettings::counters`] and keeps any (RocksDB: the deleted and hidden
    /// entries its iterators stepped over), and what it holds now under names that have
    /// [`HELD`] in them (RocksDB: its deletes not yet compacted away). Read on the thread that
    /// issued the requests.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// What marks a store counter's name as what the store holds at the end of the run (bytes
/// of live files, deletes not yet compacted away) rather than work counted over it
/// (`rocksdb.held.tombstones_in_files`).
pub const HELD: &str = ".held.";

/// Which store to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// [`memory::MemoryStore`]: ordered maps in memory, the upper-bound baseline.
    Memory,
    /// RocksDB set up as Flink sets it up (see [`rocksdb`]).
    #[cfg(feature = "rocksdb")]
    RocksDb,
    /// Redis, an external store over the network (see [`redis`]).
    #[cfg(feature = "redis")]
    Redis,
    /// A Redis Cluster through a slot-aware client (see [`redis::cluster`]).
    #[cfg(feature = "redis")]
    RedisCluster,
    /// LevelDB (see [`leveldb`]).
    #[cfg(feature = "leveldb")]
    LevelDb,
    /// BerkeleyDB with B-tree databases (see [`berkeleydb`]).
    #[cfg(feature = "berkeleydb")]
    BerkeleyDbBTree,
    /// BerkeleyDB with hash databases.
    #[cfg(feature = "berkeleydb")]
    BerkeleyDbHash,
    /// LMDB through heed (see [`lmdb`]).
    #[cfg(feature = "lmdb")]
    Lmdb,
    /// redb (see [`redb`]).
    #[cfg(feature = "redb")]
    Redb,
    /// fjall, an LSM tree in Rust (see [`fjall`]).
    #[cfg(feature = "fjall")]
    Fjall,
    /// SQLite through rusqlite (see [`sqlite`]).
    #[cfg(feature = "sqlite")]
    Sqlite,
    /// FASTER through faster-rs (see [`faster`]).
    #[cfg(feature = "faster")]
    Faster,
    /// Lethe, RocksDB 6.12 with FADE (see [`lethe`]).
    #[cfg(feature = "lethe")]
    Lethe,
}

impl StoreKind {
    /// Every store compiled into this build.
    pub fn all() -> &'static [StoreKind] {
        &[
            StoreKind::Memory,
            #[cfg(feature = "rocksdb")]
            StoreKind::RocksDb,
            #[cfg(feature = "redis")]
            StoreKind::Redis,
            #[cfg(feature = "redis")]
            StoreKind::RedisCluster,
            #[cfg(feature = "leveldb")]
            StoreKind::LevelDb,
            #[cfg(feature = "berkeleydb")]
            StoreKind::BerkeleyDbBTree,
            #[cfg(feature = "berkeleydb")]
            StoreKind::BerkeleyDbHash,
            #[cfg(feature = "lmdb")]
            StoreKind::Lmdb,
            #[cfg(feature = "redb")]
            StoreKind::Redb,
            #[cfg(feature = "fjall")]
            StoreKind::Fjall,
            #[cfg(feature = "sqlite")]
            StoreKind::Sqlite,
            #[cfg(feature = "faster")]
            StoreKind::Faster,
            #[cfg(feature = "lethe")]
            StoreKind::Lethe,
        ]
    }

    /// What the store says about itself, declared in its own file.
    pub fn spec(self) -> &'static spec::StoreSpec {
        match self {
            StoreKind::Memory => &memory::SPEC,
            #[cfg(feature = "rocksdb")]
            StoreKind::RocksDb => &rocksdb::SPEC,
            #[cfg(feature = "redis")]
            StoreKind::Redis => &redis::SPEC,
            #[cfg(feature = "redis")]
            StoreKind::RedisCluster => &redis::cluster::SPEC,
            #[cfg(feature = "leveldb")]
            StoreKind::LevelDb => &leveldb::SPEC,
            #[cfg(feature = "berkeleydb")]
            StoreKind::BerkeleyDbBTree => &berkeleydb::BTREE_SPEC,
            #[cfg(feature = "berkeleydb")]
            StoreKind::BerkeleyDbHash => &berkeleydb::HASH_SPEC,
            #[cfg(feature = "lmdb")]
            StoreKind::Lmdb => &lmdb::SPEC,
            #[cfg(feature = "redb")]
            StoreKind::Redb => &redb::SPEC,
            #[cfg(feature = "fjall")]
            StoreKind::Fjall => &fjall::SPEC,
            #[cfg(feature = "sqlite")]
            StoreKind::Sqlite => &sqlite::SPEC,
            #[cfg(feature = "faster")]
            StoreKind::Faster => &faster::SPEC,
            #[cfg(feature = "lethe")]
            StoreKind::Lethe => &lethe::SPEC,
        }
    }

    /// The name users select the store by.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The store named `name`, if this build has it.
    pub fn from_name(name: &str) -> Option<StoreKind> {
        StoreKind::all().iter().copied().find(|k| k.name() == name)
    }

    /// Every store compiled in with what it is (`rocksdb (embedded, as Flink uses it; the
    /// default), memory (...)`), for `--help`.
    pub fn described() -> String {
        StoreKind::all()
            .iter()
            .map(|k| format!("{} ({})", k.name(), k.spec().about))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Names of every store compiled in, for error messages and `--help`.
    pub fn names() -> String {
        StoreKind::all()
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Opens `kind` with one keyspace per entry of `states`, its files under `dir` (all in the one
/// store: [`routed::open`] places states in stores of their own where the settings say, and
/// is the way in for settings with routes).
pub fn open_store(
    kind: StoreKind,
    dir: &Path,
    states: &[String],
    settings: &StoreSettings,
) -> Result<Box<dyn Store>, StoreError> {
    debug_assert!(
        settings.routes.is_empty(),
        "open_store opens one store and would drop the routes: open through routed::open"
    );
    match kind.spec().open {
        spec::Opener::PerInstance(open) => open(dir, states, settings),
        spec::Opener::Shared(open) => open(dir, &[states.to_vec()], settings)?.attach(0),
    }
}

/// One store instance that several operator instances share, each on its own thread.
///
/// Store handles are not `Send` (they hold iterators into the store), so each thread attaches
/// its own handle to the shared store.
pub trait SharedStore: Send + Sync {
    /// The handle of operator instance `instance`, over its own keyspaces.
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError>;
}

for_gated_stores! {
/// Instance `instance`'s part of a shared store's per-instance `parts` (its column families,
/// partitions or databases), or an error naming how many instances the store was opened for.
pub(crate) fn instance_part<T: Clone>(
    store: &'static str,
    path: &Path,
    parts: &[T],
    instance: usize,
) -> Result<T, StoreError> {
    parts
        .get(instance)
        .cloned()
        .ok_or_else(|| StoreError::Open {
            store,
            path: path.to_path_buf(),
            message: format!(
                "instance {instance} does not exist; the store was opened for {}",
                parts.len()
            ),
        })
}
}

/// Opens one `kind` store under `dir` for several operator instances (`instances[i]` lists
/// instance `i`'s states).
pub fn open_shared_store(
    kind: StoreKind,
    dir: &Path,
    instances: &[Vec<String>],
    settings: &StoreSettings,
) -> Result<std::sync::Arc<dyn SharedStore>, StoreError> {
    if !settings.routes.is_empty() {
        return Err(StoreError::Open {
            store: kind.name(),
            path: dir.to_path_buf(),
            message: "states placed in stores of their own ([run.states]) need a store per instance; drop --shared-store".into(),
        });
    }
    match kind.spec().open {
        spec::Opener::Shared(open) => open(dir, instances, settings),
        spec::Opener::PerInstance(_) => Err(StoreError::Open {
            store: kind.name(),
            path: dir.to_path_buf(),
            message: "this store cannot be shared between instances; give each its own (drop --shared-store)".into(),
        }),
    }
}

/// Whether `[start, end)` holds no key at all.
#[inline]
pub(crate) fn empty_range(start: &[u8], end: &[u8]) -> bool {
    start >= end
}

/// The merge operator's delimiter: Flink's `StringAppendOperator` joins list elements by `,`.
pub const MERGE_DELIMITER: u8 = b',';
