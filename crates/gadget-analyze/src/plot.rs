//! Plots of analyses, as SVG and PNG: stack-distance histograms (overlapping bars), unique
//! sequences by length, working set over time, key TTL CDF, the LRU hit-ratio curve, the
//! event rate and its autocorrelation.
//!
//! Text is drawn with a system TrueType font (DejaVu Sans from Debian's `fonts-dejavu-core`,
//! or another common sans font), loaded once.
//!
//! One concept, Gadget's figures, from their description to SVG and PNG: the file is long
//! because every kind of figure shares the axes, legend and palette code here.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::Analysis;
use gadget::nines::nines_label;

/// Why a plot could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No usable font on this machine.
    #[error("no TrueType font to draw plot text with (looked for {looked}); install one, e.g. `apt-get install fonts-dejavu-core`")]
    NoFont {
        /// The paths tried.
        looked: String,
    },
    /// Drawing failed.
    #[error("cannot draw the plot {name}: {message}")]
    Draw {
        /// The plot's name.
        name: String,
        /// What the plotting library said.
        message: String,
    },
    /// Writing the file failed.
    #[error("cannot write the plot {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// Registers the first system font found as plotters' `sans-serif`, once.
fn ensure_font() -> Result<(), PlotError> {
    static FONT: OnceLock<bool> = OnceLock::new();
    let ok = *FONT.get_or_init(|| {
        for path in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(path) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::NoFont {
            looked: FONT_PATHS.join(", "),
        })
    }
}

/// How a figure draws its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind {
    /// Lines through the points.
    Lines,
    /// Overlapping semi-transparent bars, one per point, at integer x (a categorical axis
    /// whose tick labels are `categories`).
    Bars,
}

/// One line or bar set.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (lines) or hollow (bars) rather than solid, in the colour of what it is
    /// the baseline of: the shuffled trace, the median beside the p99, the service time.
    pub baseline: bool,
    /// Its colour, an index into Gadget's palette ([`gadget::palette`]): what the series
    /// stands for (a trace, a run, an op) has the same one in every plot of a report.
    pub colour: usize,
}

/// What an axis's values are, which its tick labels say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unit {
    /// Plain numbers: 12, 0.25, 1.5K.
    #[default]
    Number,
    /// Nanoseconds, each tick in the unit it needs: 100 ns, 1 µs, 1 ms.
    Nanoseconds,
}

impl Unit {
    /// The tick label of `v`.
    fn tick(self, v: f64) -> String {
        match self {
            Unit::Number => tick(v),
            Unit::Nanoseconds => gadget::units::latency(v),
        }
    }
}

/// A plot to draw.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File name stem.
    pub name: String,
    /// Title.
    pub title: String,
    /// One sentence on how to read the plot, under it in HTML reports.
    pub how_to_read: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// What the x values are.
    pub x_unit: Unit,
    /// What the y values are.
    pub y_unit: Unit,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis (values spanning decades: latencies).
    pub log_y: bool,
    /// The x values are places on a "nines" axis ([`gadget::nines::nines`]), labelled as
    /// percentiles.
    pub x_nines: bool,
    /// Lines or bars.
    pub kind: FigureKind,
    /// Tick labels of a bar chart's categories.
    pub categories: Vec<String>,
    /// The data.
    pub series: Vec<Series>,
}

/// The figures of one analysis; `label` names the trace in legends.
pub fn figures(a: &Analysis, label: &str) -> Vec<Figure> {
    let bucket_label = |low: u64| tick(low as f64);
    let longest_buckets = a
        .stack_distance
        .buckets
        .len()
        .max(a.stack_distance_shuffled.buckets.len());
    let categories: Vec<String> = (0..longest_buckets)
        .map(|i| bucket_label(if i == 0 { 0 } else { 1 << (i - 1) }))
        .collect();
    let normalized = |b: &[(u64, u64)]| -> Vec<(f64, f64)> {
        let total: u64 = b.iter().map(|x| x.1).sum();
        b.iter()
            .map(|&(low, n)| {
                let i = if low == 0 {
                    0
                } else {
                    64 - low.leading_zeros() as usize
                };
                (i as f64, n as f64 / total.max(1) as f64)
            })
            .collect()
    };
    let seq = |v: &[u64]| -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, &n)| ((i + 1) as f64, n as f64))
            .collect()
    };
    let curve = |c: &[(u64, f64)]| c.iter().map(|&(s, r)| (s as f64, r)).collect::<Vec<_>>();
    let cdf = |c: &[(u64, f64)]| {
        c.iter()
            .map(|&(v, f)| ((v as f64).max(1.0), f))
            .collect::<Vec<_>>()
    };
    let shuffled = format!("{label} shuffled");
    vec![
        Figure {
            name: "stack-distance".into(),
            title: "LRU stack distances".into(),
            how_to_read: "How many requests found their key at each LRU stack distance (distinct keys touched since its last use), in power-of-two buckets; mass at small distances means a small cache serves the workload, and the shuffled trace shows what the same keys give without their order.".into(),
            x_label: "stack distance".into(),
            y_label: "fraction of re-accesses".into(),
            x_unit: Unit::Number,
            y_unit: Unit::Number,
            log_x: false,
            log_y: false,
            x_nines: false,
            kind: FigureKind::Bars,
            categories,
            series: vec![
                Series {
                    label: label.into(),
                    points: normalized(&a.stack_distance.buckets),
                    baseline: false,
                    colour: 0,
                },
                Series {
                    label: shuffled.clone(),
                    points: normalized(&a.stack_distance_shuffled.buckets),
                    baseline: true,
                    colour: 0,
                },
            ],
        },
        Figure {
            name: "unique-sequences".into(),
            title: "Unique key sequences".into(),
            how_to_read: "How many distinct runs of consecutive keys of each length the trace holds; fewer than the shuffled trace means requests follow one another in repeated patterns a store can exploit.".into(),
            x_label: "sequence length".into(),
            y_label: "unique sequences".into(),
            x_unit: Unit::Number,
            y_unit: Unit::Number,
            log_x: false,
            log_y: false,
            x_nines: false,
            kind: FigureKind::Lines,
            categories: Vec::new(),
            series: vec![
                Series {
                    label: label.into(),
                    points: seq(&a.unique_sequences),
                    baseline: false,
                    colour: 0,
                },
                Series {
                    label: shuffled.clone(),
                    points: seq(&a.unique_sequences_shuffled),
                    baseline: true,
                    colour: 0,
                },
            ],
        },
        Figure {
            name: "hit-ratio-curve".into(),
            title: "LRU cache hit ratio".into(),
            how_to_read: "The share of requests an LRU cache of each size (log axis) would serve; the gap to the shuffled trace is the locality that order alone gives.".into(),
            x_label: "cache size (keys)".into(),
            y_label: "hit ratio".into(),
            x_unit: Unit::Number,
            y_unit: Unit::Number,
            log_x: true,
            log_y: false,
            x_nines: false,
            kind: FigureKind::Lines,
            categories: Vec::new(),
            series: vec![
                Series {
                    label: label.into(),
                    points: curve(&a.stack_distance.hit_ratio_curve),
                    baseline: false,
                    colour: 0,
                },
                Series {
                    label: shuffled,
                    points: curve(&a.stack_distance_shuffled.hit_ratio_curve),
                    baseline: true,
                    colour: 0,
                },
            ],
        },
        Figure {
            name: "working-set".into(),
            title: "Working set over the trace".into(),
            how_to_read: "How many keys are live (written and not yet deleted) after each keyed request; a flat band means state is created and dropped at the pace it arrives.".into(),
            x_label: "keyed request".into(),
            y_label: "keys alive".into(),
            x_unit: Unit::Number,
            y_unit: Unit::Number,
            log_x: false,
            log_y: false,
            x_nines: false,
            kind: FigureKind::Lines,
            categories: Vec::new(),
            series: vec![Series {
                label: label.into(),
                points: a
                    .working_set
                    .iter()
                    .map(|&(p, n)| (p as f64, n as f64))
                    .collect(),
                baseline: false,
                colour: 0,
            }],
        },
        Figure {
            name: "ttl-cdf".into(),
            title: "Key time to live".into(),
            how_to_read: "The cumulative share of keys whose life, from first write to delete, lasted at most each number of keyed requests; a steep curve means short-lived, window-bound state.".into(),
            x_label: "TTL (keyed requests)".into(),
            y_label: "fraction of keys".into(),
            x_unit: Unit::Number,
            y_unit: Unit::Number,
            log_x: true,
            log_y: false,
            x_nines: false,
            kind: FigureKind::Lines,
            categories: Vec::new(),
            series: vec![Series {
                label: label.into(),
                points: cdf(&a.ttl.requests.cdf),
                baseline: false,
                colour: 0,
            }],
        },
    ]
}

/// The two figures of a rate series: counts per bin and their autocorrelation. `name` is
/// the file stem prefix (`event-rate`, `arrival-rate`).
pub fn rate_figures(
    name: &str,
    what: &str,
    rate: &crate::events::RateSeries,
    label: &str,
) -> Vec<Figure> {
    vec![
        Figure {
            name: name.into(),
            title: format!("{what} per {} ms", rate.bin_ms),
            how_to_read: "How many arrived in each bin; bursts and lulls show as peaks and gaps that a constant-rate benchmark would never produce.".into(),
            x_label: "bin".into(),
            y_label: what.into(),
            x_unit: Unit::Number,
            y_unit: Unit::Number,
            log_x: false,
            log_y: false,
            x_nines: false,
            kind: FigureKind::Lines,
            categories: Vec::new(),
            series: vec![Series {
                label: label.into(),
                points: rate
                    .counts
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| (i as f64, n))
                    .collect(),
                baseline: false,
                colour: 0,
            }],
        },
        Figure {
            name: format!("{name}-autocorrelation"),
            title: format!("Autocorrelation of {what} per bin"),
            how_to_read: "The correlation of the counts per bin with themselves some bins later; values that stay high over many lags mean bursts last, as long-range dependent traffic does.".into(),
            x_label: "lag (bins)".into(),
            y_label: "autocorrelation".into(),
            x_unit: Unit::Number,
            y_unit: Unit::Number,
            log_x: false,
            log_y: false,
            x_nines: false,
            kind: FigureKind::Lines,
            categories: Vec::new(),
            series: vec![Series {
                label: label.into(),
                points: rate
                    .statistics
                    .autocorrelation
                    .iter()
                    .enumerate()
                    .map(|(i, &r)| (i as f64, r))
                    .collect(),
                baseline: false,
                colour: 0,
            }],
        },
    ]
}

/// Overlays the same figures of several inputs: each figure gets every input's series, and
/// input `k`'s series take the `k`th set of colours, the same set in every figure (an
/// input's series keep their colours, and no two inputs share one).
pub fn overlay(per_trace: Vec<Vec<Figure>>) -> Vec<Figure> {
    let stride = per_trace
        .iter()
        .flatten()
        .flat_map(|f| f.series.iter().map(|s| s.colour + 1))
        .max()
        .unwrap_or(1);
    let mut out: Vec<Figure> = Vec::new();
    for (k, mut figures) in per_trace.into_iter().enumerate() {
        for s in figures.iter_mut().flat_map(|f| f.series.iter_mut()) {
            s.colour += k * stride;
        }
        for f in figures {
            match out.iter_mut().find(|o| o.name == f.name) {
                Some(o) => {
                    if f.categories.len() > o.categories.len() {
                        o.categories = f.categories;
                    }
                    o.series.extend(f.series);
                }
                None => out.push(f),
            }
        }
    }
    out
}

/// Legend names for several inputs: the dot-separated parts every name shares at its start
/// and at its end are left out (`sliding.rocksdb.poisson.r1` and `sliding.lmdb.poisson.r1`
/// become `rocksdb` and `lmdb`); a name left empty stays whole.
pub fn distinguishing(names: &[String]) -> Vec<String> {
    let parts: Vec<Vec<&str>> = names.iter().map(|n| n.split('.').collect()).collect();
    let shortest = parts.iter().map(Vec::len).min().unwrap_or(0);
    let shared = |at: &dyn Fn(&Vec<&str>, usize) -> String| {
        (0..shortest)
            .take_while(|&i| parts.iter().all(|p| at(p, i) == at(&parts[0], i)))
            .count()
    };
    let (head, tail) = if names.len() < 2 {
        (0, 0)
    } else {
        let head = shared(&|p, i| p[i].to_string());
        let tail = shared(&|p, i| p[p.len() - 1 - i].to_string());
        (head, tail.min(shortest - head))
    };
    names
        .iter()
        .zip(&parts)
        .map(|(name, p)| {
            let kept = p[head..p.len() - tail].join(".");
            if kept.is_empty() {
                name.clone()
            } else {
                kept
            }
        })
        .collect()
}

/// `label` in at most `max` characters: a long one keeps its start and its end, which tell
/// series apart, around an ellipsis.
fn fit(label: &str, max: usize) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= max {
        return label.to_string();
    }
    let tail = (max - 1) / 2;
    let head = max - 1 - tail;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// The colour `i` of Gadget's one palette ([`gadget::palette`]), as in every report.
fn series_colour(i: usize) -> RGBAColor {
    let (r, g, b) = gadget::palette::rgb(i);
    RGBColor(r, g, b).to_rgba()
}

/// A short tick label: 12, 0.25, 1.5K, 20M.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "K")
    } else {
        (v, "")
    };
    let text = if (scaled - scaled.round()).abs() < 1e-9 {
        format!("{}", scaled.round() as i64)
    } else if suffix.is_empty() && a < 10.0 {
        format!("{scaled:.3}").trim_end_matches('0').to_string()
    } else {
        format!("{scaled:.1}")
    };
    format!("{text}{suffix}")
}

fn bounds(points: impl Iterator<Item = (f64, f64)>) -> ((f64, f64), (f64, f64)) {
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        return ((0.0, 1.0), (0.0, 1.0));
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y0 = y0.min(0.0);
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    ((x0, x1), (y0, y1 * 1.05))
}

/// Width of the legend column beside a chart, pixels.
const LEGEND_WIDTH: u32 = 230;

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    f: &Figure,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    // the legend gets a column of its own beside the chart: it never covers the data
    let (width, _) = root.dim_in_pixel();
    let (area, legend) = root.split_horizontally(width.saturating_sub(LEGEND_WIDTH));
    let ((x0, x1), (y0, y1)) = bounds(f.series.iter().flat_map(|s| s.points.iter().copied()));
    let mut builder = ChartBuilder::on(&area);
    builder
        .caption(&f.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70);
    // a log axis starts at the smallest positive value, a decade rounded
    let y_log = (
        10f64.powf(positive_min(f, |p| p.1).log10().floor()),
        y1.max(1e-9),
    );
    match (f.kind, f.log_x, f.log_y) {
        (FigureKind::Bars, _, _) => {
            let mut chart = builder
                .build_cartesian_2d(-0.5f64..(f.categories.len().max(1) as f64 - 0.5), y0..y1)
                .map_err(|e| e.to_string())?;
            let cats = f.categories.clone();
            chart
                .configure_mesh()
                .x_desc(&f.x_label)
                .y_desc(&f.y_label)
                .y_label_formatter(&|y| f.y_unit.tick(*y))
                .x_labels(cats.len().clamp(2, 24))
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 1e-6 && i >= 0.0 {
                        cats.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .draw()
                .map_err(|e| e.to_string())?;
            // solid bars first, the baselines' outlines over them
            let mut order: Vec<&Series> = f.series.iter().collect();
            order.sort_by_key(|s| s.baseline);
            for s in order {
                let style = bar_style(s);
                chart
                    .draw_series(
                        s.points
                            .iter()
                            .map(|&(x, y)| Rectangle::new([(x - 0.4, 0.0), (x + 0.4, y)], style)),
                    )
                    .map_err(|e| e.to_string())?;
            }
        }
        (FigureKind::Lines, true, false) => draw_lines(
            builder
                .build_cartesian_2d((positive_min(f, |p| p.0)..x1).log_scale(), y0..y1)
                .map_err(|e| e.to_string())?,
            f,
        )?,
        (FigureKind::Lines, false, false) => draw_lines(
            builder
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(|e| e.to_string())?,
            f,
        )?,
        (FigureKind::Lines, true, true) => draw_lines(
            builder
                .build_cartesian_2d(
                    (positive_min(f, |p| p.0)..x1).log_scale(),
                    (y_log.0..y_log.1).log_scale(),
                )
                .map_err(|e| e.to_string())?,
            f,
        )?,
        (FigureKind::Lines, false, true) => draw_lines(
            builder
                .build_cartesian_2d(x0..x1, (y_log.0..y_log.1).log_scale())
                .map_err(|e| e.to_string())?,
            f,
        )?,
    }
    draw_legend(&legend, f).map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// The smallest positive coordinate `pick` takes from any point (1e-9 when none is).
fn positive_min(f: &Figure, pick: impl Fn(&(f64, f64)) -> f64) -> f64 {
    f.series
        .iter()
        .flat_map(|s| s.points.iter().map(&pick))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min)
        .clamp(1e-9, f64::MAX)
}

/// How a bar of `s` is drawn: filled, or a baseline's outline in the same colour.
fn bar_style(s: &Series) -> ShapeStyle {
    let colour = series_colour(s.colour);
    if s.baseline {
        colour.stroke_width(2)
    } else {
        colour.mix(0.6).filled()
    }
}

/// How a line of `s` is drawn (a baseline's is dashed, in the same colour).
fn line_style(s: &Series) -> ShapeStyle {
    series_colour(s.colour).stroke_width(2)
}

/// One row per series in the legend column: its colour as drawn, and its label.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    f: &Figure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (i, s) in f.series.iter().enumerate() {
        let y = 50 + 22 * i as i32;
        match f.kind {
            FigureKind::Bars => {
                area.draw(&Rectangle::new([(8, y - 6), (26, y + 6)], bar_style(s)))?;
            }
            FigureKind::Lines if s.baseline => {
                area.draw(&plotters::element::DashedPathElement::new(
                    vec![(4, y), (30, y)],
                    6,
                    4,
                    line_style(s),
                ))?;
            }
            FigureKind::Lines => {
                area.draw(&PathElement::new(vec![(6, y), (28, y)], line_style(s)))?;
            }
        }
        let label = fit(&s.label, 30);
        area.draw(&Text::new(label, (34, y - 7), ("sans-serif", 13)))?;
    }
    Ok(())
}

/// Draws a line figure on a chart whose axes are linear or logarithmic.
fn draw_lines<'a, DB, X, Y>(
    mut chart: ChartContext<'a, DB, Cartesian2d<X, Y>>,
    f: &Figure,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let nines = f.x_nines;
    chart
        .configure_mesh()
        .x_desc(&f.x_label)
        .y_desc(&f.y_label)
        .x_label_formatter(&|x| {
            if nines {
                nines_label(*x)
            } else {
                f.x_unit.tick(*x)
            }
        })
        .y_label_formatter(&|y| f.y_unit.tick(*y))
        .draw()
        .map_err(|e| e.to_string())?;
    for s in &f.series {
        let color = series_colour(s.colour);
        if s.baseline {
            chart
                .draw_series(DashedLineSeries::new(
                    s.points.iter().copied(),
                    6,
                    4,
                    line_style(s),
                ))
                .map_err(|e| e.to_string())?;
        } else {
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), line_style(s)))
                .map_err(|e| e.to_string())?;
        }
        // a single point (a run shorter than one interval) is still drawn
        if s.points.len() == 1 {
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

const SIZE: (u32, u32) = (900, 540);

/// The figure as an SVG document.
pub fn to_svg(f: &Figure) -> Result<String, PlotError> {
    ensure_font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(root, f).map_err(|message| PlotError::Draw {
            name: f.name.clone(),
            message,
        })?;
    }
    Ok(svg)
}

/// The figure as a PNG image.
pub fn to_png(f: &Figure) -> Result<Vec<u8>, PlotError> {
    ensure_font()?;
    let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(root, f).map_err(|message| PlotError::Draw {
            name: f.name.clone(),
            message,
        })?;
    }
    encode_png(&rgb, SIZE).map_err(|message| PlotError::Draw {
        name: f.name.clone(),
        message,
    })
}

/// Encodes an RGB buffer as PNG (stored, uncompressed-deflate blocks; no extra dependency).
fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, String> {
    use std::io::Write as _;
    let mut raw = Vec::with_capacity(rgb.len() + h as usize);
    for row in rgb.chunks_exact(w as usize * 3) {
        raw.push(0);
        raw.extend_from_slice(row);
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).map_err(|e| e.to_string())?;
    let idat = z.finish().map_err(|e| e.to_string())?;
    let mut out = vec![0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.finalize().to_be_bytes());
    };
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &idat);
    chunk(b"IEND", &[]);
    Ok(out)
}

/// Writes every figure as `<name>.svg` and `<name>.png` into `dir` (created if needed), each
/// file atomically. Returns the files written.
pub fn write_figures(dir: &Path, figures: &[Figure]) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for f in figures {
        let svg = to_svg(f)?;
        let png = to_png(f)?;
        for (ext, bytes) in [("svg", svg.as_bytes()), ("png", png.as_slice())] {
            let path = dir.join(format!("{}.{ext}", f.name));
            gadget::atomic::write_atomically(&path, |w| w.write_all(bytes)).map_err(|source| {
                PlotError::Write {
                    path: path.clone(),
                    source,
                }
            })?;
            written.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::{distinguishing, fit, tick};

    #[test]
    fn legends_keep_what_tells_inputs_apart() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            distinguishing(&names(&[
                "sliding-holistic.rocksdb.poisson-100000.r1",
                "sliding-holistic.lmdb.poisson-100000.r1",
            ])),
            ["rocksdb", "lmdb"]
        );
        assert_eq!(
            distinguishing(&names(&["a.gtrace", "b.gtrace"])),
            ["a", "b"]
        );
        // one input, or the same name twice, stays whole
        assert_eq!(distinguishing(&names(&["x.r1"])), ["x.r1"]);
        assert_eq!(distinguishing(&names(&["x.r1", "x.r1"])), ["x.r1", "x.r1"]);
    }

    #[test]
    fn long_labels_keep_their_start_and_end() {
        assert_eq!(fit("short", 30), "short");
        let long = "sliding-holistic.rocksdb.poisson-100000.r1 batch_delete";
        let f = fit(long, 30);
        assert_eq!(f.chars().count(), 30);
        assert!(
            f.starts_with("sliding-holisti") && f.ends_with("batch_delete"),
            "{f}"
        );
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(1024.0), "1024");
        assert_eq!(tick(16384.0), "16.4K");
        assert_eq!(tick(100000.0), "100K");
        assert_eq!(tick(2.5e7), "25M");
    }
}

/// Asserts that every series of `f` whose label starts with `name` has colour `k`, and that
/// there is one: an input keeps its colour in every figure.
#[cfg(test)]
pub(crate) fn assert_one_colour(f: &Figure, name: &str, k: usize) {
    let colours: Vec<usize> = f
        .series
        .iter()
        .filter(|s| s.label.split(' ').next() == Some(name))
        .map(|s| s.colour)
        .collect();
    assert!(!colours.is_empty(), "{name} missing in {}", f.name);
    assert!(
        colours.iter().all(|c| *c == k),
        "{name} in {}: colours {colours:?}",
        f.name
    );
}

#[cfg(test)]
mod report_tests {
    use super::*;
    use gadget::access::Op;

    #[test]
    fn each_trace_keeps_one_colour_in_every_plot_of_a_comparison() {
        let ops = [Op::Put, Op::Get, Op::Put, Op::Delete, Op::Get, Op::Put];
        let names = ["flink", "kafka-streams", "spark"];
        let overlaid = overlay(
            names
                .iter()
                .map(|n| figures(&crate::analysis_of(&ops), n))
                .collect(),
        );
        for (k, name) in names.iter().enumerate() {
            for f in &overlaid {
                assert_one_colour(f, name, k);
            }
        }
    }

    #[test]
    fn the_hit_ratio_plot_is_named_as_its_title_and_axis_say() {
        let fs = figures(&crate::analysis_of(&[Op::Put, Op::Get]), "t");
        let f = fs.iter().find(|f| f.title.contains("hit ratio")).unwrap();
        assert_eq!(f.name, "hit-ratio-curve");
        assert_eq!(f.y_label, "hit ratio");
        assert!(fs.iter().all(|f| !f.name.contains("miss")));
    }
}
