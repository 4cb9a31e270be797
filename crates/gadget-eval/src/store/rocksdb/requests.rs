//! Each request of the [`Store`] contract as RocksDB's C API issues it: point reads and
//! writes, merges, iterators, range queries, write batches, and a state's drop, flush and
//! checkpoint.

use std::ptr::null_mut;
use std::sync::Arc;

use gadget::access::{Op, StateId};

use super::api::PERF_COUNTERS;
use super::{request_error, RocksDbStore};
use crate::store::{empty_range, Store, StoreError};

impl Store for RocksDbStore {
    fn name(&self) -> &'static str {
        self.db.store
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        if self.perf.is_null() {
            return Vec::new();
        }
        let mut counters: Vec<(&'static str, u64)> = PERF_COUNTERS
            .iter()
            // SAFETY: the perf context is live; the metric numbers are c.h's enum values.
            .map(|&(name, metric)| {
                (name, unsafe {
                    (self.api.perfcontext_metric)(self.perf, metric)
                })
            })
            .collect();
        counters.extend(self.held());
        counters
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let family = self.family(state)?;
        let api = self.api;
        let mut err = null_mut();
        // SAFETY: the key outlives the call; the pinned value is released at once.
        unsafe {
            let pinned = (api.get_pinned_cf)(
                self.db.db,
                self.read_options,
                family,
                key.as_ptr().cast(),
                key.len(),
                &mut err,
            );
            self.checked(Op::Get, err)?;
            if pinned.is_null() {
                return Ok(None);
            }
            let mut length = 0;
            (api.pinnableslice_value)(pinned, &mut length);
            (api.pinnableslice_destroy)(pinned);
            Ok(Some(length))
        }
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.write_pair(Op::Put, self.api.put_cf, state, key, value)
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.write_pair(Op::Merge, self.api.merge_cf, state, key, value)
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let family = self.family(state)?;
        let mut err = null_mut();
        // SAFETY: the key outlives the call, which copies it.
        unsafe {
            (self.api.delete_cf)(
                self.db.db,
                self.write_options,
                family,
                key.as_ptr().cast(),
                key.len(),
                &mut err,
            );
        }
        self.checked(Op::Delete, err)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let family = self.family(state)?;
        let api = self.api;
        let s = state as usize;
        // SAFETY: Flink opens a new iterator for every seek; the old one is released first.
        let it = unsafe {
            if !self.iterators[s].is_null() {
                (api.iter_destroy)(self.iterators[s]);
            }
            let it = (api.create_iterator_cf)(self.db.db, self.read_options, family);
            (api.iter_seek)(it, key.as_ptr().cast(), key.len());
            it
        };
        self.iterators[s] = it;
        self.value_at(Op::Seek, it)
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        self.family(state)?;
        let it = self.iterators[state as usize];
        // SAFETY: a non-null entry is a live iterator of this store.
        if it.is_null() || unsafe { (self.api.iter_valid)(it) } == 0 {
            return Ok(None);
        }
        // SAFETY: as above.
        unsafe { (self.api.iter_next)(it) };
        self.value_at(Op::Next, it)
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let family = self.family(state)?;
        // SAFETY: the batch copies key and value.
        unsafe {
            (self.api.writebatch_put_cf)(
                self.batch,
                family,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            );
        }
        Ok(())
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let family = self.family(state)?;
        // SAFETY: the batch copies the key.
        unsafe {
            (self.api.writebatch_delete_cf)(self.batch, family, key.as_ptr().cast(), key.len())
        };
        Ok(())
    }

    fn batch_commit(&mut self) -> Result<(), StoreError> {
        let mut err = null_mut();
        // SAFETY: the batch is this store's; it is emptied for reuse whether or not it applied.
        unsafe {
            (self.api.write)(self.db.db, self.write_options, self.batch, &mut err);
            (self.api.writebatch_clear)(self.batch);
        }
        self.checked(Op::BatchCommit, err)
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        let family = self.family(state)?;
        if empty_range(start, end) {
            return Ok(0);
        }
        let api = self.api;
        let mut entries = 0;
        let mut err = null_mut();
        // SAFETY: an iterator bounded above, as RocksDB's own range scans are; the options
        // refer to `end` only while the iterator lives, and are reset before `end` goes.
        unsafe {
            (api.readoptions_set_iterate_upper_bound)(
                self.range_options,
                end.as_ptr().cast(),
                end.len(),
            );
            let it = (api.create_iterator_cf)(self.db.db, self.range_options, family);
            (api.iter_seek)(it, start.as_ptr().cast(), start.len());
            while (api.iter_valid)(it) != 0 {
                let mut length = 0;
                std::hint::black_box((api.iter_value)(it, &mut length));
                entries += 1;
                (api.iter_next)(it);
            }
            (api.iter_get_error)(it, &mut err);
            (api.iter_destroy)(it);
            (api.readoptions_set_iterate_upper_bound)(self.range_options, std::ptr::null(), 0);
        }
        self.checked(Op::RangeQuery, err)?;
        Ok(entries)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        self.family(state)?;
        if empty_range(start, end) {
            return Ok(());
        }
        self.write_pair(Op::RangeDelete, self.api.delete_range_cf, state, start, end)
    }

    /// Drops the state's column family and creates it again under its name with its
    /// options (merge operator, table options, sizes): RocksDB's own drop. The state's
    /// iterator is released first, as it would keep the dropped column family's data alive;
    /// the pending batch's entries of the state are moved to the new column family.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let family = self.family(state)?;
        let (api, s) = (self.api, state as usize);
        let it = std::mem::replace(&mut self.iterators[s], null_mut());
        if !it.is_null() {
            // SAFETY: a live iterator of this store, released once (its slot is null now).
            unsafe { (api.iter_destroy)(it) };
        }
        let db = Arc::clone(&self.db);
        let mut shared = db.families();
        let holders = shared.attached[self.instance];
        if holders > 1 {
            return Err(request_error(
                self.db.store,
                Op::Drop,
                format!(
                    "{holders} stores hold operator instance {}'s column families, and a drop \
                     replaces state #{state}'s under the others; attach each instance once",
                    self.instance
                ),
            ));
        }
        // SAFETY: the batch is this store's.
        let pending = unsafe { (api.writebatch_count)(self.batch) } > 0;
        let old_id = if pending {
            Some(self.family_id(family)?)
        } else {
            None
        };
        let index = self.own[s];
        let mut err = null_mut();
        // SAFETY: a live column family of the open database; no iterator of this store reads
        // it, and no other store holds its handle (checked above, under the lock).
        unsafe { (api.drop_column_family)(db.db, family, &mut err) };
        self.checked(Op::Drop, err)?;
        // SAFETY: the dropped family's handle, released once: both copies are nulled.
        unsafe { (api.column_family_handle_destroy)(family) };
        shared.handles[index] = null_mut();
        self.families[s] = null_mut();
        let name = &db.names[index];
        // SAFETY: the options and name the column family was opened with, owned by the
        // database; RocksDB copies both.
        let created = unsafe {
            (api.create_column_family)(db.db, db.options[index], name.as_ptr(), &mut err)
        };
        if let Some(message) = api.take_error(err) {
            if !created.is_null() {
                // SAFETY: the handle the failed call made, released once.
                unsafe { (api.column_family_handle_destroy)(created) };
            }
            return Err(request_error(
                self.db.store,
                Op::Drop,
                format!(
                    "the column family {} was dropped but not created again: {message}",
                    name.to_string_lossy()
                ),
            ));
        }
        shared.handles[index] = created;
        self.families[s] = created;
        drop(shared);
        if let Some(from) = old_id {
            let to = self.family_id(created)?;
            self.retarget_batch(from, to)?;
        }
        Ok(())
    }

    fn flush_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let family = self.family(state)?;
        let mut err = null_mut();
        // SAFETY: a column family of the open database; flushing leaves iterators valid.
        unsafe { (self.api.flush_cf)(self.db.db, self.flush_options, family, &mut err) };
        self.checked(Op::Flush, err)
    }

    /// A real checkpoint of the database (RocksDB's `Checkpoint::CreateCheckpoint`: its
    /// memtables flushed, then hard links to its files in a new directory), replacing this
    /// store's previous one, as Spark's commit makes one and removes the last.
    fn checkpoint_state(&mut self, state: StateId) -> Result<(), StoreError> {
        self.family(state)?;
        let dir = self.checkpoint_dir();
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(request_error(
                    self.db.store,
                    Op::Checkpoint,
                    format!("removing the previous checkpoint {}: {e}", dir.display()),
                ))
            }
        }
        let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| {
            request_error(
                self.db.store,
                Op::Checkpoint,
                format!("the checkpoint path {} holds a NUL byte", dir.display()),
            )
        })?;
        let api = self.api;
        let mut err = null_mut();
        // SAFETY: the open database; the checkpoint object is released before returning.
        let checkpoint = unsafe { (api.checkpoint_object_create)(self.db.db, &mut err) };
        self.checked(Op::Checkpoint, err)?;
        let mut err = null_mut();
        // SAFETY: a live checkpoint object of this database and a NUL-terminated path; a log
        // size of 0 flushes the memtables first, as Spark's flush before it has done.
        unsafe {
            (api.checkpoint_create)(checkpoint, path.as_ptr(), 0, &mut err);
            (api.checkpoint_object_destroy)(checkpoint);
        }
        self.checked(Op::Checkpoint, err)
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        let api = self.api;
        for it in self.iterators.iter_mut() {
            if !it.is_null() {
                // SAFETY: a live iterator of this store, released once.
                unsafe { (api.iter_destroy)(*it) };
                *it = null_mut();
            }
        }
        for &family in self.families.iter().filter(|f| !f.is_null()) {
            let mut err = null_mut();
            // SAFETY: a column family of the open database.
            unsafe { (api.flush_cf)(self.db.db, self.flush_options, family, &mut err) };
            self.checked(Op::BatchCommit, err)?;
        }
        Ok(())
    }
}
