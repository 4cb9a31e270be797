//! Histograms as results files keep them: HdrHistogram's V2 compressed encoding (the one its
//! interval logs use, readable by every HdrHistogram library), in base64.
//!
//! Decoding checks what it reads before it allocates: a damaged or hostile string is an error
//! that says what is wrong with it, never a panic or a multi-gigabyte buffer.

use std::io::Read;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
/// The histogram type results hold (HdrHistogram's), for readers of [`decode`]'s histograms.
pub use hdrhistogram::Histogram;

use crate::summary::{HIGHEST_NS, SIGNIFICANT_DIGITS};

/// How results files write histograms (the `encoding` of `histograms`).
pub const ENCODING: &str = "hdr-v2-deflate-base64";

/// HdrHistogram's cookie of its V2 encoding (8-byte words).
const V2_COOKIE: u32 = 0x1c84_9313;
/// HdrHistogram's cookie of its compressed V2 encoding.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// Bytes of a V2 header: cookie, payload length, normalizing offset, digits, lowest, highest,
/// integer-to-double ratio.
const V2_HEADER: usize = 40;
/// The longest V2 payload of a histogram of Gadget's bounds: nine bytes (the longest varint)
/// per count, with room to spare.
const MAX_PAYLOAD: usize = 64 * 1024 * 10;
/// The longest encoded histogram read (base64 characters).
const MAX_ENCODED: usize = 4 * MAX_PAYLOAD;

/// What is wrong with an encoded histogram.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HdrError {
    /// Not base64.
    #[error("not base64 ({0})")]
    Base64(String),
    /// Too long to be a histogram of Gadget's bounds.
    #[error("{0} characters long, longer than any histogram of Gadget's bounds")]
    TooLong(usize),
    /// Not HdrHistogram's V2 encoding, or cut short.
    #[error("not an HdrHistogram V2 encoding: {0}")]
    Format(String),
    /// A histogram of other bounds than Gadget's.
    #[error(
        "a histogram of {lowest} to {highest} ns with {digits} significant digits, not Gadget's \
         (1 to {HIGHEST_NS} ns, {SIGNIFICANT_DIGITS} digits)"
    )]
    Bounds {
        /// Its lowest discernible value.
        lowest: u64,
        /// Its highest trackable value.
        highest: u64,
        /// Its significant digits.
        digits: u32,
    },
}

/// The largest count of one bucket the V2 encoding holds (a zigzag-encoded i64).
pub const MAX_COUNT: u64 = i64::MAX as u64;

/// `h` in HdrHistogram's V2 compressed encoding, base64. A bucket counting more than
/// [`MAX_COUNT`] (which only a sum of damaged counts reaches; `gadget merge` refuses
/// those first) is written as [`MAX_COUNT`].
pub fn encode(h: &Histogram<u64>) -> String {
    let saturated;
    // no bucket counts more than all of them: only a total beyond MAX_COUNT needs a look
    let h = if h.len() > MAX_COUNT {
        saturated = saturate(h);
        &saturated
    } else {
        h
    };
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("a histogram of Gadget's bounds whose counts fit in an i64 serializes into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `h` with every bucket's count at most [`MAX_COUNT`].
#[cold]
fn saturate(h: &Histogram<u64>) -> Histogram<u64> {
    let mut out = Histogram::new_from(h);
    for v in h.iter_recorded() {
        out.saturating_record_n(v.value_iterated_to(), v.count_at_value().min(MAX_COUNT));
    }
    out
}

/// The histogram `encoded` holds ([`encode`]'s, or any V2 encoding, compressed or not, of a
/// histogram with Gadget's bounds).
pub fn decode(encoded: &str) -> Result<Histogram<u64>, HdrError> {
    if encoded.len() > MAX_ENCODED {
        return Err(HdrError::TooLong(encoded.len()));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| HdrError::Base64(e.to_string()))?;
    let raw = match cookie(&bytes, 0)? {
        V2_COOKIE => bytes,
        V2_COMPRESSED_COOKIE => inflate(&bytes)?,
        c => {
            return Err(HdrError::Format(format!(
                "it starts with {c:#010x}, not a V2 cookie"
            )))
        }
    };
    check_header(&raw)?;
    Deserializer::new()
        .deserialize::<u64, _>(&mut &raw[..])
        .map_err(|e| HdrError::Format(e.to_string()))
}

/// The big-endian u32 at `at`.
fn cookie(bytes: &[u8], at: usize) -> Result<u32, HdrError> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| HdrError::Format(format!("cut short at byte {}", bytes.len())))
}

/// The big-endian u64 at `at`.
fn word(bytes: &[u8], at: usize) -> Result<u64, HdrError> {
    let b = bytes
        .get(at..at + 8)
        .ok_or_else(|| HdrError::Format(format!("cut short at byte {}", bytes.len())))?;
    let mut w = [0; 8];
    w.copy_from_slice(b);
    Ok(u64::from_be_bytes(w))
}

/// The V2 encoding inside a compressed one, read no further than the longest it can be.
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, HdrError> {
    let len = cookie(bytes, 4)? as usize;
    let deflated = bytes.get(8..8 + len).ok_or_else(|| {
        HdrError::Format(format!(
            "its compressed payload of {len} bytes is cut short at byte {}",
            bytes.len()
        ))
    })?;
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(deflated)
        .take((V2_HEADER + MAX_PAYLOAD + 1) as u64)
        .read_to_end(&mut raw)
        .map_err(|e| HdrError::Format(format!("its compressed payload does not inflate: {e}")))?;
    if raw.len() > V2_HEADER + MAX_PAYLOAD {
        return Err(HdrError::Format(
            "it inflates to more than any histogram of Gadget's bounds".into(),
        ));
    }
    if cookie(&raw, 0)? != V2_COOKIE {
        return Err(HdrError::Format(
            "its compressed payload is not a V2 encoding".into(),
        ));
    }
    Ok(raw)
}

/// Checks a V2 header: Gadget's bounds, and a payload as long as the header says.
fn check_header(raw: &[u8]) -> Result<(), HdrError> {
    if raw.len() < V2_HEADER {
        return Err(HdrError::Format(format!(
            "cut short at byte {} of its {V2_HEADER}-byte header",
            raw.len()
        )));
    }
    let payload = cookie(raw, 4)? as usize;
    if payload != raw.len() - V2_HEADER {
        return Err(HdrError::Format(format!(
            "its header announces {payload} bytes of counts, it holds {}",
            raw.len() - V2_HEADER
        )));
    }
    let digits = cookie(raw, 12)?;
    let (lowest, highest) = (word(raw, 16)?, word(raw, 24)?);
    if digits != u32::from(SIGNIFICANT_DIGITS) || lowest != 1 || highest != HIGHEST_NS {
        return Err(HdrError::Bounds {
            lowest,
            highest,
            digits,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::histogram;

    fn sample() -> Histogram<u64> {
        let mut h = histogram();
        for v in [
            1,
            2,
            999,
            1_000,
            1_001,
            52_345,
            7_000_000,
            HIGHEST_NS,
            u64::MAX,
        ] {
            h.saturating_record(v);
        }
        h
    }

    #[test]
    fn a_histogram_comes_back_bucket_for_bucket() {
        let h = sample();
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(
            (back.len(), back.max(), back.min()),
            (h.len(), h.max(), h.min())
        );
        let empty = histogram();
        assert_eq!(decode(&encode(&empty)).unwrap(), empty);
    }

    #[test]
    fn counts_beyond_what_the_encoding_holds_are_written_saturated_not_a_panic() {
        let mut h = histogram();
        h.record_n(1_000, MAX_COUNT).unwrap();
        h.record_n(1_000, MAX_COUNT).unwrap();
        h.record_n(5, 3).unwrap();
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back.count_at(1_000), MAX_COUNT);
        assert_eq!(back.count_at(5), 3);
    }

    #[test]
    fn the_uncompressed_encoding_is_read_too() {
        let h = sample();
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut bytes)
            .unwrap();
        let text = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert_eq!(decode(&text).unwrap(), h);
    }

    #[test]
    fn damaged_or_foreign_encodings_are_errors_that_say_why() {
        let good = encode(&sample());
        assert!(matches!(decode("not base64!"), Err(HdrError::Base64(_))));
        assert!(matches!(decode(""), Err(HdrError::Format(_))));
        // cut short
        let cut = &good[..good.len() / 2];
        let cut = &cut[..cut.len() / 4 * 4];
        assert!(matches!(decode(cut), Err(HdrError::Format(_))), "{cut}");
        // another histogram's bounds
        let other = Histogram::<u64>::new_with_bounds(1, 1_000_000, 2).unwrap();
        let e = decode(&encode(&other)).unwrap_err();
        assert!(matches!(e, HdrError::Bounds { digits: 2, .. }), "{e}");
        assert!(e.to_string().contains("not Gadget's"), "{e}");
        // a header that announces more counts than it holds
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&sample(), &mut bytes)
            .unwrap();
        bytes[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
        assert!(matches!(decode(&text), Err(HdrError::Format(_))));
        // a compressed payload announced longer than it is
        let mut bytes = base64::engine::general_purpose::STANDARD
            .decode(&good)
            .unwrap();
        bytes[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
        assert!(matches!(decode(&text), Err(HdrError::Format(_))));
        assert!(matches!(
            decode(&"A".repeat(MAX_ENCODED + 4)),
            Err(HdrError::TooLong(_))
        ));
    }
}
