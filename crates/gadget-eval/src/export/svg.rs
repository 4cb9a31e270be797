//! Small SVG charts for experiment reports: grouped bars with confidence whiskers, and lines
//! over linear or logarithmic axes. Legends sit beside the plot area, never over the data, and
//! each series keeps one colour in every chart of a report (its index in the palette).
//! Latency axes are labelled in the unit each tick needs (`100 µs`, `1 ms`), and a chart
//! grows to hold its slanted category names whole.

use std::fmt::Write as _;

/// The colour of series `i` (Gadget's one palette, [`gadget::palette`]).
pub fn colour(i: usize) -> &'static str {
    gadget::palette::hex(i)
}

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 470.0;
/// A generous width of one character of the 12 px sans-serif text, pixels: what a label is
/// given room for.
const CHAR_WIDTH: f64 = 7.2;
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
    /// The values are latencies in nanoseconds, labelled in the unit each needs (`1 ms`).
    pub latency: bool,
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
            latency: false,
        }
    }

    /// A logarithmic axis of latencies in nanoseconds covering `values`, its ticks in the
    /// unit each needs (`100 ns`, `1 µs`, `1 ms`).
    pub fn latency(label: &str, values: impl Iterator<Item = f64>) -> Axis {
        Axis {
            latency: true,
            ..Axis::covering(label, true, values)
        }
    }

    /// The label of the tick at `v`.
    fn tick_label(&self, v: f64) -> String {
        if self.nines {
            gadget::nines::nines_label(v)
        } else {
            self.value(v)
        }
    }

    /// A value on this axis as a reader reads it: `1.5K`, or a latency with its unit.
    pub fn value(&self, v: f64) -> String {
        if self.latency {
            gadget::units::latency(v)
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

/// The part of the drawing a chart shows: from `left` (negative when labels reach left of
/// the frame) and `WIDTH + extra` wide, `height` high.
#[derive(Debug, Clone, Copy)]
struct View {
    left: f64,
    width: f64,
    height: f64,
}

impl Default for View {
    fn default() -> View {
        View {
            left: 0.0,
            width: WIDTH,
            height: HEIGHT,
        }
    }
}

/// The chart's frame: title, y axis with ticks and grid, and the legend beside the area.
fn frame(s: &mut String, view: View, title: &str, y: &Axis, legend: &[(usize, String)]) {
    let (l, r, t, b) = AREA;
    let View {
        left,
        width,
        height,
    } = view;
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"{left} 0 {width} {height}\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\
         <rect x=\"{left}\" width=\"{width}\" height=\"{height}\" fill=\"white\"/>\
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
    // each entry a colour and its label; a label's second line (after a newline) smaller,
    // under it; each line shortened to the column's width
    let mut ly = t + 10.0;
    for (i, label) in legend {
        let mut lines = label.lines();
        let first = lines.next().unwrap_or("");
        let _ = write!(
            s,
            "<rect x=\"{}\" y=\"{:.1}\" width=\"14\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{ly:.1}\">{}</text>",
            r + 20.0,
            ly - 9.0,
            colour(*i),
            r + 40.0,
            escape(&fit(first, LEGEND_CHARS))
        );
        for more in lines {
            ly += 14.0;
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{ly:.1}\" font-size=\"10\" fill=\"#555\">{}</text>",
                r + 40.0,
                escape(&fit(more, LEGEND_CHARS + LEGEND_CHARS / 5))
            );
        }
        ly += 20.0;
    }
}

/// The characters of a legend line that fit the column beside the plot area.
const LEGEND_CHARS: usize = ((WIDTH - AREA.1 - 44.0) / CHAR_WIDTH) as usize;

/// `label` in at most `max` characters: a longer one keeps its start and end, which tell
/// series apart, around an ellipsis.
fn fit(label: &str, max: usize) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= max {
        return label.to_string();
    }
    let tail = (max - 1) / 2;
    let mut out: String = chars[..max - 1 - tail].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
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
    bars_with_targets(title, y, groups, legend, &[])
}

/// [`bars`] where a group may have a target (`targets[g]`, e.g. the rate an open loop asked
/// for): a dashed line across the group at it, labelled `target`.
pub fn bars_with_targets(
    title: &str,
    y: &Axis,
    groups: &[(String, Vec<Bar>)],
    legend: &[(usize, String)],
    targets: &[Option<f64>],
) -> String {
    let (l, r, t, b) = AREA;
    let group_width = (r - l) / groups.len().max(1) as f64;
    let names = CategoryNames::lay_out(groups.iter().map(|g| g.0.as_str()), group_width);
    let mut s = String::new();
    frame(&mut s, names.view, title, y, legend);
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
                y.value(bar.value)
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
        if let Some(target) = targets.get(g).copied().flatten() {
            let py = y.place(target, b, t);
            let _ = write!(
                s,
                "<path d=\"M{:.1} {py:.1}H{:.1}\" stroke=\"#444\" stroke-dasharray=\"5 3\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#444\">target {}</text>",
                x0 + group_width * 0.05,
                x0 + group_width * 0.95,
                x0 + group_width / 2.0,
                py - 4.0,
                y.value(target)
            );
        }
        names.draw(&mut s, name, x0 + group_width / 2.0);
    }
    s.push_str("</svg>");
    s
}

/// Where category names go under grouped bars: level when every one fits its group's width,
/// else slanted, ending under the group's middle, with the chart grown left and down to hold
/// the longest whole.
struct CategoryNames {
    slanted: bool,
    view: View,
}

impl CategoryNames {
    /// The layout of `names` under groups `group_width` wide.
    fn lay_out<'a>(names: impl Iterator<Item = &'a str> + Clone, group_width: f64) -> Self {
        let width = |n: &str| n.chars().count() as f64 * CHAR_WIDTH;
        let slanted = names.clone().any(|n| width(n) > group_width * 0.95);
        let mut view = View::default();
        if slanted {
            let (cos, sin) = (30f64.to_radians().cos(), 30f64.to_radians().sin());
            let (l, b) = (AREA.0, AREA.3);
            for (g, n) in names.enumerate() {
                let middle = l + (g as f64 + 0.5) * group_width;
                view.left = view.left.min((middle - width(n) * cos - 4.0).floor());
                view.height = view.height.max((b + 14.0 + width(n) * sin + 8.0).ceil());
            }
            view.width = WIDTH - view.left;
        }
        CategoryNames { slanted, view }
    }

    /// Draws `name` under the group whose middle is at `x`.
    fn draw(&self, s: &mut String, name: &str, x: f64) {
        let y = AREA.3 + 14.0;
        if self.slanted {
            let _ = write!(
                s,
                "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"end\" transform=\"rotate(-30 {x:.1} {y:.1})\">{}</text>",
                escape(name)
            );
        } else {
            let _ = write!(
                s,
                "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y + 4.0,
                escape(name)
            );
        }
    }
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
/// horizontal line (a latency bound) labelled above its right end.
pub fn lines(
    title: &str,
    x: &Axis,
    y: &Axis,
    series: &[Line],
    legend: &[(usize, String)],
    threshold: Option<(f64, String)>,
) -> String {
    let mut s = String::new();
    frame(&mut s, View::default(), title, y, legend);
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
            "<line x1=\"{l}\" x2=\"{r}\" y1=\"{py:.1}\" y2=\"{py:.1}\" stroke=\"#888\" stroke-dasharray=\"6 4\"/><text x=\"{}\" y=\"{:.1}\" fill=\"#555\" text-anchor=\"end\">{}</text>",
            r - 4.0,
            py - 4.0,
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
                y.value(py),
                x.tick_label(px),
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

    /// The text of every `<text>` element of `svg`.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .map(|t| &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()])
            .collect()
    }

    #[test]
    fn latency_axes_tick_in_the_unit_each_value_needs() {
        let y = Axis::latency("p99.9 latency", [3_000.0, 2_500_000.0].into_iter());
        let bar = Bar {
            series: 0,
            value: 1_200_000.0,
            low: 900_000.0,
            high: 1_500_000.0,
        };
        let svg = bars("t", &y, &[("w".into(), vec![bar])], &[(0, "lmdb".into())]);
        let ticks = texts(&svg);
        for tick in ["1 µs", "10 µs", "100 µs", "1 ms", "10 ms"] {
            assert!(ticks.contains(&tick), "{ticks:?}");
        }
        assert!(
            !ticks.iter().any(|t| t.ends_with('K') || t.ends_with('M')),
            "{ticks:?}"
        );
        assert!(svg.contains("<title>1.2 ms</title>"), "{svg}");
    }

    #[test]
    fn an_open_loop_group_shows_its_target_rate() {
        let y = Axis::covering("requests/s", false, [100_000.0].into_iter());
        let bar = |value| Bar {
            series: 0,
            value,
            low: value,
            high: value,
        };
        let groups = [
            ("w".to_string(), vec![bar(900_000.0)]),
            ("w (poisson-100000)".to_string(), vec![bar(99_000.0)]),
        ];
        let svg = bars_with_targets("t", &y, &groups, &[(0, "lmdb".into())], &[None, Some(1e5)]);
        assert_eq!(svg.matches("stroke-dasharray").count(), 1, "{svg}");
        assert!(texts(&svg).contains(&"target 100K"), "{svg}");
    }

    #[test]
    fn slanted_category_names_get_room_to_be_read_whole() {
        let long = "tumbling-incremental-with-a-long-name (poisson-100000)";
        let few = CategoryNames::lay_out(["a", "b"].into_iter(), 300.0);
        assert!(!few.slanted);
        assert_eq!((few.view.left, few.view.height), (0.0, HEIGHT));
        let names = CategoryNames::lay_out([long, "b", long].into_iter(), 196.0);
        assert!(names.slanted);
        // the first name ends under its group's middle and runs down to the left
        let length = long.chars().count() as f64 * CHAR_WIDTH;
        let middle = AREA.0 + 98.0;
        assert!(names.view.left <= middle - length * 30f64.to_radians().cos());
        assert!(names.view.height >= AREA.3 + 14.0 + length / 2.0);
        assert_eq!(names.view.left + names.view.width, WIDTH);
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
