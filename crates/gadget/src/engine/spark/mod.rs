//! Spark Structured Streaming 4.1 with the RocksDB state store provider
//! (`RocksDBStateStoreProvider`), as a query runs in `local[1]` with one shuffle partition:
//! one state store (one RocksDB instance) per stateful operator, micro-batches of a fixed
//! number of input events.
//!
//! What the state store sends RocksDB, checked against recordings of Spark 4.1.1 with the
//! recorder (docs/engines.md):
//!
//! - **Plain `RocksDB` calls** on the instance's default column family: `get`, `put` and
//!   `delete` with the write-ahead log off, and iterators from the first key (`seek` to the
//!   empty key, then a `next` per entry read: the iterator steps before it hands an entry
//!   over).
//! - **Row counting** (`trackTotalNumberOfRows`, on by default): every `put` and every
//!   `delete` reads the key first.
//! - **A commit per micro-batch**: the instance is flushed (`flush`: its memtables, the WAL
//!   being off), then checkpointed (`checkpoint`: `Checkpoint.createCheckpoint`, which Spark
//!   uploads).
//! - Keys and values are `UnsafeRow`s after a version byte (0): a null bitset word, one word
//!   per field (a long in place; a struct or string as offset and size into the variable part
//!   that follows, padded to words).

pub mod aggregate;

pub use aggregate::{OutputMode, SparkSpec, TumblingCount};

/// The operator types of Spark.
pub const OPERATORS: &[&str] = &["tumbling-count"];

/// The state store's RocksDB instance as the recorder names it: below the job's work
/// directory, Spark's local directory `local`, then `spark-<id>/StateStoreId(...)-<id>/
/// workingDir-<id>` with the random ids left out, and the column family.
pub(crate) fn state_name(operator: u32, partition: u32) -> String {
    format!(
        "local/spark/StateStoreId(opId={operator},partId={partition},name=default)/workingDir/default"
    )
}

/// The version byte before every key and value row.
const ENCODING_VERSION: u8 = 0;

/// Writes the `UnsafeRow` key of a windowed aggregation, grouped by (window, key), after the
/// version byte: the window struct (start and end in µs) and the record key (a long in
/// place, a string in the variable part).
pub(crate) fn window_key_row(out: &mut Vec<u8>, start_us: i64, end_us: i64, key: &crate::key::Key) {
    out.clear();
    out.push(ENCODING_VERSION);
    out.extend_from_slice(&0u64.to_le_bytes());
    // the window struct: 24 bytes at offset 24 (after the bitset and the two field words)
    out.extend_from_slice(&pointer(24, 24).to_le_bytes());
    let string = match key {
        crate::key::Key::Long(v) => {
            out.extend_from_slice(&v.to_le_bytes());
            None
        }
        crate::key::Key::Str(s) => {
            out.extend_from_slice(&pointer(48, s.len() as u64).to_le_bytes());
            Some(s.as_bytes())
        }
        crate::key::Key::NullByte => {
            out.extend_from_slice(&0i64.to_le_bytes());
            None
        }
    };
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&start_us.to_le_bytes());
    out.extend_from_slice(&end_us.to_le_bytes());
    if let Some(bytes) = string {
        out.extend_from_slice(bytes);
        out.resize(out.len() + (8 - bytes.len() % 8) % 8, 0);
    }
}

/// The end of the window, in µs, of a key written by [`window_key_row`].
pub(crate) fn window_end_us(row: &[u8]) -> i64 {
    // version byte, bitset, two field words, the struct's bitset and start
    row.get(1 + 8 + 16 + 8 + 8..1 + 8 + 16 + 8 + 16)
        .and_then(|b| b.try_into().ok())
        .map_or(i64::MIN, i64::from_le_bytes)
}

/// An `UnsafeRow` field word pointing into the variable part.
fn pointer(offset: u64, size: u64) -> u64 {
    offset << 32 | size
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;

    #[test]
    fn a_window_key_row_is_laid_out_as_spark_writes_it() {
        let mut row = Vec::new();
        window_key_row(
            &mut row,
            150_935_000_000,
            150_940_000_000,
            &Key::Long(6_270_505_101),
        );
        // the first key a recording of Spark 4.1.1 wrote for the Borg events
        let recorded = "00000000000000000018000000180000008d50c0750100000000000000000000\
                        00c0536d2423000000009fb92423000000";
        let hex: String = row.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, recorded);
        assert_eq!(window_end_us(&row), 150_940_000_000);
        window_key_row(&mut row, 0, 5, &Key::Str("abc".into()));
        assert_eq!(row.len(), 49 + 8);
        assert_eq!(&row[17..25], &[3, 0, 0, 0, 48, 0, 0, 0]);
    }
}
