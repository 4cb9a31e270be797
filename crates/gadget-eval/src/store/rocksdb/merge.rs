//! Flink's merge operator, `StringAppendTESTOperator(',')` (named `stringappendtest`), as C
//! callbacks: RocksDB's C API cannot name a built-in operator, so the same operation runs here.
//! Results are Rust allocations that RocksDB hands back through `delete_value` to be freed.

use std::ffi::{c_char, c_int, c_uchar, c_void};

use super::api::{Api, MergeOperator};
use crate::store::MERGE_DELIMITER;

/// The operator's name, as Flink's RocksDB state backend names it.
const NAME: &[u8] = b"stringappendtest\0";

/// A new merge operator; the options it is set on own it.
pub(super) fn string_append(api: &Api) -> *mut MergeOperator {
    // SAFETY: the callbacks below have the C signatures c.h gives; the state is unused (null)
    // and the destructor does nothing with it.
    unsafe {
        (api.mergeoperator_create)(
            std::ptr::null_mut(),
            destroy,
            full_merge,
            partial_merge,
            delete_value,
            name,
        )
    }
}

/// The operands joined by `,` after `existing` (when there is one), as a leaked boxed slice
/// whose length goes to `new_length`.
///
/// # Safety
/// `operands` and `lengths` point to `count` operands as RocksDB passes them.
unsafe fn append(
    existing: Option<&[u8]>,
    operands: *const *const c_char,
    lengths: *const usize,
    count: c_int,
    success: *mut c_uchar,
    new_length: *mut usize,
) -> *mut c_char {
    let count = usize::try_from(count).unwrap_or(0);
    // SAFETY: RocksDB passes `count` operand pointers and lengths (none when count is 0).
    let (operands, lengths) = if count == 0 {
        (&[][..], &[][..])
    } else {
        (
            std::slice::from_raw_parts(operands, count),
            std::slice::from_raw_parts(lengths, count),
        )
    };
    let total = existing.map_or(0, |e| e.len() + 1) + lengths.iter().sum::<usize>() + count;
    let mut out = Vec::with_capacity(total);
    if let Some(e) = existing {
        out.extend_from_slice(e);
    }
    for (i, (&operand, &length)) in operands.iter().zip(lengths).enumerate() {
        if i > 0 || existing.is_some() {
            out.push(MERGE_DELIMITER);
        }
        // SAFETY: each operand is `length` readable bytes.
        out.extend_from_slice(bytes(operand, length));
    }
    let out = out.into_boxed_slice();
    *new_length = out.len();
    *success = 1;
    Box::into_raw(out).cast()
}

/// `length` bytes at `data` (none when `data` is null).
///
/// # Safety
/// A non-null `data` points to `length` readable bytes that outlive the slice's use.
unsafe fn bytes<'a>(data: *const c_char, length: usize) -> &'a [u8] {
    if data.is_null() || length == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(data.cast(), length)
    }
}

unsafe extern "C" fn full_merge(
    _state: *mut c_void,
    _key: *const c_char,
    _key_length: usize,
    existing: *const c_char,
    existing_length: usize,
    operands: *const *const c_char,
    lengths: *const usize,
    count: c_int,
    success: *mut c_uchar,
    new_length: *mut usize,
) -> *mut c_char {
    let existing = (!existing.is_null()).then(|| bytes(existing, existing_length));
    append(existing, operands, lengths, count, success, new_length)
}

unsafe extern "C" fn partial_merge(
    _state: *mut c_void,
    _key: *const c_char,
    _key_length: usize,
    operands: *const *const c_char,
    lengths: *const usize,
    count: c_int,
    success: *mut c_uchar,
    new_length: *mut usize,
) -> *mut c_char {
    append(None, operands, lengths, count, success, new_length)
}

unsafe extern "C" fn delete_value(_state: *mut c_void, value: *const c_char, length: usize) {
    // SAFETY: `value` and `length` are a boxed slice `append` leaked, handed back once.
    drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
        value.cast_mut().cast::<u8>(),
        length,
    )));
}

unsafe extern "C" fn name(_state: *mut c_void) -> *const c_char {
    NAME.as_ptr().cast()
}

unsafe extern "C" fn destroy(_state: *mut c_void) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(existing: Option<&[u8]>, operands: &[&[u8]]) -> Vec<u8> {
        let pointers: Vec<*const c_char> = operands.iter().map(|o| o.as_ptr().cast()).collect();
        let lengths: Vec<usize> = operands.iter().map(|o| o.len()).collect();
        let (mut success, mut length) = (0, 0);
        // SAFETY: pointers and lengths describe `operands`; the result is freed below.
        unsafe {
            let out = append(
                existing,
                pointers.as_ptr(),
                lengths.as_ptr(),
                operands.len() as c_int,
                &mut success,
                &mut length,
            );
            assert_eq!(success, 1);
            let v = bytes(out, length).to_vec();
            delete_value(std::ptr::null_mut(), out, length);
            v
        }
    }

    #[test]
    fn operands_follow_the_existing_value_with_commas_between() {
        assert_eq!(merged(Some(b"a"), &[b"b", b"c"]), b"a,b,c");
        assert_eq!(merged(None, &[b"b", b"c"]), b"b,c");
        assert_eq!(merged(Some(b""), &[b"b"]), b",b");
        assert_eq!(merged(None, &[b"", b"c"]), b",c");
        assert_eq!(merged(None, &[]), b"");
    }
}
