//! The "nines" scale that latency spectra are drawn on: percentile p at `-log10(1 - p/100)`,
//! so 90%, 99%, 99.9% and 99.99% are equally spaced and the tail gets as much room as the
//! middle (HdrHistogram's percentile plots).

/// A percentile's place on the scale; 100% (which has none) lands half a nine past `last`,
/// the highest place of the other percentiles drawn with it.
pub fn nines(percentile: f64, last: f64) -> f64 {
    if percentile >= 100.0 {
        last + 0.5
    } else {
        -(1.0 - percentile / 100.0).log10()
    }
}

/// A place on the scale as the percentile it stands for: 0 is `0%`, 1 `90%`, 3 `99.9%`.
pub fn nines_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    if x.fract().abs() < 1e-9 || p >= 99.0 {
        let text = format!("{p:.6}");
        format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
    } else {
        format!("{p:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ninety_ninety_nine_and_ninety_nine_point_nine_are_evenly_spaced() {
        assert_eq!(nines(0.0, 0.0), 0.0);
        assert!((nines(90.0, 0.0) - 1.0).abs() < 1e-12);
        assert!((nines(99.9, 0.0) - 3.0).abs() < 1e-9);
        assert_eq!(nines(100.0, 4.2), 4.7);
        let labels: Vec<String> = [0.0, 1.0, 2.0, 3.0, 4.0, 0.5]
            .iter()
            .map(|&x| nines_label(x))
            .collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%", "68%"]);
    }
}
