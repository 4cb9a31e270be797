//! The state-access stream: what an operator asks of its state store.

use std::fmt;

/// The kind of a state access, as a store sees it.
///
/// The numeric values are part of the binary trace format; never reorder them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Op {
    /// Point read of one key.
    Get = 0,
    /// Point write (overwrite) of one key.
    Put = 1,
    /// Append through the store's merge operator (RocksDB `merge`).
    Merge = 2,
    /// Point delete of one key.
    Delete = 3,
    /// Position a new iterator at the first key `>=` the given key (Flink's `iter_new` + `iter_seek`).
    Seek = 4,
    /// Advance the current iterator of the state by one entry.
    Next = 5,
    /// A put added to a write batch.
    BatchPut = 6,
    /// A delete added to a write batch.
    BatchDelete = 7,
    /// Commit of a write batch; `value_len` is the number of entries it carries.
    BatchCommit = 8,
    /// Delete of every key in `[start, end)` (RocksDB `DeleteRange`); see [`Access::range`] for
    /// how the two bounds travel in one key.
    RangeDelete = 9,
    /// Read of every entry in `[start, end)` (an iterator with an upper bound); see
    /// [`Access::range`].
    RangeQuery = 10,
    /// A state comes into being: the engine opened a store instance (Kafka Streams opens a
    /// RocksDB instance per window segment). The key is the state's name, which the state
    /// index carries from here on (its slot in the state table was free: never used, or
    /// dropped); see [`Access::opened_name`].
    Open = 11,
    /// The state is dropped with every entry in it (Kafka Streams closes an expired segment and
    /// deletes its directory). Its slot in the state table is free until opened again.
    Drop = 12,
    /// The state's buffered writes are flushed to storage (Spark's commit flushes its RocksDB
    /// instance's memtables: it writes with the WAL off). No key.
    Flush = 13,
    /// A consistent copy of the state is taken (Spark's commit creates a RocksDB checkpoint,
    /// which it uploads). No key.
    Checkpoint = 14,
}

impl Op {
    /// Every op, in the order of its numeric value.
    pub const ALL: [Op; Op::COUNT] = [
        Op::Get,
        Op::Put,
        Op::Merge,
        Op::Delete,
        Op::Seek,
        Op::Next,
        Op::BatchPut,
        Op::BatchDelete,
        Op::BatchCommit,
        Op::RangeDelete,
        Op::RangeQuery,
        Op::Open,
        Op::Drop,
        Op::Flush,
        Op::Checkpoint,
    ];

    /// How many ops there are.
    pub const COUNT: usize = 15;

    /// The op's name in text traces and reports.
    pub fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Put => "put",
            Op::Merge => "merge",
            Op::Delete => "delete",
            Op::Seek => "seek",
            Op::Next => "next",
            Op::BatchPut => "batch_put",
            Op::BatchDelete => "batch_delete",
            Op::BatchCommit => "batch_commit",
            Op::RangeDelete => "range_delete",
            Op::RangeQuery => "range_query",
            Op::Open => "open",
            Op::Drop => "drop",
            Op::Flush => "flush",
            Op::Checkpoint => "checkpoint",
        }
    }

    /// Whether the op covers a key range (its key carries two bounds, see [`Access::range`]).
    pub fn is_range(self) -> bool {
        matches!(self, Op::RangeDelete | Op::RangeQuery)
    }

    /// Whether the op writes a value of `value_len` bytes (put, merge, batch put), which a
    /// store is handed as bytes.
    pub fn writes_value(self) -> bool {
        matches!(self, Op::Put | Op::Merge | Op::BatchPut)
    }

    /// Whether the op persists a whole state (a flush or a checkpoint) rather than reading or
    /// writing its entries.
    pub fn is_persistence(self) -> bool {
        matches!(self, Op::Flush | Op::Checkpoint)
    }

    /// Whether the op opens or drops a whole state rather than reading or writing its entries.
    pub fn is_state_lifecycle(self) -> bool {
        matches!(self, Op::Open | Op::Drop)
    }

    /// Parses an op name as written by [`Op::name`].
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// The op for a numeric code of the binary format.
    pub fn from_code(code: u8) -> Option<Op> {
        Op::ALL.get(code as usize).copied()
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Index of a state (a RocksDB column family in Flink) in the operator's state table.
pub type StateId = u16;

/// One state access. The key borrows the operator's reusable buffer: copy it if you keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access<'a> {
    /// What the access does.
    pub op: Op,
    /// Which state it targets (index into the state table).
    pub state: StateId,
    /// The key bytes, laid out as Flink lays them out.
    pub key: &'a [u8],
    /// Bytes written (put, merge, batch put), entries committed (batch commit), the length of
    /// the start bound (range ops), what a get found when the trace was made
    /// ([`ReadLen::value_len`]; 0: not known), else 0.
    pub value_len: u32,
}

/// What a `get` found when its trace was made, as the get's `value_len` carries it: a
/// recording of the engine knows it (the engine's store answered), a generated trace when it
/// was made with `gadget gen --reads`. A replay with `--check-reads` requires the store it
/// drives to find the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadLen {
    /// The trace does not say (`value_len` 0): every trace made without read lengths.
    Unknown,
    /// The get found nothing (`value_len` 1; Flink's recordings write -1).
    Missing,
    /// The get found a value of this many bytes (`value_len` bytes + 2).
    Found(u32),
}

impl ReadLen {
    /// What a get's `value_len` says.
    #[inline]
    pub const fn from_value_len(value_len: u32) -> ReadLen {
        match value_len {
            0 => ReadLen::Unknown,
            1 => ReadLen::Missing,
            n => ReadLen::Found(n - 2),
        }
    }

    /// The `value_len` a get carries to say this (a value longer than 4 GiB - 3 bytes, which
    /// no store takes, is said to be that long).
    #[inline]
    pub const fn value_len(self) -> u32 {
        match self {
            ReadLen::Unknown => 0,
            ReadLen::Missing => 1,
            ReadLen::Found(n) => n.saturating_add(2),
        }
    }

    /// What a store's `get` answered: the length of the value found, or `None`.
    #[inline]
    pub fn of(found: Option<usize>) -> ReadLen {
        match found {
            None => ReadLen::Missing,
            Some(n) => ReadLen::Found(u32::try_from(n).unwrap_or(u32::MAX)),
        }
    }

    /// True when a store's answer `found` is what this says (always, when it is not known).
    #[inline]
    pub fn agrees_with(self, found: Option<usize>) -> bool {
        self == ReadLen::Unknown || self == ReadLen::of(found)
    }
}

impl fmt::Display for ReadLen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadLen::Unknown => f.write_str("not known"),
            ReadLen::Missing => f.write_str("nothing"),
            ReadLen::Found(n) => write!(f, "{n} bytes"),
        }
    }
}

impl<'a> Access<'a> {
    /// The bounds `[start, end)` of a range op.
    ///
    /// A range op carries both bounds in its one key, `start ‖ end`, and the length of `start`
    /// in `value_len` (range ops write no value), so traces, sinks and analyzers handle it as
    /// any other request. `None` for other ops, or when `value_len` is longer than the key.
    pub fn range(&self) -> Option<(&'a [u8], &'a [u8])> {
        range_bounds(self.op, self.key, self.value_len)
    }

    /// The name an [`Op::Open`] gives its state, `None` for other ops or a name that is not
    /// UTF-8.
    pub fn opened_name(&self) -> Option<&'a str> {
        match self.op {
            Op::Open => std::str::from_utf8(self.key).ok(),
            _ => None,
        }
    }
}

/// Splits the key of a range op into its bounds (see [`Access::range`]).
pub fn range_bounds(op: Op, key: &[u8], value_len: u32) -> Option<(&[u8], &[u8])> {
    if !op.is_range() || value_len as usize > key.len() {
        return None;
    }
    Some(key.split_at(value_len as usize))
}

/// Writes the key of a range op over `[start, end)` into `buf` (cleared first) and returns the
/// `value_len` that goes with it.
pub fn encode_range(buf: &mut Vec<u8>, start: &[u8], end: &[u8]) -> u32 {
    buf.clear();
    buf.extend_from_slice(start);
    buf.extend_from_slice(end);
    start.len() as u32
}

/// Where generated accesses go: a trace writer, a store driver, an analyzer, a counter.
///
/// Markers (`event`, `watermark`) are not requests; sinks that do not care ignore them.
pub trait AccessSink {
    /// Receives one state access.
    fn access(&mut self, access: Access<'_>);

    /// Receives several accesses to one state key, in order (a read-modify-write issues its
    /// get and put this way). The same as one [`AccessSink::access`] per request, which is
    /// what it does unless a sink overrides it to do the key's work once for all of them.
    #[inline]
    fn access_all(&mut self, state: StateId, key: &[u8], requests: &[(Op, u32)]) {
        access_each(self, state, key, requests);
    }

    /// An input event reached the operator (`input` is 0 for one-input operators, 1 or 2 for joins).
    fn event(&mut self, _input: u8) {}

    /// A watermark reached the operator.
    fn watermark(&mut self, _timestamp: i64) {}

    /// True once the sink takes no more requests: the request limit is reached or the run was
    /// asked to stop (Ctrl-C). An operator whose work for one element can be long (a record in
    /// 100,000 hopping windows, a table preload) looks at it between the parts of that work
    /// and leaves the rest undone; the run then ends after that element. Never true unless a
    /// sink says so.
    fn stopped(&self) -> bool {
        false
    }
}

/// A sink that numbers the states of the requests passing through its own way: `map(state)`,
/// or `None` to leave the request out (an engine's task with its states at a place in the
/// job's table, or a subtask that keeps only its own partitions' states). Markers pass as they
/// are.
pub struct Renumbered<'a, F> {
    /// Where the renumbered requests go.
    pub out: &'a mut dyn AccessSink,
    /// A state's number in `out`, `None` for a state `out` does not take.
    pub map: F,
}

impl<F: Fn(StateId) -> Option<StateId>> AccessSink for Renumbered<'_, F> {
    #[inline]
    fn access(&mut self, a: Access<'_>) {
        if let Some(state) = (self.map)(a.state) {
            self.out.access(Access { state, ..a });
        }
    }

    #[inline]
    fn access_all(&mut self, state: StateId, key: &[u8], requests: &[(Op, u32)]) {
        if let Some(state) = (self.map)(state) {
            self.out.access_all(state, key, requests);
        }
    }

    fn event(&mut self, input: u8) {
        self.out.event(input);
    }

    fn watermark(&mut self, timestamp: i64) {
        self.out.watermark(timestamp);
    }

    fn stopped(&self) -> bool {
        self.out.stopped()
    }
}

/// Issues `requests` on one state key one by one through `sink`'s [`AccessSink::access`]:
/// what [`AccessSink::access_all`] does unless a sink overrides it, for an override that
/// sometimes falls back to it.
#[inline]
pub fn access_each<S: AccessSink + ?Sized>(
    sink: &mut S,
    state: StateId,
    key: &[u8],
    requests: &[(Op, u32)],
) {
    for &(op, value_len) in requests {
        sink.access(Access {
            op,
            state,
            key,
            value_len,
        });
    }
}

/// A record of a trace: an access (owning its key) or a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceRecord {
    /// A state access.
    Access {
        /// What the access does.
        op: Op,
        /// Which state it targets.
        state: StateId,
        /// The key bytes.
        key: Vec<u8>,
        /// Value length as in [`Access::value_len`].
        value_len: u32,
    },
    /// An input event reached the operator.
    Event {
        /// 0 for one-input operators, 1 or 2 for the inputs of a join.
        input: u8,
    },
    /// A watermark reached the operator.
    Watermark {
        /// Its event-time value in milliseconds.
        timestamp: i64,
    },
}

/// A sink that collects everything, for tests and small traces.
#[derive(Debug, Default, Clone)]
pub struct VecSink {
    /// The records in arrival order.
    pub records: Vec<TraceRecord>,
}

impl AccessSink for VecSink {
    fn access(&mut self, a: Access<'_>) {
        self.records.push(TraceRecord::Access {
            op: a.op,
            state: a.state,
            key: a.key.to_vec(),
            value_len: a.value_len,
        });
    }
    fn event(&mut self, input: u8) {
        self.records.push(TraceRecord::Event { input });
    }
    fn watermark(&mut self, timestamp: i64) {
        self.records.push(TraceRecord::Watermark { timestamp });
    }
}

/// Counts requests by op and by state; the generator's summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AccessCounts {
    /// Requests per op, indexed by the op's numeric value.
    pub by_op: [u64; Op::COUNT],
    /// Requests per state and op: `by_state[state][op]`.
    pub by_state: Vec<[u64; Op::COUNT]>,
    /// Input events seen.
    pub events: u64,
    /// Watermarks seen.
    pub watermarks: u64,
}

impl AccessCounts {
    /// Total number of requests.
    pub fn requests(&self) -> u64 {
        self.by_op.iter().sum()
    }

    /// Counts one access.
    #[inline]
    pub fn count(&mut self, op: Op, state: StateId) {
        self.by_op[op as usize] += 1;
        let s = state as usize;
        if s >= self.by_state.len() {
            self.by_state.resize(s + 1, [0; Op::COUNT]);
        }
        self.by_state[s][op as usize] += 1;
    }
}

impl AccessSink for AccessCounts {
    fn access(&mut self, a: Access<'_>) {
        self.count(a.op, a.state);
    }
    fn event(&mut self, _input: u8) {
        self.events += 1;
    }
    fn watermark(&mut self, _timestamp: i64) {
        self.watermarks += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.name()), Some(op));
            assert_eq!(Op::from_code(op as u8), Some(op));
        }
        assert_eq!(Op::from_name("scan"), None);
        assert_eq!(Op::from_code(Op::COUNT as u8), None);
    }

    #[test]
    fn a_gets_read_length_travels_in_its_value_len_with_zero_for_not_known() {
        for read in [
            ReadLen::Unknown,
            ReadLen::Missing,
            ReadLen::Found(0),
            ReadLen::Found(1),
            ReadLen::Found(65),
        ] {
            assert_eq!(ReadLen::from_value_len(read.value_len()), read);
        }
        assert_eq!(ReadLen::from_value_len(0), ReadLen::Unknown);
        assert_eq!(ReadLen::of(None), ReadLen::Missing);
        assert_eq!(ReadLen::of(Some(0)), ReadLen::Found(0));
        assert!(ReadLen::Found(3).agrees_with(Some(3)));
        assert!(!ReadLen::Found(3).agrees_with(Some(4)));
        assert!(!ReadLen::Found(0).agrees_with(None));
        assert!(!ReadLen::Missing.agrees_with(Some(0)));
        assert!(ReadLen::Unknown.agrees_with(None) && ReadLen::Unknown.agrees_with(Some(7)));
        assert_eq!(ReadLen::Found(24).to_string(), "24 bytes");
    }

    #[test]
    fn a_range_travels_as_start_then_end_with_the_start_length() {
        let mut buf = vec![9, 9];
        let value_len = encode_range(&mut buf, b"ab", b"abz");
        assert_eq!((buf.as_slice(), value_len), (&b"ababz"[..], 2));
        let a = Access {
            op: Op::RangeQuery,
            state: 0,
            key: &buf,
            value_len,
        };
        assert_eq!(a.range(), Some((&b"ab"[..], &b"abz"[..])));
        assert_eq!(Access { op: Op::Get, ..a }.range(), None);
        assert_eq!(Access { value_len: 6, ..a }.range(), None);
    }
}
