//! What a number or a time of a config, an experiment or a flag may be: a range
//! ([`Bounds`], the same for a key and its flag) and a time with its unit ([`parse_duration`]).

/// The range a number of the `[run]` section may take: the same for its config key and its
/// command-line flag.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// The smallest value allowed.
    pub min: f64,
    /// The largest value allowed.
    pub max: f64,
}

impl Bounds {
    /// The range `[min, max]`.
    pub const fn new(min: f64, max: f64) -> Bounds {
        Bounds { min, max }
    }

    /// The bounds as whole numbers, for integer keys.
    pub fn ints(&self) -> (i64, i64) {
        (self.min as i64, self.max as i64)
    }

    /// `value` when it is in range; else a message naming `name` (the flag) and the range.
    pub fn check(&self, name: &str, value: f64) -> Result<f64, String> {
        if value >= self.min && value <= self.max {
            Ok(value)
        } else {
            Err(format!(
                "{name} {} is out of range; allowed: [{}, {}]",
                crate::document::number(value),
                crate::document::number(self.min),
                crate::document::number(self.max)
            ))
        }
    }
}

/// Parses `5s`, `500ms`, `250us`, `10ns`, `2m`, `1h` into nanoseconds.
pub fn parse_duration(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = t.split_at(split);
    let n: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    let ns = n * scale;
    (n.is_finite() && ns < u64::MAX as f64).then_some(ns as u64)
}

/// `ns` in the largest unit that divides it: `1h`, `5s`, `250ms`.
pub fn duration_text(ns: u64) -> String {
    let units = [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ];
    for (scale, unit) in units {
        if ns >= scale && ns % scale == 0 {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}
