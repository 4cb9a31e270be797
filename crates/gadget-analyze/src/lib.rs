//! Characterize streaming state-access traces, as the Gadget paper does in §3–§4:
//! composition, amplification, key and value sizes, temporal locality (exact LRU stack
//! distances and the miss-ratio curve), spatial locality (unique key sequences), ephemerality
//! (working set, key TTL), the event rate's self-similarity, and the distance between two
//! traces' key popularity.
//!
//! [`scan`] reads a trace once, in memory proportional to its keyed requests (4 bytes each)
//! and distinct keys; [`KeyTrace::analyze`] turns the scan into an [`Analysis`].
#![deny(missing_docs)]

pub mod differences;
pub mod distance;
pub mod ephemerality;
pub mod events;
pub mod fenwick;
pub mod html;
pub mod intern;
mod intern_thread;
pub mod locality;
mod parallel;
pub mod plot;
pub mod report;
pub mod results;
pub mod sampling;
pub mod sequences;
pub mod series;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

use gadget::access::{Op, ReadLen};
use gadget::source::random::Rng;
use gadget::trace::{RecordRef, TraceError, TraceReader};
use rustc_hash::FxHashSet;
use serde::Serialize;

use ephemerality::{Lifetimes, Percentiles, TtlSummary};
use intern_thread::{InternerHere, InternerThread, Interning};
use locality::{stopped_at, StackSummary};
use parallel::{Inputs, Measured};
use sampling::{Sampling, SamplingSummary};

/// What can go wrong analysing a trace.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// More distinct keys or keyed requests than the analysis indexes.
    #[error("the trace has more than 4 billion {what}; analyze a prefix of it (gadget trace convert --limit)")]
    TooLarge {
        /// What overflowed.
        what: &'static str,
    },
}

/// How to analyse.
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// Longest key sequence counted for spatial locality (the paper's ℓ = 10).
    pub max_sequence_len: usize,
    /// Seed of the shuffled baseline.
    pub shuffle_seed: u64,
    /// Working-set samples over the trace.
    pub working_set_samples: u64,
    /// Bytes of a state key that identify the input event's key (Flink's key-group prefix plus
    /// the serialized key), to count distinct event keys in traces that do not record them.
    pub event_key_bytes: Option<usize>,
    /// Every key, or a sample of them (for traces whose exact analysis does not fit).
    pub sampling: Sampling,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            max_sequence_len: 10,
            shuffle_seed: 1,
            working_set_samples: 500,
            event_key_bytes: None,
            sampling: Sampling::Exact,
        }
    }
}

/// One pass over a trace: counts, sizes, and the sequence of keys as dense ids.
#[derive(Debug, Clone, Default)]
pub struct KeyTrace {
    /// State names.
    pub states: Vec<String>,
    /// The operator that produced the trace (from its header), or `flink recording`.
    pub operator: String,
    /// True when the trace says it was cut short.
    pub truncated: bool,
    /// True when the scan was stopped before the end of the trace (Ctrl-C): everything here
    /// covers the records read until then.
    pub partial: bool,
    /// Requests by op.
    pub by_op: [u64; Op::COUNT],
    /// Requests by state and op.
    pub by_state: Vec<[u64; Op::COUNT]>,
    /// Input-event markers.
    pub events: u64,
    /// Watermark markers.
    pub watermarks: u64,
    /// The keys analysed: every one, or a sample.
    pub sampling: Sampling,
    /// Keyed requests (all but batch commits), sampled or not.
    pub keyed: u64,
    /// The key of every keyed request (of a sampled key, when sampled), as a dense id.
    pub ids: Vec<u32>,
    /// Requests per key id.
    pub popularity: Vec<u64>,
    /// Key sizes in bytes: size → requests.
    pub key_sizes: BTreeMap<u32, u64>,
    /// Written value sizes (put, merge, batch put): size → requests.
    pub value_sizes: BTreeMap<u32, u64>,
    /// Sizes of the values gets found, of gets that say (recordings, `gadget gen --reads`):
    /// size → gets.
    pub found_sizes: BTreeMap<u32, u64>,
    /// Gets that say they found nothing.
    pub found_nothing: u64,
    /// First and last access of every key.
    pub lifetimes: Lifetimes,
    /// Distinct input-event keys, and where the number comes from.
    pub event_keys: Option<(u64, String)>,
}

/// Reads the whole trace once. `progress` is called with the records read so far, every
/// 2^20 records; when it returns `Break` (Ctrl-C), the scan stops there and the result is
/// marked `partial`.
pub fn scan(
    reader: &mut TraceReader,
    options: &AnalyzeOptions,
    progress: impl FnMut(u64) -> ControlFlow<()>,
) -> Result<KeyTrace, AnalyzeError> {
    match options.sampling {
        Sampling::Exact => std::thread::scope(|scope| {
            scan_on(reader, options, progress, InternerThread::spawn(scope))
        }),
        Sampling::Shards { .. } => scan_on(reader, options, progress, InternerHere::default()),
    }
}

/// [`scan`], its keys interned by `keys`.
fn scan_on(
    reader: &mut TraceReader,
    options: &AnalyzeOptions,
    mut progress: impl FnMut(u64) -> ControlFlow<()>,
    mut keys: impl Interning,
) -> Result<KeyTrace, AnalyzeError> {
    let flink = reader.is_flink_recording();
    let event_key_bytes = options.event_key_bytes.or(flink.then_some(9));
    let mut out = KeyTrace {
        sampling: options.sampling,
        operator: reader
            .header()
            .map_or_else(|| "flink recording".to_string(), |h| h.operator.clone()),
        ..KeyTrace::default()
    };
    // distinct event-key prefixes per state; timer states are left out at the end
    let mut prefixes: Vec<FxHashSet<Box<[u8]>>> = Vec::new();
    let (mut key_sizes, mut value_sizes, mut found_sizes) = (
        SizeTally::default(),
        SizeTally::default(),
        SizeTally::default(),
    );
    let mut records = 0u64;
    // event time: the latest finite watermark; before the first one, patched afterwards
    const BEFORE_FIRST: i64 = i64::MIN;
    let mut now = BEFORE_FIRST;
    let mut first_watermark: Option<i64> = None;
    while let Some(record) = reader.next_record()? {
        // `records` analyzed so far: a stop leaves this one out
        if records > 0 && records & ((1 << 20) - 1) == 0 && progress(records).is_break() {
            out.partial = true;
            break;
        }
        records += 1;
        match record {
            RecordRef::Event { .. } => out.events += 1,
            RecordRef::Watermark { timestamp } => {
                out.watermarks += 1;
                if timestamp != i64::MAX {
                    first_watermark.get_or_insert(timestamp);
                    now = now.max(timestamp);
                }
            }
            RecordRef::Access(a) => {
                let state = a.state as usize;
                if state >= out.by_state.len() {
                    out.by_state.resize(state + 1, [0; Op::COUNT]);
                }
                out.by_op[a.op as usize] += 1;
                out.by_state[state][a.op as usize] += 1;
                match a.op {
                    Op::Put | Op::Merge | Op::BatchPut => value_sizes.add(a.value_len),
                    Op::Get => match ReadLen::from_value_len(a.value_len) {
                        ReadLen::Found(n) => found_sizes.add(n),
                        ReadLen::Missing => out.found_nothing += 1,
                        ReadLen::Unknown => {}
                    },
                    _ => {}
                }
                // a range op is an access to its start bound, as a seek is to its target
                let key = a.range().map_or(a.key, |(start, _)| start);
                if key.is_empty() {
                    continue;
                }
                key_sizes.add(key.len() as u32);
                out.keyed += 1;
                let fingerprint = fingerprint(a.state, key);
                // keys by fingerprint: a fraction of the memory of the key bytes, no
                // allocation per key; an interner stopped on an error ends the scan
                if options.sampling.keeps(&fingerprint) && keys.access(fingerprint, now).is_break()
                {
                    break;
                }
                if let Some(n) = event_key_bytes {
                    if state >= prefixes.len() {
                        prefixes.resize_with(state + 1, FxHashSet::default);
                    }
                    if key.len() >= n && !prefixes[state].contains(&key[..n]) {
                        prefixes[state].insert(key[..n].into());
                    }
                }
            }
        }
    }
    let _ = progress(records);
    out.key_sizes = key_sizes.into_map();
    out.value_sizes = value_sizes.into_map();
    out.found_sizes = found_sizes.into_map();
    let keys = keys.finish()?;
    out.ids = keys.ids;
    out.popularity = keys.popularity;
    out.lifetimes = keys.lifetimes;
    let first = first_watermark.unwrap_or(0);
    for t in out
        .lifetimes
        .first_time
        .iter_mut()
        .chain(out.lifetimes.last_time.iter_mut())
    {
        if *t == BEFORE_FIRST {
            *t = first;
        }
    }
    out.states = reader.state_names().to_vec();
    out.by_state
        .resize(out.states.len().max(out.by_state.len()), [0; Op::COUNT]);
    if let Some(footer) = reader.footer() {
        out.truncated = footer.truncated;
        if let Some(n) = footer
            .extra
            .get("distinct_event_keys")
            .and_then(|v| v.as_u64())
        {
            out.event_keys = Some((n, "recorded by gadget gen".to_string()));
        }
    }
    if out.event_keys.is_none() {
        if let Some(n) = event_key_bytes {
            let mut keys: FxHashSet<&[u8]> = FxHashSet::default();
            for (state, set) in prefixes.iter().enumerate() {
                if !out
                    .states
                    .get(state)
                    .is_some_and(|s| s.starts_with("_timer_state"))
                {
                    keys.extend(set.iter().map(|k| &k[..]));
                }
            }
            out.event_keys = Some((
                keys.len() as u64,
                format!("distinct {n}-byte key prefixes (key group + serialized key) outside timer states"),
            ));
        }
    }
    Ok(out)
}

/// Requests by size, counted in an array below [`SizeTally::DIRECT`] bytes (nearly every key
/// and value; a map lookup per request was a sixth of a sampled scan's instructions).
#[derive(Debug, Default)]
struct SizeTally {
    direct: Vec<u64>,
    larger: BTreeMap<u32, u64>,
}

impl SizeTally {
    /// Sizes counted in the array.
    const DIRECT: u32 = 4096;

    #[inline]
    fn add(&mut self, size: u32) {
        if size < Self::DIRECT {
            if self.direct.is_empty() {
                self.direct = vec![0; Self::DIRECT as usize];
            }
            self.direct[size as usize] += 1;
        } else {
            *self.larger.entry(size).or_default() += 1;
        }
    }

    /// `size → requests`, sizes with none left out.
    fn into_map(self) -> BTreeMap<u32, u64> {
        let mut map = self.larger;
        map.extend((0u32..).zip(self.direct).filter(|&(_, n)| n > 0));
        map
    }
}

/// What the gets of a trace found, from the gets that say (a recording's every get, a trace of
/// `gadget gen --reads`): how many found nothing, which a store answers from its filters or by
/// looking everywhere, and how large the values found were.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reads {
    /// Gets that say what they found.
    pub known: u64,
    /// Of those, the gets that found nothing.
    pub found_nothing: u64,
    /// Sizes in bytes of the values found.
    pub found_size: Percentiles,
}

impl Reads {
    /// From the sizes found and the gets that found nothing; `None` when no get says.
    fn of(found_sizes: &BTreeMap<u32, u64>, found_nothing: u64) -> Option<Reads> {
        let found: u64 = found_sizes.values().sum();
        (found + found_nothing > 0).then(|| Reads {
            known: found + found_nothing,
            found_nothing,
            found_size: size_percentiles(found_sizes),
        })
    }
}

/// Requests by op name (ops that occur only).
fn op_counts(counts: &[u64; Op::COUNT]) -> BTreeMap<String, u64> {
    Op::ALL
        .iter()
        .filter(|op| counts[**op as usize] > 0)
        .map(|op| (op.name().to_string(), counts[*op as usize]))
        .collect()
}

/// A size distribution from `size → count`.
fn size_percentiles(sizes: &BTreeMap<u32, u64>) -> Percentiles {
    let total: u64 = sizes.values().sum();
    let mut values = Vec::with_capacity(total.min(1 << 24) as usize);
    if total <= 1 << 24 {
        for (&size, &n) in sizes {
            values.extend(std::iter::repeat_n(size as u64, n as usize));
        }
        return Percentiles::of(values);
    }
    // too many to expand: thin every size's count proportionally (exact percentiles to 1 in 2^24)
    let scale = (1u64 << 24) as f64 / total as f64;
    for (&size, &n) in sizes {
        let k = ((n as f64 * scale).round() as usize).max(1);
        values.extend(std::iter::repeat_n(size as u64, k));
    }
    Percentiles::of(values)
}

/// Everything `gadget analyze` reports about one trace.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// The operator that produced the trace.
    pub operator: String,
    /// State names.
    pub states: Vec<String>,
    /// True when the trace was cut short.
    pub truncated: bool,
    /// True when the analysis was stopped before the end of the trace (Ctrl-C): it covers
    /// the records read until then.
    pub partial: bool,
    /// False when a stop (Ctrl-C) came before the stack distances and key sequences were
    /// computed: those are then empty.
    pub locality_computed: bool,
    /// Requests.
    pub requests: u64,
    /// Input events.
    pub events: u64,
    /// Watermarks.
    pub watermarks: u64,
    /// Requests by op.
    pub requests_by_op: BTreeMap<String, u64>,
    /// Requests by state, then op.
    pub requests_by_state: BTreeMap<String, BTreeMap<String, u64>>,
    /// Requests per input event.
    pub event_amplification: Option<f64>,
    /// Distinct state keys (state and key bytes).
    pub distinct_state_keys: u64,
    /// Distinct input-event keys, when known.
    pub distinct_event_keys: Option<u64>,
    /// How `distinct_event_keys` was obtained.
    pub event_keys_source: Option<String>,
    /// Distinct state keys per distinct event key.
    pub key_space_amplification: Option<f64>,
    /// Key sizes in bytes over keyed requests.
    pub key_size: Percentiles,
    /// Written value sizes in bytes (put, merge, batch put).
    pub value_size: Percentiles,
    /// What the gets found, when the trace says (`None` when none of its gets does).
    pub reads: Option<Reads>,
    /// Temporal locality of the trace.
    pub stack_distance: StackSummary,
    /// Temporal locality of the same requests shuffled.
    pub stack_distance_shuffled: StackSummary,
    /// Seed of the shuffle.
    pub shuffle_seed: u64,
    /// Distinct key sequences of length 1, 2, … in the trace.
    pub unique_sequences: Vec<u64>,
    /// The same for the shuffled trace.
    pub unique_sequences_shuffled: Vec<u64>,
    /// `(keyed request, keys alive)` samples.
    pub working_set: Vec<(u64, u64)>,
    /// Key time to live.
    pub ttl: TtlSummary,
    /// How the keys were sampled and how accurate the estimates are; `None` when exact.
    pub sampling: Option<SamplingSummary>,
    /// Requests per key id (for comparisons; not reported).
    #[serde(skip)]
    pub popularity: Vec<u64>,
}

impl KeyTrace {
    /// Runs every analysis (consumes the scan), on two threads.
    pub fn analyze(self, options: &AnalyzeOptions) -> Analysis {
        self.analyze_until(options, &AtomicBool::new(false))
    }

    /// [`analyze`](Self::analyze) that leaves out the locality measures (stack distances and
    /// key sequences, the long part) once `stop` is set (Ctrl-C), within milliseconds; the
    /// analysis is then marked partial and `locality_computed` is false.
    pub fn analyze_until(mut self, options: &AnalyzeOptions, stop: &AtomicBool) -> Analysis {
        let distinct = self.popularity.len();
        let keyed = self.ids.len() as u64;
        // a sample's positions and keys each stand for `1 << shift` of the trace's
        let (sampling, shift) = (self.sampling, self.sampling.shift());
        let working_set = self
            .lifetimes
            .working_set(keyed, keyed.div_ceil(options.working_set_samples.max(1)))
            .into_iter()
            .map(|(at, alive)| (at << shift, alive << shift))
            .collect();
        let ttl = self.lifetimes.ttl_scaled(shift);
        self.lifetimes = Lifetimes::default();
        // a sample's key sequences are not the trace's: none are counted
        let max_len = if shift == 0 {
            options.max_sequence_len
        } else {
            0
        };
        let ids = &self.ids;
        let keyed_all = self.keyed;
        let measured = Measured::run(
            &Inputs {
                ids,
                distinct,
                max_len,
                shuffle_seed: options.shuffle_seed,
                sampling,
                keyed: keyed_all,
            },
            stop,
        );
        let hit_ratio_noise = measured.hit_ratio_noise;
        let (stack, stack_shuffled) = (measured.stack, measured.stack_shuffled);
        let (found, found_shuffled) = (measured.sequences, measured.sequences_shuffled);
        let stack = sampling::scaled(stack, sampling, keyed_all);
        let stack_shuffled = sampling::scaled(stack_shuffled, sampling, keyed_all);
        let distinct_keys = (u64::from(!ids.is_empty()) * distinct as u64) << shift;
        // a stop may have cut any of the four short: keep none of them
        let locality_computed = !stop.load(Ordering::Relaxed);
        let (stack, stack_shuffled, sequences, sequences_shuffled) = if locality_computed {
            (stack, stack_shuffled, found, found_shuffled)
        } else {
            Default::default()
        };
        self.ids = Vec::new();
        let requests = self.by_op.iter().sum::<u64>();
        let requests_by_state = self
            .states
            .iter()
            .zip(&self.by_state)
            .map(|(name, counts)| (name.clone(), op_counts(counts)))
            .collect();
        let event_keys = self.event_keys.as_ref().map(|(n, _)| *n);
        Analysis {
            operator: self.operator,
            truncated: self.truncated,
            partial: self.partial || !locality_computed,
            locality_computed,
            requests,
            events: self.events,
            watermarks: self.watermarks,
            requests_by_op: op_counts(&self.by_op),
            requests_by_state,
            states: self.states,
            event_amplification: (self.events > 0).then(|| requests as f64 / self.events as f64),
            distinct_state_keys: distinct_keys,
            distinct_event_keys: event_keys,
            event_keys_source: self.event_keys.map(|(_, s)| s),
            key_space_amplification: event_keys
                .filter(|&n| n > 0)
                .map(|n| distinct_keys as f64 / n as f64),
            key_size: size_percentiles(&self.key_sizes),
            value_size: size_percentiles(&self.value_sizes),
            reads: Reads::of(&self.found_sizes, self.found_nothing),
            stack_distance: stack.summary(),
            stack_distance_shuffled: stack_shuffled.summary(),
            shuffle_seed: options.shuffle_seed,
            unique_sequences: sequences,
            unique_sequences_shuffled: sequences_shuffled,
            working_set,
            ttl,
            sampling: (shift > 0).then(|| {
                SamplingSummary::new(sampling, distinct as u64, keyed, keyed_all, hit_ratio_noise)
            }),
            popularity: self.popularity,
        }
    }
}

/// Fisher–Yates shuffle with Gadget's seeded generator (the same order on every machine).
pub fn shuffle(ids: &mut [u32], seed: u64) {
    shuffle_until(ids, seed, &AtomicBool::new(false));
}

/// [`shuffle`] that stops part-way once `stop` is set.
///
/// Each swap's far end is a random place in the array, nearly always a cache miss: its index is
/// drawn [`SHUFFLE_AHEAD`] swaps early (the draws in the same order, so the same shuffle) and
/// prefetched.
pub(crate) fn shuffle_until(ids: &mut [u32], seed: u64, stop: &AtomicBool) {
    let mut rng = Rng::new(seed);
    let mut draw = |i: usize, ids: &[u32]| {
        let j = rng.below(i as u64 + 1) as usize;
        prefetch(ids.as_ptr().wrapping_add(j));
        j
    };
    // partner[i % SHUFFLE_AHEAD]: the index that index `i` swaps with
    let mut partner = [0usize; SHUFFLE_AHEAD];
    for i in (1..ids.len()).rev().take(SHUFFLE_AHEAD) {
        partner[i % SHUFFLE_AHEAD] = draw(i, ids);
    }
    for i in (1..ids.len()).rev() {
        if stopped_at(i, stop) {
            return;
        }
        let j = partner[i % SHUFFLE_AHEAD];
        if i > SHUFFLE_AHEAD {
            partner[i % SHUFFLE_AHEAD] = draw(i - SHUFFLE_AHEAD, ids);
        }
        ids.swap(i, j);
    }
}

/// Swaps whose partner index is drawn ahead of the one being made.
const SHUFFLE_AHEAD: usize = 16;

/// A 128-bit fingerprint of a state's key: two independent 64-bit hashes. Two of `d` distinct
/// keys share one with probability about d²/2^129 (10^-24 for 10^8 keys); the scan's key index
/// keeps 96 of its bits (see [`intern::KeyIndex`]).
#[inline]
pub fn fingerprint(state: u16, key: &[u8]) -> [u64; 2] {
    let mut a = 0x243f_6a88_85a3_08d3u64 ^ ((state as u64) << 32) ^ key.len() as u64;
    let mut b = 0x1319_8a2e_0370_7344u64 ^ (state as u64) ^ ((key.len() as u64) << 32);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
        a = (a ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31);
        b = (b ^ w.rotate_left(17))
            .wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
            .rotate_left(27);
    }
    let mut tail = 0u64;
    for (i, byte) in chunks.remainder().iter().enumerate() {
        tail |= (*byte as u64) << (8 * i);
    }
    a = (a ^ tail).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    b = (b ^ tail.rotate_left(17)).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    [mix64(a), mix64(b ^ 0x5bd1_e995)]
}

/// Asks the CPU to bring the cache line at `p` closer (a hint: `p` need not be valid, and no
/// memory is read).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing; SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// MurmurHash3's 64-bit finalizer: spreads every input bit over the output.
#[inline]
pub(crate) fn mix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The analysis of a small binary trace of `ops`, their keys cycling over three.
#[cfg(test)]
pub(crate) fn analysis_of(ops: &[gadget::access::Op]) -> Analysis {
    use gadget::access::{Access, AccessSink};
    use gadget::trace::{BinaryTraceWriter, TraceFooter, TraceHeader, TraceReader};
    let header = TraceHeader::new("test", vec!["s".to_string()], None, serde_json::json!({}));
    let mut w = BinaryTraceWriter::new(Vec::new(), &header).unwrap();
    for (i, &op) in ops.iter().enumerate() {
        // a get at an even index found nothing, one at an odd index 8 bytes
        let found = [ReadLen::Missing, ReadLen::Found(8)][i % 2];
        w.access(Access {
            op,
            state: 0,
            key: &[(i % 3) as u8],
            value_len: if op == Op::Get { found.value_len() } else { 8 },
        });
    }
    let bytes = w.finish(TraceFooter::new(false)).unwrap();
    let mut reader = TraceReader::from_reader(std::io::Cursor::new(bytes)).unwrap();
    let options = AnalyzeOptions::default();
    scan(&mut reader, &options, |_| ControlFlow::Continue(()))
        .unwrap()
        .analyze(&options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefetching_shuffle_is_fisher_yates_draw_for_draw() {
        for n in [0usize, 1, 2, 16, 17, 18, 40, 10_000] {
            let mut got: Vec<u32> = (0..n as u32).collect();
            shuffle(&mut got, 42);
            let mut want: Vec<u32> = (0..n as u32).collect();
            let mut rng = Rng::new(42);
            for i in (1..n).rev() {
                want.swap(i, rng.below(i as u64 + 1) as usize);
            }
            assert_eq!(got, want, "{n} ids");
        }
    }
}
