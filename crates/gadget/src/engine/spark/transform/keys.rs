//! The keys `transformWithState` writes to its RocksDB instance, whose column families are
//! virtual: every key starts with its family's id (two bytes, little-endian), then rows after
//! a version byte each.
//!
//! - A state variable keyed by the grouping key alone (a `ValueState`, a `ListState` and its
//!   entry count): the grouping key's row.
//! - Keys scanned by a prefix (`keyToTimestamp`, a `MapState`): the prefix's length (four
//!   bytes), the prefix (a row of one struct field, the grouping key), then a row of the rest
//!   (the time; the map's key as a struct).
//! - Keys scanned by a range (`timestampToKey`): the range part's length, the range part (a
//!   row of one binary field: a sign marker and the time big-endian, so that keys sort by
//!   time), then a row of the grouping key as a struct.

use super::super::{pointer, ENCODING_VERSION};

/// A family's id as its keys start.
pub(super) fn family(id: u16) -> [u8; 2] {
    id.to_le_bytes()
}

/// Writes the key of `family` for the grouping key `key` (a key row, version byte first).
pub(super) fn by_key(out: &mut Vec<u8>, family: u16, key: &[u8]) {
    out.clear();
    out.extend_from_slice(&family.to_le_bytes());
    out.extend_from_slice(key);
}

/// Writes the prefix of the keys of `family` scanned by the grouping key `key`.
pub(super) fn prefix(out: &mut Vec<u8>, family: u16, key: &[u8]) {
    let row = key.get(1..).unwrap_or_default();
    out.clear();
    out.extend_from_slice(&family.to_le_bytes());
    out.extend_from_slice(&((1 + 16 + row.len()) as i32).to_le_bytes());
    struct_row(out, row);
}

/// Writes the `keyToTimestamp` key of `key`'s timer at `time` (ms).
pub(super) fn key_to_time(out: &mut Vec<u8>, family: u16, key: &[u8], time: i64) {
    prefix(out, family, key);
    out.push(ENCODING_VERSION);
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&time.to_le_bytes());
}

/// Writes the key of a `MapState` entry of `key` whose map key is the long `entry`.
pub(super) fn map_entry(out: &mut Vec<u8>, family: u16, key: &[u8], entry: i64) {
    prefix(out, family, key);
    let mut row = [0u8; 16];
    row[8..].copy_from_slice(&entry.to_le_bytes());
    struct_row(out, &row);
}

/// Writes the `timestampToKey` key of `key`'s timer at `time` (ms).
pub(super) fn time_to_key(out: &mut Vec<u8>, family: u16, key: &[u8], time: i64) {
    let row = key.get(1..).unwrap_or_default();
    out.clear();
    out.extend_from_slice(&family.to_le_bytes());
    out.extend_from_slice(&(1 + 16 + 16i32).to_le_bytes());
    out.push(ENCODING_VERSION);
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&pointer(16, 9).to_le_bytes());
    out.push(u8::from(time >= 0));
    out.extend_from_slice(&time.to_be_bytes());
    out.extend_from_slice(&[0; 7]);
    struct_row(out, row);
}

/// The time and the grouping key's row (after its version byte) of a `timestampToKey` key.
pub(super) fn timer_of(entry: &[u8]) -> (i64, &[u8]) {
    // the family (2), the range part's length (4), its version byte, bitset and word (17),
    // the marker byte, then the time big-endian
    let time = entry.get(24..32).map_or(i64::MAX, |b| {
        i64::from_be_bytes(b.try_into().expect("8 bytes"))
    });
    // the range part (33 bytes), then the version byte, bitset and word of the key's row
    let key = entry.get(2 + 4 + 33 + 17..).unwrap_or_default();
    (time, key)
}

/// Appends a row (version byte first) of one struct field holding `row`.
fn struct_row(out: &mut Vec<u8>, row: &[u8]) {
    out.push(ENCODING_VERSION);
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&pointer(16, row.len() as u64).to_le_bytes());
    out.extend_from_slice(row);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn keys_are_laid_out_as_spark_writes_them() {
        let mut row = Vec::new();
        super::super::super::key_row(&mut row, &crate::key::Key::Long(0x0001_7562_7880));
        let mut key = Vec::new();
        // the first timer of a recording of Spark 4.1.1 over the Borg events
        key_to_time(&mut key, 3, &row, 0x0915_9bd9);
        assert_eq!(
            hex(&key),
            "030021000000000000000000000000100000001000000000000000000000008078627501000000\
             000000000000000000d99b150900000000"
        );
        time_to_key(&mut key, 4, &row, 0x0915_9bd9);
        assert_eq!(
            hex(&key),
            "0400210000000000000000000000000900000010000000010000000009159bd900000000000000\
             000000000000000000100000001000000000000000000000008078627501000000"
        );
        assert_eq!(timer_of(&key), (0x0915_9bd9, &row[1..]));
        // its first MapState entry, the minute 2539
        map_entry(&mut key, 2, &row, 2539);
        assert_eq!(
            hex(&key),
            "020021000000000000000000000000100000001000000000000000000000008078627501000000\
             00000000000000000010000000100000000000000000000000eb09000000000000"
        );
    }
}
