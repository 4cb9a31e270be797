//! FASTER, Microsoft Research's hash store over a hybrid log (the paper's fastest store for
//! incremental operators), through the `faster-rs` crate, which builds FASTER's C++ core and
//! exposes read, upsert, read-modify-write (rmw) and delete.
//!
//! One FASTER instance holds every state; a key is the state's number (4 bytes, big-endian)
//! before the trace's key. Sizes follow [`StoreSettings`]: the hash index has
//! `faster_index_size / 64` buckets (64 MB by default, as in the paper) and the in-memory part
//! of the log is `faster_log_size` (256 MB by default), flushed to files under the store
//! directory as it becomes read-only. FASTER needs at least 4 read-only pages of 32 MB in
//! memory, so the mutable region is the log less those 4 pages (128 MB of the default 256 MB).
//! FASTER writes its log with `O_DIRECT`, which tmpfs does not support: the directory must be
//! on a disk filesystem.
//!
//! Records beyond the in-memory part of the log are read back from disk. faster-rs 0.11 (the
//! last release) could not do that as published: its C glue (`faster-c.cc` in libfaster-sys)
//! keeps a request's key inline behind its `Key` object, and when FASTER copied a request that
//! must wait for disk (`PENDING`), the copy's key overwrote the request's other fields, so a
//! read from disk answered "not found" and a merge was lost. `scripts/setup.sh` fixes that in
//! the copy of libfaster-sys it builds (and a merge over a delete on disk, which aborted); see
//! the comments there. Keys are limited to [`MAX_KEY`] bytes: a waiting request is copied into
//! FASTER's small-block allocator.
//!
//! - get, put, delete: FASTER's read, upsert and delete, each finished when it returns, as a
//!   stream processor needs it: a request that answers `PENDING` (it waits for disk) is
//!   completed before the next one ([`FasterStore::disk_requests`] counts them);
//! - merge: an rmw whose update appends `,` and the value (FASTER's rmw creates the value from
//!   the operand when the key is absent), one request: native;
//! - seek/next: FASTER is a hash store without key order or a range scan, so the store keeps
//!   an ordered index of each state's keys beside it (updated by every write, as `redis` keeps
//!   its sorted sets) and iteration walks that index, reading each value from FASTER: both are
//!   reported as emulated;
//! - range query, range delete: a walk over that index reading (or deleting) each key in
//!   FASTER, one request per key: emulated;
//! - write batches: FASTER has no batches or transactions; the batch is kept here and applied
//!   at commit one write after another, not atomically: reported as emulated;
//! - drop: FASTER has no keyspaces to drop, so every key of the state's index is deleted, one
//!   request per key: emulated.
//!
//! `faster-rs` serializes keys and values with `bincode` and hands read results over a channel;
//! that cost is part of what this store measures. FASTER's sessions are per thread, so a
//! [`FasterStore`] stays on the thread that opened it (it is not `Send`).
//!
//! Operator instances sharing one FASTER instance ([`SharedFaster`]) each attach a session of
//! their own on their own thread, and their states get their own numbers: they share one hash
//! index and one log, as FASTER's own multi-threaded benchmarks do.

use super::batch::PendingBatch;
use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use faster_rs::{status, FasterKv, FasterKvBuilder, FasterRmw};
use gadget::access::{Op, StateId};
use serde::{Deserialize, Serialize};

use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};

/// The FASTER this build compiled in: its C++ core as faster-rs packs it (with the fixes
/// `scripts/setup.sh` applies).
pub(crate) fn library() -> String {
    format!(
        "FASTER's C++ core, compiled in through faster-rs {} (patched by scripts/setup.sh)",
        env!("GADGET_FASTER_RS_VERSION")
    )
}

/// FASTER reads the sizes of its in-memory log and hash index.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "faster",
    about: "FASTER's hybrid log",
    reads: &["faster_log_mb", "faster_index_mb"],
    applied: |s, applied| {
        super::spec::set(applied, "log_bytes", s.faster_log_size);
        super::spec::set(applied, "index_bytes", s.faster_index_size);
    },
    library: |_| library(),
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        let counts = super::spec::state_counts(instances);
        Ok(Arc::new(SharedFaster::open(dir, &counts, settings)?))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// FASTER's log page: 32 MB.
const PAGE: usize = 32 << 20;
/// Read-only pages FASTER keeps in memory (`kNumHeadPages`).
const HEAD_PAGES: usize = 4;
/// A hash bucket: one cache line.
const BUCKET: usize = 64;
/// Requests between two epoch refreshes, as in FASTER's own benchmark.
const REFRESH_EVERY: u64 = 64;
/// Requests between two checks for finished I/O (log flushes), as in FASTER's own benchmark.
const COMPLETE_EVERY: u64 = 1600;
/// The longest key (state number included) this store takes: a request that waits for disk is
/// copied with its key into one of FASTER's 8,000-byte allocation segments.
pub const MAX_KEY: usize = 4096;

/// A merge operand: FASTER's rmw applies it to the stored value by appending `,` and it, and
/// stores it as it is when the key is absent. Serialized like the `Vec<u8>` values.
#[derive(Serialize, Deserialize)]
struct Append(Vec<u8>);

impl FasterRmw for Append {
    fn rmw(&self, modification: Self) -> Self {
        let mut v = Vec::with_capacity(self.0.len() + 1 + modification.0.len());
        v.extend_from_slice(&self.0);
        v.push(MERGE_DELIMITER);
        v.extend_from_slice(&modification.0);
        Append(v)
    }
}

/// One FASTER instance with every state in it, and an ordered key index per state.
pub struct FasterStore {
    kv: Arc<FasterKv>,
    /// The number of this handle's state 0 in FASTER's keys; state `s` is `first_state + s`.
    first_state: u32,
    /// Per state, its keys in order (FASTER has none).
    index: Vec<BTreeSet<Vec<u8>>>,
    /// Per state, the key the open iterator stands on.
    cursors: Vec<Option<Vec<u8>>>,
    batch: PendingBatch,
    /// The session's monotonic serial number.
    serial: u64,
    /// The FASTER key being built: state and key.
    key: Vec<u8>,
    /// The value being written.
    value: Vec<u8>,
    path: PathBuf,
    /// Requests that waited for disk.
    disk_requests: u64,
    /// FASTER's session belongs to this thread.
    _thread: PhantomData<*const ()>,
}

fn request_error(op: Op, message: String) -> StoreError {
    StoreError::Request {
        store: "faster",
        op,
        message,
    }
}

/// FASTER's status codes by name.
fn status_name(s: u8) -> &'static str {
    match s {
        status::OK => "ok",
        status::PENDING => "pending",
        status::NOT_FOUND => "not found",
        status::OUT_OF_MEMORY => "out of memory",
        status::IO_ERROR => "I/O error",
        status::CORRUPTION => "corruption",
        status::ABORTED => "aborted",
        _ => "unknown status",
    }
}

/// Checks the sizes before FASTER sees them: its C++ core throws (and so aborts the process)
/// on sizes it cannot use. The hash buckets and the fraction of the log that is mutable.
fn geometry(settings: &StoreSettings) -> Result<(u64, f64), String> {
    let (log, index) = (settings.faster_log_size, settings.faster_index_size);
    if log % PAGE != 0 || log / PAGE < HEAD_PAGES + 2 {
        return Err(format!(
            "FASTER's log must be a multiple of 32 MB and at least {} MB (4 read-only pages and \
             2 mutable ones), not {log} bytes (--faster-log-mb)",
            ((HEAD_PAGES + 2) * PAGE) >> 20
        ));
    }
    let buckets = index / BUCKET;
    if index % BUCKET != 0 || !buckets.is_power_of_two() || buckets >= i32::MAX as usize {
        return Err(format!(
            "FASTER's index must be a power of two of 64-byte buckets, below 128 GiB, not {index} \
             bytes (--faster-index-mb)"
        ));
    }
    let pages = log / PAGE;
    let mutable = pages - HEAD_PAGES;
    // FASTER truncates fraction * pages: aim between two page counts
    Ok((buckets as u64, (mutable as f64 + 0.5) / pages as f64))
}

/// FASTER opens its log files with `O_DIRECT`; say so clearly where that fails (tmpfs)
/// instead of letting the C++ core abort.
fn check_direct_io(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join(".faster-direct-io-probe");
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe);
    let _ = std::fs::remove_file(&probe);
    opened.map(drop).map_err(|e| {
        format!("FASTER writes its log with O_DIRECT, which fails in this directory ({e}); use a directory on a disk filesystem, not tmpfs")
    })
}

/// One FASTER instance that several operator instances share (the paper's §6.4), each
/// through its own [`FasterStore`] with a session of its own and its own state numbers.
pub struct SharedFaster {
    kv: Arc<FasterKv>,
    /// Per instance: the number of its first state and its number of states.
    states: Vec<(u32, usize)>,
    path: PathBuf,
}

impl SharedFaster {
    /// Opens a FASTER instance with its log files under `dir` for several operator instances
    /// (`instances[i]` is instance `i`'s number of states).
    pub fn open(
        dir: &Path,
        instances: &[usize],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        let open_error = |message: String| StoreError::Open {
            store: "faster",
            path: dir.to_path_buf(),
            message,
        };
        let (buckets, mutable_fraction) = geometry(settings).map_err(open_error)?;
        std::fs::create_dir_all(dir).map_err(|e| open_error(e.to_string()))?;
        check_direct_io(dir).map_err(open_error)?;
        let dir_str = dir
            .to_str()
            .ok_or_else(|| open_error("FASTER takes UTF-8 paths only".to_string()))?;
        let mut states = Vec::with_capacity(instances.len());
        let mut next = 0u32;
        for &n in instances {
            states.push((next, n));
            next = u32::try_from(n)
                .ok()
                .and_then(|n| next.checked_add(n))
                .ok_or_else(|| open_error("more states than 2^32".to_string()))?;
        }
        let kv = FasterKvBuilder::new(buckets, settings.faster_log_size as u64)
            .with_disk(dir_str)
            .with_log_mutable_fraction(mutable_fraction)
            .build()
            .map_err(|e| open_error(format!("{e:?}")))?;
        Ok(SharedFaster {
            kv: Arc::new(kv),
            states,
            path: dir.to_path_buf(),
        })
    }

    /// The store of instance `instance`, with a FASTER session on the calling thread (the
    /// store stays on that thread).
    pub fn attach(&self, instance: usize) -> Result<FasterStore, StoreError> {
        let (first_state, states) =
            super::instance_part("faster", &self.path, &self.states, instance)?;
        self.kv.start_session();
        Ok(FasterStore {
            kv: Arc::clone(&self.kv),
            first_state,
            index: vec![BTreeSet::new(); states],
            cursors: vec![None; states],
            batch: PendingBatch::default(),
            serial: 0,
            key: Vec::new(),
            value: Vec::new(),
            path: self.path.clone(),
            disk_requests: 0,
            _thread: PhantomData,
        })
    }
}

impl super::SharedStore for SharedFaster {
    fn attach(&self, instance: usize) -> Result<Box<dyn Store>, StoreError> {
        Ok(Box::new(SharedFaster::attach(self, instance)?))
    }
}

impl FasterStore {
    /// Opens a FASTER instance with its log files under `dir` for `states` keyspaces.
    pub fn open(dir: &Path, states: usize, settings: &StoreSettings) -> Result<Self, StoreError> {
        SharedFaster::open(dir, &[states], settings)?.attach(0)
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Requests so far that had to wait for disk (a record no longer in memory).
    pub fn disk_requests(&self) -> u64 {
        self.disk_requests
    }

    /// Checks the state number.
    fn check(&self, state: StateId) -> Result<(), StoreError> {
        let states = self.index.len();
        if (state as usize) >= states {
            return Err(StoreError::UnknownState { state, states });
        }
        Ok(())
    }

    /// The next serial number; refreshes the session's epoch now and then, as FASTER asks.
    fn tick(&mut self) -> u64 {
        self.serial += 1;
        if self.serial % REFRESH_EVERY == 0 {
            self.kv.refresh();
        }
        if self.serial % COMPLETE_EVERY == 0 {
            self.kv.complete_pending(false);
        }
        self.serial
    }

    /// Builds the FASTER key of `key` in `state` in `self.key`.
    fn full_key(&mut self, op: Op, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        if key.len() + 4 > MAX_KEY {
            return Err(request_error(
                op,
                format!(
                    "a key of {} bytes; this store takes keys up to {} bytes",
                    key.len(),
                    MAX_KEY - 4
                ),
            ));
        }
        self.key.clear();
        self.key
            .extend_from_slice(&(self.first_state + u32::from(state)).to_be_bytes());
        self.key.extend_from_slice(key);
        Ok(())
    }

    /// Turns FASTER's answer into a result; a request that waits for disk (`PENDING`) is
    /// completed first.
    fn settle(&mut self, op: Op, s: u8, not_found_ok: bool) -> Result<(), StoreError> {
        match s {
            status::OK => Ok(()),
            status::NOT_FOUND if not_found_ok => Ok(()),
            status::PENDING => {
                self.kv.complete_pending(true);
                self.disk_requests += 1;
                Ok(())
            }
            s => Err(request_error(
                op,
                format!("FASTER answered {}", status_name(s)),
            )),
        }
    }

    /// Reads the value length of `key` in `state`.
    fn read(&mut self, op: Op, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.full_key(op, state, key)?;
        let serial = self.tick();
        let (s, found) = self.kv.read::<Vec<u8>, Vec<u8>>(&self.key, serial);
        match s {
            status::NOT_FOUND => Ok(None),
            s => {
                self.settle(op, s, false)?;
                // the callback sent the value, or dropped the sender: not found; neither (a
                // read from disk that failed) is an error
                match found.try_recv() {
                    Ok(v) => Ok(Some(v.len())),
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => Ok(None),
                    Err(std::sync::mpsc::TryRecvError::Empty) => Err(request_error(
                        op,
                        "FASTER's read from disk did not complete (an I/O error)".to_string(),
                    )),
                }
            }
        }
    }

    /// Upserts `value`, or deletes for `None`, and keeps the key index in step.
    fn write(
        &mut self,
        op: Op,
        state: StateId,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        self.full_key(op, state, key)?;
        let serial = self.tick();
        let keys = &mut self.index[state as usize];
        let s = match value {
            Some(v) => {
                if !keys.contains(key) {
                    keys.insert(key.to_vec());
                }
                self.value.clear();
                self.value.extend_from_slice(v);
                self.kv.upsert(&self.key, &self.value, serial)
            }
            None => {
                keys.remove(key);
                self.kv.delete(&self.key, serial)
            }
        };
        self.settle(op, s, value.is_none())
    }

    /// Moves the cursor of `state` to its first indexed key in `from`; the value length there.
    fn land(
        &mut self,
        op: Op,
        state: StateId,
        from: Bound<&[u8]>,
    ) -> Result<Option<usize>, StoreError> {
        let s = state as usize;
        let Some(key) = self.index[s]
            .range::<[u8], _>((from, Bound::Unbounded))
            .next()
            .cloned()
        else {
            self.cursors[s] = None;
            return Ok(None);
        };
        let len = self.read(op, state, &key)?;
        if len.is_none() {
            return Err(request_error(
                op,
                "a key in the index is missing from FASTER".to_string(),
            ));
        }
        self.cursors[s] = Some(key);
        Ok(len)
    }
}

impl FasterStore {
    /// Walks the indexed keys of `state` in `[start, end)`, reading each from FASTER, or
    /// deleting it with `delete`; how many it passed.
    fn walk_range(
        &mut self,
        op: Op,
        state: StateId,
        start: &[u8],
        end: &[u8],
        delete: bool,
    ) -> Result<usize, StoreError> {
        self.check(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let s = state as usize;
        let mut entries = 0;
        let mut at: Option<Vec<u8>> = None;
        loop {
            let from = at
                .as_deref()
                .map_or(Bound::Included(start), Bound::Excluded);
            let Some(key) = self.index[s]
                .range::<[u8], _>((from, Bound::Excluded(end)))
                .next()
                .cloned()
            else {
                return Ok(entries);
            };
            if delete {
                self.write(op, state, &key, None)?;
            } else if self.read(op, state, &key)?.is_none() {
                return Err(request_error(
                    op,
                    "a key in the index is missing from FASTER".to_string(),
                ));
            }
            entries += 1;
            at = Some(key);
        }
    }
}

impl Store for FasterStore {
    fn name(&self) -> &'static str {
        "faster"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.read(Op::Get, state, key)
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.write(Op::Put, state, key, Some(value))
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.full_key(Op::Merge, state, key)?;
        let serial = self.tick();
        let keys = &mut self.index[state as usize];
        if !keys.contains(key) {
            keys.insert(key.to_vec());
        }
        let s = self.kv.rmw(&self.key, &Append(value.to_vec()), serial);
        self.settle(Op::Merge, s, false)
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.write(Op::Delete, state, key, None)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        self.land(Op::Seek, state, Bound::Included(key))
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.check(state)?;
        match self.cursors[state as usize].take() {
            None => Ok(None),
            Some(at) => self.land(Op::Next, state, Bound::Excluded(&at)),
        }
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.batch.put(state, key, value);
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        self.check(state)?;
        self.batch.delete(state, key);
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        PendingBatch::commit_into(
            self,
            |s| &mut s.batch,
            |s, w| s.write(Op::BatchCommit, w.state, w.key, w.value),
        )
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        self.walk_range(Op::RangeQuery, state, start, end, false)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.walk_range(Op::RangeDelete, state, start, end, true)
            .map(|_| ())
    }

    /// Deletes every key of the state's index from FASTER, one request per key: FASTER has
    /// no keyspaces to drop and cannot list keys, so the index is what knows them.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.check(state)?;
        let s = state as usize;
        self.cursors[s] = None;
        // a failed delete leaves the keys not deleted yet in the index
        while let Some(key) = self.index[s].pop_first() {
            self.write(Op::Drop, state, &key, None)?;
        }
        Ok(())
    }

    fn emulated(&self) -> &'static [Op] {
        &[
            Op::Seek,
            Op::Next,
            Op::BatchCommit,
            Op::RangeDelete,
            Op::RangeQuery,
            Op::Drop,
            Op::Checkpoint,
        ]
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.kv.complete_pending(true);
        Ok(())
    }
}

impl Drop for FasterStore {
    fn drop(&mut self) {
        self.kv.complete_pending(true);
        self.kv.stop_session();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest sizes FASTER takes: a 192 MB log (not allocated until written) and a
    /// 64 KB index.
    fn small() -> StoreSettings {
        StoreSettings {
            faster_log_size: 192 << 20,
            faster_index_size: 64 << 10,
            ..StoreSettings::default()
        }
    }

    #[test]
    fn merge_appends_with_flinks_delimiter_and_states_are_separate() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FasterStore::open(dir.path(), 2, &small()).unwrap();
        s.merge(0, b"k", b"abc").unwrap();
        s.merge(0, b"k", b"de").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), Some(6));
        assert_eq!(s.get(1, b"k").unwrap(), None);
        s.put(0, b"k", b"z").unwrap();
        s.merge(0, b"k", b"").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), Some(2));
        s.delete(0, b"k").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), None);
        s.merge(0, b"k", b"xy").unwrap();
        assert_eq!(s.get(0, b"k").unwrap(), Some(2));
        s.delete(1, b"never written").unwrap();
        s.put(0, b"", b"").unwrap();
        assert_eq!(s.get(0, b"").unwrap(), Some(0));
        assert!(matches!(
            s.get(2, b"k"),
            Err(StoreError::UnknownState {
                state: 2,
                states: 2
            })
        ));
        s.flush().unwrap();
    }

    #[test]
    fn seek_and_next_walk_the_key_index_and_batches_apply_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FasterStore::open(dir.path(), 2, &small()).unwrap();
        s.batch_put(1, b"b", b"22").unwrap();
        s.batch_put(1, b"a", b"1").unwrap();
        s.batch_put(1, b"d", b"4444").unwrap();
        assert_eq!(s.seek(1, b"").unwrap(), None);
        s.batch_commit().unwrap();
        assert_eq!(s.seek(1, b"b").unwrap(), Some(2));
        s.put(1, b"c", b"333").unwrap();
        assert_eq!(s.next(1).unwrap(), Some(3));
        assert_eq!(s.next(1).unwrap(), Some(4));
        assert_eq!(s.next(1).unwrap(), None);
        assert_eq!(s.next(1).unwrap(), None);
        s.batch_delete(1, b"a").unwrap();
        s.batch_commit().unwrap();
        assert_eq!(s.seek(1, b"").unwrap(), Some(2));
        assert_eq!(s.seek(0, b"").unwrap(), None);
        assert!(s
            .emulated()
            .starts_with(&[Op::Seek, Op::Next, Op::BatchCommit]));
    }

    #[test]
    fn range_ops_walk_the_key_index() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FasterStore::open(dir.path(), 2, &small()).unwrap();
        super::super::contract::range_ops_cover_start_up_to_end(&mut s);
        assert!(s.emulated().contains(&Op::RangeQuery));
    }

    #[test]
    fn a_drop_deletes_every_indexed_key_of_its_state_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FasterStore::open(dir.path(), 2, &small()).unwrap();
        super::super::contract::a_drop_empties_its_state_and_nothing_else(&mut s);
        super::super::contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(&mut s);
        assert!(s.emulated().contains(&Op::Drop));
    }

    #[test]
    fn records_evicted_to_disk_are_read_and_merged_right() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FasterStore::open(dir.path(), 2, &small()).unwrap();
        // longer than the 16 bytes the copy of a waiting request used to have room for, and a
        // value length per key, so that a record read under a wrong key shows
        let key = |i: usize| format!("a-key-longer-than-sixteen-bytes-{i:04}").into_bytes();
        let len = |i: usize| (1 << 20) + i;
        let filler = vec![b'f'; 1 << 20];
        for i in 0..40 {
            s.put(0, &key(i), &vec![b'v'; len(i)]).unwrap();
        }
        // 300 MB more through the 192 MB log: the first records go to disk, then the delete
        for i in 0..150u32 {
            s.put(1, &i.to_be_bytes(), &filler).unwrap();
        }
        s.delete(0, &key(1)).unwrap();
        for i in 150..300u32 {
            s.put(1, &i.to_be_bytes(), &filler).unwrap();
        }
        let before = s.disk_requests();
        for i in [0, 2, 17, 39] {
            assert_eq!(s.get(0, &key(i)).unwrap(), Some(len(i)), "key {i}");
        }
        assert!(s.disk_requests() >= before + 4, "the reads waited for disk");
        assert_eq!(s.get(0, &key(1)).unwrap(), None);
        s.merge(0, &key(3), b"x").unwrap();
        assert_eq!(s.get(0, &key(3)).unwrap(), Some(len(3) + 2));
        // a merge whose latest record on disk is a delete starts a new value
        s.merge(0, &key(1), b"xy").unwrap();
        assert_eq!(s.get(0, &key(1)).unwrap(), Some(2));
        assert_eq!(s.seek(0, &key(38)).unwrap(), Some(len(38)));
        assert_eq!(s.next(0).unwrap(), Some(len(39)));
        assert_eq!(s.next(0).unwrap(), None);
        assert_eq!(s.get(1, &0u32.to_be_bytes()).unwrap(), Some(1 << 20));
        s.flush().unwrap();
        let long = vec![b'k'; MAX_KEY];
        let err = s.put(0, &long, b"v").unwrap_err();
        assert!(err.to_string().contains("keys up to"), "{err}");
    }

    #[test]
    fn sizes_faster_cannot_use_are_open_errors() {
        let dir = tempfile::tempdir().unwrap();
        for (log, index) in [
            (100 << 20, 64 << 20),
            (160 << 20, 64 << 20),
            (256 << 20, 3000),
        ] {
            let settings = StoreSettings {
                faster_log_size: log,
                faster_index_size: index,
                ..StoreSettings::default()
            };
            let err = FasterStore::open(dir.path(), 1, &settings).err().unwrap();
            assert!(err.to_string().contains("--faster-"), "{err}");
        }
    }
}
