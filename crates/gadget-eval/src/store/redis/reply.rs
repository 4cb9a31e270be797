//! Replies in RESP2, the Redis protocol: read in place from the connection's buffer, without
//! copying or allocating.
//!
//! A reply is one frame, and an array frame is followed by its elements' frames. [`reply_len`]
//! says whether the buffer holds a whole reply yet; [`Reply`] reads one.

/// The longest bulk string Gadget accepts, Redis's own limit (`proto-max-bulk-len`).
pub(crate) const MAX_BULK_LEN: usize = 512 << 20;

/// A reply Gadget cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {offset} of the reply: {message}")]
pub(crate) struct ProtocolError {
    /// Where in the reply the problem is.
    pub offset: usize,
    /// What is wrong there.
    pub message: &'static str,
}

/// One frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// `+OK`.
    Simple(&'a [u8]),
    /// `-ERR …`: the server refused the command.
    Error(&'a [u8]),
    /// `:42`.
    Integer(i64),
    /// `$3 abc`, or `$-1`: no value.
    Bulk(Option<&'a [u8]>),
    /// `*2` followed by two frames, or `*-1`: no array.
    Array(Option<usize>),
}

/// The frame starting at `at` in `buf` and where the next one starts; `None` when `buf` ends
/// before the frame does.
pub(crate) fn frame(buf: &[u8], at: usize) -> Result<Option<(Frame<'_>, usize)>, ProtocolError> {
    let Some(&kind) = buf.get(at) else {
        return Ok(None);
    };
    let Some(line_end) = find_crlf(buf, at + 1) else {
        return Ok(None);
    };
    let line = &buf[at + 1..line_end];
    let next = line_end + 2;
    let bad = |message| ProtocolError {
        offset: at,
        message,
    };
    Ok(Some(match kind {
        b'+' => (Frame::Simple(line), next),
        b'-' => (Frame::Error(line), next),
        b':' => (
            Frame::Integer(integer(line).ok_or(bad("an integer that is not a number"))?),
            next,
        ),
        b'$' => match integer(line).ok_or(bad("a bulk length that is not a number"))? {
            -1 => (Frame::Bulk(None), next),
            n if n < 0 || n as u64 > MAX_BULK_LEN as u64 => {
                return Err(bad("a bulk length out of range"))
            }
            n => {
                let end = next + n as usize;
                if buf.len() < end + 2 {
                    return Ok(None);
                }
                if &buf[end..end + 2] != b"\r\n" {
                    return Err(bad("a bulk string not followed by CRLF"));
                }
                (Frame::Bulk(Some(&buf[next..end])), end + 2)
            }
        },
        b'*' => match integer(line).ok_or(bad("an array length that is not a number"))? {
            -1 => (Frame::Array(None), next),
            n if n < 0 => return Err(bad("a negative array length")),
            n => (Frame::Array(Some(n as usize)), next),
        },
        _ => {
            return Err(bad(
                "an unknown frame type (is this a Redis server speaking RESP2?)",
            ))
        }
    }))
}

/// The length of the whole reply at the start of `buf` (every element of its arrays), `None`
/// when `buf` ends before it does.
pub(crate) fn reply_len(buf: &[u8]) -> Result<Option<usize>, ProtocolError> {
    let mut at = 0;
    let mut frames_left: u64 = 1;
    while frames_left > 0 {
        let Some((f, next)) = frame(buf, at)? else {
            return Ok(None);
        };
        frames_left -= 1;
        if let Frame::Array(Some(n)) = f {
            frames_left = frames_left.saturating_add(n as u64);
        }
        at = next;
    }
    Ok(Some(at))
}

/// One whole reply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reply<'a> {
    buf: &'a [u8],
}

impl<'a> Reply<'a> {
    /// The reply that `buf` holds whole (as [`reply_len`] measured it).
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reply { buf }
    }

    fn top(&self) -> Result<(Frame<'a>, usize), ProtocolError> {
        frame(self.buf, 0)?.ok_or(ProtocolError {
            offset: self.buf.len(),
            message: "a reply that ends early",
        })
    }

    /// The first error anywhere in the reply (`EXEC` answers with one reply per command).
    pub(crate) fn error(&self) -> Option<&'a [u8]> {
        let mut at = 0;
        while let Ok(Some((f, next))) = frame(self.buf, at) {
            if let Frame::Error(e) = f {
                return Some(e);
            }
            at = next;
        }
        None
    }

    /// The bulk string the reply is, `None` for `$-1`.
    pub(crate) fn bulk(&self) -> Result<Option<&'a [u8]>, ProtocolError> {
        match self.top()? {
            (Frame::Bulk(b), _) => Ok(b),
            _ => Err(not_a("a reply that is not a bulk string")),
        }
    }

    /// The integer the reply is (`:123`).
    pub(crate) fn integer(&self) -> Result<i64, ProtocolError> {
        match self.top()? {
            (Frame::Integer(i), _) => Ok(i),
            _ => Err(not_a("a reply that is not an integer")),
        }
    }

    /// The elements of the array the reply is (none for `*-1`).
    pub(crate) fn items(&self) -> Result<Items<'a>, ProtocolError> {
        match self.top()? {
            (Frame::Array(n), next) => Ok(Items {
                buf: self.buf,
                at: next,
                left: n.unwrap_or(0),
            }),
            _ => Err(not_a("a reply that is not an array")),
        }
    }
}

fn not_a(message: &'static str) -> ProtocolError {
    ProtocolError { offset: 0, message }
}

/// The elements of an array reply, each a reply of its own.
#[derive(Debug, Clone)]
pub(crate) struct Items<'a> {
    buf: &'a [u8],
    at: usize,
    left: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Result<Reply<'a>, ProtocolError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let rest = &self.buf[self.at..];
        Some(match reply_len(rest) {
            Ok(Some(n)) => {
                self.at += n;
                Ok(Reply::new(&rest[..n]))
            }
            Ok(None) => Err(ProtocolError {
                offset: self.buf.len(),
                message: "an array that ends early",
            }),
            Err(e) => Err(ProtocolError {
                offset: self.at + e.offset,
                ..e
            }),
        })
    }
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let rest = buf.get(from..)?;
    rest.windows(2).position(|w| w == b"\r\n").map(|i| from + i)
}

/// A decimal integer with an optional sign, as RESP writes lengths and integers.
fn integer(line: &[u8]) -> Option<i64> {
    let (negative, digits) = match line.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, line),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Some(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_type_is_read_and_an_incomplete_one_asks_for_more() {
        let whole = b"*5\r\n+OK\r\n-ERR no\r\n:-42\r\n$3\r\na\rb\r\n$-1\r\n";
        assert_eq!(reply_len(whole), Ok(Some(whole.len())));
        for cut in 0..whole.len() {
            assert_eq!(reply_len(&whole[..cut]), Ok(None), "cut at {cut}");
        }
        let r = Reply::new(whole);
        assert_eq!(r.error(), Some(&b"ERR no"[..]));
        let items: Vec<Reply> = r.items().unwrap().map(Result::unwrap).collect();
        assert_eq!(items.len(), 5);
        assert_eq!(
            items[3].bulk(),
            Ok(Some(&b"a\rb"[..])),
            "a bulk may hold CR"
        );
        assert_eq!(items[4].bulk(), Ok(None));
        assert!(items[0].bulk().is_err());
        assert_eq!(frame(b":-42\r\n", 0), Ok(Some((Frame::Integer(-42), 6))));
    }

    #[test]
    fn nested_arrays_count_as_one_reply() {
        let scan = b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n+NEXT\r\n";
        let n = reply_len(scan).unwrap().unwrap();
        assert_eq!(&scan[n..], b"+NEXT\r\n");
        let mut items = Reply::new(&scan[..n]).items().unwrap();
        assert_eq!(items.next().unwrap().unwrap().bulk(), Ok(Some(&b"0"[..])));
        let keys: Vec<_> = items
            .next()
            .unwrap()
            .unwrap()
            .items()
            .unwrap()
            .map(|k| k.unwrap().bulk().unwrap().unwrap())
            .collect();
        assert_eq!(keys, [&b"a"[..], b"b"]);
        assert!(items.next().is_none());
        assert_eq!(Reply::new(b"*-1\r\n").items().unwrap().count(), 0);
    }

    #[test]
    fn bad_frames_are_errors_with_their_offset() {
        for (bad, offset) in [
            (&b"?x\r\n"[..], 0),
            (b"$abc\r\n", 0),
            (b"$-2\r\n", 0),
            (b"$99999999999\r\n", 0),
            (b"*-5\r\n", 0),
            (b"*1\r\n:1x\r\n", 4),
            (b"$1\r\nab\r\n", 0),
        ] {
            assert_eq!(reply_len(bad).map_err(|e| e.offset), Err(offset), "{bad:?}");
        }
    }

    proptest::proptest! {
        /// Whatever a server sends, reading it never panics: a whole reply is measured
        /// within the bytes given and can be walked, anything else asks for more or is an
        /// error.
        #[test]
        fn any_bytes_are_read_without_panicking(
            bytes in proptest::collection::vec(proptest::sample::select(
                b"*$:+-\r\n0123456789-ab".to_vec()), 0..64),
        ) {
            if let Ok(Some(n)) = reply_len(&bytes) {
                proptest::prop_assert!(n <= bytes.len());
                let r = Reply::new(&bytes[..n]);
                let _ = r.error();
                let _ = r.bulk();
                if let Ok(items) = r.items() {
                    for item in items {
                        let _ = item.map(|i| i.bulk());
                    }
                }
            }
        }
    }

    #[test]
    fn a_huge_announced_array_waits_for_its_elements_instead_of_allocating() {
        assert_eq!(reply_len(b"*999999999999999999\r\n+a\r\n"), Ok(None));
    }
}
