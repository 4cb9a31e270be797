//! KVBench (Zhu, Saha, Athanassoulis, Sarkar, DBTest '24) as a state-access stream.
//!
//! KVBench generates a key-value workload with exact bookkeeping of which keys exist: inserts
//! of new keys, updates, non-empty and empty point queries, point deletes of existing keys,
//! range queries and range deletes of a given selectivity, each point operation with its own
//! key distribution, all interleaved under thresholds (a fraction of the inserts that must
//! have happened before another operation type may start). All keys live in one state; the
//! operations map onto the stream as:
//!
//! | KVBench | accesses |
//! |---|---|
//! | insert, update | `put` (value of `entry_size − key_size` bytes) |
//! | point delete | `delete` |
//! | point query (empty or not) | `get` |
//! | range query over `m` keys | `range_query` from the first key to just past the `m`-th |
//! | range delete over `m` keys | `range_delete` from the first key to just past the `m`-th |
//!
//! A range with no key in it (selectivity 0, or an empty store) covers only a key just after
//! a random existing key, which no key equals, so it reads and deletes nothing. Stores without
//! native range ops emulate them (see `gadget-eval`'s stores). `docs/kvbench.md` has the details and
//! where Gadget departs from KVBench's C++ generator.
//!
//! The key vector `V` of the paper is kept as a [`Fenwick`] tree over every key that can ever
//! exist (the preloaded keys and the keys of the inserts, all drawn before the first
//! operation, as KVBench draws them), so finding the `i`-th existing key in key order, or the
//! key of popularity rank `r` in the shuffled order `V'` of the Zipfian generator, costs
//! `O(log n)` and nothing is allocated per operation.
//!
//! One concept, KVBench's generator with its exact bookkeeping of the keys that exist, which
//! is why the file is long.

use std::path::PathBuf;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::kvbench_generators::{
    shuffled, Fenwick, IndexDistribution, IndexSampler, KeyArena, Pick, ALPHABET, PREFIXES,
};
use super::ycsb::{OperationClock, Phase};
use crate::access::{encode_range, Access, AccessSink, Op};
use crate::operator::Operator;
use crate::source::element::Event;
use crate::source::random::Rng;

/// Sub-stream of the config seed from which the keys are drawn.
const KEYS_STREAM: u64 = 0x6b76_6b65_7973;
/// Sub-stream of the config seed from which the operations are drawn.
const OPERATIONS_STREAM: u64 = 0x6b76_6f70_7300;

/// Draws of a new key before Gadget gives up: the key space is (nearly) exhausted.
const MAX_KEY_ATTEMPTS: u32 = 1_000_000;

/// The state all KVBench operations target.
pub const STATE_NAME: &str = "kvbench";

/// The fraction of the inserts that must have happened before each other operation type may
/// start (KVBench's `*_THRESHOLD` macros).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// `U_THRESHOLD`: before updates.
    pub update: f64,
    /// `PD_THRESHOLD`: before point deletes.
    pub point_delete: f64,
    /// `RD_THRESHOLD`: before range deletes.
    pub range_delete: f64,
    /// `PQ_THRESHOLD`: before point queries.
    pub point_query: f64,
    /// `RQ_THRESHOLD`: before range queries.
    pub range_query: f64,
}

impl Default for Thresholds {
    /// KVBench's compiled-in values.
    fn default() -> Self {
        Thresholds {
            update: 0.1,
            point_delete: 0.1,
            range_delete: 0.75,
            point_query: 0.4,
            range_query: 0.1,
        }
    }
}

/// Where the keys that exist before the first operation come from (KVBench's `--PL`).
#[derive(Debug, Clone, PartialEq)]
pub enum Preload {
    /// Nothing: the store starts empty.
    None,
    /// The keys of an insert-only KVBench workload of this many inserts, drawn here from the
    /// seed with the configured insert distribution (`load_gen -I n`, then `--PL`).
    Generate(u64),
    /// The keys of the `I` lines of an existing KVBench workload file, in file order,
    /// duplicates dropped.
    Keys {
        /// The file they were read from.
        path: PathBuf,
        /// The keys.
        keys: Arc<KeyArena>,
    },
}

impl Preload {
    /// The number of preloaded keys.
    pub fn len(&self) -> u64 {
        match self {
            Preload::None => 0,
            Preload::Generate(n) => *n,
            Preload::Keys { keys, .. } => keys.len() as u64,
        }
    }

    /// True if nothing is preloaded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One of the five KVBench benchmark workloads of the KVBench paper's Table 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// KVBench-I: empty point-query heavy, with preloading.
    I,
    /// KVBench-II: interleaved inserts, deletes, point queries and updates.
    II,
    /// KVBench-III: multi-distribution updates and point queries, with preloading.
    III,
    /// KVBench-IV: update and range-delete heavy, with preloading.
    IV,
    /// KVBench-V: insert heavy with skewed prefixes.
    V,
}

impl Preset {
    /// Every preset, in order.
    pub const ALL: [Preset; 5] = [Preset::I, Preset::II, Preset::III, Preset::IV, Preset::V];

    /// The preset's name in configs (`"I"` … `"V"`).
    pub fn name(self) -> &'static str {
        match self {
            Preset::I => "I",
            Preset::II => "II",
            Preset::III => "III",
            Preset::IV => "IV",
            Preset::V => "V",
        }
    }

    /// Parses a name as written by [`Preset::name`].
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The preset at `operations` operations (and, for the preloading presets, as many
    /// preloaded keys), on top of KVBench's defaults.
    pub fn spec(self, operations: u64) -> KvbenchSpec {
        let share = |percent: u64| operations * percent / 100;
        let mut s = KvbenchSpec {
            preset: Some(self),
            ..KvbenchSpec::default()
        };
        match self {
            Preset::I => {
                s.preload = Preload::Generate(operations);
                s.point_queries = operations;
                s.empty_query_fraction = 0.8;
                s.empty_query_distribution = IndexDistribution::Beta {
                    alpha: 1.0,
                    beta: 1.0,
                };
            }
            Preset::II => {
                s.inserts = share(50);
                s.point_deletes = share(10);
                s.point_queries = share(15);
                s.empty_query_fraction = 1.0;
                s.updates = operations - s.inserts - s.point_deletes - s.point_queries;
            }
            Preset::III => {
                s.preload = Preload::Generate(operations);
                s.updates = share(50);
                s.point_queries = operations - s.updates;
                s.empty_query_fraction = 0.5;
                s.update_distribution = IndexDistribution::Zipfian { alpha: 1.0 };
            }
            Preset::IV => {
                s.preload = Preload::Generate(operations);
                s.updates = share(50);
                s.range_deletes = operations - s.updates;
                s.range_delete_selectivity = PRESET_IV_SELECTIVITY;
                s.update_distribution = IndexDistribution::Zipfian { alpha: 1.0 };
            }
            Preset::V => {
                s.inserts = share(95);
                s.point_queries = operations - s.inserts;
                s.insert_distribution = IndexDistribution::Zipfian { alpha: 1.0 };
            }
        }
        s
    }
}

/// KVBench-IV's range-delete selectivity (the paper gives none): small enough that every
/// range delete removes one key at the preset's default scale, so that half the preload is
/// deleted by the end, as the paper's "50% range deletes" over the preload suggests.
pub const PRESET_IV_SELECTIVITY: f64 = 0.00001;

/// Operations of a preset when `operations` is not given.
pub const PRESET_OPERATIONS: u64 = 100_000;

/// A validated KVBench workload: KVBench's command-line flags, one field each.
#[derive(Debug, Clone, PartialEq)]
pub struct KvbenchSpec {
    /// `-I`: inserts of new keys.
    pub inserts: u64,
    /// `-U`: updates of existing keys.
    pub updates: u64,
    /// `-D`: point deletes of existing keys.
    pub point_deletes: u64,
    /// `-R`: range deletes.
    pub range_deletes: u64,
    /// `-y`: the fraction of the existing keys a range delete covers.
    pub range_delete_selectivity: f64,
    /// `-Q`: point queries, empty and not.
    pub point_queries: u64,
    /// `-S`: range queries.
    pub range_queries: u64,
    /// `-Y`: the fraction of the existing keys a range query covers.
    pub range_query_selectivity: f64,
    /// `-Z`: the fraction of the point queries that target a key that does not exist.
    pub empty_query_fraction: f64,
    /// `-z`: parsed by KVBench and never used by its generator; kept, with no effect.
    pub empty_delete_fraction: f64,
    /// `--UZ`: distinct empty-query keys as a fraction of the empty queries.
    pub unique_empty_query_fraction: f64,
    /// `--UE`: parsed by KVBench and never used by its generator; kept, with no effect.
    pub unique_existing_query_fraction: f64,
    /// `-E`: bytes of a key plus its value.
    pub entry_size: u32,
    /// `-L`: the key's share of the entry, `key_size / entry_size`.
    pub lambda: f64,
    /// `--ID`: the distribution of the two-character prefix of inserted keys.
    pub insert_distribution: IndexDistribution,
    /// `--UD`: which existing key an update targets.
    pub update_distribution: IndexDistribution,
    /// `--ED`: which existing key a non-empty point query targets.
    pub existing_query_distribution: IndexDistribution,
    /// `--ZD`: which non-existing key an empty point query targets.
    pub empty_query_distribution: IndexDistribution,
    /// KVBench's `*_THRESHOLD` macros.
    pub thresholds: Thresholds,
    /// `--PL`: the keys that exist before the first operation.
    pub preload: Preload,
    /// Gadget's: whether the stream carries the preload's inserts (`load`), the operations
    /// (`run`), or both.
    pub phase: Phase,
    /// The Table 5 preset this spec started from, if any.
    pub preset: Option<Preset>,
}

impl Default for KvbenchSpec {
    /// KVBench's defaults: no operation, 8-byte entries of 4-byte keys, uniform everywhere.
    fn default() -> Self {
        KvbenchSpec {
            inserts: 0,
            updates: 0,
            point_deletes: 0,
            range_deletes: 0,
            range_delete_selectivity: 0.0,
            point_queries: 0,
            range_queries: 0,
            range_query_selectivity: 0.0,
            empty_query_fraction: 0.0,
            empty_delete_fraction: 0.0,
            unique_empty_query_fraction: 0.5,
            unique_existing_query_fraction: 0.5,
            entry_size: 8,
            lambda: 0.5,
            insert_distribution: IndexDistribution::Uniform,
            update_distribution: IndexDistribution::Uniform,
            existing_query_distribution: IndexDistribution::Uniform,
            empty_query_distribution: IndexDistribution::Uniform,
            thresholds: Thresholds::default(),
            preload: Preload::None,
            phase: Phase::Both,
            preset: None,
        }
    }
}

impl KvbenchSpec {
    /// Bytes of a key: `⌊lambda × entry_size⌋`.
    pub fn key_size(&self) -> u32 {
        (self.lambda * self.entry_size as f64) as u32
    }

    /// Bytes of a value: the rest of the entry.
    pub fn value_size(&self) -> u32 {
        self.entry_size - self.key_size()
    }

    /// Empty point queries: `⌊Q × Z⌋`, as KVBench counts them.
    pub fn empty_queries(&self) -> u64 {
        (self.point_queries as f64 * self.empty_query_fraction) as u64
    }

    /// Distinct keys the empty queries draw from: `round(UZ × empty queries)`, at least 1.
    pub fn empty_keys(&self) -> u64 {
        let n = self.empty_queries();
        if n == 0 {
            0
        } else {
            ((n as f64 * self.unique_empty_query_fraction).round() as u64).max(1)
        }
    }

    /// Operations after the preload.
    pub fn operations(&self) -> u64 {
        self.inserts
            + self.updates
            + self.point_deletes
            + self.range_deletes
            + self.point_queries
            + self.range_queries
    }

    /// Operations of the load phase (the preload's inserts; 0 when only the run phase runs).
    pub fn load_operations(&self) -> u64 {
        match self.phase {
            Phase::Run => 0,
            _ => self.preload.len(),
        }
    }

    /// Operations of the run phase (0 when only the load phase runs).
    pub fn run_operations(&self) -> u64 {
        match self.phase {
            Phase::Load => 0,
            _ => self.operations(),
        }
    }

    /// The clock that drives the client: one event per operation, 1 ms apart.
    pub fn clock(&self) -> OperationClock {
        OperationClock::new(self.load_operations() + self.run_operations(), 1.0)
    }

    /// The spec as config keys, for trace metadata.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        let mut put = |k: &str, v: serde_json::Value| {
            m.insert(k.to_string(), v);
        };
        if let Some(p) = self.preset {
            put("preset", p.name().into());
        }
        put("inserts", self.inserts.into());
        put("updates", self.updates.into());
        put("point_deletes", self.point_deletes.into());
        put("range_deletes", self.range_deletes.into());
        put(
            "range_delete_selectivity",
            self.range_delete_selectivity.into(),
        );
        put("point_queries", self.point_queries.into());
        put("range_queries", self.range_queries.into());
        put(
            "range_query_selectivity",
            self.range_query_selectivity.into(),
        );
        put("empty_query_fraction", self.empty_query_fraction.into());
        put("empty_delete_fraction", self.empty_delete_fraction.into());
        put(
            "unique_empty_query_fraction",
            self.unique_empty_query_fraction.into(),
        );
        put(
            "unique_existing_query_fraction",
            self.unique_existing_query_fraction.into(),
        );
        put("entry_size", self.entry_size.into());
        put("lambda", self.lambda.into());
        for (prefix, d) in [
            ("insert", self.insert_distribution),
            ("update", self.update_distribution),
            ("existing_query", self.existing_query_distribution),
            ("empty_query", self.empty_query_distribution),
        ] {
            put(&format!("{prefix}_distribution"), d.name().into());
            match d {
                IndexDistribution::Uniform => {}
                IndexDistribution::Normal { mean, stddev } => {
                    put(&format!("{prefix}_normal_mean"), mean.into());
                    put(&format!("{prefix}_normal_stddev"), stddev.into());
                }
                IndexDistribution::Beta { alpha, beta } => {
                    put(&format!("{prefix}_beta_alpha"), alpha.into());
                    put(&format!("{prefix}_beta_beta"), beta.into());
                }
                IndexDistribution::Zipfian { alpha } => {
                    put(&format!("{prefix}_zipf_alpha"), alpha.into());
                }
            }
        }
        let t = self.thresholds;
        put("update_threshold", t.update.into());
        put("point_delete_threshold", t.point_delete.into());
        put("range_delete_threshold", t.range_delete.into());
        put("point_query_threshold", t.point_query.into());
        put("range_query_threshold", t.range_query.into());
        match &self.preload {
            Preload::None => {}
            Preload::Generate(n) => put("preload", (*n).into()),
            Preload::Keys { path, .. } => put("preload", path.display().to_string().into()),
        }
        put(
            "phase",
            match self.phase {
                Phase::Load => "load",
                Phase::Run => "run",
                Phase::Both => "both",
            }
            .into(),
        );
        serde_json::Value::Object(m)
    }
}

/// One KVBench operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KvbenchOperation {
    /// Insert a new key.
    Insert = 0,
    /// Overwrite an existing key.
    Update = 1,
    /// Delete an existing key.
    PointDelete = 2,
    /// Delete every key in a range.
    RangeDelete = 3,
    /// Look up a key that exists.
    ExistingPointQuery = 4,
    /// Look up a key that does not exist.
    EmptyPointQuery = 5,
    /// Read every key in a range.
    RangeQuery = 6,
}

impl KvbenchOperation {
    /// Every operation, in the order of its numeric value.
    pub const ALL: [KvbenchOperation; 7] = [
        KvbenchOperation::Insert,
        KvbenchOperation::Update,
        KvbenchOperation::PointDelete,
        KvbenchOperation::RangeDelete,
        KvbenchOperation::ExistingPointQuery,
        KvbenchOperation::EmptyPointQuery,
        KvbenchOperation::RangeQuery,
    ];

    /// KVBench's letter for the operation in its workload files (`Q` for both point queries).
    pub fn letter(self) -> char {
        match self {
            KvbenchOperation::Insert => 'I',
            KvbenchOperation::Update => 'U',
            KvbenchOperation::PointDelete => 'D',
            KvbenchOperation::RangeDelete => 'R',
            KvbenchOperation::ExistingPointQuery | KvbenchOperation::EmptyPointQuery => 'Q',
            KvbenchOperation::RangeQuery => 'S',
        }
    }
}

/// Operations performed, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KvbenchCounts {
    /// Inserts of the load phase (the preload).
    pub loaded: u64,
    /// Run-phase operations, indexed by [`KvbenchOperation`] as a number.
    pub run: [u64; 7],
    /// Keys removed by range deletes.
    pub range_deleted_keys: u64,
    /// Operation events that found no operation possible (say, updates left over after every
    /// key was deleted); they issue nothing. KVBench's generator loops forever there.
    pub stuck: u64,
}

/// Which operation kinds remain; index = KVBench's choice number − 1.
const INSERT: usize = 0;
const UPDATE: usize = 1;
const POINT_DELETE: usize = 2;
const RANGE_DELETE: usize = 3;
const POINT_QUERY: usize = 4;
const RANGE_QUERY: usize = 5;

/// A KVBench generator as a client: every input event is its next operation, issued to the
/// state as the accesses listed in the [module docs](self).
#[derive(Debug, Clone)]
pub struct KvbenchClient {
    rng: Rng,
    /// Every key that can ever exist, in byte order.
    keys: KeyArena,
    exists: Vec<bool>,
    /// Existing keys in key order (the paper's sorted `V`).
    by_key: Fenwick,
    /// Existing keys in popularity order (the paper's shuffled `V'`).
    by_popularity: Fenwick,
    popularity_of: Vec<u32>,
    key_of_popularity: Vec<u32>,
    live: u64,
    /// Positions of the keys not inserted yet; the first `pending_len` are live.
    pending: Vec<u32>,
    pending_len: usize,
    /// Positions of the preloaded keys, in load order (empty when the load phase is skipped).
    load_order: Vec<u32>,
    load_next: usize,
    /// The keys empty queries target, in byte order, and their popularity order.
    empty_keys: KeyArena,
    empty_by_popularity: Vec<u32>,
    update: IndexSampler,
    existing_query: IndexSampler,
    empty_query: IndexSampler,
    /// Operations to do, by kind (`INSERT` … `RANGE_QUERY`).
    todo: [u64; 6],
    empty_queries_todo: u64,
    existing_queries_todo: u64,
    inserts_total: u64,
    thresholds: Thresholds,
    empty_query_fraction: f64,
    range_delete_selectivity: f64,
    range_query_selectivity: f64,
    value_size: u32,
    run: bool,
    /// The key of the range op being built.
    scratch: Vec<u8>,
    /// A range bound being built.
    bound: Vec<u8>,
    counts: KvbenchCounts,
    last: Option<KvbenchOperation>,
}

/// A 64-bit fingerprint of a key (FNV-1a, then a finalizer); equal keys have equal ones, so a
/// set of fingerprints never admits a duplicate key.
fn fingerprint(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    crate::source::random::splitmix64(&mut h)
}

/// Draws keys that are new to `seen`.
struct KeyDrawer<'a> {
    rng: &'a mut Rng,
    seen: &'a mut FxHashSet<u64>,
    key_size: usize,
    buf: Vec<u8>,
}

impl KeyDrawer<'_> {
    /// A new key with a two-character prefix drawn from `prefixes` and random padding
    /// (KVBench's insert keys).
    fn insert_key(&mut self, prefixes: &mut IndexSampler, popular_prefix: &[u32]) -> &[u8] {
        for _ in 0..MAX_KEY_ATTEMPTS {
            let p = match prefixes.next(PREFIXES, self.rng) {
                Pick::Sorted(i) => i,
                Pick::Popular(r) => u64::from(popular_prefix[r as usize]),
            };
            self.buf.clear();
            self.buf.push(ALPHABET[(p / 62) as usize]);
            self.buf.push(ALPHABET[(p % 62) as usize]);
            for _ in 2..self.key_size {
                self.buf.push(ALPHABET[self.rng.below(62) as usize]);
            }
            if self.seen.insert(fingerprint(&self.buf)) {
                return &self.buf;
            }
        }
        panic!(
            "KVBench: no new {}-byte key found in {MAX_KEY_ATTEMPTS} draws: the insert distribution's key space is exhausted; raise entry_size or lambda",
            self.key_size
        );
    }

    /// A new key of random characters (KVBench's empty-query keys).
    fn random_key(&mut self) -> &[u8] {
        for _ in 0..MAX_KEY_ATTEMPTS {
            self.buf.clear();
            for _ in 0..self.key_size {
                self.buf.push(ALPHABET[self.rng.below(62) as usize]);
            }
            if self.seen.insert(fingerprint(&self.buf)) {
                return &self.buf;
            }
        }
        panic!(
            "KVBench: no new {}-byte key found in {MAX_KEY_ATTEMPTS} draws; raise entry_size or lambda",
            self.key_size
        );
    }
}

impl KvbenchClient {
    /// A client for `spec`, drawing from `seed`: draws every key the workload will insert
    /// (and preload, and query empty) up front, as KVBench does.
    pub fn new(spec: &KvbenchSpec, seed: u64) -> Self {
        let mut rng = Rng::substream(seed, KEYS_STREAM);
        let mut seen = FxHashSet::default();
        let mut raw = KeyArena::new();
        let mut prefixes = IndexSampler::new(spec.insert_distribution);
        let popular_prefix = shuffled(PREFIXES as usize, &mut rng);
        let mut drawer = KeyDrawer {
            rng: &mut rng,
            seen: &mut seen,
            key_size: spec.key_size() as usize,
            buf: Vec::new(),
        };
        match &spec.preload {
            Preload::None => {}
            Preload::Generate(n) => {
                for _ in 0..*n {
                    raw.push(drawer.insert_key(&mut prefixes, &popular_prefix));
                }
            }
            Preload::Keys { keys, .. } => {
                for i in 0..keys.len() {
                    if drawer.seen.insert(fingerprint(keys.get(i))) {
                        raw.push(keys.get(i));
                    }
                }
            }
        }
        let preloaded = raw.len();
        for _ in 0..spec.inserts {
            raw.push(drawer.insert_key(&mut prefixes, &popular_prefix));
        }
        let mut empty_raw = KeyArena::new();
        for _ in 0..spec.empty_keys() {
            empty_raw.push(drawer.random_key());
        }
        drop(seen);

        let (keys, order) = raw.sorted();
        let universe = keys.len();
        let mut position_of = vec![0u32; universe];
        for (new, &old) in order.iter().enumerate() {
            position_of[old as usize] = new as u32;
        }
        let key_of_popularity = shuffled(universe, &mut rng);
        let mut popularity_of = vec![0u32; universe];
        for (rank, &pos) in key_of_popularity.iter().enumerate() {
            popularity_of[pos as usize] = rank as u32;
        }
        let (empty_keys, _) = empty_raw.sorted();
        let empty_by_popularity = shuffled(empty_keys.len(), &mut rng);

        let empty_queries = spec.empty_queries();
        let mut client = KvbenchClient {
            rng: Rng::substream(seed, OPERATIONS_STREAM),
            keys,
            exists: vec![false; universe],
            by_key: Fenwick::new(universe),
            by_popularity: Fenwick::new(universe),
            popularity_of,
            key_of_popularity,
            live: 0,
            pending: position_of[preloaded..].to_vec(),
            pending_len: universe - preloaded,
            load_order: if spec.load_operations() > 0 {
                position_of[..preloaded].to_vec()
            } else {
                Vec::new()
            },
            load_next: 0,
            empty_keys,
            empty_by_popularity,
            update: IndexSampler::new(spec.update_distribution),
            existing_query: IndexSampler::new(spec.existing_query_distribution),
            empty_query: IndexSampler::new(spec.empty_query_distribution),
            todo: if spec.run_operations() > 0 {
                [
                    spec.inserts,
                    spec.updates,
                    spec.point_deletes,
                    spec.range_deletes,
                    spec.point_queries,
                    spec.range_queries,
                ]
            } else {
                [0; 6]
            },
            empty_queries_todo: empty_queries,
            existing_queries_todo: spec.point_queries - empty_queries,
            inserts_total: spec.inserts,
            thresholds: spec.thresholds,
            empty_query_fraction: spec.empty_query_fraction,
            range_delete_selectivity: spec.range_delete_selectivity,
            range_query_selectivity: spec.range_query_selectivity,
            value_size: spec.value_size(),
            run: spec.run_operations() > 0,
            scratch: Vec::with_capacity(2 * spec.key_size() as usize + 4),
            bound: Vec::with_capacity(2 * spec.key_size() as usize + 4),
            counts: KvbenchCounts::default(),
            last: None,
        };
        for &pos in &position_of[..preloaded] {
            client.mark(pos as usize);
        }
        client
    }

    /// The operations performed so far.
    pub fn counts(&self) -> KvbenchCounts {
        self.counts
    }

    /// The run-phase operation the last event performed (`None` after a load insert or a
    /// stuck event).
    pub fn last_operation(&self) -> Option<KvbenchOperation> {
        self.last
    }

    /// The number of keys that exist now.
    pub fn live_keys(&self) -> u64 {
        self.live
    }

    /// True if `key` exists now, by the generator's own bookkeeping.
    pub fn exists(&self, key: &[u8]) -> bool {
        self.keys.find(key).is_some_and(|i| self.exists[i])
    }

    /// The keys that exist now, in key order.
    pub fn existing_keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.keys.len())
            .filter(|&i| self.exists[i])
            .map(|i| self.keys.get(i))
    }

    /// The keys empty point queries draw from (none of them ever exists), in key order.
    pub fn empty_query_keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.empty_keys.len()).map(|i| self.empty_keys.get(i))
    }

    /// Performs the next operation (a preload insert while the load phase lasts).
    pub fn next_operation(&mut self, out: &mut dyn AccessSink) {
        self.last = None;
        if self.load_next < self.load_order.len() {
            let pos = self.load_order[self.load_next] as usize;
            self.load_next += 1;
            self.counts.loaded += 1;
            self.emit(Op::Put, pos, self.value_size, out);
            return;
        }
        if !self.run {
            return;
        }
        let Some(kind) = self.choose() else {
            self.counts.stuck += 1;
            return;
        };
        self.todo[kind] -= 1;
        let operation = match kind {
            INSERT => {
                let j = self.rng.below(self.pending_len as u64) as usize;
                let pos = self.pending[j] as usize;
                self.pending.swap(j, self.pending_len - 1);
                self.pending_len -= 1;
                self.mark(pos);
                self.emit(Op::Put, pos, self.value_size, out);
                KvbenchOperation::Insert
            }
            UPDATE => {
                let pick = self.update.next(self.live, &mut self.rng);
                let pos = self.resolve(pick);
                self.emit(Op::Put, pos, self.value_size, out);
                KvbenchOperation::Update
            }
            POINT_DELETE => {
                let r = self.rng.below(self.live) as u32;
                let pos = self.by_key.select(r);
                self.emit(Op::Delete, pos, 0, out);
                self.unmark(pos);
                KvbenchOperation::PointDelete
            }
            RANGE_DELETE => {
                let m = range_len(self.range_delete_selectivity, self.live);
                match self.range_start(m) {
                    None => self.empty_range(Op::RangeDelete, out),
                    Some(start) => {
                        self.range(Op::RangeDelete, start, m, out);
                        for _ in 0..m {
                            // the keys after a deleted one move down to its rank
                            let pos = self.by_key.select(start);
                            self.unmark(pos);
                        }
                        self.counts.range_deleted_keys += m;
                    }
                }
                KvbenchOperation::RangeDelete
            }
            POINT_QUERY => {
                let empty = self.empty_queries_todo > 0
                    && (self.existing_queries_todo == 0
                        || self.rng.next_f64() < self.empty_query_fraction);
                if empty {
                    self.empty_queries_todo -= 1;
                    let n = self.empty_keys.len() as u64;
                    let i = match self.empty_query.next(n, &mut self.rng) {
                        Pick::Sorted(i) => i as usize,
                        Pick::Popular(r) => self.empty_by_popularity[r as usize] as usize,
                    };
                    out.access(Access {
                        op: Op::Get,
                        state: 0,
                        key: self.empty_keys.get(i),
                        value_len: 0,
                    });
                    KvbenchOperation::EmptyPointQuery
                } else {
                    self.existing_queries_todo -= 1;
                    let pick = self.existing_query.next(self.live, &mut self.rng);
                    let pos = self.resolve(pick);
                    self.emit(Op::Get, pos, 0, out);
                    KvbenchOperation::ExistingPointQuery
                }
            }
            _ => {
                let m = range_len(self.range_query_selectivity, self.live);
                match self.range_start(m) {
                    None => self.empty_range(Op::RangeQuery, out),
                    Some(start) => self.range(Op::RangeQuery, start, m, out),
                }
                KvbenchOperation::RangeQuery
            }
        };
        self.counts.run[operation as usize] += 1;
        self.last = Some(operation);
    }

    /// KVBench's `get_choice`: an operation kind drawn by the operations left of each kind,
    /// falling back to lower kinds while the drawn one may not run yet; `None` if none can.
    fn choose(&mut self) -> Option<usize> {
        let eligible = |c: &Self, kind: usize| c.eligible(kind);
        if !(0..6).any(|k| eligible(self, k)) {
            return None;
        }
        let total: u64 = self.todo.iter().sum();
        loop {
            let mut x = self.rng.below(total);
            let mut drawn = 0;
            for (kind, &left) in self.todo.iter().enumerate() {
                if x < left {
                    drawn = kind;
                    break;
                }
                x -= left;
            }
            if let Some(kind) = (0..=drawn).rev().find(|&k| eligible(self, k)) {
                return Some(kind);
            }
        }
    }

    /// Whether an operation of `kind` may run now (KVBench's conditions in `get_choice`).
    fn eligible(&self, kind: usize) -> bool {
        if self.todo[kind] == 0 {
            return false;
        }
        let inserted = (self.inserts_total - self.todo[INSERT]) as f64;
        let past = |threshold: f64| inserted >= threshold * self.inserts_total as f64;
        let t = self.thresholds;
        // With one key left, a delete may not empty the store while operations that need a
        // key remain.
        let last_key_needed = self.live == 1
            && (self.todo[UPDATE] > 0
                || self.todo[POINT_QUERY] > 0
                || (self.todo[RANGE_QUERY] > 0 && self.range_query_selectivity > 0.0));
        match kind {
            INSERT => self.pending_len > 0,
            UPDATE => self.live > 0 && past(t.update),
            POINT_DELETE => self.live > 0 && past(t.point_delete) && !last_key_needed,
            RANGE_DELETE => {
                past(t.range_delete)
                    && !(last_key_needed || self.live == 1 && self.todo[POINT_DELETE] > 0)
            }
            POINT_QUERY => self.live > 0 && past(t.point_query),
            _ => past(t.range_query),
        }
    }

    /// The key position of a drawn index among the existing keys.
    #[inline]
    fn resolve(&self, pick: Pick) -> usize {
        match pick {
            Pick::Sorted(i) => self.by_key.select(i as u32),
            Pick::Popular(r) => {
                self.key_of_popularity[self.by_popularity.select(r as u32)] as usize
            }
        }
    }

    /// The rank of the first key of a range of `m` existing keys: uniform, moved down so the
    /// range fits (KVBench's start index); `None` for an empty range.
    fn range_start(&mut self, m: u64) -> Option<u32> {
        if m == 0 {
            return None;
        }
        let start = self.rng.below(self.live).min(self.live - m);
        Some(start as u32)
    }

    /// A range op over the `m` keys from rank `start`: from that key up to just past the key
    /// of rank `start + m − 1` (that key followed by a zero byte, its immediate successor).
    fn range(&mut self, op: Op, start: u32, m: u64, out: &mut dyn AccessSink) {
        let first = self.by_key.select(start);
        let last = self.by_key.select(start + (m - 1) as u32);
        self.bound.clear();
        self.bound.extend_from_slice(self.keys.get(last));
        self.bound.push(0);
        let value_len = encode_range(&mut self.scratch, self.keys.get(first), &self.bound);
        out.access(Access {
            op,
            state: 0,
            key: &self.scratch,
            value_len,
        });
    }

    /// A range op with no key in it: it covers only a key just after a random existing key
    /// (`0` in an empty store), which no key equals.
    fn empty_range(&mut self, op: Op, out: &mut dyn AccessSink) {
        self.bound.clear();
        if self.live > 0 {
            let pos = self.by_key.select(self.rng.below(self.live) as u32);
            self.bound.extend_from_slice(self.keys.get(pos));
        }
        self.bound.push(b'0');
        let start_len = self.bound.len();
        self.bound.extend_from_within(..start_len);
        self.bound.push(0);
        let (start, end) = self.bound.split_at(start_len);
        let value_len = encode_range(&mut self.scratch, start, end);
        out.access(Access {
            op,
            state: 0,
            key: &self.scratch,
            value_len,
        });
    }

    #[inline]
    fn emit(&self, op: Op, pos: usize, value_len: u32, out: &mut dyn AccessSink) {
        out.access(Access {
            op,
            state: 0,
            key: self.keys.get(pos),
            value_len,
        });
    }

    fn mark(&mut self, pos: usize) {
        debug_assert!(!self.exists[pos]);
        self.exists[pos] = true;
        self.by_key.add(pos, 1);
        self.by_popularity.add(self.popularity_of[pos] as usize, 1);
        self.live += 1;
    }

    fn unmark(&mut self, pos: usize) {
        debug_assert!(self.exists[pos]);
        self.exists[pos] = false;
        self.by_key.add(pos, -1);
        self.by_popularity.add(self.popularity_of[pos] as usize, -1);
        self.live -= 1;
    }
}

/// Keys a range of `selectivity` covers among `live`: `⌊selectivity × live⌋`, at least 1
/// unless the selectivity is 0 or nothing exists (KVBench's rule for range deletes; Gadget
/// applies it to range queries too, where KVBench skips and redraws).
fn range_len(selectivity: f64, live: u64) -> u64 {
    if selectivity <= 0.0 || live == 0 {
        return 0;
    }
    ((selectivity * live as f64) as u64).clamp(1, live)
}

impl Operator for KvbenchClient {
    fn states(&self) -> Vec<String> {
        vec![STATE_NAME.to_string()]
    }

    fn on_event(&mut self, _event: &Event, out: &mut dyn AccessSink) {
        self.next_operation(out);
    }

    fn on_watermark(&mut self, _watermark: i64, _out: &mut dyn AccessSink) {}
}

/// A client issuing its operations: one, with nothing to split among subtasks.
impl crate::parallel::split::JobSplit for KvbenchSpec {
    fn refusal(&self, _parallelism: u32, _max_parallelism: u32) -> Option<String> {
        Some(crate::parallel::split::CLIENT_REFUSAL.to_string())
    }
}
