//! `report.html` of an experiment: a sortable table of every cell and the plots people read,
//! self-contained (inline SVG, no network): throughput as grouped bars with 95% whiskers (an
//! open loop's marked with its target rate), the p99.9 latency on a log axis, and the rate
//! sweeps of every store on one workload overlaid on one latency–throughput plot with the
//! latency bound. One colour per store throughout; latencies in the unit they need.

use std::fmt::Write as _;
use std::io;

use super::svg::{bars, bars_with_targets, escape, lines, short, Axis, Bar, Line};
use super::{ns_in_interval, Exporter};
use crate::experiment::compare::Comparison;
use crate::experiment::summary::{CellSummary, ExperimentSummary};
use gadget::nines::nines;

/// A self-contained HTML page.
pub struct Html;

/// An experiment's `report.html`.
impl Exporter<ExperimentSummary> for Html {
    fn export(&self, summary: &ExperimentSummary, out: &mut dyn io::Write) -> io::Result<()> {
        out.write_all(page(summary).as_bytes())
    }
}

/// `gadget compare --report` of two experiments: the table of verdicts, and each cell's
/// ratio with its interval, throughput and p99.
impl Exporter<Comparison> for Html {
    fn export(&self, c: &Comparison, out: &mut dyn io::Write) -> io::Result<()> {
        out.write_all(comparison_page(c).as_bytes())
    }
}

/// The comparison's page.
fn comparison_page(c: &Comparison) -> String {
    let title = format!("{} against {}", c.other, c.baseline);
    let mut s = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child,td:nth-child(2),td:last-child{{text-align:left}}\
         figure svg{{max-width:100%;height:auto;border:1px solid #ddd}}</style></head><body>\n<h1>{t}</h1>\n\
         <p>Geometric means over each cell's runs; the ratio {o} ÷ {b} with Welch's 95% interval, \
         Holm-corrected over the cells; within ±{n}% is no difference.</p>\n",
        t = escape(&title),
        o = escape(&c.other),
        b = escape(&c.baseline),
        n = c.noise_threshold * 100.0
    );
    let _ = write!(
        s,
        "<table><thead><tr><th>cell</th><th>measure</th><th>{}</th><th>{}</th><th>verdict</th></tr></thead><tbody>",
        escape(&c.baseline),
        escape(&c.other)
    );
    for ch in &c.changes {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&ch.cell),
            escape(&ch.measure),
            escape(&super::markdown::value(&ch.measure, ch.baseline_mean)),
            escape(&super::markdown::value(&ch.measure, ch.other_mean)),
            escape(&ch.verdict.verdict)
        );
    }
    s.push_str("</tbody></table>\n");
    for measure in ["throughput", "p99"] {
        let _ = writeln!(s, "<figure>{}</figure>", comparison_plot(c, measure));
    }
    s.push_str("</body></html>\n");
    s
}

/// Each cell's ratio of `measure` with its interval, as bars around 1.
pub fn comparison_plot(c: &Comparison, measure: &str) -> String {
    let changes: Vec<_> = c
        .changes
        .iter()
        .filter(|ch| ch.measure == measure)
        .collect();
    let groups: Vec<(String, Vec<Bar>)> = changes
        .iter()
        .map(|ch| {
            let r = &ch.verdict.ratio;
            (
                ch.cell.clone(),
                vec![Bar {
                    series: 0,
                    value: r.ratio,
                    low: r.low,
                    high: r.high,
                }],
            )
        })
        .collect();
    let y = Axis::covering(
        &format!("{measure}: {} ÷ {}", c.other, c.baseline),
        false,
        changes
            .iter()
            .flat_map(|ch| [0.0, ch.verdict.ratio.high, 1.0 + c.noise_threshold]),
    );
    bars(
        &format!("{measure}, {} against {}", c.other, c.baseline),
        &y,
        &groups,
        &[(0, c.other.clone())],
    )
}

/// A cell's bar: its value and the ends of its whisker, when it has one.
type Measure = dyn Fn(&CellSummary) -> Option<(f64, f64, f64)>;

/// The page.
fn page(summary: &ExperimentSummary) -> String {
    let stores = names(summary.cells.iter().map(|c| c.store.as_str()));
    let legend: Vec<(usize, String)> = stores.iter().cloned().enumerate().collect();
    let series = |c: &CellSummary| stores.iter().position(|s| *s == c.store).unwrap_or(0);
    let mut s = String::new();
    let title = format!("Gadget experiment {}", summary.experiment);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font-family:sans-serif;margin:2em auto;max-width:1000px;color:#222}}\
         table{{border-collapse:collapse;font-size:13px}}th,td{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
         th{{cursor:pointer;background:#f3f3f3}}td:nth-child(-n+3),th:nth-child(-n+3){{text-align:left}}\
         figure{{margin:1.5em 0}}figure svg{{max-width:100%;height:auto;border:1px solid #ddd}}\
         .partial{{color:#a00}}</style></head><body>\n<h1>{t}</h1>\n",
        t = escape(&title)
    );
    let _ = writeln!(
        s,
        "<p>Gadget {}; seed {}; {} runs per cell in the order the seed decides. Values are geometric means over a cell's runs, \
         [their 95% confidence interval] (Student's t on the log scale: never negative).</p>",
        escape(&summary.gadget_version),
        summary.seed,
        summary.repetitions
    );
    if let Some(ran) = &summary.ran {
        let _ = writeln!(s, "<p>{}.</p>", escape(&ran.describe()));
    }
    if let Some(reason) = &summary.partial_reason {
        let _ = writeln!(s, "<p class=\"partial\">Partial: {}. <code>gadget bench --resume</code> runs what is missing.</p>", escape(reason));
    }
    if !summary.overrides.is_empty() {
        let _ = writeln!(
            s,
            "<p class=\"partial\">Quick try: the experiment as overridden by <code>{}</code>, not as its file says.</p>",
            escape(&summary.overrides.join(" "))
        );
    }
    if !summary.failed.is_empty() {
        let _ = writeln!(s, "<p class=\"partial\">Runs that failed:</p><ul>");
        for f in &summary.failed {
            let _ = writeln!(
                s,
                "<li><code>{}</code>: {} (log: <code>{}</code>)</li>",
                escape(&f.id),
                escape(&f.reason),
                escape(&f.log)
            );
        }
        let _ = writeln!(s, "</ul>");
    }
    table(&mut s, summary);
    verdicts(&mut s, summary);

    let groups = names(summary.cells.iter().map(group));
    let grouped = |value: &Measure| -> Vec<(String, Vec<Bar>)> {
        groups
            .iter()
            .map(|g| {
                let members = summary
                    .cells
                    .iter()
                    .filter(|c| group(c) == *g)
                    .filter_map(|c| {
                        let (value, low, high) = value(c)?;
                        Some(Bar {
                            series: series(c),
                            value,
                            low,
                            high,
                        })
                    })
                    .collect();
                (g.clone(), members)
            })
            .collect()
    };
    let throughput = grouped(&|c| {
        c.throughput
            .as_ref()
            .map(|t| (t.ci95_center, t.ci95_low, t.ci95_high))
    });
    let targets = open_loop_targets(summary, &groups);
    let y = Axis::covering(
        "requests/s",
        false,
        throughput
            .iter()
            .flat_map(|(_, b)| b.iter().map(|b| b.high))
            .chain(targets.iter().flatten().copied()),
    );
    let open_loop = if targets.iter().any(Option::is_some) {
        " In an open loop (a workload with an arrival rate) the store is asked for that rate: its bar shows what it kept up with, at most the target (dashed), not what it could do; the rate sweeps below show that."
    } else {
        ""
    };
    figure(
        &mut s,
        "throughput",
        &bars_with_targets(
            "Throughput by workload and store",
            &y,
            &throughput,
            &legend,
            &targets,
        ),
        &format!("Each bar is a store's geometric mean throughput on the workload below it; the whisker spans the 95% confidence interval. Bars whose whiskers overlap are not reliably different.{open_loop}"),
    );
    let p999 = grouped(&|c| {
        c.latency_ns
            .get("p999")
            .map(|t| (t.ci95_center, t.ci95_low, t.ci95_high))
    });
    let y = Axis::latency(
        "p99.9 latency",
        p999.iter()
            .flat_map(|(_, b)| b.iter().flat_map(|b| [b.low, b.high])),
    );
    figure(
        &mut s,
        "p999",
        &bars("p99.9 latency by workload and store", &y, &p999, &legend),
        "Each bar is a store's geometric mean 99.9th-percentile latency of all requests (from the intended start in an open loop), on a log axis because stores differ by decades; lower is better.",
    );
    for (k, g) in groups.iter().enumerate() {
        spectrum(&mut s, k, g, summary, &stores);
    }
    rate_sweeps(&mut s, summary, &stores);
    s.push_str(
        "<script>function sortBy(th){var t=th.closest('table'),i=[].indexOf.call(th.parentNode.children,th),\
         up=th.dataset.up!=='1';th.dataset.up=up?'1':'0';var rows=[].slice.call(t.tBodies[0].rows);\
         rows.sort(function(a,b){var x=a.cells[i].dataset.v,y=b.cells[i].dataset.v;\
         var d=(x!==undefined&&y!==undefined)?(parseFloat(x)-parseFloat(y)):a.cells[i].textContent.localeCompare(b.cells[i].textContent);\
         return up?d:-d;});rows.forEach(function(r){t.tBodies[0].appendChild(r);});}\
         window.addEventListener('load',function(){var n=0;document.querySelectorAll('figure svg').forEach(function(g){\
         var b=g.getBBox();if(b.width>0&&b.height>0&&g.querySelectorAll('text').length>0)n++;});\
         document.body.setAttribute('data-plots-drawn',String(n));});</script>\n</body></html>\n",
    );
    s
}

/// The distinct values, in first-seen order.
fn names<'a>(values: impl Iterator<Item = impl Into<String> + 'a>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let v = v.into();
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A cell's bar group: its workload, and its arrival when it is not a closed loop.
fn group(c: &CellSummary) -> String {
    if c.arrival == "closed" {
        c.workload.clone()
    } else {
        format!("{} ({})", c.workload, c.arrival)
    }
}

/// Group `g`'s latency spectra, one line per store (each the median-throughput run's).
fn spectrum(s: &mut String, k: usize, g: &str, summary: &ExperimentSummary, stores: &[String]) {
    let cells: Vec<&CellSummary> = summary
        .cells
        .iter()
        .filter(|c| group(c) == g && !c.median_run_spectrum.is_empty())
        .collect();
    if cells.is_empty() {
        return;
    }
    let last = cells
        .iter()
        .flat_map(|c| c.median_run_spectrum.iter())
        .filter(|p| p.0 < 100.0)
        .map(|p| nines(p.0, 0.0))
        .fold(0.0, f64::max);
    let lines_of: Vec<Line> = cells
        .iter()
        .map(|c| Line {
            series: stores.iter().position(|x| *x == c.store).unwrap_or(0),
            points: c
                .median_run_spectrum
                .iter()
                .map(|&(p, ns)| {
                    let ns = ns.max(1) as f64;
                    (nines(p, last), ns, ns, ns)
                })
                .collect(),
        })
        .collect();
    let legend: Vec<(usize, String)> = cells
        .iter()
        .map(|c| {
            (
                stores.iter().position(|x| *x == c.store).unwrap_or(0),
                c.store.clone(),
            )
        })
        .collect();
    let x = Axis {
        label: "percentile".into(),
        log: false,
        min: 0.0,
        max: last.ceil().max(last + 0.5),
        nines: true,
        latency: false,
    };
    let y = Axis::latency(
        "latency",
        lines_of.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
    );
    figure(
        s,
        &format!("spectrum-{k}"),
        &lines(&format!("Latency spectrum, {g}"), &x, &y, &lines_of, &legend, None),
        "Each line is a store's latency (log axis) at every percentile of its median run, the percentiles spaced by their nines so 90%, 99% and 99.9% get equal room; the rightmost point is the maximum. Lower is better; a line that rises early has a heavy tail.",
    );
}

/// The target rate of each bar group that runs an open loop (`None` for a closed loop): the
/// rate of its cells' arrival, which the rate sweeps record.
fn open_loop_targets(summary: &ExperimentSummary, groups: &[String]) -> Vec<Option<f64>> {
    groups
        .iter()
        .map(|g| {
            summary
                .cells
                .iter()
                .filter(|c| group(c) == *g)
                .find_map(|c| {
                    summary
                        .capacity
                        .iter()
                        .flat_map(|k| &k.points)
                        .find(|p| p.cell == c.id)
                        .map(|p| p.rate)
                })
        })
        .collect()
}

/// The rate sweeps, one plot per workload and arrival process: every store's latency against
/// the throughput it achieved at each rate, overlaid, with the latency bound dashed.
fn rate_sweeps(s: &mut String, summary: &ExperimentSummary, stores: &[String]) {
    let sweeps = names(
        summary
            .capacity
            .iter()
            .map(|c| format!("{}, {} arrivals", c.workload, c.process)),
    );
    for (k, sweep) in sweeps.iter().enumerate() {
        let of_sweep: Vec<_> = summary
            .capacity
            .iter()
            .filter(|c| format!("{}, {} arrivals", c.workload, c.process) == *sweep)
            .collect();
        let mut series = Vec::new();
        let mut legend = Vec::new();
        for c in &of_sweep {
            let store = stores.iter().position(|s| *s == c.store).unwrap_or(0);
            let points: Vec<(f64, f64, f64, f64)> = c
                .points
                .iter()
                .map(|p| {
                    let (lo, hi) = summary
                        .cells
                        .iter()
                        .find(|x| x.id == p.cell)
                        .and_then(|x| x.latency_ns.get(&c.percentile))
                        .map_or((p.latency_ns, p.latency_ns), |t| (t.ci95_low, t.ci95_high));
                    (p.throughput, p.latency_ns, lo, hi)
                })
                .collect();
            let verdict = c
                .highest_sustained_rate
                .map_or("no rate sustained".into(), |r| {
                    format!("sustains {} requests/s", short(r))
                });
            legend.push((store, format!("{}\n{verdict}", c.store)));
            series.push(Line {
                series: store,
                points,
            });
        }
        let percentile = of_sweep.first().map_or("p99", |c| c.percentile.as_str());
        let bound = of_sweep.iter().find_map(|c| c.bound_ns).map(|b| b as f64);
        let x = Axis::covering(
            "achieved throughput, requests/s",
            false,
            series.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        );
        let y = Axis::latency(
            &format!("{percentile} latency"),
            series
                .iter()
                .flat_map(|l| l.points.iter().flat_map(|p| [p.2.max(1.0), p.3]))
                // room on both sides of the bound: it is never hidden on the axis or frame
                .chain(bound.into_iter().flat_map(|b| [b / 2.0, b * 2.0])),
        );
        let threshold = bound.map(|b| (b, format!("bound {}", gadget::units::latency(b))));
        figure(
            s,
            &format!("capacity-{k}"),
            &lines(
                &format!("{sweep}: {percentile} latency against throughput"),
                &x,
                &y,
                &series,
                &legend,
                threshold,
            ),
            "Each line is a store, each point one target rate: how much the store did (x) at what latency (y, log axis; the bar is its 95% interval). Where a line turns up steeply the store is saturated; a rate is sustained when the store did 95% of it within the dashed latency bound. The further right a line stays under the bound, the more the store sustains.",
        );
    }
}

fn figure(s: &mut String, id: &str, svg: &str, how_to_read: &str) {
    let _ = writeln!(
        s,
        "<figure id=\"{id}\">{svg}<figcaption>{}</figcaption></figure>",
        escape(how_to_read)
    );
}

/// Each cell against its baseline, and the warnings about the runs behind the numbers.
fn verdicts(s: &mut String, summary: &ExperimentSummary) {
    if let Some(b) = &summary.baseline {
        let _ = writeln!(
            s,
            "<h2>Against the baseline <code>{}</code></h2><p>Ratios paired within blocks: the \
             geometric mean and its 95% bootstrap interval, Holm-corrected over every cell; within \
             ±{}% is no difference.</p><table><thead><tr><th>cell</th><th>against</th>\
             <th>throughput</th><th>p99</th></tr></thead><tbody>",
            escape(b),
            summary.noise_threshold * 100.0
        );
        for c in &summary.cells {
            let Some(a) = &c.against_baseline else {
                continue;
            };
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&c.id),
                escape(&a.baseline_cell),
                escape(c.verdict.as_deref().unwrap_or("–")),
                escape(a.latency.get("p99").map_or("–", |v| v.verdict.as_str()))
            );
        }
        s.push_str("</tbody></table>\n");
    }
    if !summary.warnings.is_empty() {
        s.push_str("<p class=\"partial\">Warnings:</p><ul>");
        for w in &summary.warnings {
            let _ = write!(s, "<li>{}</li>", escape(w));
        }
        s.push_str("</ul>\n");
    }
}

fn table(s: &mut String, summary: &ExperimentSummary) {
    s.push_str(
        "<table><thead><tr><th onclick=\"sortBy(this)\">workload</th><th onclick=\"sortBy(this)\">store</th>\
         <th onclick=\"sortBy(this)\">arrival</th><th onclick=\"sortBy(this)\">runs</th>\
         <th onclick=\"sortBy(this)\">requests/s</th><th onclick=\"sortBy(this)\">p50</th>\
         <th onclick=\"sortBy(this)\">p99</th><th onclick=\"sortBy(this)\">p99.9</th>\
         <th onclick=\"sortBy(this)\">max</th></tr></thead><tbody>\n",
    );
    for c in &summary.cells {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td data-v=\"{}\">{}/{}</td>",
            escape(&c.workload),
            escape(&c.store),
            escape(&c.arrival),
            c.completed,
            c.completed,
            c.planned
        );
        match &c.throughput {
            Some(t) => {
                let _ = write!(
                    s,
                    "<td data-v=\"{}\">{} [{}, {}]</td>",
                    t.ci95_center,
                    short(t.ci95_center),
                    short(t.ci95_low),
                    short(t.ci95_high)
                );
            }
            None => s.push_str("<td>–</td>"),
        }
        for p in ["p50", "p99", "p999", "max"] {
            match c.latency_ns.get(p) {
                Some(t) => {
                    let _ = write!(
                        s,
                        "<td data-v=\"{}\">{}</td>",
                        t.ci95_center,
                        ns_in_interval(t.ci95_center, t.ci95_low, t.ci95_high)
                    );
                }
                None => s.push_str("<td>–</td>"),
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n<p>Click a column's name to sort by it.</p>\n");
}
