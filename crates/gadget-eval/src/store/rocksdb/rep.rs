//! The little of RocksDB's write-batch format (`db/write_batch.cc`, unchanged since RocksDB 3)
//! that a drop needs. A batch names column families by id, and a column family dropped and
//! created again gets a new id: the pending batch's entries of a dropped state are moved to the
//! new id, so that its commit writes them into the new column family.
//!
//! ```text
//! rep    = sequence u64 LE | count u32 LE | record*
//! record = 0x1 key value | 0x0 key                  (default column family: put, delete)
//!        | 0x5 id key value | 0x4 id key            (column family `id`: put, delete)
//! id     = varint32;  key, value = varint32 length | bytes
//! ```
//!
//! The store writes puts and deletes only, so those are the records read here; any other is
//! refused rather than guessed at.

/// `kTypeDeletion`: a delete in the default column family.
const DELETION: u8 = 0x0;
/// `kTypeValue`: a put in the default column family.
const VALUE: u8 = 0x1;
/// `kTypeColumnFamilyDeletion`: a delete in the column family whose id follows.
const FAMILY_DELETION: u8 = 0x4;
/// `kTypeColumnFamilyValue`: a put in the column family whose id follows.
const FAMILY_VALUE: u8 = 0x5;
/// The sequence number and the count before the records.
const HEADER: usize = 12;

/// Reads a varint32 at `*at`, moving past it.
fn varint32(rep: &[u8], at: &mut usize) -> Result<u32, String> {
    let mut value = 0u32;
    for shift in (0..35).step_by(7) {
        let byte = *rep
            .get(*at)
            .ok_or_else(|| format!("the write batch ends inside a number at byte {at}"))?;
        *at += 1;
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(format!("a number longer than 5 bytes ends at byte {at}"))
}

/// Appends `value` as a varint32.
fn put_varint32(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Moves past a length-prefixed byte string at `*at`.
fn skip_slice(rep: &[u8], at: &mut usize) -> Result<(), String> {
    let len = varint32(rep, at)? as usize;
    let end = at
        .checked_add(len)
        .filter(|&end| end <= rep.len())
        .ok_or_else(|| format!("the write batch ends inside a key or value at byte {at}"))?;
    *at = end;
    Ok(())
}

/// The column family of the first record of `rep`, `None` for a batch without one.
pub(super) fn first_family(rep: &[u8]) -> Result<Option<u32>, String> {
    let mut at = HEADER;
    match rep.get(at) {
        None => Ok(None),
        Some(&(VALUE | DELETION)) => Ok(Some(0)),
        Some(&(FAMILY_VALUE | FAMILY_DELETION)) => {
            at += 1;
            varint32(rep, &mut at).map(Some)
        }
        Some(&tag) => Err(unknown(tag, at)),
    }
}

/// A copy of `rep` whose records in column family `from` are in column family `to`.
pub(super) fn retarget(rep: &[u8], from: u32, to: u32) -> Result<Vec<u8>, String> {
    let header = rep
        .get(..HEADER)
        .ok_or("the write batch is shorter than its header")?;
    let mut out = Vec::with_capacity(rep.len() + 8);
    out.extend_from_slice(header);
    let mut at = HEADER;
    while let Some(&tag) = rep.get(at) {
        at += 1;
        out.push(tag);
        let values = match tag {
            VALUE => 1,
            DELETION => 0,
            FAMILY_VALUE | FAMILY_DELETION => {
                let id = varint32(rep, &mut at)?;
                put_varint32(&mut out, if id == from { to } else { id });
                usize::from(tag == FAMILY_VALUE)
            }
            tag => return Err(unknown(tag, at - 1)),
        };
        let start = at;
        for _ in 0..=values {
            skip_slice(rep, &mut at)?;
        }
        out.extend_from_slice(&rep[start..at]);
    }
    Ok(out)
}

fn unknown(tag: u8, at: usize) -> String {
    format!("a record of type 0x{tag:02x} at byte {at}, which this store never writes")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record: tag, column family, key, value.
    type Record<'a> = (u8, u32, &'a [u8], Option<&'a [u8]>);

    /// A batch of `records` as RocksDB lays it out.
    fn rep(records: &[Record<'_>]) -> Vec<u8> {
        let mut out = vec![0; 8];
        out.extend_from_slice(&(records.len() as u32).to_le_bytes());
        for &(tag, family, key, value) in records {
            out.push(tag);
            if tag >= FAMILY_DELETION {
                put_varint32(&mut out, family);
            }
            for slice in std::iter::once(key).chain(value) {
                put_varint32(&mut out, slice.len() as u32);
                out.extend_from_slice(slice);
            }
        }
        out
    }

    #[test]
    fn records_of_one_family_move_to_another_and_the_rest_stay() {
        let long = vec![7u8; 300];
        let before = rep(&[
            (FAMILY_VALUE, 3, b"a", Some(b"1")),
            (FAMILY_DELETION, 4, b"b", None),
            (FAMILY_VALUE, 3, &long, Some(&long)),
            (FAMILY_DELETION, 3, b"c", None),
            (VALUE, 0, b"d", Some(b"")),
            (DELETION, 0, b"e", None),
        ]);
        let after = retarget(&before, 3, 200).unwrap();
        assert_eq!(
            after,
            rep(&[
                (FAMILY_VALUE, 200, b"a", Some(b"1")),
                (FAMILY_DELETION, 4, b"b", None),
                (FAMILY_VALUE, 200, &long, Some(&long)),
                (FAMILY_DELETION, 200, b"c", None),
                (VALUE, 0, b"d", Some(b"")),
                (DELETION, 0, b"e", None),
            ])
        );
        assert_eq!(first_family(&after).unwrap(), Some(200));
        assert_eq!(first_family(&rep(&[])).unwrap(), None);
        assert_eq!(retarget(&rep(&[]), 1, 2).unwrap(), rep(&[]));
    }

    #[test]
    fn a_cut_or_unknown_batch_is_an_error_not_a_guess() {
        let whole = rep(&[(FAMILY_VALUE, 3, b"key", Some(b"value"))]);
        for cut in [5, HEADER + 1, HEADER + 3, whole.len() - 1] {
            assert!(retarget(&whole[..cut], 3, 4).is_err(), "cut at {cut}");
        }
        let mut merge = whole.clone();
        merge[HEADER] = 0x6;
        let e = retarget(&merge, 3, 4).unwrap_err();
        assert!(e.contains("0x06"), "{e}");
        assert!(first_family(&merge).is_err());
    }
}
