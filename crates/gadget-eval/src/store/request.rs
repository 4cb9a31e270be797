//! How a request of the workload becomes a call on a store.

use gadget::access::{range_bounds, Access, Op};

use super::{Store, StoreError};
use crate::value::ValueBytes;
use crate::workload::{Request, RequestBlock};

/// Issues one request to `store`: `Some(length read)` for ops that read (`Some(None)`: nothing
/// found), `None` for writes.
#[inline(always)]
pub fn issue<S: Store + ?Sized>(
    store: &mut S,
    block: &RequestBlock,
    r: &Request,
    values: &mut ValueBytes,
) -> Result<Option<Option<usize>>, StoreError> {
    issue_access(
        store,
        Access {
            op: r.op,
            state: r.state,
            key: block.key(r),
            value_len: r.value_len,
        },
        values,
    )
}

/// Issues one access to `store`, as [`issue`] does a request of a block.
#[inline(always)]
pub fn issue_access<S: Store + ?Sized>(
    store: &mut S,
    a: Access<'_>,
    values: &mut ValueBytes,
) -> Result<Option<Option<usize>>, StoreError> {
    let Access {
        op,
        state,
        key,
        value_len,
    } = a;
    Ok(match op {
        Op::Get => Some(store.get(state, key)?),
        Op::Seek => Some(store.seek(state, key)?),
        Op::Next => Some(store.next(state)?),
        Op::Put => {
            store.put(state, key, values.next(value_len as usize))?;
            None
        }
        Op::Merge => {
            store.merge(state, key, values.next(value_len as usize))?;
            None
        }
        Op::BatchPut => {
            store.batch_put(state, key, values.next(value_len as usize))?;
            None
        }
        Op::Delete => {
            store.delete(state, key)?;
            None
        }
        Op::BatchDelete => {
            store.batch_delete(state, key)?;
            None
        }
        Op::BatchCommit => {
            store.batch_commit()?;
            None
        }
        Op::RangeQuery | Op::RangeDelete => {
            let Some((start, end)) = range_bounds(op, key, value_len) else {
                return Err(StoreError::Request {
                    store: store.name(),
                    op,
                    message: format!(
                        "the request's start bound ({} bytes) is longer than its key ({} bytes)",
                        value_len,
                        key.len()
                    ),
                });
            };
            if op == Op::RangeQuery {
                Some(Some(store.range_query(state, start, end)?))
            } else {
                store.range_delete(state, start, end)?;
                None
            }
        }
        Op::Open => {
            let name = std::str::from_utf8(key).map_err(|_| StoreError::Request {
                store: store.name(),
                op,
                message: "the name of the state it opens is not UTF-8".into(),
            })?;
            store.open_state(state, name)?;
            None
        }
        Op::Drop => {
            store.drop_state(state)?;
            None
        }
        Op::Flush => {
            store.flush_state(state)?;
            None
        }
        Op::Checkpoint => {
            store.checkpoint_state(state)?;
            None
        }
    })
}
