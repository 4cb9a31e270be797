//! `withWatermark("time", delay).groupByKey(key).transformWithState(processor,
//! TimeMode.EventTime(), mode)` (Spark 4's `TransformWithStateExec`) with `processor` a
//! session count: a key's session ends `gap` ms of event time after its latest record, when
//! its event-time timer fires and the processor emits the count and clears the key's state.
//! The state lives in a `ValueState`, a `ListState` or a `MapState` ([`StateVariable`]), as
//! in the recorder's reference processors (`TransformWithState`).
//!
//! **One RocksDB instance per shuffle partition, its column families virtual** (every key
//! starts with its family's id, [`keys`]): the state variable's, then the timers'
//! `$eventTimers_keyToTimestamp` (by grouping key, then time: `exists`, `listTimers`) and
//! `$eventTimers_timestampToKey` (by time, then grouping key: the expiry scan).
//!
//! Per micro-batch, in each partition's task in turn, with the partition's records that are
//! not late (after the previous batch's watermark) sorted by key (stably: a key's records in
//! the order they came):
//!
//! 1. per key, `handleInputRows` ([`StateVariable`]): the session read or appended to, its
//!    old timer deleted, a timer set at the latest time plus the gap;
//! 2. the timers: an iterator over `timestampToKey` (a `seek` to its family, a `next` per
//!    entry read, landing on the key after it) hands over each timer at or before the batch's
//!    watermark and stops at the first after it; per timer `handleExpiredTimer` reads and
//!    clears the session, then the operator deletes the timer;
//! 3. `flush` and `checkpoint` commit the store; a batch without data follows when the
//!    watermark moved ([`super::batch`]).
//!
//! `registerTimer` reads `keyToTimestamp` first (`exists`) and writes both timer families
//! only when the timer is new; `deleteTimer` reads it too and deletes from both only when it
//! is there. Every `put`, `merge` and `delete` is read first (row counting).

mod keys;
mod store;
mod variable;

pub use variable::{StateVariable, STATE_VARIABLES};

use crate::access::AccessSink;
use crate::source::element::Event;

use super::batch::{batches_in_fields, BatchRows, MicroBatched, MicroBatches};
use super::{key_order, key_row, SparkSpec, ENCODING_VERSION};
use store::{Instance, Scratch, Store};
use variable::KeySession;

/// One shuffle partition: its records of the batch and its instance.
#[derive(Debug, Default)]
struct Partition {
    records: BatchRows<i64>,
    db: Instance,
}

/// A session count per key by `transformWithState` with event-time timers.
#[derive(Debug)]
pub struct TransformWithState {
    variable: StateVariable,
    gap: i64,
    batches: MicroBatches,
    partitions: Vec<Partition>,
    key: Vec<u8>,
    buf: Vec<u8>,
    times: Vec<i64>,
    scratch: Scratch,
}

impl TransformWithState {
    /// The session count of `spec` in `variable` (its gap in `size`, `delay`, `trigger`,
    /// `partitions`).
    pub fn new(spec: &SparkSpec, variable: StateVariable) -> TransformWithState {
        TransformWithState {
            variable,
            gap: spec.size,
            batches: MicroBatches::of(spec),
            partitions: spec.per_partition(),
            key: Vec::with_capacity(32),
            buf: Vec::with_capacity(96),
            times: Vec::new(),
            scratch: Scratch::default(),
        }
    }
}

impl MicroBatched for TransformWithState {
    batches_in_fields!(one_store_per_partition);

    fn buffer(&mut self, event: &Event) -> Option<usize> {
        if !self.batches.is_late(event.timestamp) {
            key_row(&mut self.key, &event.key);
            let p = super::partition::key_partition(&event.key, self.partitions.len());
            self.partitions[p].records.push(&self.key, event.timestamp);
        }
        Some(0)
    }

    /// A micro-batch: each partition's task in turn handles its keys with data, in key
    /// order, then the timers the watermark reached, and commits.
    fn run_batch(&mut self, out: &mut dyn AccessSink) {
        let watermark = self.batches.watermark();
        let (variable, gap) = (self.variable, self.gap);
        for (state, partition) in (0u16..).zip(&mut self.partitions) {
            let Partition { records, db } = partition;
            records.stable_sort_by_key(key_order);
            let mut store = Store {
                state,
                db,
                timers: variable.timers(),
                scratch: &mut self.scratch,
                out: &mut *out,
            };
            let mut group = 0;
            while group < records.len() {
                let (key, _) = records.get(group);
                self.times.clear();
                let mut end = group;
                while end < records.len() && records.get(end).0 == key {
                    self.times.push(records.get(end).1);
                    end += 1;
                }
                group = end;
                let before = store.db.latest.get(key).copied();
                let latest = self
                    .times
                    .iter()
                    .fold(before.unwrap_or(i64::MIN), |a, &t| a.max(t));
                let session = KeySession {
                    times: &self.times,
                    old_timer: before.map(|b| b.saturating_add(gap)),
                    timer: latest.saturating_add(gap),
                };
                variable.input_rows(&mut store, key, &session, &mut self.buf);
                match store.db.latest.get_mut(key) {
                    Some(held) => *held = latest,
                    None => {
                        store.db.latest.insert(key.to_vec(), latest);
                    }
                }
            }
            records.clear();
            expire(
                &mut store,
                variable,
                watermark,
                &mut self.key,
                &mut self.buf,
            );
            MicroBatches::commit(state, store.out);
        }
        self.batches.advance();
    }
}

/// The timers at or before `watermark` (ms), in time order, each handed to
/// `handleExpiredTimer` as the iterator hands it over (after the `next` past it), then
/// deleted.
fn expire(
    store: &mut Store<'_>,
    variable: StateVariable,
    watermark: i64,
    key: &mut Vec<u8>,
    buf: &mut Vec<u8>,
) {
    let family = keys::family(store.timers.time_to_key);
    store.scan(&family, |store, entry| {
        let (time, row) = keys::timer_of(entry);
        if time > watermark {
            return false;
        }
        key.clear();
        key.push(ENCODING_VERSION);
        key.extend_from_slice(row);
        variable.expired(store, key, buf);
        store.delete_timer(key, time);
        store.db.latest.remove(&key[..]);
        true
    });
}

#[cfg(test)]
mod tests;
