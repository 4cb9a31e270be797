//! Small SVG charts for experiment reports: grouped bars with confidence whiskers, and lines
//! over linear or logarithmic axes. Legends sit beside the plot area, never over the data, and
//! each series keeps one colour in every chart of a report (its index in the palette).

use std::fmt::Write as _;

/// The colour of series `i` (Gadget's one palette, [`gadget::palette`]).
pub fn colour(i: usize) -> &'static str {
    gadget::palette::hex(i)
}

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 470.0;
/// The plot area: left, right, top, bottom (room below for slanted category names).
const AREA: (f64, f64, f64, f64) = (110.0, 700.0, 40.0, 340.0);

/// A value axis.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Its label, with the unit.
    pub label: String,
    /// Logarithmic.
    pub log: bool,
    /// Smallest value shown.
    pub min: f64,
    /// Largest value shown.
    pub max: f64,
    /// The values are places on a "nines" axis (`-log10(1 - percentile/100)`), labelled as
    /// the percentiles they stand for (90%, 99%, 99.9%).
    pub nines: bool,
}

impl Axis {
    /// An axis covering `values` (from zero on a linear axis; a decade either side on a log one).
    pub fn covering(label: &str, log: bool, values: impl Iterator<Item = f64>) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (1.0, 10.0);
        }
        let (min, max) = if log {
            (
                10f64.powf(lo.log10().floor()),
                10f64.powf(hi.log10().ceil().max(lo.log10().floor() + 1.0)),
            )
        } else {
            (0.0, {
                let top = if hi > 0.0 { hi * 1.05 } else { 1.0 };
                let step = nice_ceiling(top / 5.0);
                (top / step).ceil() * step
            })
        };
        Axis {
            label: label.into(),
            log,
            min,
            max,
            nines: false,
        }
    }

    /// The label of the tick at `v`.
    fn tick_label(&self, v: f64) -> String {
        if self.nines {
            gadget::nines::nines_label(v)
        } else {
            short(v)
        }
    }

    /// Where `v` falls between `from` (the axis minimum) and `to` (its maximum), in pixels.
    fn place(&self, v: f64, from: f64, to: f64) -> f64 {
        let f = if self.log {
            (v.max(self.min).log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
        } else {
            (v - self.min) / (self.max - self.min)
        };
        from + f.clamp(0.0, 1.0) * (to - from)
    }

    /// Tick values: powers of ten on a log axis, 1-2-5 steps on a linear one.
    fn ticks(&self) -> Vec<f64> {
        if self.nines {
            return (0..=self.max.floor() as usize).map(|n| n as f64).collect();
        }
        if self.log {
            let (a, b) = (
                self.min.log10().round() as i32,
                self.max.log10().round() as i32,
            );
            return (a..=b).map(|e| 10f64.powi(e)).collect();
        }
        let step = nice_ceiling((self.max - self.min) / 5.0);
        (0..=((self.max - self.min) / step).round() as usize)
            .map(|i| self.min + i as f64 * step)
            .collect()
    }
}

/// The smallest 1, 2 or 5 × 10^k at or above `x`.
fn nice_ceiling(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|v| *v >= x * 0.999_999)
        .unwrap_or(10.0 * p)
}

/// A number as an axis shows it: `2K`, `1.5M`, `100µ`-free plain values with a unit label.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = match a {
        _ if a >= 1e9 => (v / 1e9, "G"),
        _ if a >= 1e6 => (v / 1e6, "M"),
        _ if a >= 1e3 => (v / 1e3, "K"),
        _ => (v, ""),
    };
    let text = if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round())
    } else if x.abs() < 1.0 {
        // small values keep their first significant digits: 0.01, 0.25
        let t = format!("{x:.3}");
        t.trim_end_matches('0').to_string()
    } else {
        format!("{x:.1}")
    };
    format!("{text}{suffix}")
}

/// Text made safe inside HTML and SVG.
pub(super) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart's frame: title, y axis with ticks and grid, and the legend beside the area.
fn frame(s: &mut String, title: &str, y: &Axis, legend: &[(usize, String)]) {
    let (l, r, t, b) = AREA;
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\
         <text x=\"{}\" y=\"22\" font-size=\"16\" text-anchor=\"middle\">{}</text>",
        (l + r) / 2.0,
        escape(title)
    );
    for v in y.ticks() {
        let py = y.place(v, b, t);
        let _ = write!(
            s,
            "<line x1=\"{l}\" x2=\"{r}\" y1=\"{py:.1}\" y2=\"{py:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            l - 6.0,
            py + 4.0,
            y.tick_label(v)
        );
    }
    let _ = write!(
        s,
        "<line x1=\"{l}\" x2=\"{l}\" y1=\"{t}\" y2=\"{b}\" stroke=\"black\"/>\
         <line x1=\"{l}\" x2=\"{r}\" y1=\"{b}\" y2=\"{b}\" stroke=\"black\"/>\
         <text transform=\"translate(18 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
        (t + b) / 2.0,
        escape(&y.label),
        if y.log { " (log scale)" } else { "" }
    );
    for (row, (i, label)) in legend.iter().enumerate() {
        let ly = t + 10.0 + row as f64 * 20.0;
        let _ = write!(
            s,
            "<rect x=\"{}\" y=\"{:.1}\" width=\"14\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{:.1}\">{}</text>",
            r + 20.0,
            ly - 9.0,
            colour(*i),
            r + 40.0,
            ly,
            escape(label)
        );
    }
}

/// One bar of a group: its series, value and confidence interval.
#[derive(Debug, Clone)]
pub struct Bar {
    /// The series (a colour and a legend entry).
    pub series: usize,
    /// The bar's height.
    pub value: f64,
    /// The whisker's ends (the 95% interval).
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// Grouped bars (one group per category, one bar per series in it) with whiskers.
pub fn bars(
    title: &str,
    y: &Axis,
    groups: &[(String, Vec<Bar>)],
    legend: &[(usize, String)],
) -> String {
    let mut s = String::new();
    frame(&mut s, title, y, legend);
    let (l, r, _, b) = AREA;
    let group_width = (r - l) / groups.len().max(1) as f64;
    for (g, (name, members)) in groups.iter().enumerate() {
        let x0 = l + g as f64 * group_width;
        let bar_width = group_width * 0.8 / members.len().max(1) as f64;
        for (k, bar) in members.iter().enumerate() {
            let x = x0 + group_width * 0.1 + k as f64 * bar_width;
            let top = y.place(bar.value, b, AREA.2);
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
                bar_width * 0.9,
                (b - top).max(0.0),
                colour(bar.series),
                short(bar.value)
            );
            let cx = x + bar_width * 0.45;
            let (wl, wh) = (y.place(bar.low, b, AREA.2), y.place(bar.high, b, AREA.2));
            let _ = write!(
                s,
                "<path d=\"M{cx:.1} {wl:.1}V{wh:.1}M{:.1} {wl:.1}h8M{:.1} {wh:.1}h8\" stroke=\"black\" fill=\"none\"/>",
                cx - 4.0,
                cx - 4.0
            );
        }
        // slanted, ending under the group's middle, so long names never run into each other
        let (nx, ny) = (x0 + group_width / 2.0, b + 14.0);
        let _ = write!(
            s,
            "<text x=\"{nx:.1}\" y=\"{ny:.1}\" text-anchor=\"end\" transform=\"rotate(-30 {nx:.1} {ny:.1})\">{}</text>",
            escape(name)
        );
    }
    s.push_str("</svg>");
    s
}

/// A line through points, with a confidence interval at each.
#[derive(Debug, Clone)]
pub struct Line {
    /// The series.
    pub series: usize,
    /// `(x, y, y_low, y_high)`, in x order.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// Lines over an x and a y axis (either may be logarithmic); `threshold` draws a dashed
/// horizontal line (a latency bound) labelled on the right.
pub fn lines(
    title: &str,
    x: &Axis,
    y: &Axis,
    series: &[Line],
    legend: &[(usize, String)],
    threshold: Option<(f64, String)>,
) -> String {
    let mut s = String::new();
    frame(&mut s, title, y, legend);
    let (l, r, t, b) = AREA;
    for v in x.ticks() {
        let px = x.place(v, l, r);
        let _ = write!(
            s,
            "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{b}\" y2=\"{}\" stroke=\"black\"/><text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            b + 5.0,
            b + 18.0,
            x.tick_label(v)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>",
        (l + r) / 2.0,
        b + 40.0,
        escape(&x.label),
        if x.log { " (log scale)" } else { "" }
    );
    if let Some((v, label)) = threshold {
        let py = y.place(v, b, t);
        let _ = write!(
            s,
            "<line x1=\"{l}\" x2=\"{r}\" y1=\"{py:.1}\" y2=\"{py:.1}\" stroke=\"#888\" stroke-dasharray=\"6 4\"/><text x=\"{}\" y=\"{:.1}\" fill=\"#555\">{}</text>",
            r + 4.0,
            py + 4.0,
            escape(&label)
        );
    }
    for line in series {
        let c = colour(line.series);
        let path: Vec<String> = line
            .points
            .iter()
            .map(|&(px, py, _, _)| format!("{:.1},{:.1}", x.place(px, l, r), y.place(py, b, t)))
            .collect();
        let _ = write!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>",
            path.join(" ")
        );
        for &(px, py, lo, hi) in &line.points {
            let (cx, cy) = (x.place(px, l, r), y.place(py, b, t));
            let _ = write!(
                s,
                "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"3.5\" fill=\"{c}\"><title>{} at {}</title></circle>\
                 <path d=\"M{cx:.1} {:.1}V{:.1}\" stroke=\"{c}\"/>",
                short(py),
                short(px),
                y.place(lo, b, t),
                y.place(hi, b, t)
            );
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_cover_their_values_in_round_steps() {
        let a = Axis::covering("requests/s", false, [120.0, 870.0].into_iter());
        assert_eq!((a.min, a.max), (0.0, 1000.0));
        assert_eq!(a.ticks(), [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]);
        // the top stays close to the data: 2.3M gives 2.5M, not 5M
        let a = Axis::covering("requests/s", false, [2.3e6].into_iter());
        assert_eq!(a.max, 2.5e6);
        let a = Axis::covering("latency", true, [3_000.0, 2_500_000.0].into_iter());
        assert_eq!((a.min, a.max), (1_000.0, 10_000_000.0));
        assert_eq!(a.ticks().len(), 5);
        assert_eq!(a.place(100_000.0, 0.0, 400.0), 200.0);
        assert_eq!(short(1500.0), "1.5K");
        assert_eq!(short(2_000_000.0), "2M");
        assert_eq!((short(0.01), short(0.25)), ("0.01".into(), "0.25".into()));
    }

    #[test]
    fn legends_sit_beside_the_plot_area() {
        let y = Axis::covering("requests/s", false, [10.0].into_iter());
        let bar = Bar {
            series: 1,
            value: 10.0,
            low: 9.0,
            high: 11.0,
        };
        let svg = bars(
            "t",
            &y,
            &[("w".into(), vec![bar])],
            &[(1, "rocksdb".into())],
        );
        let legend_x = AREA.1 + 20.0;
        assert!(svg.contains(&format!("<rect x=\"{legend_x}\"")), "{svg}");
        assert!(svg.contains(colour(1)));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
