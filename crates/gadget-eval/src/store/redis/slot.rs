//! Redis Cluster's key slots: CRC16 (XMODEM) of the key, or of its hash tag (the part between
//! the first `{` and the next `}`, when not empty), modulo 16384.

/// Slots in a Redis Cluster.
pub(crate) const SLOTS: usize = 16384;

/// Feeds `bytes` into a CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0).
fn crc16_update(mut crc: u16, bytes: &[u8]) -> u16 {
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// CRC16 of `parts` one after the other.
#[cfg(test)]
fn crc16(parts: &[&[u8]]) -> u16 {
    parts.iter().fold(0, |crc, p| crc16_update(crc, p))
}

/// A position in a key made of parts: (part, byte in it).
type At = (usize, usize);

/// Where the hash tag of the key made of `parts` lies, as Redis Cluster finds it: after the
/// first `{` up to the next `}`; `None` when there is none or it is empty.
fn hash_tag(parts: &[&[u8]]) -> Option<(At, At)> {
    let mut open: Option<At> = None;
    let mut tag_len = 0usize;
    for (p, part) in parts.iter().enumerate() {
        for (i, &b) in part.iter().enumerate() {
            match open {
                None if b == b'{' => open = Some((p, i + 1)),
                Some(start) if b == b'}' => return (tag_len > 0).then_some((start, (p, i))),
                Some(_) => tag_len += 1,
                None => {}
            }
        }
    }
    None
}

/// The slot of the key made of `parts` one after the other (a prefix and a key), without
/// joining them and without allocating.
pub(crate) fn slot_of(parts: &[&[u8]]) -> u16 {
    let crc = match hash_tag(parts) {
        None => parts.iter().fold(0, |crc, p| crc16_update(crc, p)),
        Some((start, end)) => {
            let mut crc = 0;
            for (p, part) in parts.iter().enumerate().take(end.0 + 1).skip(start.0) {
                let from = if p == start.0 { start.1 } else { 0 };
                let to = if p == end.0 { end.1 } else { part.len() };
                crc = crc16_update(crc, &part[from..to]);
            }
            crc
        }
    };
    crc % SLOTS as u16
}

/// A hash tag whose slot is `slot`: `{` + the tag + `}` put in front of a key sends it there.
pub(crate) fn tag_for_slot(slot: u16) -> String {
    (0u64..)
        .map(|n| format!("n{n}"))
        .find(|t| slot_of(&[t.as_bytes()]) == slot)
        .expect("every slot has a short tag")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis_cluster_specification() {
        // the specification's check value, and slots `redis-cli cluster keyslot` gives
        assert_eq!(crc16(&[b"123456789"]), 0x31C3);
        assert_eq!(slot_of(&[b"foo"]), 12182);
        assert_eq!(slot_of(&[b"bar"]), 5061);
        assert_eq!(slot_of(&[b"fo", b"o"]), 12182, "parts hash as one key");
    }

    #[test]
    fn hash_tags_pick_the_part_between_the_first_braces() {
        let tagged = slot_of(&[b"{user1000}.following"]);
        assert_eq!(tagged, slot_of(&[b"{user1000}.followers"]));
        assert_eq!(tagged, slot_of(&[b"user1000"]));
        assert_eq!(slot_of(&[b"pre:", b"{user1000}.x"]), tagged);
        assert_eq!(
            slot_of(&[b"pre{user", b"1000}x"]),
            tagged,
            "a tag across parts"
        );
        // an empty tag is no tag: the whole key is hashed
        assert_eq!(slot_of(&[b"foo{}{bar}"]), crc16(&[b"foo{}{bar}"]) % 16384);
        assert_eq!(slot_of(&[b"foo{", b"}{bar}"]), slot_of(&[b"foo{}{bar}"]));
        assert_eq!(slot_of(&[b"foo{{bar}}zap"]), slot_of(&[b"{bar"]));
        assert_eq!(slot_of(&[b"foo{bar}{zap}"]), slot_of(&[b"bar"]));
    }

    #[test]
    fn a_tag_for_a_slot_lands_there() {
        for slot in [0, 1, 5460, 5461, 10922, 16383] {
            let tag = tag_for_slot(slot);
            assert_eq!(slot_of(&[format!("{{{tag}}}:rest").as_bytes()]), slot);
        }
    }
}
