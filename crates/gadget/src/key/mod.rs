//! Keys laid out as Flink's RocksDB state backend lays them out:
//! `key group | serialized key | namespace [| user key]`.

mod assignment;
mod hash;

pub use assignment::{
    default_max_parallelism, operator_index_for_key_group, KeyGroupRange,
    DEFAULT_LOWER_BOUND_MAX_PARALLELISM, UPPER_BOUND_MAX_PARALLELISM,
};
pub use hash::{java_string_hash, key_group_for_hash, long_to_int_with_bit_mixing, murmur_hash};

use std::fmt;
use std::sync::Arc;

/// The key of an event, as the job's key selector returns it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// A Java `long` (8 bytes big-endian on the wire).
    Long(i64),
    /// A Java `String` (Flink's `StringSerializer`).
    Str(Arc<str>),
    /// The constant `Byte 0` key that Flink uses for non-keyed `windowAll` operators.
    NullByte,
}

impl Key {
    /// Java's `hashCode()` of the key object.
    #[inline]
    pub fn java_hash(&self) -> i32 {
        match self {
            Key::Long(v) => (*v ^ ((*v as u64) >> 32) as i64) as i32,
            Key::Str(s) => java_string_hash(s),
            Key::NullByte => 0,
        }
    }

    /// Appends Flink's serialized form of the key.
    #[inline]
    pub fn serialize_into(&self, out: &mut Vec<u8>) {
        match self {
            Key::Long(v) => out.extend_from_slice(&v.to_be_bytes()),
            Key::Str(s) => write_java_string(s, out),
            Key::NullByte => out.push(0),
        }
    }
}

/// Which variant of [`Key`] a key is: what it takes to read it back from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// [`Key::Long`].
    Long,
    /// [`Key::Str`].
    Str,
    /// [`Key::NullByte`].
    NullByte,
}

impl Key {
    /// The key's variant.
    #[inline]
    pub fn kind(&self) -> KeyKind {
        match self {
            Key::Long(_) => KeyKind::Long,
            Key::Str(_) => KeyKind::Str,
            Key::NullByte => KeyKind::NullByte,
        }
    }

    /// Reads back a key of `kind` from exactly the bytes [`Key::serialize_into`] wrote;
    /// `None` when they are not such bytes.
    pub fn deserialize(kind: KeyKind, bytes: &[u8]) -> Option<Key> {
        match kind {
            KeyKind::Long => Some(Key::Long(i64::from_be_bytes(bytes.try_into().ok()?))),
            KeyKind::NullByte => (bytes == [0]).then_some(Key::NullByte),
            KeyKind::Str => {
                let (s, used) = read_java_string(bytes)?;
                (used == bytes.len()).then(|| Key::Str(s.into()))
            }
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Long(v) => write!(f, "{v}"),
            Key::Str(s) => f.write_str(s),
            Key::NullByte => f.write_str("<all>"),
        }
    }
}

/// Flink's `StringValue.writeString`: length + 1 as a 7-bit varint, then each UTF-16 unit as a 7-bit varint.
pub fn write_java_string(s: &str, out: &mut Vec<u8>) {
    let units = s.encode_utf16().count() as u32 + 1;
    write_java_varint(units, out);
    for unit in s.encode_utf16() {
        write_java_varint(unit as u32, out);
    }
}

/// Reads a string written by [`write_java_string`] at the start of `bytes`; the string and the
/// bytes it took. `None` for bytes that are not such a string.
pub fn read_java_string(bytes: &[u8]) -> Option<(String, usize)> {
    let mut pos = 0;
    let units = read_java_varint(bytes, &mut pos)?.checked_sub(1)?;
    let mut utf16 = Vec::with_capacity(units as usize);
    for _ in 0..units {
        utf16.push(u16::try_from(read_java_varint(bytes, &mut pos)?).ok()?);
    }
    Some((String::from_utf16(&utf16).ok()?, pos))
}

fn read_java_varint(bytes: &[u8], pos: &mut usize) -> Option<u32> {
    let mut v = 0u32;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u32::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

fn write_java_varint(mut v: u32, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The namespace part of a state key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Namespace {
    /// `VoidNamespace`: keyed state outside windows (one byte `00`).
    Void,
    /// A time window `[start, end)`: start and end, 8 bytes big-endian each.
    Window {
        /// Inclusive start, ms.
        start: i64,
        /// Exclusive end, ms.
        end: i64,
    },
}

impl Namespace {
    /// Appends the serialized namespace.
    #[inline]
    pub fn serialize_into(&self, out: &mut Vec<u8>) {
        match self {
            Namespace::Void => out.push(0),
            Namespace::Window { start, end } => {
                out.extend_from_slice(&start.to_be_bytes());
                out.extend_from_slice(&end.to_be_bytes());
            }
        }
    }
}

/// Builds state keys into reusable buffers (no allocation per access once warm).
///
/// The key group of the last key is remembered, since an event's requests all share its key
/// (a sliding window's event has the same key in every window it falls into).
#[derive(Debug, Clone)]
pub struct KeyLayout {
    max_parallelism: u32,
    buf: Vec<u8>,
    /// The state key of a long key in a window, the common one, composed here in place:
    /// composing it elsewhere and copying it in took a `memcpy` call per key.
    window_key: [u8; 26],
    last_key: Key,
    last_group: u32,
    /// The last long key and its key group.
    last_long: Option<(i64, u32)>,
}

impl KeyLayout {
    /// A layout for the given max parallelism (Flink's default is 128).
    pub fn new(max_parallelism: u32) -> Self {
        KeyLayout {
            max_parallelism,
            buf: Vec::with_capacity(64),
            window_key: [0; 26],
            last_key: Key::NullByte,
            last_group: key_group_for_hash(Key::NullByte.java_hash(), max_parallelism),
            last_long: None,
        }
    }

    /// The configured max parallelism (number of key groups).
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }

    /// The key group of a key.
    #[inline(always)]
    pub fn key_group(&self, key: &Key) -> u32 {
        key_group_for_hash(key.java_hash(), self.max_parallelism)
    }

    /// The key group of a key; from a one-entry cache (one for long keys, one for the
    /// others) when it is the previous key.
    #[inline(always)]
    pub fn cached_key_group(&mut self, key: &Key) -> u32 {
        if let Key::Long(k) = key {
            return match self.last_long {
                Some((last, group)) if last == *k => group,
                _ => {
                    let group = self.key_group(key);
                    self.last_long = Some((*k, group));
                    group
                }
            };
        }
        if *key != self.last_key {
            self.last_group = self.key_group(key);
            self.last_key = key.clone();
        }
        self.last_group
    }

    /// Bytes of the key-group prefix: 1 up to 128 key groups, else 2.
    #[inline]
    pub fn prefix_bytes(&self) -> usize {
        if self.max_parallelism > 128 {
            2
        } else {
            1
        }
    }

    /// The key-group prefix of `group` within two bytes: `group` big-endian, and where the
    /// prefix starts in them (0 for a two-byte prefix, 1 for a one-byte one). Writers that
    /// compose a key in a fixed array put both bytes first and start the key there.
    #[inline]
    pub fn key_group_bytes(&self, group: u32) -> ([u8; 2], usize) {
        ((group as u16).to_be_bytes(), 2 - self.prefix_bytes())
    }

    /// Appends the key-group prefix of `group` (one or two big-endian bytes).
    #[inline]
    pub fn push_key_group(&self, group: u32, out: &mut Vec<u8>) {
        match self.key_group_bytes(group) {
            (bytes, 0) => out.extend_from_slice(&bytes),
            (bytes, _) => out.push(bytes[1]),
        }
    }

    /// `key group | key | namespace`.
    #[inline(always)]
    pub fn state_key(&mut self, key: &Key, namespace: Namespace) -> &[u8] {
        if let (Key::Long(k), Namespace::Window { start, end }) = (key, namespace) {
            // the common window key, composed where it is read
            let group = self.cached_key_group(key);
            let (prefix, from) = self.key_group_bytes(group);
            let bytes = &mut self.window_key;
            bytes[..2].copy_from_slice(&prefix);
            bytes[2..10].copy_from_slice(&k.to_be_bytes());
            bytes[10..18].copy_from_slice(&start.to_be_bytes());
            bytes[18..26].copy_from_slice(&end.to_be_bytes());
            return &self.window_key[from..];
        }
        self.build(|layout, buf| layout.push_state_key(key, namespace, buf))
    }

    /// A key written by `write` into the reusable buffer, emptied first.
    fn build(&mut self, write: impl FnOnce(&mut Self, &mut Vec<u8>)) -> &[u8] {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        write(self, &mut buf);
        self.buf = buf;
        &self.buf
    }

    /// Appends `key group | key | namespace` to `out`.
    fn push_state_key(&mut self, key: &Key, namespace: Namespace, out: &mut Vec<u8>) {
        let group = self.cached_key_group(key);
        self.push_key_group(group, out);
        key.serialize_into(out);
        namespace.serialize_into(out);
    }

    /// `key group | key | namespace | user key (long)`: a map-state entry.
    pub fn map_key(&mut self, key: &Key, namespace: Namespace, user_key: i64) -> &[u8] {
        self.build(|layout, buf| {
            layout.push_state_key(key, namespace, buf);
            buf.extend_from_slice(&user_key.to_be_bytes());
        })
    }

    /// A RocksDB timer key: `key group | timestamp (sign bit flipped) | key | namespace bytes`.
    pub fn timer_key(&mut self, key: &Key, timestamp: i64, namespace: &[u8]) -> &[u8] {
        self.build(|layout, buf| {
            layout.write_timer_key_prefix(key, timestamp, buf);
            buf.extend_from_slice(namespace);
        })
    }

    /// Appends `key group | timestamp (sign bit flipped) | key` to `out`: a timer key without
    /// its namespace, which the caller appends.
    #[inline]
    pub fn write_timer_key_prefix(&mut self, key: &Key, timestamp: i64, out: &mut Vec<u8>) {
        let group = self.cached_key_group(key);
        self.push_key_group(group, out);
        out.extend_from_slice(&((timestamp as u64) ^ (1u64 << 63)).to_be_bytes());
        key.serialize_into(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn long_keys_match_the_flink_reference() {
        // From the tumbling-incr reference trace: job 6253... in window [150935000, 150940000).
        let mut layout = KeyLayout::new(128);
        let key = Key::Long(0x0000_0001_75c0_508d);
        let ns = Namespace::Window {
            start: 0x08ff15d8,
            end: 0x08ff2960,
        };
        assert_eq!(
            hex(layout.state_key(&key, ns)),
            "000000000175c0508d0000000008ff15d80000000008ff2960"
        );
        let key = Key::Long(0x0000_0001_75c0_428e);
        assert_eq!(
            hex(layout.state_key(&key, Namespace::Void)),
            "550000000175c0428e00"
        );
        let key = Key::Long(0x0000_0001_75c0_4e94);
        assert_eq!(
            hex(layout.map_key(&key, Namespace::Void, 0x08ff2e98)),
            "0c0000000175c04e94000000000008ff2e98"
        );
    }

    #[test]
    fn keys_read_back_from_their_bytes() {
        let keys = [
            Key::Long(0),
            Key::Long(-1),
            Key::Long(i64::MAX),
            Key::NullByte,
            Key::Str("".into()),
            Key::Str("job-42".into()),
            Key::Str("ünïcødé ✓ 𝄞".into()),
            Key::Str("x".repeat(300).into()),
        ];
        for key in &keys {
            let mut bytes = Vec::new();
            key.serialize_into(&mut bytes);
            assert_eq!(Key::deserialize(key.kind(), &bytes).as_ref(), Some(key));
            let mut longer = bytes.clone();
            longer.push(7);
            assert_eq!(
                Key::deserialize(key.kind(), &longer),
                None,
                "{key:?} + a byte"
            );
        }
        assert_eq!(Key::deserialize(KeyKind::Long, &[1, 2, 3]), None);
        assert_eq!(
            Key::deserialize(KeyKind::Str, &[0x80]),
            None,
            "a cut varint"
        );
        assert_eq!(
            Key::deserialize(KeyKind::Str, &[0]),
            None,
            "length 0 means null"
        );
    }

    #[test]
    fn strings_use_flinks_string_value_encoding() {
        let mut out = Vec::new();
        Key::Str("abc".into()).serialize_into(&mut out);
        assert_eq!(out, vec![4, b'a', b'b', b'c']);
        assert_eq!(Key::Str("abc".into()).java_hash(), 96354);
    }

    #[test]
    fn wide_key_groups_take_two_bytes() {
        let mut layout = KeyLayout::new(32768);
        let k = layout.state_key(&Key::Long(1), Namespace::Void).to_vec();
        assert_eq!(k.len(), 2 + 8 + 1);
    }

    #[test]
    fn window_keys_of_long_keys_are_group_key_start_end() {
        for max_parallelism in [128, 200, 32768] {
            let mut layout = KeyLayout::new(max_parallelism);
            for k in [0i64, 7, -3, i64::MAX, 0x0102_0304_0506_0708] {
                let key = Key::Long(k);
                let window = Namespace::Window {
                    start: -5000,
                    end: 0x7f00_0000_0000_0001,
                };
                let mut expected = Vec::new();
                layout.push_key_group(layout.key_group(&key), &mut expected);
                key.serialize_into(&mut expected);
                window.serialize_into(&mut expected);
                assert_eq!(
                    hex(layout.state_key(&key, window)),
                    hex(&expected),
                    "key {k}, max parallelism {max_parallelism}"
                );
            }
        }
    }

    #[test]
    fn timer_keys_flip_the_sign_bit() {
        let mut layout = KeyLayout::new(128);
        let k = layout.timer_key(&Key::Long(0), 0, &[]).to_vec();
        assert_eq!(&k[1..9], &[0x80, 0, 0, 0, 0, 0, 0, 0]);
    }
}
