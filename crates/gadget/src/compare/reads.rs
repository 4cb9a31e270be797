//! Comparing what the gets of two traces with the same requests found (`gadget trace diff
//! --reads`): a recording against Gadget's trace of `gadget gen --reads`, or two recordings.

use crate::access::ReadLen;

use super::Normalizer;

/// What the gets of two traces found, compared get by get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadsCompared {
    /// Gets compared (both traces say what they found).
    pub agreeing: usize,
    /// Gets that one of the traces (or both) says nothing about.
    pub not_known: usize,
    /// The first get that found different things: its request's index among the compared
    /// requests, what A's found, what B's found.
    pub first_difference: Option<(usize, ReadLen, ReadLen)>,
}

impl ReadsCompared {
    /// True when every get of both traces says what it found and they all agree.
    pub fn agree(&self) -> bool {
        self.not_known == 0 && self.first_difference.is_none()
    }
}

/// Compares what the gets of `a` and `b` found, in order: for traces whose normalized requests
/// are the same (their gets then stand at the same places), stopping at the first difference.
pub fn compare_reads(a: &Normalizer, b: &Normalizer) -> ReadsCompared {
    let mut c = ReadsCompared {
        agreeing: 0,
        not_known: 0,
        first_difference: None,
    };
    for (&(at, x), &(_, y)) in a.reads.iter().zip(&b.reads) {
        if x == ReadLen::Unknown || y == ReadLen::Unknown {
            c.not_known += 1;
        } else if x == y {
            c.agreeing += 1;
        } else {
            c.first_difference = Some((at, x, y));
            break;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Op, TraceRecord};

    fn trace(reads: &[ReadLen]) -> Normalizer {
        let mut n = Normalizer::new();
        let names = ["s".to_string()];
        for (i, r) in reads.iter().enumerate() {
            let key = vec![i as u8];
            n.push(
                &TraceRecord::Access {
                    op: Op::Put,
                    state: 0,
                    key: key.clone(),
                    value_len: 8,
                },
                &names,
            );
            n.push(
                &TraceRecord::Access {
                    op: Op::Get,
                    state: 0,
                    key,
                    value_len: r.value_len(),
                },
                &names,
            );
        }
        n
    }

    #[test]
    fn gets_agree_differ_at_their_request_or_are_not_known() {
        let (found, nothing) = (ReadLen::Found(8), ReadLen::Missing);
        let same = compare_reads(&trace(&[found, nothing]), &trace(&[found, nothing]));
        assert!(same.agree() && same.agreeing == 2, "{same:?}");
        let differs = compare_reads(&trace(&[found, found]), &trace(&[found, nothing]));
        assert_eq!(differs.first_difference, Some((3, found, nothing)));
        assert!(!differs.agree());
        let unknown = compare_reads(&trace(&[found]), &trace(&[ReadLen::Unknown]));
        assert_eq!((unknown.not_known, unknown.agree()), (1, false));
    }
}
