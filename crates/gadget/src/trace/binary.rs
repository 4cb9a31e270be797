//! The binary trace format: checksummed blocks of records whose keys are edits of the keys
//! before them.
//!
//! ```text
//! file   = magic "GADGTRC1" (8 bytes) | version u16 LE (= 4) | header block | data block* | end block
//! block  = kind u8 | payload_len u32 LE | record_count u32 LE | crc32 u32 LE | payload
//!          kind 'H' (header JSON), 'D' (records), 'E' (footer JSON)
//!          crc32 covers kind, payload_len, record_count and the payload
//! record = tag (op code 0..=12 | flags) | [state varint] | [shared varint | [tail varint] |
//!              middle_len varint | middle] | [value_len varint]
//!        | 0x0f | input << 4 (input < 15), or 0xff input u8   (event marker)
//!        | 0x0e zigzag varint timestamp                     (watermark marker)
//! ```
//!
//! A key is written as an edit of the previous key of its state in the same block: the
//! `shared` bytes it begins with, `middle`, then the last `tail` bytes of that key (every block
//! starts with empty previous keys, so blocks decode alone). The tag's flags leave out what
//! repeats: the state of the previous access, the whole previous key, a zero value length.
//! Version 3 brought the edits and flags, version 4 the ops `open` and `drop` (codes 11 and
//! 12: states that come and go during a run); versions 1 to 3 are still read (1 and 2:
//! prefixes only, see [`BinaryTraceReader`]). Data blocks are closed once their payload reaches
//! [`BLOCK_TARGET`] bytes. See `docs/trace-format.md` for the full description.
//!
//! One concept, the binary format, read and written here together (blocks, key edits and
//! checksums in both directions), which is why the file is long.

use std::io::{self, Read, Write};

use crate::access::{Access, AccessSink, Op, StateId};

use super::{
    check_state_names, check_value_len, rename_state, Counter, RecordRef, RecordSource, Records,
    TraceError, TraceFooter, TraceHeader, MAX_HEADER_LEN, MAX_KEY_LEN, MAX_VALUE_LEN,
};

/// The first 8 bytes of every binary trace.
pub const BINARY_MAGIC: [u8; 8] = *b"GADGTRC1";

/// The binary format version this build writes, and the newest it reads.
pub const BINARY_VERSION: u16 = 5;

/// Op codes up to this one exist in version 1 traces; the range ops came with version 2.
const LAST_VERSION_1_OP: u8 = Op::BatchCommit as u8;

/// Op codes up to this one exist in versions 2 and 3; `open` and `drop` came with version 4.
const LAST_VERSION_3_OP: u8 = Op::RangeQuery as u8;

/// From version 5 on, the code of every op from this one up: a record of this code carries
/// its op's code in its value length (these ops write no value), since a tag has room for
/// codes up to 13 only (14 and 15 are markers).
const EXTENDED_OP: u8 = Op::Flush as u8;

/// A data block is closed once its payload reaches this many bytes (64 KiB).
pub const BLOCK_TARGET: usize = 64 * 1024;

/// Largest data-block payload a reader accepts (2 MiB: one block plus one maximal record).
pub const MAX_BLOCK_PAYLOAD: usize = 2 << 20;

/// Size of a block header: kind, payload length, record count, CRC32.
const BLOCK_HEADER_LEN: usize = 13;

const KIND_HEADER: u8 = b'H';
const KIND_DATA: u8 = b'D';
const KIND_END: u8 = b'E';

/// Record tag of an event marker in versions 1 and 2.
const TAG_EVENT: u8 = 0x10;
/// Record tag of a watermark marker in versions 1 and 2.
const TAG_WATERMARK: u8 = 0x11;

/// Version 3: the low four bits of an event marker's tag; the high four hold the input (below
/// 15), or are all set and the input follows in a byte.
const TAG3_EVENT: u8 = 0x0f;
/// Version 3: the tag of a watermark marker.
const TAG3_WATERMARK: u8 = 0x0e;
/// Version 3 access flag: the state is that of the previous access in the block.
const SAME_STATE: u8 = 0x10;
/// Version 3 access flag: the key is the previous key of its state, unchanged.
const SAME_KEY: u8 = 0x20;
/// Version 3 access flag: the value length is 0.
const NO_VALUE: u8 = 0x40;
/// Version 3 access flag: the key ends with the previous key's last `tail` bytes.
const TAIL: u8 = 0x80;
/// No access yet in this block (where a state id is kept as a `u32`).
const NO_STATE: u32 = u32::MAX;

/// Writes a LEB128 varint at the start of `buf` (at least 10 bytes) and returns its length.
#[inline]
fn varint_into(buf: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    n + 1
}

/// Largest record: op, three varints, a key of [`MAX_KEY_LEN`] bytes, a varint value length.
const MAX_RECORD_LEN: usize = 1 + 3 * 10 + MAX_KEY_LEN + 5;

/// Longest key middle written through the fixed-size short-record path.
const SHORT_MIDDLE: usize = SHORT_RECORD - 6;

/// Bytes of block a short record (tag, four one-byte numbers, middle, one-byte value length)
/// is written into at once.
const SHORT_RECORD: usize = 64;

/// Copies `src` (at most [`SHORT_MIDDLE`] bytes) to the start of `dst` (at least
/// [`SHORT_MIDDLE`] bytes) with two fixed-size copies of its size class, overlapping where
/// `src` is shorter than both together.
#[inline]
fn copy_short(src: &[u8], dst: &mut [u8]) {
    #[inline(always)]
    fn two<const N: usize>(src: &[u8], dst: &mut [u8]) {
        let n = src.len();
        let head: [u8; N] = src[..N].try_into().expect("N bytes");
        let tail: [u8; N] = src[n - N..].try_into().expect("N bytes");
        dst[..N].copy_from_slice(&head);
        dst[n - N..n].copy_from_slice(&tail);
    }
    match src.len() {
        0 => {}
        1..=3 => {
            let n = src.len();
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=7 => two::<4>(src, dst),
        8..=15 => two::<8>(src, dst),
        16..=31 => two::<16>(src, dst),
        _ => two::<32>(src, dst),
    }
}

/// The length of the common prefix of two keys, compared eight bytes at a time.
#[inline]
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let mut i = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_le_bytes(x.try_into().expect("8-byte chunk"));
        let y = u64::from_le_bytes(y.try_into().expect("8-byte chunk"));
        if x != y {
            // little-endian: the lowest differing bit is in the first differing byte
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..]
        .iter()
        .zip(&b[i..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// The length of the common ending the writer looks for in two keys: their last 16 bytes, or
/// else their last 8, if equal (0 otherwise). Two fixed-size comparisons and no loop: keys
/// that end alike in Flink's layout share a window namespace (16 bytes) or a long (8).
#[inline]
fn shared_tail(a: &[u8], b: &[u8]) -> usize {
    if let (Some(x), Some(y)) = (a.last_chunk::<16>(), b.last_chunk::<16>()) {
        if x == y {
            return 16;
        }
    }
    match (a.last_chunk::<8>(), b.last_chunk::<8>()) {
        (Some(x), Some(y)) if x == y => 8,
        _ => 0,
    }
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Reads a LEB128 varint from `buf` at `*pos`.
#[inline]
fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = buf.get(*pos) else {
            return Err("a number runs past the end of its block");
        };
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err("a number does not fit in 64 bits");
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err("a number does not fit in 64 bits");
        }
    }
}

fn block_crc(head: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(head);
    h.update(payload);
    h.finalize()
}

/// The header of a block of `kind` with `payload` and `records` records: kind, payload length,
/// record count and the CRC-32 of those 9 bytes followed by the payload.
fn block_head(kind: u8, payload: &[u8], records: u32) -> io::Result<[u8; BLOCK_HEADER_LEN]> {
    let len = u32::try_from(payload.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "block larger than 4 GiB"))?;
    let mut head = [0u8; BLOCK_HEADER_LEN];
    head[0] = kind;
    head[1..5].copy_from_slice(&len.to_le_bytes());
    head[5..9].copy_from_slice(&records.to_le_bytes());
    let crc = block_crc(&head[..9], payload);
    head[9..13].copy_from_slice(&crc.to_le_bytes());
    Ok(head)
}

/// Writes one block; `written` counts the bytes.
fn write_block<W: Write>(
    out: &mut W,
    kind: u8,
    payload: &[u8],
    records: u32,
    written: &mut u64,
) -> io::Result<()> {
    out.write_all(&block_head(kind, payload, records)?)?;
    out.write_all(payload)?;
    *written += (BLOCK_HEADER_LEN + payload.len()) as u64;
    Ok(())
}

/// Data blocks reach the output in writes that end on a multiple of this many bytes of the
/// stream (512 KiB). Operating systems take large, page-aligned writes much faster than a
/// 13-byte block header followed by its payload: on Linux's ext4 this halves the kernel time
/// of writing a trace file (BENCHMARKS.md).
pub const OUTPUT_CHUNK: usize = 512 << 10;

/// Streams records into a binary trace. An [`AccessSink`]: it allocates nothing per record.
///
/// I/O errors cannot be returned from sink methods, so the first error is kept, later records
/// are dropped, and [`finish`](Self::finish) reports it ([`error`](Self::error) shows it
/// earlier). Dropping the writer without `finish` leaves an unterminated trace that readers
/// reject as truncated.
#[derive(Debug)]
pub struct BinaryTraceWriter<W: Write> {
    out: W,
    /// Complete blocks not yet handed to `out` (`buf[..pending]`), then the data block being
    /// filled: room for its header, and its payload up to `end`. Fixed in size (room for an
    /// output chunk, a block's target, the largest record and a short record's whole buffer),
    /// so records are written by index with no growth checks.
    buf: Box<[u8]>,
    pending: usize,
    end: usize,
    block_records: u32,
    prev: Vec<Vec<u8>>,
    /// The state table: the header's, renamed by every `open` written so far (checked as a
    /// reader checks it, so that a trace this writes can be read).
    names: Vec<String>,
    /// The state of the block's previous access, or [`NO_STATE`].
    prev_state: u32,
    written: u64,
    counts: Counter,
    error: Option<TraceError>,
}

impl<W: Write> BinaryTraceWriter<W> {
    /// Writes the magic, the version and the header block to `out`.
    ///
    /// `out` receives the header block, then data blocks in large writes that end on multiples
    /// of [`OUTPUT_CHUNK`] bytes of the stream, so it need not be buffered.
    pub fn new(mut out: W, header: &TraceHeader) -> Result<Self, TraceError> {
        check_state_names(&header.state_names).map_err(TraceError::InvalidInput)?;
        let json = serde_json::to_vec(header)
            .map_err(|e| TraceError::InvalidInput(format!("the header cannot be encoded: {e}")))?;
        if json.len() > MAX_HEADER_LEN {
            return Err(TraceError::InvalidInput(format!(
                "the header is {} bytes of JSON, more than the {MAX_HEADER_LEN} allowed",
                json.len()
            )));
        }
        let mut written = 0u64;
        let io = |source| TraceError::Write { records: 0, source };
        out.write_all(&BINARY_MAGIC).map_err(io)?;
        out.write_all(&BINARY_VERSION.to_le_bytes()).map_err(io)?;
        written += 10;
        write_block(&mut out, KIND_HEADER, &json, 0, &mut written).map_err(io)?;
        Ok(BinaryTraceWriter {
            out,
            buf: vec![
                0;
                OUTPUT_CHUNK + BLOCK_HEADER_LEN + BLOCK_TARGET + MAX_RECORD_LEN + SHORT_RECORD
            ]
            .into_boxed_slice(),
            pending: 0,
            end: BLOCK_HEADER_LEN,
            block_records: 0,
            prev: vec![Vec::new(); header.state_names.len()],
            names: header.state_names.clone(),
            prev_state: NO_STATE,
            written,
            counts: Counter::default(),
            error: None,
        })
    }

    /// The first error met so far, if any (it will also be returned by `finish`).
    pub fn error(&self) -> Option<&TraceError> {
        self.error.as_ref()
    }

    /// Records (requests and markers) accepted so far.
    pub fn records_written(&self) -> u64 {
        self.counts.records()
    }

    /// Bytes written to the output so far (blocks still in the writer's buffer, less than
    /// [`OUTPUT_CHUNK`] plus the current block, are not yet among them).
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// `footer` with its counts replaced by what this writer received so far.
    pub fn complete_footer(&self, mut footer: TraceFooter) -> TraceFooter {
        self.counts.fill(&mut footer);
        footer
    }

    /// Writes the last data block and the end block with `footer`, flushes, and returns the
    /// output. The footer's counts are replaced by the writer's own (see
    /// [`complete_footer`](Self::complete_footer)); its other fields are kept.
    pub fn finish(mut self, footer: TraceFooter) -> Result<W, TraceError> {
        self.flush_block();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let footer = self.complete_footer(footer);
        let json = serde_json::to_vec(&footer)
            .map_err(|e| TraceError::InvalidInput(format!("the footer cannot be encoded: {e}")))?;
        if json.len() > MAX_HEADER_LEN {
            return Err(TraceError::InvalidInput(format!(
                "the footer is {} bytes of JSON, more than the {MAX_HEADER_LEN} allowed",
                json.len()
            )));
        }
        let records = self.counts.records();
        let io = |source| TraceError::Write { records, source };
        self.out.write_all(&self.buf[..self.pending]).map_err(io)?;
        self.written += self.pending as u64;
        write_block(&mut self.out, KIND_END, &json, 0, &mut self.written).map_err(io)?;
        self.out.flush().map_err(io)?;
        Ok(self.out)
    }

    /// Closes the data block being filled (if it holds records) and hands the output every
    /// whole chunk before it.
    fn flush_block(&mut self) {
        if self.block_is_empty() {
            return;
        }
        if self.error.is_none() {
            if let Err(source) = self.close_block() {
                self.error = Some(TraceError::Write {
                    records: self.counts.records(),
                    source,
                });
            }
        }
        self.end = self.pending + BLOCK_HEADER_LEN;
        self.block_records = 0;
        self.prev_state = NO_STATE;
        release_keys(&mut self.prev);
    }

    /// Writes the current block's header before its payload, and writes out the buffer up to
    /// the last chunk boundary of the stream it reaches, keeping the rest (less than a chunk).
    fn close_block(&mut self) -> io::Result<()> {
        let (head, payload) = self.buf[self.pending..self.end].split_at_mut(BLOCK_HEADER_LEN);
        head.copy_from_slice(&block_head(KIND_DATA, payload, self.block_records)?);
        self.pending = self.end;
        let reached = self.written + self.pending as u64;
        let boundary = reached - reached % OUTPUT_CHUNK as u64;
        if boundary > self.written {
            let whole = (boundary - self.written) as usize;
            self.out.write_all(&self.buf[..whole])?;
            self.written = boundary;
            self.buf.copy_within(whole..self.pending, 0);
            self.pending -= whole;
        }
        Ok(())
    }

    /// Whether the data block being filled holds no record yet (its previous keys are empty).
    #[inline]
    fn block_is_empty(&self) -> bool {
        self.end == self.pending + BLOCK_HEADER_LEN
    }

    #[inline]
    fn end_record(&mut self) {
        self.block_records += 1;
        if self.end - self.pending >= BLOCK_HEADER_LEN + BLOCK_TARGET {
            self.flush_block();
        }
    }
}

/// The value length a record of `op` carries: an extended op's code in place of its
/// (empty) value.
#[inline(always)]
fn wire_value_len(op: Op, value_len: u32) -> u32 {
    if op as u8 >= EXTENDED_OP {
        u32::from(op as u8)
    } else {
        value_len
    }
}

impl<W: Write> BinaryTraceWriter<W> {
    /// The tag of an access of `op` to `state` with `value_len`, without the key flags, and
    /// whether its state must be written (a different state than the previous access's).
    #[inline(always)]
    fn access_tag(&mut self, op: Op, state: StateId, value_len: u32) -> (u8, bool) {
        let mut tag = (op as u8).min(EXTENDED_OP);
        let new_state = u32::from(state) != self.prev_state;
        self.prev_state = u32::from(state);
        if !new_state {
            tag |= SAME_STATE;
        }
        if value_len == 0 {
            tag |= NO_VALUE;
        }
        (tag, new_state)
    }

    /// Appends a request record whose key is the previous key of its state edited: its first
    /// `shared` bytes, then `middle`, then its last `tail` bytes.
    #[inline(always)]
    fn write_request(
        &mut self,
        op: Op,
        state: StateId,
        (shared, middle, tail): (usize, &[u8], usize),
        value_len: u32,
    ) {
        let value_len = wire_value_len(op, value_len);
        let (mut tag, new_state) = self.access_tag(op, state, value_len);
        if tail > 0 {
            tag |= TAIL;
        }
        let at = self.end;
        let numbers = [
            u64::from(state),
            shared as u64,
            tail as u64,
            middle.len() as u64,
            u64::from(value_len),
        ];
        if numbers.iter().fold(0, |all, n| all | n) < 0x80 && middle.len() <= SHORT_MIDDLE {
            // nearly every record: each number is its own one-byte varint and the record fits
            // a fixed-size window of the block; a number left out is written and then
            // overwritten, which saves a branch
            let [state, shared, tail, middle_len, value_len] = numbers.map(|n| n as u8);
            let record: &mut [u8; SHORT_RECORD] = (&mut self.buf[at..at + SHORT_RECORD])
                .try_into()
                .expect("the block has room for a short record");
            record[0] = tag;
            record[1] = state;
            let mut n = 1 + usize::from(new_state);
            record[n] = shared;
            record[n + 1] = tail;
            n += 1 + usize::from(tail > 0);
            record[n] = middle_len;
            n += 1;
            copy_short(middle, &mut record[n..]);
            n += middle.len();
            record[n] = value_len;
            n += usize::from(value_len > 0);
            self.end = at + n;
        } else {
            let record = &mut self.buf[at..];
            record[0] = tag;
            let mut n = 1;
            if new_state {
                n += varint_into(&mut record[n..], u64::from(state));
            }
            n += varint_into(&mut record[n..], shared as u64);
            if tail > 0 {
                n += varint_into(&mut record[n..], tail as u64);
            }
            n += varint_into(&mut record[n..], middle.len() as u64);
            record[n..n + middle.len()].copy_from_slice(middle);
            n += middle.len();
            if value_len > 0 {
                n += varint_into(&mut record[n..], u64::from(value_len));
            }
            self.end = at + n;
        }
        self.counts.access(op);
        self.end_record();
    }

    /// Appends a request record whose key is the previous key of its state, unchanged.
    #[inline(always)]
    fn write_same_key(&mut self, op: Op, state: StateId, value_len: u32) {
        let value_len = wire_value_len(op, value_len);
        let (tag, new_state) = self.access_tag(op, state, value_len);
        let record = &mut self.buf[self.end..];
        record[0] = tag | SAME_KEY;
        let n = if state < 0x80 && value_len < 0x80 {
            // one-byte numbers, each written and kept only when needed
            record[1] = state as u8;
            let n = 1 + usize::from(new_state);
            record[n] = value_len as u8;
            n + usize::from(value_len > 0)
        } else {
            let mut n = 1;
            if new_state {
                n += varint_into(&mut record[n..], u64::from(state));
            }
            if value_len > 0 {
                n += varint_into(&mut record[n..], u64::from(value_len));
            }
            n
        };
        self.end += n;
        self.counts.access(op);
        self.end_record();
    }
}

impl<W: Write> AccessSink for BinaryTraceWriter<W> {
    #[inline(always)]
    fn access(&mut self, a: Access<'_>) {
        if self.error.is_some() {
            return;
        }
        if a.key.len() > MAX_KEY_LEN {
            self.error = Some(TraceError::InvalidInput(format!(
                "a {} key of {} bytes is longer than the {MAX_KEY_LEN} allowed",
                a.op,
                a.key.len()
            )));
            return;
        }
        if let Err(what) = check_value_len(a.op, a.value_len) {
            self.error = Some(TraceError::InvalidInput(what));
            return;
        }
        let Some(prev) = self.prev.get_mut(usize::from(a.state)) else {
            self.error = Some(TraceError::InvalidInput(format!(
                "a {} of state {} cannot be written: the header names only {} states",
                a.op,
                a.state,
                self.prev.len()
            )));
            return;
        };
        if a.op == Op::Open {
            if let Err(what) = rename_state(&mut self.names, a.state, a.key) {
                self.error = Some(TraceError::InvalidInput(what));
                return;
            }
        }
        let value_len = a.value_len;
        let shared = shared_prefix(prev, a.key);
        if shared == a.key.len() && shared == prev.len() {
            self.write_same_key(a.op, a.state, value_len);
            return;
        }
        let rest = a.key.get(shared..).unwrap_or_default();
        let tail = shared_tail(prev.get(shared..).unwrap_or_default(), rest);
        let middle = rest.get(..rest.len() - tail).unwrap_or_default();
        prev.truncate(shared);
        prev.extend_from_slice(rest);
        self.write_request(a.op, a.state, (shared, middle, tail), value_len);
    }

    fn access_all(&mut self, state: StateId, key: &[u8], requests: &[(Op, u32)]) {
        let Some((&(op, value_len), rest)) = requests.split_first() else {
            return;
        };
        self.access(Access {
            op,
            state,
            key,
            value_len,
        });
        for &(op, value_len) in rest {
            if self.error.is_some()
                || self.block_is_empty()
                || value_len > MAX_VALUE_LEN
                || op == Op::Open
            {
                // failed, a new block began (its previous keys are empty), a value too long
                // or a state is named: the long way
                self.access(Access {
                    op,
                    state,
                    key,
                    value_len,
                });
            } else {
                // the previous key of this state is `key` itself
                self.write_same_key(op, state, value_len);
            }
        }
    }

    fn event(&mut self, input: u8) {
        if self.error.is_some() {
            return;
        }
        let record = &mut self.buf[self.end..self.end + 2];
        if input < 0x0f {
            record[0] = TAG3_EVENT | input << 4;
            self.end += 1;
        } else {
            record.copy_from_slice(&[0xff, input]);
            self.end += 2;
        }
        self.counts.event();
        self.end_record();
    }

    fn watermark(&mut self, timestamp: i64) {
        if self.error.is_some() {
            return;
        }
        let record = &mut self.buf[self.end..];
        record[0] = TAG3_WATERMARK;
        self.end += 1 + varint_into(&mut record[1..], zigzag(timestamp));
        self.counts.watermark();
        self.end_record();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Reading,
    Done,
    Failed,
}

/// A decoded record whose key is `prev[state]`.
#[derive(Debug, PartialEq, Eq)]
enum Decoded {
    Access {
        op: Op,
        state: StateId,
        value_len: u32,
    },
    Event(u8),
    Watermark(i64),
}

/// Turns `key` into its first `shared` bytes, then `middle`, then its last `tail` bytes
/// (`shared + tail` at most its length), in place.
#[inline]
/// The error for an access to a state id the header does not name.
fn unknown_state(offset: u64, state: StateId, declared: usize) -> TraceError {
    TraceError::Corrupt {
        offset,
        what: format!(
            "an access to state id {state}, but the header names only {declared} states (ids 0 \
             to {})",
            declared.saturating_sub(1)
        ),
    }
}

/// Bytes of key buffer each state keeps from one block to the next; larger buffers are given
/// back, so a reader's memory is bounded by one block's keys plus this much per state, not by
/// the longest key each state ever had.
const KEPT_KEY_CAPACITY: usize = 256;

/// Empties every state's previous key at a block boundary, giving back large buffers.
fn release_keys(prev: &mut [Vec<u8>]) {
    for p in prev {
        p.clear();
        if p.capacity() > KEPT_KEY_CAPACITY {
            p.shrink_to(KEPT_KEY_CAPACITY);
        }
    }
}

fn edit_key(key: &mut Vec<u8>, shared: usize, middle: &[u8], tail: usize) {
    let old_len = key.len();
    let new_len = shared + middle.len() + tail;
    if new_len > old_len {
        key.resize(new_len, 0);
    }
    key.copy_within(old_len - tail..old_len, shared + middle.len());
    key[shared..shared + middle.len()].copy_from_slice(middle);
    key.truncate(new_len);
}

/// Reads `buf.len()` bytes or reports where the input ended.
fn read_full<R: Read>(
    inner: &mut R,
    offset: &mut u64,
    buf: &mut [u8],
    what: &str,
) -> Result<(), TraceError> {
    let mut got = 0;
    while got < buf.len() {
        let Some(rest) = buf.get_mut(got..) else {
            break;
        };
        match inner.read(rest) {
            Ok(0) => {
                return Err(TraceError::Truncated {
                    offset: *offset,
                    what: format!("the file ends inside {what}"),
                })
            }
            Ok(n) => {
                got += n;
                *offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(TraceError::Truncated {
                    offset: *offset,
                    what: format!("the compressed stream ends inside {what} ({e})"),
                })
            }
            Err(source) => {
                return Err(TraceError::ReadAt {
                    offset: *offset,
                    source,
                })
            }
        }
    }
    Ok(())
}

/// Reads a binary trace in constant memory: one block at a time, keys in reused buffers.
///
/// Reads every version: 3, and 1 and 2, whose access records are `op code | state varint |
/// shared varint | suffix_len varint | suffix | value_len varint` (a key is the first `shared`
/// bytes of the previous key of its state, then `suffix`; no flags) and whose markers are
/// `0x10 input` and `0x11 zigzag-varint`. Version 1 has no range ops.
#[derive(Debug)]
pub struct BinaryTraceReader<R: Read> {
    inner: R,
    /// Bytes consumed from `inner`.
    offset: u64,
    header: TraceHeader,
    footer: Option<TraceFooter>,
    block: Vec<u8>,
    /// Offset of the current block's payload in the stream.
    block_payload_at: u64,
    pos: usize,
    block_records: u32,
    decoded: u32,
    prev: Vec<Vec<u8>>,
    /// The state of the block's previous access, or [`NO_STATE`] (version 3).
    prev_state: u32,
    counts: Counter,
    status: Status,
    /// The format version of the file.
    version: u16,
    /// The state table: the header's, renamed by every `open` read so far.
    names: Vec<String>,
}

impl<R: Read> BinaryTraceReader<R> {
    /// Checks the magic and version and reads the header block.
    ///
    /// The reader reads whole blocks, so `inner` need not be buffered.
    pub fn new(mut inner: R) -> Result<Self, TraceError> {
        let mut offset = 0u64;
        let mut start = [0u8; 10];
        read_full(
            &mut inner,
            &mut offset,
            &mut start,
            "the magic bytes and version",
        )?;
        let (magic, version) = start.split_at(8);
        if magic != BINARY_MAGIC {
            return Err(TraceError::NotATrace {
                offset: 0,
                what: format!(
                    "the file starts with {:?}, not the binary trace magic {:?}",
                    String::from_utf8_lossy(magic),
                    String::from_utf8_lossy(&BINARY_MAGIC)
                ),
            });
        }
        let version = u16::from_le_bytes([version[0], version[1]]);
        if version == 0 || version > BINARY_VERSION {
            return Err(TraceError::UnsupportedVersion {
                offset: 8,
                version: u32::from(version),
                supported: u32::from(BINARY_VERSION),
            });
        }
        let mut reader = BinaryTraceReader {
            inner,
            offset,
            header: TraceHeader::new("", Vec::new(), None, serde_json::Value::Null),
            footer: None,
            block: Vec::new(),
            block_payload_at: 0,
            pos: 0,
            block_records: 0,
            decoded: 0,
            prev: Vec::new(),
            prev_state: NO_STATE,
            counts: Counter::default(),
            status: Status::Reading,
            version,
            names: Vec::new(),
        };
        let at = reader.offset;
        let (kind, _) = reader.read_block()?;
        if kind != KIND_HEADER {
            return Err(TraceError::Corrupt {
                offset: at,
                what: format!(
                    "expected the header block ('H'), found a block of kind 0x{kind:02x}"
                ),
            });
        }
        reader.header = serde_json::from_slice(&reader.block).map_err(|e| TraceError::Corrupt {
            offset: reader.block_payload_at,
            what: format!("the header is not valid header JSON: {e}"),
        })?;
        check_state_names(&reader.header.state_names).map_err(|what| TraceError::Corrupt {
            offset: reader.block_payload_at,
            what: format!("the header's state names are invalid: {what}"),
        })?;
        reader.prev = vec![Vec::new(); reader.header.state_names.len()];
        reader.names = reader.header.state_names.clone();
        reader.block.clear();
        reader.pos = 0;
        Ok(reader)
    }

    /// The trace's header.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The state table as of the last record read: the header's, with the names the `open`
    /// records read so far gave their states.
    pub fn state_names(&self) -> &[String] {
        &self.names
    }

    /// The footer, once [`next_record`](Self::next_record) has returned `Ok(None)`.
    pub fn footer(&self) -> Option<&TraceFooter> {
        self.footer.as_ref()
    }

    /// Bytes consumed from the input so far (uncompressed).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Iterator over the remaining records, owned.
    pub fn records(&mut self) -> Records<'_, Self> {
        Records::new(self)
    }

    /// Reads one block into `self.block`; returns its kind and record count.
    fn read_block(&mut self) -> Result<(u8, u32), TraceError> {
        let at = self.offset;
        let mut head = [0u8; BLOCK_HEADER_LEN];
        read_full(
            &mut self.inner,
            &mut self.offset,
            &mut head,
            "a block header",
        )?;
        let kind = head[0];
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let records = u32::from_le_bytes([head[5], head[6], head[7], head[8]]);
        let stored = u32::from_le_bytes([head[9], head[10], head[11], head[12]]);
        let cap = match kind {
            KIND_DATA => MAX_BLOCK_PAYLOAD,
            KIND_HEADER | KIND_END => MAX_HEADER_LEN,
            other => {
                return Err(TraceError::Corrupt {
                    offset: at,
                    what: format!("unknown block kind 0x{other:02x} (expected 'H', 'D' or 'E')"),
                })
            }
        };
        if len > cap {
            return Err(TraceError::Corrupt {
                offset: at,
                what: format!(
                    "a block of kind '{}' says its payload is {len} bytes, more than the {cap} \
                     allowed",
                    kind as char
                ),
            });
        }
        self.block_payload_at = self.offset;
        self.block.clear();
        // Read through `take` so a lying length costs no more memory than the data present.
        let got = (&mut self.inner)
            .take(len as u64)
            .read_to_end(&mut self.block);
        match got {
            Ok(n) => self.offset += n as u64,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(TraceError::Truncated {
                    offset: self.offset,
                    what: format!("the compressed stream ends inside a block ({e})"),
                })
            }
            Err(source) => {
                return Err(TraceError::ReadAt {
                    offset: self.offset,
                    source,
                })
            }
        }
        if self.block.len() < len {
            return Err(TraceError::Truncated {
                offset: self.offset,
                what: format!(
                    "the block at byte {at} ends before its length says ({} of {len} payload \
                     bytes)",
                    self.block.len()
                ),
            });
        }
        let computed = block_crc(&head[..9], &self.block);
        if computed != stored {
            return Err(TraceError::ChecksumMismatch {
                offset: at,
                stored,
                computed,
            });
        }
        Ok((kind, records))
    }

    /// Moves to the next data block; `false` once the end block has been read and checked.
    fn advance_block(&mut self) -> Result<bool, TraceError> {
        if self.decoded != self.block_records {
            return Err(TraceError::Corrupt {
                offset: self.block_payload_at,
                what: format!(
                    "the block holds {} records but its header says {}",
                    self.decoded, self.block_records
                ),
            });
        }
        let at = self.offset;
        let (kind, records) = self.read_block()?;
        match kind {
            KIND_DATA => {
                self.pos = 0;
                self.decoded = 0;
                self.block_records = records;
                self.prev_state = NO_STATE;
                release_keys(&mut self.prev);
                Ok(true)
            }
            KIND_END => {
                let footer: TraceFooter =
                    serde_json::from_slice(&self.block).map_err(|e| TraceError::Corrupt {
                        offset: self.block_payload_at,
                        what: format!("the footer is not valid footer JSON: {e}"),
                    })?;
                self.counts
                    .check(&footer)
                    .map_err(|what| TraceError::Corrupt { offset: at, what })?;
                let mut probe = [0u8; 1];
                loop {
                    match self.inner.read(&mut probe) {
                        Ok(0) => break,
                        Ok(_) => {
                            return Err(TraceError::Corrupt {
                                offset: self.offset,
                                what: "data after the end block".into(),
                            })
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(source) => {
                            return Err(TraceError::ReadAt {
                                offset: self.offset,
                                source,
                            })
                        }
                    }
                }
                self.block.clear();
                self.pos = 0;
                self.footer = Some(footer);
                Ok(false)
            }
            _ => Err(TraceError::Corrupt {
                offset: at,
                what: "a second header block".into(),
            }),
        }
    }

    /// Decodes the version 1 or 2 record at `self.pos` when it is an event marker or an access
    /// whose four numbers each fit in one byte (nearly every record) and which passes every check of
    /// [`decode`](Self::decode); `None` leaves anything else, errors included, to `decode`.
    #[inline]
    fn decode_common(&mut self) -> Option<Decoded> {
        if self.decoded >= self.block_records {
            return None;
        }
        let buf = self.block.get(self.pos..)?;
        let &[tag, state, ..] = buf else {
            return None;
        };
        if tag == TAG_EVENT {
            self.pos += 2;
            self.decoded += 1;
            self.counts.event();
            return Some(Decoded::Event(state));
        }
        let &[_, _, shared, suffix_len, ref rest @ ..] = buf else {
            return None;
        };
        if (state | shared | suffix_len) >= 0x80 {
            return None;
        }
        let op = Op::from_code(tag)?;
        if tag > LAST_VERSION_3_OP || (self.version == 1 && tag > LAST_VERSION_1_OP) {
            return None;
        }
        let (suffix, rest) = rest.split_at_checked(usize::from(suffix_len))?;
        let &[value_len, ..] = rest else {
            return None;
        };
        // two one-byte lengths make a key far shorter than the longest allowed
        const _: () = assert!(MAX_KEY_LEN > 2 * 0x7f);
        let key_len = usize::from(shared) + usize::from(suffix_len);
        if value_len >= 0x80 || (op.is_range() && usize::from(value_len) > key_len) {
            return None;
        }
        let prev = self.prev.get_mut(usize::from(state))?;
        if usize::from(shared) > prev.len() {
            return None;
        }
        prev.truncate(usize::from(shared));
        prev.extend_from_slice(suffix);
        self.pos += 5 + usize::from(suffix_len);
        self.decoded += 1;
        self.counts.access(op);
        Some(Decoded::Access {
            op,
            state: StateId::from(state),
            value_len: u32::from(value_len),
        })
    }

    /// Decodes the record at `self.pos`.
    #[inline]
    fn decode(&mut self) -> Result<Decoded, TraceError> {
        if self.version >= 3 {
            return match self.decode_common_v3() {
                Some(decoded) => Ok(decoded),
                None => self.decode_v3(),
            };
        }
        match self.decode_common() {
            Some(decoded) => Ok(decoded),
            None => self.decode_any(),
        }
    }

    /// Decodes the version 3 record at `self.pos` when it is an event marker of a small input
    /// or an access whose numbers each fit in one byte (nearly every record) and which passes
    /// every check of [`decode_v3`](Self::decode_v3); `None` leaves anything else, errors
    /// included, to `decode_v3`.
    #[inline]
    fn decode_common_v3(&mut self) -> Option<Decoded> {
        if self.decoded >= self.block_records {
            return None;
        }
        let buf = self.block.get(self.pos..)?;
        let &tag = buf.first()?;
        if tag & 0x0f == TAG3_EVENT && tag != 0xff {
            self.pos += 1;
            self.decoded += 1;
            self.counts.event();
            return Some(Decoded::Event(tag >> 4));
        }
        let op = Op::from_code(tag & 0x0f)
            .filter(|op| !op.is_state_lifecycle() && (*op as u8) < EXTENDED_OP)?;
        let byte = |n: usize| buf.get(n).copied().filter(|&b| b < 0x80).map(usize::from);
        let mut n = 1;
        let state = if tag & SAME_STATE != 0 {
            StateId::try_from(self.prev_state).ok()?
        } else {
            n += 1;
            StateId::try_from(byte(1)?).ok()?
        };
        let prev = self.prev.get_mut(usize::from(state))?;
        let edit = if tag & SAME_KEY != 0 {
            if tag & TAIL != 0 {
                return None;
            }
            None
        } else {
            let shared = byte(n)?;
            let tail = if tag & TAIL != 0 { byte(n + 1)? } else { 0 };
            n += 1 + usize::from(tag & TAIL != 0);
            let middle_len = byte(n)?;
            n += 1;
            if shared + tail > prev.len() {
                return None;
            }
            let middle = buf.get(n..n + middle_len)?;
            n += middle_len;
            Some((shared, middle, tail))
        };
        let value_len = if tag & NO_VALUE != 0 {
            0
        } else {
            n += 1;
            byte(n - 1)?
        };
        // three one-byte lengths make a key far shorter than the longest allowed
        const _: () = assert!(MAX_KEY_LEN > 3 * 0x7f);
        let key_len = edit.map_or(prev.len(), |(shared, middle, tail)| {
            shared + middle.len() + tail
        });
        if op.is_range() && value_len > key_len {
            return None;
        }
        if let Some((shared, middle, tail)) = edit {
            edit_key(prev, shared, middle, tail);
        }
        self.prev_state = u32::from(state);
        self.pos += n;
        self.decoded += 1;
        self.counts.access(op);
        Some(Decoded::Access {
            op,
            state,
            value_len: value_len as u32,
        })
    }

    /// The stream offset and the tag of the record at `self.pos`, or why there is none.
    fn record_tag(&self) -> Result<(u64, u8), TraceError> {
        let at = self.block_payload_at + self.pos as u64;
        let corrupt = |what: String| TraceError::Corrupt { offset: at, what };
        if self.decoded >= self.block_records {
            return Err(corrupt(format!(
                "the block holds more records than the {} its header says",
                self.block_records
            )));
        }
        match self.block.get(self.pos) {
            Some(&tag) => Ok((at, tag)),
            None => Err(corrupt("a record is missing".into())),
        }
    }

    /// Decodes the version 3 record at `self.pos`, or says what is wrong with it.
    #[inline]
    fn decode_v3(&mut self) -> Result<Decoded, TraceError> {
        let (at, tag) = self.record_tag()?;
        let corrupt = |what: String| TraceError::Corrupt { offset: at, what };
        let buf = &self.block;
        let mut pos = self.pos + 1;
        let num = |pos: &mut usize| get_varint(buf, pos).map_err(|w| corrupt(w.to_string()));
        let decoded = match tag & 0x0f {
            TAG3_EVENT => {
                let input = if tag == 0xff {
                    let Some(&input) = buf.get(pos) else {
                        return Err(corrupt(
                            "an event marker runs past the end of its block".into(),
                        ));
                    };
                    pos += 1;
                    input
                } else {
                    tag >> 4
                };
                self.counts.event();
                Decoded::Event(input)
            }
            TAG3_WATERMARK if tag == TAG3_WATERMARK => {
                let v = num(&mut pos)?;
                self.counts.watermark();
                Decoded::Watermark(unzigzag(v))
            }
            code => {
                let Some(op) = Op::from_code(code).filter(|_| {
                    code <= LAST_VERSION_3_OP
                        || (self.version >= 4 && code < EXTENDED_OP)
                        || self.version >= 5
                }) else {
                    return Err(corrupt(format!(
                        "unknown record tag 0x{tag:02x} for a version {} trace",
                        self.version
                    )));
                };
                let state = if tag & SAME_STATE != 0 {
                    StateId::try_from(self.prev_state).map_err(|_| {
                        corrupt(
                            "an access takes the state of the previous access, but it is the \
                             first in its block"
                                .into(),
                        )
                    })?
                } else {
                    let state = num(&mut pos)?;
                    StateId::try_from(state)
                        .map_err(|_| corrupt(format!("state id {state} is larger than 65535")))?
                };
                let s = usize::from(state);
                if s >= self.prev.len() {
                    return Err(unknown_state(at, state, self.prev.len()));
                }
                let prev_len = self.prev.get(s).map_or(0, Vec::len);
                let edit = if tag & SAME_KEY != 0 {
                    if tag & TAIL != 0 {
                        return Err(corrupt(format!(
                            "record tag 0x{tag:02x} both repeats the previous key and edits it"
                        )));
                    }
                    None
                } else {
                    let shared = num(&mut pos)?;
                    let tail = if tag & TAIL != 0 { num(&mut pos)? } else { 0 };
                    let middle_len = num(&mut pos)?;
                    if shared.saturating_add(tail) > prev_len as u64 {
                        return Err(corrupt(format!(
                            "the key keeps {shared} bytes from the start and {tail} from the end \
                             of the previous key of state {state}, which has only {prev_len}"
                        )));
                    }
                    let key_len = shared + tail + middle_len.min(MAX_KEY_LEN as u64 + 1);
                    if key_len > MAX_KEY_LEN as u64 {
                        return Err(corrupt(format!(
                            "a key of {} bytes is longer than the {MAX_KEY_LEN} allowed",
                            shared.saturating_add(tail).saturating_add(middle_len)
                        )));
                    }
                    let end = pos + middle_len as usize;
                    if end > buf.len() {
                        return Err(corrupt(format!(
                            "a key of {middle_len} new bytes runs past the end of its block"
                        )));
                    }
                    let middle = pos..end;
                    pos = end;
                    Some((shared as usize, middle, tail as usize))
                };
                let value_len = if tag & NO_VALUE != 0 {
                    0
                } else {
                    let value_len = num(&mut pos)?;
                    u32::try_from(value_len).map_err(|_| {
                        corrupt(format!("value length {value_len} does not fit in 32 bits"))
                    })?
                };
                let (op, value_len) = if code == EXTENDED_OP {
                    let extended = u8::try_from(value_len)
                        .ok()
                        .filter(|&c| c >= EXTENDED_OP)
                        .and_then(Op::from_code);
                    match extended {
                        Some(op) => (op, 0),
                        None => {
                            return Err(corrupt(format!(
                                "an extended op record names op code {value_len}, which is not \
                                 one of the codes from {EXTENDED_OP} up"
                            )))
                        }
                    }
                } else {
                    (op, value_len)
                };
                let key_len = edit.as_ref().map_or(prev_len, |(shared, middle, tail)| {
                    shared + middle.len() + tail
                });
                if op.is_range() && value_len as usize > key_len {
                    return Err(corrupt(format!(
                        "a {op} says its start bound has {value_len} bytes, but its key has only \
                         {key_len}"
                    )));
                }
                check_value_len(op, value_len).map_err(corrupt)?;
                if let (Some(prev), Some((shared, middle, tail))) = (self.prev.get_mut(s), edit) {
                    edit_key(prev, shared, &self.block[middle], tail);
                }
                self.prev_state = u32::from(state);
                self.counts.access(op);
                Decoded::Access {
                    op,
                    state,
                    value_len,
                }
            }
        };
        self.pos = pos;
        self.decoded += 1;
        Ok(decoded)
    }

    /// Decodes any version 1 or 2 record at `self.pos`, or says what is wrong with it.
    fn decode_any(&mut self) -> Result<Decoded, TraceError> {
        let (at, tag) = self.record_tag()?;
        let corrupt = |what: String| TraceError::Corrupt { offset: at, what };
        let buf = &self.block;
        let mut pos = self.pos + 1;
        let num = |pos: &mut usize| get_varint(buf, pos).map_err(|w| corrupt(w.to_string()));
        let decoded = match tag {
            TAG_EVENT => {
                let Some(&input) = buf.get(pos) else {
                    return Err(corrupt(
                        "an event marker runs past the end of its block".into(),
                    ));
                };
                pos += 1;
                self.counts.event();
                Decoded::Event(input)
            }
            TAG_WATERMARK => {
                let v = num(&mut pos)?;
                self.counts.watermark();
                Decoded::Watermark(unzigzag(v))
            }
            code => {
                let op = match Op::from_code(code) {
                    Some(op)
                        if code <= LAST_VERSION_3_OP
                            && (self.version > 1 || code <= LAST_VERSION_1_OP) =>
                    {
                        op
                    }
                    _ => {
                        return Err(corrupt(format!(
                            "unknown record tag 0x{code:02x} for a version {} trace",
                            self.version
                        )))
                    }
                };
                let state = num(&mut pos)?;
                let state = StateId::try_from(state)
                    .map_err(|_| corrupt(format!("state id {state} is larger than 65535")))?;
                let shared = num(&mut pos)?;
                let suffix_len = num(&mut pos)?;
                let s = usize::from(state);
                if s >= self.prev.len() {
                    return Err(unknown_state(at, state, self.prev.len()));
                }
                let prev_len = self.prev.get(s).map_or(0, Vec::len);
                if shared > prev_len as u64 {
                    return Err(corrupt(format!(
                        "the key shares {shared} bytes with the previous key of state {state}, \
                         which has only {prev_len}"
                    )));
                }
                if shared.saturating_add(suffix_len) > MAX_KEY_LEN as u64 {
                    return Err(corrupt(format!(
                        "a key of {} bytes is longer than the {MAX_KEY_LEN} allowed",
                        shared.saturating_add(suffix_len)
                    )));
                }
                let end = pos.saturating_add(suffix_len as usize);
                let Some(suffix) = buf.get(pos..end) else {
                    return Err(corrupt(format!(
                        "a key of {suffix_len} new bytes runs past the end of its block"
                    )));
                };
                pos = end;
                let value_len = num(&mut pos)?;
                let value_len = u32::try_from(value_len).map_err(|_| {
                    corrupt(format!("value length {value_len} does not fit in 32 bits"))
                })?;
                let key_len = shared + suffix_len;
                if op.is_range() && u64::from(value_len) > key_len {
                    return Err(corrupt(format!(
                        "a {op} says its start bound has {value_len} bytes, but its key has only \
                         {key_len}"
                    )));
                }
                check_value_len(op, value_len).map_err(corrupt)?;
                if let Some(prev) = self.prev.get_mut(s) {
                    prev.truncate(shared as usize);
                    prev.extend_from_slice(suffix);
                }
                self.counts.access(op);
                Decoded::Access {
                    op,
                    state,
                    value_len,
                }
            }
        };
        self.pos = pos;
        self.decoded += 1;
        Ok(decoded)
    }

    /// The next record, `Ok(None)` after the end block (whose footer is then checked against
    /// the records read and available from [`footer`](Self::footer)).
    ///
    /// The key borrows the reader; nothing is allocated per record. After an error every call
    /// returns [`TraceError::AlreadyFailed`].
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, TraceError> {
        match self.status {
            Status::Done => return Ok(None),
            Status::Failed => return Err(TraceError::AlreadyFailed),
            Status::Reading => {}
        }
        while self.pos >= self.block.len() {
            match self.advance_block() {
                Ok(true) => {}
                Ok(false) => {
                    self.status = Status::Done;
                    return Ok(None);
                }
                Err(e) => {
                    self.status = Status::Failed;
                    return Err(e);
                }
            }
        }
        let decoded = match self.decode() {
            Ok(d) => d,
            Err(e) => {
                self.status = Status::Failed;
                return Err(e);
            }
        };
        if let Decoded::Access {
            op: Op::Open,
            state,
            ..
        } = decoded
        {
            let key = self
                .prev
                .get(usize::from(state))
                .map_or(&[][..], Vec::as_slice);
            if let Err(what) = super::rename_state(&mut self.names, state, key) {
                self.status = Status::Failed;
                return Err(TraceError::Corrupt {
                    offset: self.block_payload_at + self.pos as u64,
                    what,
                });
            }
        }
        Ok(Some(match decoded {
            Decoded::Access {
                op,
                state,
                value_len,
            } => RecordRef::Access(Access {
                op,
                state,
                key: self
                    .prev
                    .get(usize::from(state))
                    .map_or(&[][..], Vec::as_slice),
                value_len,
            }),
            Decoded::Event(input) => RecordRef::Event { input },
            Decoded::Watermark(timestamp) => RecordRef::Watermark { timestamp },
        }))
    }
}

impl<R: Read> RecordSource for BinaryTraceReader<R> {
    fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, TraceError> {
        BinaryTraceReader::next_record(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::access;
    use crate::trace::TraceRecord;
    use proptest::strategy::Strategy;

    /// A reader at the start of `payload` as a data block of `records` records, the previous
    /// keys of its states being `prev`.
    fn reader_over(
        payload: Vec<u8>,
        records: u32,
        prev: Vec<Vec<u8>>,
        version: u16,
    ) -> BinaryTraceReader<io::Cursor<Vec<u8>>> {
        let header = TraceHeader::new("test", vec!["a".into(), "b".into()], None, "{}".into());
        let trace = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
        let bytes = trace
            .finish(TraceFooter::new(false))
            .expect("trace written");
        let mut r = BinaryTraceReader::new(io::Cursor::new(bytes)).expect("trace opens");
        r.block = payload;
        r.pos = 0;
        r.block_records = records;
        r.decoded = 0;
        r.prev = prev;
        r.version = version;
        r
    }

    /// Bytes of a record that is often valid and often almost valid: a tag (mostly an op, an
    /// event or a watermark), small numbers, sometimes a large one or garbage.
    fn record_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let small = || prop_oneof![12 => 0u8..8, 4 => 8u8..20, 1 => any::<u8>()];
        let tag = prop_oneof![
            12 => 0u8..Op::COUNT as u8,
            2 => Just(TAG_EVENT),
            1 => Just(TAG_WATERMARK),
            1 => any::<u8>()
        ];
        let record = (
            tag,
            0u8..5,
            small(),
            proptest::collection::vec(any::<u8>(), 0..6),
        )
            .prop_flat_map(move |(tag, state, shared, suffix)| {
                (Just((tag, state, shared, suffix)), small(), small(), 0u8..4)
            })
            .prop_map(
                |((tag, state, shared, suffix), suffix_len, value_len, bound)| {
                    match tag {
                        TAG_EVENT | TAG_WATERMARK => return vec![tag, state],
                        _ => {}
                    }
                    let mut b = vec![tag, state, shared];
                    // mostly the true suffix length, sometimes a wrong one
                    b.push(if suffix_len < 18 {
                        suffix.len() as u8
                    } else {
                        suffix_len
                    });
                    b.extend_from_slice(&suffix);
                    // a range op's start bound: at most the key's length, so the edges often
                    let key_len = shared.saturating_add(suffix.len() as u8);
                    b.push(match bound {
                        0 => key_len,
                        1 => key_len.saturating_add(1),
                        _ => value_len,
                    });
                    b
                },
            );
        prop_oneof![20 => record, 1 => proptest::collection::vec(any::<u8>(), 0..4)]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The shortcut for common records decodes exactly what the full decoder decodes, and
        /// leaves the same reader state; records it cannot take (errors included) fall through.
        #[test]
        fn common_records_decode_as_the_full_decoder_decodes_them(
            payload in proptest::collection::vec(record_bytes(), 0..40)
                .prop_map(|records| records.concat()),
            records in 0u32..60,
            prev in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 4..24), 1..6),
            version in 1u16..=2,
        ) {
            let mut r = reader_over(payload, records, prev, version);
            while r.pos < r.block.len() {
                let before = (r.pos, r.decoded, r.prev.clone(), r.counts.clone());
                let full = r.decode_any().map_err(|e| e.to_string());
                let after_full = (r.pos, r.decoded, r.prev.clone(), format!("{:?}", r.counts));
                (r.pos, r.decoded, r.prev, r.counts) = before;
                let decoded = r.decode().map_err(|e| e.to_string());
                proptest::prop_assert_eq!(&decoded, &full);
                proptest::prop_assert_eq!(
                    (r.pos, r.decoded, r.prev.clone(), format!("{:?}", r.counts)),
                    after_full
                );
                if decoded.is_err() {
                    break;
                }
            }
        }
    }

    /// Bytes of a version 3 record that is often valid and often almost valid: a tag (mostly
    /// an op with any flags, an event or a watermark), small numbers, sometimes a large one.
    fn record_bytes_v3() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let number = || prop_oneof![12 => 0u8..8, 4 => 8u8..30, 1 => any::<u8>()];
        let tag = prop_oneof![
            12 => (0u8..Op::COUNT as u8, any::<u8>()).prop_map(|(op, flags)| op | (flags & 0xf0)),
            2 => (0u8..16).prop_map(|input| TAG3_EVENT | input << 4),
            1 => Just(TAG3_WATERMARK),
            1 => any::<u8>()
        ];
        (
            tag,
            proptest::collection::vec(number(), 0..6),
            proptest::collection::vec(any::<u8>(), 0..6),
        )
            .prop_map(|(tag, numbers, middle)| {
                let mut b = vec![tag];
                b.extend_from_slice(&numbers);
                b.extend_from_slice(&middle);
                b
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Version 3's shortcut for common records decodes exactly what its full decoder
        /// decodes, and leaves the same reader state; records it cannot take fall through.
        #[test]
        fn common_version_3_records_decode_as_the_full_decoder_decodes_them(
            payload in proptest::collection::vec(record_bytes_v3(), 0..40)
                .prop_map(|records| records.concat()),
            records in 0u32..60,
            prev in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24), 1..6),
        ) {
            let mut r = reader_over(payload, records, prev, 3);
            while r.pos < r.block.len() {
                let state = |r: &BinaryTraceReader<_>| {
                    (r.pos, r.decoded, r.prev.clone(), r.prev_state, format!("{:?}", r.counts))
                };
                let before = (r.pos, r.decoded, r.prev.clone(), r.prev_state, r.counts.clone());
                let full = r.decode_v3().map_err(|e| e.to_string());
                let after_full = state(&r);
                (r.pos, r.decoded, r.prev, r.prev_state, r.counts) = before;
                let decoded = r.decode().map_err(|e| e.to_string());
                proptest::prop_assert_eq!(&decoded, &full);
                proptest::prop_assert_eq!(state(&r), after_full);
                if decoded.is_err() {
                    break;
                }
            }
        }
    }

    /// LEB128 encodings written out by hand.
    const VARINTS: [(u64, &[u8]); 7] = [
        (0, &[0]),
        (1, &[1]),
        (127, &[0x7f]),
        (128, &[0x80, 0x01]),
        (300, &[0xac, 0x02]),
        (u32::MAX as u64, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        (
            u64::MAX,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
        ),
    ];

    #[test]
    fn records_are_written_as_their_varints_with_small_and_large_numbers() {
        let header = TraceHeader::new("test", vec!["a".into(), "b".into()], None, "{}".into());
        for (value_len, encoded) in &VARINTS[..5] {
            let value_len = *value_len as u32;
            let mut w = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
            for key in [
                &b"abc12345678"[..],
                b"abd12345678",
                b"zbd12345678",
                b"zbd12345678",
            ] {
                w.access(Access {
                    op: Op::Put,
                    state: 1,
                    key,
                    value_len,
                });
            }
            let (no_value, encoded) = match value_len {
                0 => (NO_VALUE, &[][..]),
                _ => (0, *encoded),
            };
            let put = Op::Put as u8 | no_value;
            let mut expected = vec![put, 1, 0, 11];
            expected.extend_from_slice(b"abc12345678");
            expected.extend_from_slice(encoded);
            // keeps "ab" from the start and the last 8 bytes, with "d" between
            expected.extend([put | SAME_STATE | TAIL, 2, 8, 1, b'd']);
            expected.extend_from_slice(encoded);
            // keeps nothing from the start and the last 8 bytes, after "zbd"
            expected.extend([put | SAME_STATE | TAIL, 0, 8, 3, b'z', b'b', b'd']);
            expected.extend_from_slice(encoded);
            // the same key again
            expected.push(put | SAME_STATE | SAME_KEY);
            expected.extend_from_slice(encoded);
            assert_eq!(
                &w.buf[w.pending + BLOCK_HEADER_LEN..w.end],
                expected.as_slice(),
                "value length {value_len}"
            );
        }
    }

    /// A whole trace of `version` 1 or 2 holding `records` in one data block, encoded as those
    /// versions encode them (keys by their shared prefix only, markers tagged 0x10 and 0x11).
    fn old_format_trace(version: u16, records: &[TraceRecord]) -> Vec<u8> {
        let header = TraceHeader::new("test", vec!["a".into(), "b".into()], None, "{}".into());
        let mut prev: Vec<Vec<u8>> = vec![Vec::new(); 2];
        let mut counts = Counter::default();
        let mut payload = Vec::new();
        let varint = |payload: &mut Vec<u8>, v: u64| {
            let mut b = [0u8; 10];
            let n = varint_into(&mut b, v);
            payload.extend_from_slice(&b[..n]);
        };
        for record in records {
            match record {
                TraceRecord::Access {
                    op,
                    state,
                    key,
                    value_len,
                } => {
                    let prev = &mut prev[usize::from(*state)];
                    let shared = shared_prefix(prev, key);
                    payload.push(*op as u8);
                    varint(&mut payload, u64::from(*state));
                    varint(&mut payload, shared as u64);
                    varint(&mut payload, (key.len() - shared) as u64);
                    payload.extend_from_slice(&key[shared..]);
                    varint(&mut payload, u64::from(*value_len));
                    prev.clone_from(key);
                    counts.access(*op);
                }
                TraceRecord::Event { input } => {
                    payload.extend([TAG_EVENT, *input]);
                    counts.event();
                }
                TraceRecord::Watermark { timestamp } => {
                    payload.push(TAG_WATERMARK);
                    varint(&mut payload, zigzag(*timestamp));
                    counts.watermark();
                }
            }
        }
        let mut footer = TraceFooter::new(false);
        counts.fill(&mut footer);
        let mut out = BINARY_MAGIC.to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        let mut written = 0;
        let header = serde_json::to_vec(&header).expect("header JSON");
        let footer = serde_json::to_vec(&footer).expect("footer JSON");
        write_block(&mut out, KIND_HEADER, &header, 0, &mut written).expect("written");
        let n = records.len() as u32;
        write_block(&mut out, KIND_DATA, &payload, n, &mut written).expect("written");
        write_block(&mut out, KIND_END, &footer, 0, &mut written).expect("written");
        out
    }

    /// A version 5 trace of one state `a` whose one data block holds `payload`, `records`
    /// records of which `puts` puts.
    fn trace_of_payload(payload: &[u8], records: u32, puts: u64) -> Vec<u8> {
        let header = TraceHeader::new("test", vec!["a".into()], None, "{}".into());
        let mut footer = TraceFooter::new(false);
        footer.requests = puts;
        let mut out = BINARY_MAGIC.to_vec();
        out.extend_from_slice(&BINARY_VERSION.to_le_bytes());
        let mut written = 0;
        let header = serde_json::to_vec(&header).expect("header JSON");
        let footer = serde_json::to_vec(&footer).expect("footer JSON");
        write_block(&mut out, KIND_HEADER, &header, 0, &mut written).expect("written");
        write_block(&mut out, KIND_DATA, payload, records, &mut written).expect("written");
        write_block(&mut out, KIND_END, &footer, 0, &mut written).expect("written");
        out
    }

    #[test]
    fn a_value_longer_than_any_store_is_handed_is_refused_at_its_byte_offset() {
        // a get, then a put of state 0, key "k" and the value length given (a replay grew
        // its value pool to 4 GiB one byte at a time for u32::MAX, then aborted)
        let trace = |value_len: u64| {
            let mut payload = vec![0x40, 0x00, 0x00, 0x01, b'k', 0x01, 0x00, 0x00, 0x01, b'k'];
            let mut b = [0u8; 10];
            let n = varint_into(&mut b, value_len);
            payload.extend_from_slice(&b[..n]);
            trace_of_payload(&payload, 2, 2)
        };
        let put = |value_len| access(Op::Put, 0, b"k", value_len);
        let get = access(Op::Get, 0, b"k", 0);
        let read = read_records(&trace(u64::from(MAX_VALUE_LEN))).expect("read");
        assert_eq!(read, [get, put(MAX_VALUE_LEN)]);
        for too_long in [MAX_VALUE_LEN + 1, u32::MAX] {
            let bytes = trace(u64::from(too_long));
            // the put is the second record of the first data block
            let header_len = u32::from_le_bytes(bytes[11..15].try_into().unwrap()) as usize;
            let at = 10 + BLOCK_HEADER_LEN + header_len + BLOCK_HEADER_LEN + 5;
            let err = read_records(&bytes).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "corrupted trace at byte {at}: a put of a {too_long}-byte value, longer than \
                     the 67108864 bytes (64 MiB) a value may have"
                )
            );
        }
        // a batch commit's value length counts entries, never handed over: any is taken
        let commit = [0x08, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f];
        assert_eq!(
            read_records(&trace_of_payload(&commit, 1, 1)).expect("read"),
            [access(Op::BatchCommit, 0, b"", u32::MAX)]
        );
        // writers refuse to write such a value, and say why when they finish
        let header = TraceHeader::new("test", vec!["a".into()], None, "{}".into());
        let mut w = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
        w.access_all(0, b"k", &[(Op::Get, 0), (Op::Merge, u32::MAX)]);
        let err = w.finish(TraceFooter::new(false)).unwrap_err().to_string();
        assert!(err.contains("a merge of a 4294967295-byte value"), "{err}");
    }

    fn read_records(bytes: &[u8]) -> Result<Vec<TraceRecord>, TraceError> {
        let mut reader = BinaryTraceReader::new(bytes)?;
        let mut records = Vec::new();
        while let Some(record) = reader.next_record()? {
            records.push(record.to_record());
        }
        Ok(records)
    }

    #[test]
    fn traces_of_versions_1_and_2_are_still_read() {
        let plain = vec![
            TraceRecord::Event { input: 0 },
            access(Op::Get, 0, b"\x00\x01key-a", 0),
            access(Op::Put, 0, b"\x00\x01key-a", 8),
            access(Op::Merge, 0, b"\x00\x01key-b", 300),
            access(Op::Delete, 1, b"", 0),
            access(Op::BatchPut, 1, b"\x7f\xff\x00", MAX_VALUE_LEN),
            access(Op::BatchCommit, 1, b"", u32::MAX),
            TraceRecord::Watermark { timestamp: -5 },
            TraceRecord::Event { input: 200 },
        ];
        for version in [1, 2] {
            let read = read_records(&old_format_trace(version, &plain));
            assert_eq!(read.expect("read"), plain, "version {version}");
        }
        let ranged = vec![access(Op::RangeQuery, 0, b"ab", 1)];
        assert_eq!(
            read_records(&old_format_trace(2, &ranged)).expect("read"),
            ranged
        );
        // a value longer than any store is handed, as the format's 32 bits allow
        let huge = vec![access(Op::Put, 0, b"k", MAX_VALUE_LEN + 1)];
        let err = read_records(&old_format_trace(2, &huge))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("corrupted trace at byte")
                && err.contains("a put of a 67108865-byte value"),
            "{err}"
        );
        let err = read_records(&old_format_trace(1, &ranged))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown record tag 0x0a for a version 1 trace"),
            "{err}"
        );
    }

    /// An access whose key is the previous key of its state edited: a prefix of it kept, new
    /// bytes, a suffix of it kept (lengths cut to fit). Long middles and large numbers take
    /// the writer's long path.
    fn edited_access(
    ) -> impl proptest::strategy::Strategy<Value = (Op, StateId, usize, Vec<u8>, usize, u32)> {
        use proptest::prelude::*;
        (
            0..Op::COUNT as u8,
            prop_oneof![8 => 0u16..3, 1 => 100u16..300],
            0usize..40,
            prop_oneof![
                6 => proptest::collection::vec(0u8..3, 0..12),
                1 => proptest::collection::vec(any::<u8>(), 50..200)
            ],
            0usize..40,
            prop_oneof![4 => Just(0u32), 4 => 0u32..0x80, 1 => any::<u32>()],
        )
            .prop_map(|(op, state, keep, middle, tail, value_len)| {
                // opens rename states: tests/open_and_drop cover them
                let op = Op::from_code(op)
                    .filter(|o| !o.is_state_lifecycle())
                    .unwrap_or(Op::Get);
                (op, state, keep, middle, tail, value_len)
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Keys made by editing the previous key of their state, the way operators' keys
        /// change, come back exactly, across block boundaries too.
        #[test]
        fn keys_edited_from_the_previous_key_round_trip(
            edits in proptest::collection::vec(edited_access(), 0..400),
            markers in proptest::collection::vec((0usize..400, proptest::prelude::any::<u8>()), 0..20),
        ) {
            let header = TraceHeader::new("test", (0..300).map(|i| format!("s{i}")).collect(), None, "{}".into());
            let mut w = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
            let mut prev: std::collections::HashMap<StateId, Vec<u8>> = Default::default();
            let mut records = Vec::new();
            for (i, (op, state, keep, middle, tail, value_len)) in edits.into_iter().enumerate() {
                for &(_, input) in markers.iter().filter(|(at, _)| *at == i) {
                    records.push(TraceRecord::Event { input });
                }
                let before = prev.entry(state).or_default();
                let keep = keep.min(before.len());
                let tail = tail.min(before.len() - keep);
                let key = [&before[..keep], &middle, &before[before.len() - tail..]].concat();
                let value_len = crate::trace::valid_value_len(op, key.len(), value_len);
                before.clone_from(&key);
                records.push(TraceRecord::Access { op, state, key, value_len });
            }
            // enough traffic on one key to fill several blocks
            for _ in 0..(records.len() * 40) {
                records.push(access(Op::Get, 1, b"0123456789", 0));
            }
            for record in &records {
                RecordRef::from(record).feed(&mut w);
            }
            let bytes = w.finish(TraceFooter::new(false)).expect("written");
            proptest::prop_assert_eq!(read_records(&bytes).expect("read"), records);
        }

        /// Any bytes in a version 3 data block decode or give an error, never a panic, and
        /// every key decoded is within the allowed length.
        #[test]
        fn version_3_records_never_panic_the_decoder(
            payload in proptest::collection::vec(
                proptest::prelude::prop_oneof![
                    4 => 0u8..0x0b,
                    4 => proptest::prelude::any::<u8>(),
                    2 => 0u8..8,
                    1 => 0x80u8..0x90
                ],
                0..120,
            ),
            records in 0u32..60,
            prev in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24), 1..6),
        ) {
            let mut r = reader_over(payload, records, prev, 3);
            while r.pos < r.block.len() {
                if r.decode().is_err() {
                    break;
                }
                proptest::prop_assert!(r.prev.iter().all(|k| k.len() <= MAX_KEY_LEN));
            }
        }
    }

    #[test]
    fn requests_on_one_key_are_written_as_one_request_each() {
        let header = TraceHeader::new("test", vec!["a".into(), "b".into()], None, "{}".into());
        let mut grouped = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
        let mut single = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
        // enough groups for several blocks, so that some block ends inside a group
        for i in 0u32..40_000 {
            let key = [
                &[(i % 3) as u8][..],
                &i.to_be_bytes(),
                &[7; 20][..(i % 21) as usize],
            ]
            .concat();
            let state = (i % 2) as StateId;
            let requests = [(Op::Get, 0), (Op::Put, i % 300), (Op::Delete, 0)];
            let requests = &requests[..1 + (i % 3) as usize];
            grouped.access_all(state, &key, requests);
            for &(op, value_len) in requests {
                single.access(Access {
                    op,
                    state,
                    key: &key,
                    value_len,
                });
            }
        }
        let grouped = grouped.finish(TraceFooter::new(false)).expect("written");
        let single = single.finish(TraceFooter::new(false)).expect("written");
        assert!(grouped.len() > 3 * BLOCK_TARGET, "{} bytes", grouped.len());
        assert!(grouped == single, "the grouped writes differ");
    }

    #[test]
    fn data_reaches_the_output_in_writes_ending_on_chunk_boundaries() {
        /// Keeps what it is given and where each write ended.
        #[derive(Debug, Default)]
        struct Recording {
            bytes: Vec<u8>,
            write_ends: Vec<usize>,
        }
        impl Write for Recording {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.bytes.extend_from_slice(b);
                self.write_ends.push(self.bytes.len());
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let header = TraceHeader::new("test", vec!["a".into()], None, "{}".into());
        let mut w = BinaryTraceWriter::new(Recording::default(), &header).expect("header written");
        let header_writes = w.out.write_ends.len();
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut keys = Vec::new();
        for i in 0..400_000u32 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // now and then a key far longer than a block, so some blocks overshoot their target
            let len = if i % 100_000 == 99_999 {
                200_000
            } else {
                (rng % 40) as usize
            };
            let key: Vec<u8> = (0..len).map(|j| (rng >> (j % 8 * 8)) as u8).collect();
            w.access(Access {
                op: Op::Put,
                state: 0,
                key: &key,
                value_len: i,
            });
            keys.push(key);
        }
        let out = w.finish(TraceFooter::new(false)).expect("written");
        // all but the last three: the tail of the data, the end block's header and its footer
        let data_writes = &out.write_ends[header_writes..out.write_ends.len() - 3];
        assert!(data_writes.len() >= 8, "{} data writes", data_writes.len());
        for end in data_writes {
            assert_eq!(end % OUTPUT_CHUNK, 0, "a data write ends at byte {end}");
        }
        let mut reader = BinaryTraceReader::new(out.bytes.as_slice()).expect("header read");
        for (i, key) in keys.iter().enumerate() {
            match reader.next_record().expect("a record") {
                Some(RecordRef::Access(a)) => {
                    assert_eq!(
                        (a.key, a.value_len),
                        (key.as_slice(), i as u32),
                        "record {i}"
                    )
                }
                other => panic!("record {i}: {other:?}"),
            }
        }
        assert!(reader.next_record().expect("the end").is_none());
    }

    #[test]
    fn short_copies_copy_every_length_exactly() {
        let src: Vec<u8> = (1..=SHORT_MIDDLE as u8).collect();
        for n in 0..=SHORT_MIDDLE {
            let mut dst = [0xee; SHORT_RECORD];
            copy_short(&src[..n], &mut dst);
            assert_eq!(&dst[..n], &src[..n], "{n} bytes");
            assert!(
                dst[n..].iter().all(|&b| b == 0xee),
                "{n} bytes: beyond them"
            );
        }
    }

    #[test]
    fn shared_prefix_matches_a_byte_wise_count() {
        let keys: [&[u8]; 8] = [
            b"",
            b"a",
            b"abcdefgh",
            b"abcdefgh1",
            b"abcdefgx12345678",
            b"abcdefgh12345678z",
            b"abcdefgh12345679z",
            b"b",
        ];
        for a in keys {
            for b in keys {
                let bytewise = a.iter().zip(b).take_while(|(x, y)| x == y).count();
                assert_eq!(shared_prefix(a, b), bytewise, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn key_edits_keep_the_head_and_tail_around_the_new_bytes() {
        for (shared, middle, tail, expected) in [
            (2, &b"XY"[..], 3, &b"abXYdef"[..]),
            (2, b"", 3, b"abdef"),
            (0, b"0123456789", 1, b"0123456789f"),
            (6, b"+", 0, b"abcdef+"),
            (0, b"", 0, b""),
            (3, b"", 3, b"abcdef"),
        ] {
            let mut key = b"abcdef".to_vec();
            edit_key(&mut key, shared, middle, tail);
            assert_eq!(key, expected, "{shared} {middle:?} {tail}");
        }
    }

    #[test]
    fn shared_tails_are_the_last_16_or_8_bytes_when_equal() {
        let namespace = b"0123456789abcdef";
        let key = |head: &[u8]| [head, namespace].concat();
        assert_eq!(shared_tail(&key(b"x"), &key(b"yz")), 16);
        assert_eq!(shared_tail(namespace, namespace), 16);
        // the 16 differ, the last 8 do not
        assert_eq!(shared_tail(&key(b"x"), b"zzzzzzzz89abcdef"), 8);
        assert_eq!(shared_tail(b"x89abcdef", &key(b"")), 8);
        // shorter than 8, or different in the last 8: nothing, though bytes match
        assert_eq!(shared_tail(b"bcdef", b"bcdef"), 0);
        assert_eq!(shared_tail(&key(b"x"), &key(b"xX")[..16]), 0);
        assert_eq!(shared_tail(b"", b""), 0);
    }

    #[test]
    fn varints_are_written_as_leb128() {
        for (v, encoded) in VARINTS {
            let mut buf = [0u8; 10];
            let n = varint_into(&mut buf, v);
            assert_eq!(&buf[..n], encoded, "{v}");
        }
    }

    #[test]
    fn varints_round_trip() {
        let mut buf = Vec::new();
        let values = VARINTS.map(|(v, _)| v);
        for v in values {
            let mut encoded = [0u8; 10];
            let n = varint_into(&mut encoded, v);
            buf.extend_from_slice(&encoded[..n]);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get_varint(&buf, &mut pos), Ok(v));
        }
        assert_eq!(pos, buf.len());
        // Overlong and overflowing encodings are rejected.
        assert!(get_varint(&[0xff; 11], &mut 0).is_err());
        assert!(get_varint(
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            &mut 0
        )
        .is_err());
        assert!(get_varint(&[0x80], &mut 0).is_err());
    }

    #[test]
    fn zigzag_round_trips() {
        for v in [0, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }

    /// A version 3 trace whose header names `names` and whose one data block holds `payload`
    /// as `records` records (no end block: the tests stop at an error first).
    fn raw_trace(names: &[&str], payload: &[u8], records: u32) -> Vec<u8> {
        let names = names.iter().map(|n| n.to_string()).collect();
        let header = TraceHeader::new("test", names, None, "{}".into());
        let json = serde_json::to_vec(&header).expect("header encodes");
        let mut out = BINARY_MAGIC.to_vec();
        out.extend_from_slice(&BINARY_VERSION.to_le_bytes());
        let mut written = 10;
        write_block(&mut out, KIND_HEADER, &json, 0, &mut written).expect("in memory");
        write_block(&mut out, KIND_DATA, payload, records, &mut written).expect("in memory");
        out
    }

    #[test]
    fn a_record_of_a_state_the_header_does_not_name_is_refused_with_its_offset() {
        // a get of state 2 (key "k", no value) where the header names states 0 and 1
        let get = Op::Get as u8;
        let bytes = raw_trace(&["a", "b"], &[get, 2, 0, 1, b'k', 0], 1);
        let err = read_records(&bytes).expect_err("state 2 is not in the header");
        let TraceError::Corrupt { offset, what } = &err else {
            panic!("expected a corrupt trace, got {err}");
        };
        assert!(
            what.contains("state id 2") && what.contains("names only 2"),
            "{what}"
        );
        assert_eq!(*offset, bytes.len() as u64 - 6, "the record's own byte");
        // the same record is fine once the header names a third state
        let bytes = raw_trace(&["a", "b", "c"], &[get, 2, 0, 1, b'k', 0], 1);
        let mut reader = BinaryTraceReader::new(bytes.as_slice()).expect("header valid");
        let record = reader
            .next_record()
            .expect("record valid")
            .expect("one record");
        assert_eq!(record.to_record(), access(Op::Get, 2, b"k", 0));
    }

    #[test]
    fn a_header_with_duplicate_or_tabbed_state_names_is_refused_by_reader_and_writer() {
        for names in [&["s", "s"][..], &["a\tb"][..]] {
            let Err(err) = BinaryTraceReader::new(raw_trace(names, &[], 0).as_slice()) else {
                panic!("{names:?} accepted");
            };
            assert!(err.to_string().contains("state name"), "{err}");
            let owned = names.iter().map(|n| n.to_string()).collect();
            let header = TraceHeader::new("test", owned, None, "{}".into());
            assert!(BinaryTraceWriter::new(Vec::new(), &header).is_err());
        }
    }

    /// A trace whose one record opens state 1 as `name`: written under a name of the same
    /// length that the writer takes, then edited, its block's checksum made right again (what
    /// a broken writer could leave).
    fn trace_opening_as(name: &[u8]) -> Vec<u8> {
        let placeholder = vec![b'Q'; name.len()];
        let header = TraceHeader::new("test", vec!["a".into(), "b".into()], None, "{}".into());
        let mut w = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
        w.access_all(1, &placeholder, &[(Op::Open, 0)]);
        let mut bytes = w.finish(TraceFooter::new(false)).expect("written");
        // the data block follows the magic, the version and the header block
        let len_at = |at: usize| u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap());
        let data = 10 + BLOCK_HEADER_LEN + len_at(10) as usize;
        let payload = data + BLOCK_HEADER_LEN..data + BLOCK_HEADER_LEN + len_at(data) as usize;
        let at = payload.start
            + bytes[payload.clone()]
                .windows(name.len())
                .position(|w| w == placeholder)
                .expect("the name in the block");
        bytes[at..at + name.len()].copy_from_slice(name);
        let crc = block_crc(&bytes[data..data + 9], &bytes[payload]);
        bytes[data + 9..data + 13].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    #[test]
    fn an_open_naming_a_state_as_no_reader_takes_is_refused_with_its_offset() {
        for (name, says) in [
            (&b"a"[..], "the name state 0 already has"),
            (&[0xff, 0xfe][..], "not UTF-8"),
            (&b"x\ty"[..], "tab or line break"),
        ] {
            let err = read_records(&trace_opening_as(name)).expect_err("refused");
            assert!(
                err.to_string().contains("corrupted trace at byte")
                    && err.to_string().contains(says),
                "{err}"
            );
        }
        assert!(read_records(&trace_opening_as(b"c")).is_ok());
    }

    #[test]
    fn the_writer_refuses_an_open_naming_a_state_as_no_reader_would_read_it() {
        let long = "x".repeat(crate::trace::MAX_STATE_NAME_LEN + 1);
        for (name, said) in [
            ("a\tb", "tab or line break"),
            ("a\nb", "tab or line break"),
            (long.as_str(), "longer than"),
            ("b", "already has"),
        ] {
            let header = TraceHeader::new("test", vec!["a".into(), "b".into()], None, "{}".into());
            let mut w = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
            RecordRef::from(&access(Op::Put, 0, b"k", 3)).feed(&mut w);
            w.access_all(0, name.as_bytes(), &[(Op::Open, 0)]);
            RecordRef::from(&access(Op::Put, 0, b"k", 3)).feed(&mut w);
            let err = w
                .finish(TraceFooter::new(false))
                .expect_err("an unreadable open refused");
            assert!(err.to_string().contains(said), "{name:?}: {err}");
        }
        // a good name is written, and read back under it
        let header = TraceHeader::new("test", vec!["a".into(), "b".into()], None, "{}".into());
        let mut w = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
        w.access_all(0, b"a2", &[(Op::Open, 0)]);
        let bytes = w
            .finish(TraceFooter::new(false))
            .expect("a good open written");
        let mut r = BinaryTraceReader::new(bytes.as_slice()).unwrap();
        while r.next_record().unwrap().is_some() {}
        assert_eq!(r.state_names(), ["a2", "b"]);
    }

    #[test]
    fn the_writer_refuses_an_access_to_a_state_the_header_does_not_name() {
        let header = TraceHeader::new("test", vec!["a".into(), "b".into()], None, "{}".into());
        let mut w = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
        RecordRef::from(&access(Op::Put, 5, b"k", 3)).feed(&mut w);
        let err = w
            .finish(TraceFooter::new(false))
            .expect_err("state 5 unnamed");
        assert!(err.to_string().contains("names only 2 states"), "{err}");
    }

    #[test]
    fn reading_many_states_with_long_keys_keeps_memory_bounded_by_a_block() {
        let states = 200usize;
        let names = (0..states).map(|i| format!("s{i}")).collect();
        let header = TraceHeader::new("test", names, None, "{}".into());
        let mut w = BinaryTraceWriter::new(Vec::new(), &header).expect("header written");
        for s in 0..states {
            let key = vec![s as u8; 64 << 10];
            RecordRef::from(&access(Op::Get, s as StateId, &key, 0)).feed(&mut w);
        }
        let bytes = w.finish(TraceFooter::new(false)).expect("written");
        let mut reader = BinaryTraceReader::new(bytes.as_slice()).expect("header valid");
        let mut most = 0;
        while reader.next_record().expect("valid").is_some() {
            let held: usize = reader.prev.iter().map(Vec::capacity).sum();
            most = most.max(held);
        }
        // 200 keys of 64 KiB are 12.5 MiB; a reader holds one block's keys and a little per state
        let bound = 2 * MAX_BLOCK_PAYLOAD + states * KEPT_KEY_CAPACITY;
        assert!(
            most <= bound,
            "{most} bytes of keys held, more than {bound}"
        );
    }
}
