//! What flows from a source into an operator: events and watermarks.

use crate::key::Key;

/// An input record as it reaches the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The key the job's key selector extracts.
    pub key: Key,
    /// Event time, ms.
    pub timestamp: i64,
    /// 0 for one-input operators; 1 (left) or 2 (right) for the inputs of a join.
    pub input: u8,
    /// The event ends its key's validity: a continuous join's closing event (a job's FINISH).
    pub closes: bool,
    /// Bytes the event's payload column takes serialized as a Java `String` (see
    /// [`java_string_bytes`]), which a holistic window keeps with the element; 0 without
    /// one (`[source] payload_column`).
    pub payload: u16,
}

/// Bytes Flink's `StringSerializer` writes for `s` (`StringValue.writeString`): one more than
/// its length as a variable-length integer (7 bits a byte), then each UTF-16 unit in 1 byte
/// below 0x80, 2 below 0x4000 and 3 above; saturating at `u16::MAX`.
///
/// ```
/// use gadget::source::element::java_string_bytes;
/// assert_eq!(java_string_bytes("SCHEDULE"), 9);
/// assert_eq!(java_string_bytes(""), 1);
/// assert_eq!(java_string_bytes("é"), 3);
/// ```
pub fn java_string_bytes(s: &str) -> u16 {
    let mut units = 0u64;
    let mut chars = 0u64;
    for unit in s.encode_utf16() {
        units += 1;
        chars += match unit {
            0..=0x7f => 1,
            0x80..=0x3fff => 2,
            _ => 3,
        };
    }
    let mut length = units + 1;
    let mut prefix = 1;
    while length >= 0x80 {
        length >>= 7;
        prefix += 1;
    }
    u16::try_from(prefix + chars).unwrap_or(u16::MAX)
}

/// One element of an event stream, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamElement {
    /// An input event.
    Event(Event),
    /// A watermark: no event with an earlier time is expected any more.
    Watermark(i64),
}

/// When a source emits watermarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatermarkPolicy {
    /// After every `every` events: max event time seen − `out_of_orderness` − 1 (Flink's
    /// bounded-out-of-orderness strategy, emitted punctually).
    Punctuated {
        /// Events between watermarks.
        every: u64,
        /// Bound B on how far behind the maximum an event may arrive, ms.
        out_of_orderness: i64,
    },
    /// Whenever the max event time seen reaches the next multiple of `interval` (event time).
    Periodic {
        /// Event-time interval between watermarks, ms.
        interval: i64,
        /// Bound B on how far behind the maximum an event may arrive, ms.
        out_of_orderness: i64,
    },
}

/// Turns delivered event times into watermarks; returns only strictly increasing ones.
#[derive(Debug, Clone)]
pub struct WatermarkGenerator {
    policy: WatermarkPolicy,
    max_seen: i64,
    events: u64,
    next_boundary: Option<i64>,
    last: i64,
}

impl WatermarkGenerator {
    /// A generator for the policy.
    pub fn new(policy: WatermarkPolicy) -> Self {
        WatermarkGenerator {
            policy,
            max_seen: i64::MIN,
            events: 0,
            next_boundary: None,
            last: i64::MIN,
        }
    }

    /// Feeds one delivered event; returns the watermark to emit after it, if any.
    pub fn on_event(&mut self, timestamp: i64) -> Option<i64> {
        self.max_seen = self.max_seen.max(timestamp);
        self.events += 1;
        let (due, bound) = match self.policy {
            WatermarkPolicy::Punctuated {
                every,
                out_of_orderness,
            } => (self.events % every.max(1) == 0, out_of_orderness),
            WatermarkPolicy::Periodic {
                interval,
                out_of_orderness,
            } => {
                let interval = interval.max(1);
                // the next multiple of the interval; at the end of time, the end of time
                let next = |t: i64| {
                    t.div_euclid(interval)
                        .saturating_add(1)
                        .saturating_mul(interval)
                };
                let boundary = *self.next_boundary.get_or_insert_with(|| next(timestamp));
                if self.max_seen >= boundary {
                    self.next_boundary = Some(next(self.max_seen));
                    (true, out_of_orderness)
                } else {
                    (false, out_of_orderness)
                }
            }
        };
        if !due {
            return None;
        }
        let w = self.max_seen.saturating_sub(bound).saturating_sub(1);
        (w > self.last).then(|| {
            self.last = w;
            w
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Event times at the end of time (a Pareto gap of shape near 0 reaches them) give
    /// periodic watermarks without overflowing the next boundary.
    #[test]
    fn periodic_watermarks_reach_the_end_of_time() {
        let mut generator = WatermarkGenerator::new(WatermarkPolicy::Periodic {
            interval: 1_000,
            out_of_orderness: 0,
        });
        assert_eq!(generator.on_event(10), None);
        assert_eq!(generator.on_event(i64::MAX - 5), Some(i64::MAX - 6));
        assert_eq!(generator.on_event(i64::MAX), Some(i64::MAX - 1));
        assert_eq!(generator.on_event(i64::MAX), None, "no watermark twice");
    }
}
