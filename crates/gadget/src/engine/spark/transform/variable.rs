//! The reference processor's three kinds of state variable (`TransformWithState` in the
//! recorder's Spark queries): what each sends for a key with data and for a key whose timer
//! fired, and the column families each creates (ids in order of creation: the state
//! variable's, then the timers').

use super::keys;
use super::store::{Store, Timers};

/// The state variable a session lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateVariable {
    /// A `ValueState` of (count, latest event time).
    Value,
    /// A `ListState` of the records' event times, with its entry count (`ListStateMetrics`).
    List,
    /// A `MapState` from the minute of event time to the records in it.
    Map,
}

/// A key's records in a batch and its timers.
pub(super) struct KeySession<'a> {
    /// The records' event times (ms), in the order Spark hands them over.
    pub(super) times: &'a [i64],
    /// The timer of the session before the batch, if there was one.
    pub(super) old_timer: Option<i64>,
    /// The timer the session ends at now: its latest time plus the gap.
    pub(super) timer: i64,
}

/// The `state` values of a config, each with its variable.
pub const STATE_VARIABLES: &[(&str, StateVariable)] = &[
    ("value", StateVariable::Value),
    ("list", StateVariable::List),
    ("map", StateVariable::Map),
];

/// The first column family a state variable creates.
const FIRST: u16 = 2;

/// A `ValueState` row: the version byte, the null bitset, the count and the latest time.
const SESSION_BYTES: u32 = 1 + 8 + 8 + 8;
/// A row of one long (a list's entry count, a map's value): version byte, bitset, the long.
const LONG_BYTES: u32 = 1 + 8 + 8;
/// A list element as the merge operator joins them: its length and its row of one long.
const ELEMENT_BYTES: u32 = 4 + LONG_BYTES;
/// A minute of event time, the map's key.
const MINUTE_MS: i64 = 60_000;

impl StateVariable {
    /// The families of the variable's data (a list's entry count first, then its values).
    fn data_families(self) -> u16 {
        match self {
            StateVariable::List => 2,
            StateVariable::Value | StateVariable::Map => 1,
        }
    }

    /// The timers' families, created after the variable's.
    pub(super) fn timers(self) -> Timers {
        let key_to_time = FIRST + self.data_families();
        Timers {
            key_to_time,
            time_to_key: key_to_time + 1,
        }
    }

    /// `handleInputRows` for `key` (a key row) with the records of `session`.
    pub(super) fn input_rows(
        self,
        store: &mut Store<'_>,
        key: &[u8],
        session: &KeySession<'_>,
        buf: &mut Vec<u8>,
    ) {
        let times = session.times;
        match self {
            StateVariable::Value => {
                keys::by_key(buf, FIRST, key);
                store.get(buf);
                if let Some(old) = session.old_timer {
                    store.delete_timer(key, old);
                }
                store.put(buf, SESSION_BYTES);
            }
            StateVariable::List => {
                store.drop_timers(key);
                let (count, list) = (FIRST, FIRST + 1);
                keys::by_key(buf, count, key);
                store.get(buf);
                keys::by_key(buf, list, key);
                let n = times.len() as u32;
                // the elements joined by the merge operator's one-byte delimiter
                store.merge(buf, n * ELEMENT_BYTES + n.saturating_sub(1));
                keys::by_key(buf, count, key);
                store.put(buf, LONG_BYTES);
            }
            StateVariable::Map => {
                store.drop_timers(key);
                for &time in times {
                    keys::map_entry(buf, FIRST, key, time.div_euclid(MINUTE_MS));
                    store.get(buf);
                    store.put(buf, LONG_BYTES);
                }
            }
        }
        store.register_timer(key, session.timer);
    }

    /// `handleExpiredTimer` for `key`: the session read, then cleared.
    pub(super) fn expired(self, store: &mut Store<'_>, key: &[u8], buf: &mut Vec<u8>) {
        match self {
            StateVariable::Value => {
                keys::by_key(buf, FIRST, key);
                store.get(buf);
                store.remove(buf);
            }
            StateVariable::List => {
                let (count, list) = (FIRST, FIRST + 1);
                keys::by_key(buf, list, key);
                store.get(buf);
                store.remove(buf);
                // the entry count read, then removed
                keys::by_key(buf, count, key);
                store.get(buf);
                store.remove(buf);
            }
            StateVariable::Map => {
                keys::prefix(buf, FIRST, key);
                // `values()`, then `clear()`: a second scan that removes each entry
                store.scan(buf, |_, _| true);
                store.scan(buf, |store, entry| {
                    store.remove(entry);
                    true
                });
            }
        }
    }
}
