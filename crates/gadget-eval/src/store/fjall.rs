//! fjall, an LSM tree in Rust: one keyspace under the store directory, one partition per state.
//!
//! fjall always writes a journal (its write-ahead log; it cannot be turned off as Flink turns
//! RocksDB's off). Here the journal stays in a user-space buffer until it fills
//! (`manual_journal_persist`) and is never fsynced (no `fsync_ms`), the nearest fjall gets to
//! Flink's setup. Sizes follow [`StoreSettings`]: each partition's memtable is a RocksDB write
//! buffer, all memtables together may take every state's write buffers, and the block cache is
//! RocksDB's.
//!
//! Point writes go straight to the tree, as in RocksDB; a merge is a get, an append and a put
//! (fjall has no merge operator). A write batch is a fjall `Batch`, applied atomically on
//! commit. Seek opens a range iterator (a snapshot), which `next` steps. A range query is a
//! bounded range iterator; fjall has no range delete, so one is emulated by a batch removing
//! every key of the range, and a dropped state by a batch removing every key of its partition
//! (see [`FjallStore`]'s `drop_state` for why the partition is not deleted).

use std::ops::Bound;
use std::path::{Path, PathBuf};

use fjall::{
    Batch, Config, Keyspace, KvPair, PartitionCreateOptions, PartitionHandle, PersistMode,
};
use gadget::access::{Op, StateId};

use super::cursor::Cursors;
use super::{empty_range, Store, StoreError, StoreSettings, MERGE_DELIMITER};

type Range = Box<dyn DoubleEndedIterator<Item = fjall::Result<KvPair>>>;

/// The fjall this build compiled in, with its version.
pub(crate) fn library() -> String {
    format!("fjall {}, compiled in", env!("GADGET_FJALL_VERSION"))
}

/// fjall takes RocksDB's memory budget: its write buffers and block cache.
pub(crate) const SPEC: super::spec::StoreSpec = super::spec::StoreSpec {
    name: "fjall",
    about: "an LSM tree in Rust",
    reads: &["write_buffer_mb", "write_buffers", "block_cache_mb"],
    applied: |s, applied| super::spec::buffers_and_cache(s, applied, true),
    library: |_| library(),
    open: super::spec::Opener::Shared(|dir, instances, settings| {
        Ok(std::sync::Arc::new(SharedFjall::open(
            dir, instances, settings,
        )?))
    }),
    refuses: crate::store::spec::refuses_none,
};

/// A fjall keyspace with one partition per state.
pub struct FjallStore {
    keyspace: Keyspace,
    partitions: Vec<PartitionHandle>,
    cursors: Cursors<Range>,
    /// The pending write batch, created by its first entry.
    batch: Option<Batch>,
    /// The merged value being built.
    scratch: Vec<u8>,
    path: PathBuf,
}

fn message(e: fjall::Error) -> String {
    match e {
        fjall::Error::Poisoned => {
            "an earlier write failed (disk full or I/O error) and fjall takes no more writes"
                .to_string()
        }
        e => format!("{e:?}"),
    }
}

fn request_error(op: Op) -> impl Fn(fjall::Error) -> StoreError {
    move |e| StoreError::Request {
        store: "fjall",
        op,
        message: message(e),
    }
}

/// fjall panics on keys it cannot store; refuse them with an error instead.
fn check_write(op: Op, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
    let problem = if key.is_empty() {
        "fjall cannot store an empty key"
    } else if key.len() > usize::from(u16::MAX) {
        "fjall takes keys of at most 65535 bytes"
    } else if u32::try_from(value.len()).is_err() {
        "fjall takes values of less than 4 GiB"
    } else {
        return Ok(());
    };
    Err(StoreError::Request {
        store: "fjall",
        op,
        message: format!("{problem} (key of {} bytes)", key.len()),
    })
}

/// Opens a range over `partition` from `from`.
fn open_range(partition: &PartitionHandle, from: Bound<&[u8]>) -> Range {
    Box::new(partition.range::<&[u8], _>((from, Bound::Unbounded)))
}

/// Steps a range: the value length of the entry it lands on, its key copied into `last`.
fn step_range(range: &mut Range, last: &mut Vec<u8>, op: Op) -> Result<Option<usize>, StoreError> {
    match range.next() {
        None => Ok(None),
        Some(Err(e)) => Err(request_error(op)(e)),
        Some(Ok((k, v))) => {
            last.clear();
            last.extend_from_slice(&k);
            Ok(Some(v.len()))
        }
    }
}

/// One fjall keyspace that several operator instances share (the paper's §6.4), each through
/// its own [`FjallStore`] over its own partitions: they share one journal, one block cache,
/// one write-buffer budget and one set of background flushes and compactions.
pub struct SharedFjall {
    keyspace: Keyspace,
    /// Partitions per instance.
    partitions: Vec<Vec<PartitionHandle>>,
    path: PathBuf,
}

impl SharedFjall {
    /// Creates (or opens) a keyspace under `dir` with a partition per state of every instance
    /// (`instances[i]` lists instance `i`'s states).
    pub fn open(
        dir: &Path,
        instances: &[Vec<String>],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        let open_error = |e: fjall::Error| StoreError::Open {
            store: "fjall",
            path: dir.to_path_buf(),
            message: message(e),
        };
        let states: usize = instances.iter().map(Vec::len).sum();
        let memtable = u32::try_from(settings.write_buffer_size).unwrap_or(u32::MAX);
        let buffers = u64::try_from(settings.max_write_buffers.max(1)).unwrap_or(1);
        let all_memtables = u64::from(memtable)
            .saturating_mul(buffers)
            .saturating_mul(states.max(1) as u64)
            .max(1 << 20);
        let keyspace = Config::new(dir)
            .cache_size(settings.block_cache as u64)
            .max_write_buffer_size(all_memtables)
            .manual_journal_persist(true)
            .fsync_ms(None)
            .open()
            .map_err(open_error)?;
        let partitions = instances
            .iter()
            .enumerate()
            .map(|(i, states)| {
                (0..states.len())
                    .map(|s| {
                        // partition names allow few characters: number them
                        let name = if instances.len() == 1 {
                            format!("s{s}")
                        } else {
                            format!("i{i}s{s}")
                        };
                        let options = PartitionCreateOptions::default()
                            .max_memtable_size(memtable)
                            .manual_journal_persist(true);
                        keyspace.open_partition(&name, options)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(open_error)?;
        Ok(SharedFjall {
            keyspace,
            partitions,
            path: dir.to_path_buf(),
        })
    }

    /// The store of instance `instance`: its own partitions, iterators and write batch.
    pub fn attach(&self, instance: usize) -> Result<FjallStore, StoreError> {
        let partitions = super::instance_part("fjall", &self.path, &self.partitions, instance)?;
        Ok(FjallStore {
            keyspace: self.keyspace.clone(),
            cursors: Cursors::new(partitions.len()),
            partitions,
            batch: None,
            scratch: Vec::new(),
            path: self.path.clone(),
        })
    }
}

impl super::SharedStore for SharedFjall {
    fn attach(&self, instance: usize) -> Result<Box<dyn super::Store>, StoreError> {
        Ok(Box::new(SharedFjall::attach(self, instance)?))
    }
}

impl FjallStore {
    /// Creates (or opens) a keyspace under `dir` with a partition per state.
    pub fn open(
        dir: &Path,
        states: &[String],
        settings: &StoreSettings,
    ) -> Result<Self, StoreError> {
        SharedFjall::open(dir, &[states.to_vec()], settings)?.attach(0)
    }

    /// The keyspace directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The partition of `state`.
fn partition(
    partitions: &[PartitionHandle],
    state: StateId,
) -> Result<&PartitionHandle, StoreError> {
    partitions
        .get(state as usize)
        .ok_or(StoreError::UnknownState {
            state,
            states: partitions.len(),
        })
}

impl Store for FjallStore {
    fn name(&self) -> &'static str {
        "fjall"
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let p = partition(&self.partitions, state)?;
        let found = p.get(key).map_err(request_error(Op::Get))?;
        Ok(found.map(|v| v.len()))
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let p = partition(&self.partitions, state)?;
        check_write(Op::Put, key, value)?;
        self.cursors.suspend_all();
        p.insert(key, value).map_err(request_error(Op::Put))
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let p = partition(&self.partitions, state)?;
        check_write(Op::Merge, key, value)?;
        self.cursors.suspend_all();
        let error = request_error(Op::Merge);
        let old = p.get(key).map_err(&error)?;
        let new: &[u8] = match old {
            None => value,
            Some(old) => {
                self.scratch.clear();
                self.scratch.extend_from_slice(&old);
                self.scratch.push(MERGE_DELIMITER);
                self.scratch.extend_from_slice(value);
                check_write(Op::Merge, key, &self.scratch)?;
                &self.scratch
            }
        };
        p.insert(key, new).map_err(error)
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let p = partition(&self.partitions, state)?;
        check_write(Op::Delete, key, &[])?;
        self.cursors.suspend_all();
        p.remove(key).map_err(request_error(Op::Delete))
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let p = partition(&self.partitions, state)?;
        self.cursors.seek(
            state,
            key,
            |from| Ok(open_range(p, from)),
            |r, last| step_range(r, last, Op::Seek),
        )
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        let p = partition(&self.partitions, state)?;
        self.cursors.next(
            state,
            |from| Ok(open_range(p, from)),
            |r, last| step_range(r, last, Op::Next),
        )
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let p = partition(&self.partitions, state)?;
        check_write(Op::BatchPut, key, value)?;
        let keyspace = &self.keyspace;
        self.batch
            .get_or_insert_with(|| keyspace.batch().durability(None))
            .insert(p, key, value);
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let p = partition(&self.partitions, state)?;
        check_write(Op::BatchDelete, key, &[])?;
        let keyspace = &self.keyspace;
        self.batch
            .get_or_insert_with(|| keyspace.batch().durability(None))
            .remove(p, key);
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        self.cursors.suspend_all();
        match self.batch.take() {
            None => Ok(()),
            Some(batch) => batch.commit().map_err(request_error(Op::BatchCommit)),
        }
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        let p = partition(&self.partitions, state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let mut entries = 0;
        for entry in p.range::<&[u8], _>((Bound::Included(start), Bound::Excluded(end))) {
            std::hint::black_box(entry.map_err(request_error(Op::RangeQuery))?);
            entries += 1;
        }
        Ok(entries)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        let p = partition(&self.partitions, state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        self.cursors.suspend_all();
        // fjall has no range delete: a batch removes every key the range holds
        let error = request_error(Op::RangeDelete);
        let mut batch = self.keyspace.batch().durability(None);
        for entry in p.range::<&[u8], _>((Bound::Included(start), Bound::Excluded(end))) {
            let (key, _) = entry.map_err(&error)?;
            batch.remove(p, key);
        }
        batch.commit().map_err(error)
    }

    /// Removes every key of the state's partition in one `Batch`, as a range delete does.
    ///
    /// fjall can delete a partition, but not as a drop needs it: a deleted partition's name
    /// stays taken (its folder, marked deleted) until every handle on it is gone, background
    /// flushes and compactions included, so it cannot be made again under its name at once;
    /// and a pending `Batch` names partitions and skips deleted ones at commit, so under a new
    /// name the batch's entries of the state would be lost, where the drop must leave them.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let p = partition(&self.partitions, state)?;
        self.cursors.suspend_all();
        self.cursors.close(state);
        let error = request_error(Op::Drop);
        let mut batch = self.keyspace.batch().durability(None);
        for key in p.keys() {
            batch.remove(p, key.map_err(&error)?);
        }
        batch.commit().map_err(error)
    }

    fn emulated(&self) -> &'static [Op] {
        &[Op::Merge, Op::RangeDelete, Op::Drop, Op::Checkpoint]
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.cursors.suspend_all();
        // hands the buffered journal to the operating system, without fsync
        self.keyspace
            .persist(PersistMode::Buffer)
            .map_err(request_error(Op::BatchCommit))
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract;
    use super::*;

    fn store(dir: &Path) -> FjallStore {
        let states = vec!["window-contents".to_string(), "timers".to_string()];
        let settings = StoreSettings {
            write_buffer_size: 1 << 20,
            block_cache: 1 << 20,
            ..StoreSettings::default()
        };
        FjallStore::open(dir, &states, &settings).unwrap()
    }

    #[test]
    fn merge_appends_with_flinks_delimiter() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::merge_appends_with_flinks_delimiter(&mut s);
        assert_eq!(
            s.emulated(),
            &[Op::Merge, Op::RangeDelete, Op::Drop, Op::Checkpoint]
        );
    }

    #[test]
    fn states_are_separate_partitions_and_bad_keys_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::states_are_separate(&mut s);
        assert!(matches!(
            s.put(0, b"", b"v"),
            Err(StoreError::Request { op: Op::Put, .. })
        ));
        assert!(matches!(
            s.batch_put(0, &vec![1; 70_000], b"v"),
            Err(StoreError::Request { .. })
        ));
    }

    #[test]
    fn next_after_a_write_sees_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = store(dir.path());
        contract::next_after_a_write_sees_the_write(&mut s);
    }
}
