//! The column families of a database being opened: those its directory holds already open
//! with it, and the missing ones are made after it opened, a batch per call, with the stop
//! flag looked at before each call.
//!
//! RocksDB's own way, `create_missing_column_families` at open, makes them inside one call
//! that nothing can stop, and RocksDB 6.20 (frocksdb, the default library) and 7.8 (Debian's)
//! write their whole OPTIONS file (every column family's options) again after each one:
//! opening n column families takes time in n² there (100 took 4.8 s, 300 took 39 s). Of the
//! libraries Gadget offers, frocksdb 8.10, ForSt and current RocksDB make a batch with one
//! OPTIONS file (`rocksdb_create_column_families`); the others' C API makes one per call, so
//! there the stop flag is looked at between any two, and Spark's `partitions` (the engine
//! with the most states) is bounded so that its column families open in seconds
//! (docs/config.md).

use std::collections::HashSet;
use std::ffi::{c_char, CStr, CString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};

use super::api::{Api, Db, Family, Options};

/// The smallest batch, and the most column families one call creates: each call writes the
/// OPTIONS file once (about 0.5 ms per column family in the database, with current RocksDB)
/// and each column family costs a MANIFEST write and sync (about 6 ms), so a batch grows to
/// half the column families made so far, between these bounds: few OPTIONS writes in all,
/// and at most about 1.5 s of syncs between two looks at the stop flag.
const BATCH: std::ops::RangeInclusive<usize> = 16..=256;

/// Why the column families were not all created.
#[derive(Debug)]
pub(super) enum Unfinished {
    /// The stop flag was set (Ctrl-C, SIGTERM): the rest were not created.
    Stopped,
    /// RocksDB refused to create one; what it said.
    Failed(String),
}

/// The names of the column families the database in `dir` holds; none when there is no
/// database there yet (or it cannot be listed: opening it then says why).
pub(super) fn existing(api: &Api, options: *const Options, dir: &CStr) -> HashSet<Vec<u8>> {
    let mut count = 0usize;
    let mut err = null_mut();
    // SAFETY: valid options and a NUL-terminated path; RocksDB returns a malloc'ed array of
    // `count` strings (empty on error), freed once below with its own function.
    unsafe {
        let list = (api.list_column_families)(options, dir.as_ptr(), &mut count, &mut err);
        let failed = api.take_error(err).is_some();
        if list.is_null() {
            return HashSet::new();
        }
        let names = if failed {
            HashSet::new()
        } else {
            (0..count)
                .map(|i| CStr::from_ptr(*list.add(i)).to_bytes().to_vec())
                .collect()
        };
        (api.list_column_families_destroy)(list, count);
        names
    }
}

/// Creates the column families `missing` (indices into `names`, `options` and `handles`) in
/// the open database `db`, putting each one's handle at its index in `handles`: batches
/// sized by [`BATCH`] where the library creates several per call, else one per call. `stop` is looked at before every call. Handles made before a failure or a
/// stop are in `handles` too, for the database to release.
pub(super) fn create_missing(
    api: &Api,
    db: *mut Db,
    names: &[CString],
    options: &[*mut Options],
    missing: &[usize],
    handles: &mut [*mut Family],
    stop: &AtomicBool,
) -> Result<(), Unfinished> {
    let batched = api
        .create_column_families
        .zip(api.create_column_families_destroy);
    // one at a time without a batch call
    let mut batch = if batched.is_some() { *BATCH.start() } else { 1 };
    let mut done = 0;
    while done < missing.len() {
        if stop.load(Ordering::Relaxed) {
            return Err(Unfinished::Stopped);
        }
        let chunk = &missing[done..missing.len().min(done + batch)];
        match batched {
            Some((create, destroy)) => {
                let pointers: Vec<*const c_char> =
                    chunk.iter().map(|&i| names[i].as_ptr()).collect();
                let mut made = 0usize;
                let mut err = null_mut();
                // SAFETY: an open database, options that outlive it (every column family of
                // a batch gets a copy of the first one's: they are all set alike), `chunk.len()`
                // NUL-terminated names; RocksDB returns a malloc'ed array of the `made` handles
                // it created (before a failure too), which its destroy function frees.
                unsafe {
                    let list = create(
                        db,
                        options[chunk[0]],
                        chunk.len() as i32,
                        pointers.as_ptr(),
                        &mut made,
                        &mut err,
                    );
                    if !list.is_null() {
                        for (k, &i) in chunk.iter().enumerate().take(made) {
                            handles[i] = *list.add(k);
                        }
                        destroy(list);
                    }
                }
                if let Some(message) = api.take_error(err) {
                    return Err(Unfinished::Failed(message));
                }
            }
            None => {
                let i = chunk[0];
                let mut err = null_mut();
                // SAFETY: an open database, its options and a NUL-terminated name; RocksDB
                // copies both.
                let made = unsafe {
                    (api.create_column_family)(db, options[i], names[i].as_ptr(), &mut err)
                };
                if let Some(message) = api.take_error(err) {
                    if !made.is_null() {
                        // SAFETY: the handle the failed call made, released once.
                        unsafe { (api.column_family_handle_destroy)(made) };
                    }
                    return Err(Unfinished::Failed(message));
                }
                handles[i] = made;
            }
        }
        done += chunk.len();
        if batched.is_some() {
            batch = (done / 2).clamp(*BATCH.start(), *BATCH.end());
        }
    }
    Ok(())
}
