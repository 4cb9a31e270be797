//! Latencies as people read them: in the unit the value needs (`847 ns`, `4.94 µs`, `1 ms`,
//! `2.5 s`), never `1K µs` or `10M ns`. Every table and plot axis Gadget writes uses these.

/// The units a latency is written in, smallest first, with their size in nanoseconds.
const UNITS: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];

/// `ns` nanoseconds in the largest unit it holds one of, to three significant digits without
/// trailing zeros: `847 ns`, `4.94 µs`, `1 ms`, `12.5 s` (`0 ns` for zero).
pub fn latency(ns: f64) -> String {
    let (value, unit) = scaled(ns);
    let decimals = decimals(value);
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

/// [`latency`] with a fixed number of decimals for its unit (`4.90 µs`, `1.00 ms`, `847 ns`):
/// right-aligned in a column, the digits of like values line up.
pub fn latency_column(ns: f64) -> String {
    let (value, unit) = scaled(ns);
    format!("{value:.prec$} {unit}", prec = decimals(value))
}

/// `ns` rounded to three significant digits, in the largest unit it holds one of.
fn scaled(ns: f64) -> (f64, &'static str) {
    if !ns.is_finite() || ns == 0.0 {
        return (if ns.is_finite() { 0.0 } else { ns }, "ns");
    }
    let rounded = round_significant(ns, 3);
    let (size, unit) = UNITS
        .iter()
        .rev()
        .find(|(size, _)| rounded.abs() >= *size)
        .copied()
        .unwrap_or(UNITS[0]);
    (rounded / size, unit)
}

/// Decimals that show three significant digits of `value` (none from 100 up).
fn decimals(value: f64) -> usize {
    match value.abs() {
        a if a >= 100.0 || a == 0.0 => 0,
        a if a >= 10.0 => 1,
        _ => 2,
    }
}

/// `x` rounded to `digits` significant digits.
fn round_significant(x: f64, digits: i32) -> f64 {
    let magnitude = x.abs().log10().floor() as i32;
    let step = 10f64.powi(magnitude + 1 - digits);
    (x / step).round() * step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_latency_is_in_the_unit_it_needs() {
        assert_eq!(latency(0.0), "0 ns");
        assert_eq!(latency(847.0), "847 ns");
        assert_eq!(latency(4_943.0), "4.94 µs");
        assert_eq!(latency(1_000.0), "1 µs");
        assert_eq!(latency(1_000_000.0), "1 ms");
        assert_eq!(latency(10_000_000.0), "10 ms");
        assert_eq!(latency(2_500_000_000.0), "2.5 s");
        assert_eq!(latency(12.0), "12 ns");
        // rounding up into the next unit takes that unit
        assert_eq!(latency(999.7), "1 µs");
        assert_eq!(latency(999_600.0), "1 ms");
        assert_eq!(latency(150_000.0), "150 µs");
    }

    #[test]
    fn columns_keep_their_decimals() {
        assert_eq!(latency_column(4_900.0), "4.90 µs");
        assert_eq!(latency_column(1_000_000.0), "1.00 ms");
        assert_eq!(latency_column(847.0), "847 ns");
        assert_eq!(latency_column(19_983.0), "20.0 µs");
    }
}
