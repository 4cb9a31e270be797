//! What an experiment's runs say together: per cell, the statistics of throughput and of the
//! latency percentiles across its repetitions, and the highest rate each sweep sustained.
//! [`crate::export`] writes it as JSON, CSV, Markdown and HTML.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::plan::{Plan, PlannedRun};
use super::stats::Stats;
use super::verdict::{holm, Measure, Ratio, Verdict, RESAMPLES};
use crate::experiment::file::{Dimension, Experiment};
use gadget_results::RunReport;

/// The latency percentiles summarized, by name, from the "all requests" row of each run.
pub(crate) const PERCENTILES: [&str; 4] = ["p50", "p99", "p999", "max"];

/// One cell across its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    /// `workload.store.arrival`.
    pub id: String,
    /// The workload's name.
    pub workload: String,
    /// The store's name.
    pub store: String,
    /// The arrival process and rate.
    pub arrival: String,
    /// Runs planned.
    pub planned: usize,
    /// Runs that completed and are summarized here.
    pub completed: usize,
    /// Requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Stats>,
    /// Latency of all requests in nanoseconds (open loop: from the intended start), by
    /// percentile (`p50`, `p99`, `p999`, `max`).
    pub latency_ns: BTreeMap<String, Stats>,
    /// The latency spectrum of all requests (`(percentile, ns)`) of the run with the median
    /// throughput: one real run's distribution, not an average of distributions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub median_run_spectrum: Vec<(f64, u64)>,
    /// Against the experiment's baseline (none for the baseline's own cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against_baseline: Option<AgainstBaseline>,
    /// The verdict on throughput against the baseline, in words: `1.42× faster [1.35,
    /// 1.49]`, `no difference beyond noise (±2%): …`, `inconclusive: add repetitions (…)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// A cell against the cell that differs from it by the baseline alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgainstBaseline {
    /// The baseline's cell.
    pub baseline_cell: String,
    /// Throughput, this cell's over the baseline's, paired within blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Verdict>,
    /// Each latency percentile (`p50`, `p99`, `p999`, `max`), likewise.
    pub latency: BTreeMap<String, Verdict>,
}

/// The experiment's summary (`summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSummary {
    /// Gadget's version.
    pub gadget_version: String,
    /// The experiment file.
    pub experiment: String,
    /// What the runs ran on and with, as their results say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<Ran>,
    /// The seed that ordered the runs.
    pub seed: u64,
    /// Runs per cell.
    pub repetitions: u32,
    /// Every run, in the order they went.
    pub order: Vec<String>,
    /// True when runs are missing (stopped, or failed); `gadget bench --resume` runs them.
    pub partial: bool,
    /// Why, when partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_reason: Option<String>,
    /// The runs that failed in this invocation, each with what it said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedRun>,
    /// What `gadget bench` flags changed of the experiment file for a quick try
    /// (`--repetitions 1`): these numbers are not the experiment's as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// The baseline every other cell is compared with, and the noise threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// A ratio within this of 1 is no difference (0.02: ±2%).
    #[serde(default = "default_noise_threshold")]
    pub noise_threshold: f64,
    /// What makes the numbers less trustworthy than they look, each with what to do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Each cell, in listed order.
    pub cells: Vec<CellSummary>,
    /// Per workload, store and open-loop process run at several rates: the latency–throughput
    /// curve and the highest rate sustained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<Capacity>,
}

fn default_noise_threshold() -> f64 {
    crate::experiment::file::DEFAULT_NOISE_THRESHOLD
}

/// What an experiment's runs ran on: the machine, Gadget's commit, each store's libraries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ran {
    /// The machine: CPU model and count, memory, kernel (`Intel Xeon, 2 CPUs, 23.5 GiB,
    /// Linux 6.1`).
    pub machine: String,
    /// The git commit Gadget was built from, when the runs say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gadget_commit: Option<String>,
    /// Each store's libraries and version as its runs loaded them (`rocksdb: RocksDB 6.20.3
    /// …`), by store name; none for stores built into Gadget.
    pub stores: BTreeMap<String, Vec<String>>,
}

impl Ran {
    /// From the runs' contexts (the first run of each store says its libraries).
    fn of(e: &Experiment, plan: &Plan, done: &[(PlannedRun, RunReport)]) -> Option<Ran> {
        let first = done.iter().find_map(|(_, r)| r.context.as_ref())?;
        let h = &first.host;
        let mut machine = vec![h
            .cpu_model
            .clone()
            .unwrap_or_else(|| "an unknown CPU".into())];
        if let Some(n) = h.cpus {
            machine.push(format!("{n} CPUs"));
        }
        if let Some(b) = h.memory_bytes {
            machine.push(format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)));
        }
        if let Some(k) = &h.kernel {
            machine.push(format!("Linux {k}"));
        }
        let mut stores = BTreeMap::new();
        for (run, report) in done {
            let store = &e.stores[plan.cells[run.cell].store];
            if let Some(c) = &report.context {
                let mut libraries = c.store_libraries.clone();
                if let Some(v) = c.store_settings.get("rocksdb_version") {
                    if !libraries.iter().any(|l| l.contains(v.as_str())) {
                        libraries.push(format!("RocksDB {v}"));
                    }
                }
                stores.entry(store.name.clone()).or_insert(libraries);
            }
        }
        Some(Ran {
            machine: machine.join(", "),
            gadget_commit: first.gadget_commit.clone(),
            stores,
        })
    }

    /// In words, for the summary's head: `Ran on …; Gadget abc123; rocksdb: …`.
    pub fn describe(&self) -> String {
        let mut s = format!("Ran on {}", self.machine);
        if let Some(c) = &self.gadget_commit {
            s.push_str(&format!("; Gadget {c}"));
        }
        for (store, libraries) in &self.stores {
            let what = if libraries.is_empty() {
                "built into Gadget".to_string()
            } else {
                libraries.join(", ")
            };
            s.push_str(&format!("; {store}: {what}"));
        }
        s
    }
}

/// A run that did not complete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRun {
    /// The run (`workload.store.arrival.r2`).
    pub id: String,
    /// Why: the run's error, or the signal that killed it.
    pub reason: String,
    /// Its log, with everything it printed.
    pub log: String,
}

/// A rate counts as sustained when the store completed at least this share of it.
pub const SUSTAINED_SHARE: f64 = 0.95;

/// One rate of a sweep: what was asked, what was done, at what latency (means over runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityPoint {
    /// The cell run at this rate.
    pub cell: String,
    /// The target rate, requests/s.
    pub rate: f64,
    /// The throughput achieved, requests/s.
    pub throughput: f64,
    /// The percentile held to the bound, ns.
    pub latency_ns: f64,
    /// Throughput at least 95% of the rate, and latency within the bound (when there is one).
    pub sustained: bool,
}

/// A rate sweep of one workload, store and arrival process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// The workload.
    pub workload: String,
    /// The store.
    pub store: String,
    /// The arrival process.
    pub process: String,
    /// The latency percentile held to the bound (`p99`).
    pub percentile: String,
    /// The bound, ns (`latency_bound`); none: throughput alone decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_ns: Option<u64>,
    /// Each rate, ascending.
    pub points: Vec<CapacityPoint>,
    /// The highest rate sustained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_sustained_rate: Option<f64>,
}

impl ExperimentSummary {
    /// The summary of `plan`'s runs whose results are `done` (by cell index).
    pub fn of(
        e: &Experiment,
        plan: &Plan,
        done: &[(PlannedRun, RunReport)],
        failed: Vec<FailedRun>,
        partial_reason: Option<String>,
    ) -> ExperimentSummary {
        let cells = plan
            .cells
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                let reports: Vec<&RunReport> = done
                    .iter()
                    .filter(|(r, _)| r.cell == i)
                    .map(|(_, r)| r)
                    .collect();
                let all: Vec<_> = reports
                    .iter()
                    .filter_map(|r| r.latency.iter().find(|o| o.op == "all"))
                    .collect();
                let latency_ns = PERCENTILES
                    .iter()
                    .filter_map(|&p| {
                        let values: Vec<f64> = all
                            .iter()
                            .map(|o| match p {
                                "p50" => o.p50_ns,
                                "p99" => o.p99_ns,
                                "p999" => o.p999_ns,
                                _ => o.max_ns,
                            } as f64)
                            .collect();
                        Some((p.to_string(), Stats::of(&values)?))
                    })
                    .collect();
                let throughput: Vec<f64> = reports.iter().map(|r| r.throughput).collect();
                let mut by_throughput = reports.clone();
                by_throughput.sort_by(|a, b| a.throughput.total_cmp(&b.throughput));
                let median_run_spectrum = by_throughput
                    .get(by_throughput.len() / 2)
                    .and_then(|r| r.latency_spectrum.iter().find(|s| s.op == "all"))
                    .map(|s| s.points.clone())
                    .unwrap_or_default();
                CellSummary {
                    id: cell.id.clone(),
                    workload: e.workloads[cell.workload].name.clone(),
                    store: e.stores[cell.store].name.clone(),
                    arrival: e.arrivals[cell.arrival].name(),
                    planned: e.repetitions as usize,
                    completed: reports.len(),
                    throughput: Stats::of(&throughput),
                    latency_ns,
                    median_run_spectrum,
                    against_baseline: None,
                    verdict: None,
                }
            })
            .collect::<Vec<_>>();
        let mut cells = cells;
        against_baseline(e, plan, done, &mut cells);
        let warnings = warnings(e, done, &cells);
        let missing = plan.runs.len() - done.len();
        ExperimentSummary {
            gadget_version: env!("CARGO_PKG_VERSION").to_string(),
            experiment: e.path.display().to_string(),
            ran: Ran::of(e, plan, done),
            seed: e.seed,
            repetitions: e.repetitions,
            order: plan.runs.iter().map(|&r| plan.run_id(r)).collect(),
            partial: missing > 0,
            partial_reason: partial_reason.or_else(|| {
                (missing > 0).then(|| format!("{missing} of {} runs are missing", plan.runs.len()))
            }),
            capacity: capacity(e, &cells),
            failed,
            overrides: Vec::new(),
            baseline: e.baseline.as_ref().map(|b| b.name.clone()),
            noise_threshold: e.noise_threshold,
            warnings,
            cells,
        }
    }
}

/// A run's value of `measure`: `throughput` or a latency percentile of all requests.
pub(crate) fn measure(r: &RunReport, measure: &str) -> Option<f64> {
    if measure == "throughput" {
        return Some(r.throughput);
    }
    let all = r.latency.iter().find(|o| o.op == "all")?;
    Some(match measure {
        "p50" => all.p50_ns,
        "p99" => all.p99_ns,
        "p999" => all.p999_ns,
        _ => all.max_ns,
    } as f64)
}

/// The measures a verdict is given on.
pub(crate) const MEASURES: [&str; 5] = ["throughput", "p50", "p99", "p999", "max"];

/// Fills each cell's verdicts against the cell that differs by the baseline alone: per
/// measure, the ratio paired by repetition (block), Holm-corrected over every cell.
fn against_baseline(
    e: &Experiment,
    plan: &Plan,
    done: &[(PlannedRun, RunReport)],
    cells: &mut [CellSummary],
) {
    let Some(b) = &e.baseline else {
        return;
    };
    let of = |c: &super::plan::Cell| match b.dimension {
        Dimension::Workload => c.workload,
        Dimension::Store => c.store,
        Dimension::Arrival => c.arrival,
    };
    let pairs: Vec<(usize, usize)> = plan
        .cells
        .iter()
        .enumerate()
        .filter(|(_, c)| of(c) != b.index)
        .filter_map(|(i, c)| {
            let base = plan.cells.iter().position(|x| {
                of(x) == b.index
                    && [x.workload, x.store, x.arrival]
                        .iter()
                        .zip([c.workload, c.store, c.arrival])
                        .zip([Dimension::Workload, Dimension::Store, Dimension::Arrival])
                        .all(|((a, c), d)| d == b.dimension || *a == c)
            })?;
            Some((i, base))
        })
        .collect();
    for (m, name) in MEASURES.iter().enumerate() {
        let ratios: Vec<Option<Ratio>> = pairs
            .iter()
            .map(|&(cell, base)| {
                let by_block = |c: usize| -> BTreeMap<u32, f64> {
                    done.iter()
                        .filter(|(r, _)| r.cell == c)
                        .filter_map(|(r, report)| Some((r.repetition, measure(report, name)?)))
                        .collect()
                };
                let (ours, theirs) = (by_block(cell), by_block(base));
                let paired: Vec<(f64, f64)> = ours
                    .iter()
                    .filter_map(|(rep, v)| Some((*v, *theirs.get(rep)?)))
                    .collect();
                let seed =
                    e.seed ^ ((cell as u64) << 8 | m as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                Ratio::of_pairs(&paired, RESAMPLES, seed)
            })
            .collect();
        let tested: Vec<f64> = ratios.iter().flatten().map(|r| r.p).collect();
        let mut corrected = holm(&tested).into_iter();
        for (&(cell, base), ratio) in pairs.iter().zip(ratios) {
            let against = cells[cell]
                .against_baseline
                .get_or_insert_with(|| AgainstBaseline {
                    baseline_cell: plan.cells[base].id.clone(),
                    throughput: None,
                    latency: BTreeMap::new(),
                });
            let Some(ratio) = ratio else {
                continue;
            };
            let p = corrected.next().unwrap_or(1.0);
            if *name == "throughput" {
                let v = Verdict::judge(ratio, p, e.noise_threshold, Measure::Throughput);
                let sentence = v.verdict.clone();
                against.throughput = Some(v);
                cells[cell].verdict = Some(sentence);
            } else {
                let v = Verdict::judge(ratio, p, e.noise_threshold, Measure::Latency(name));
                against.latency.insert(name.to_string(), v);
            }
        }
    }
    for c in cells.iter_mut() {
        if c.against_baseline.is_some() && c.verdict.is_none() {
            c.verdict = Some(format!(
                "not compared: fewer than {} repetitions of it and its baseline in common",
                super::verdict::MIN_BLOCKS
            ));
        }
    }
}

/// The shortest run whose figures are taken at face value.
const SHORT_RUN_SECONDS: f64 = 1.0;
/// Requests a p99.9 needs to rest on more than a handful of samples.
const REQUESTS_FOR_P999: u64 = 10_000;
/// A cell whose throughput varies more than this across its runs is unstable.
const UNSTABLE_CV: f64 = 0.10;

/// Warnings about the runs behind the numbers: short runs, too few requests for a p99.9,
/// cells whose runs disagree, a machine busy with other work.
fn warnings(
    e: &Experiment,
    done: &[(PlannedRun, RunReport)],
    cells: &[CellSummary],
) -> Vec<String> {
    let mut out = Vec::new();
    let short = done
        .iter()
        .filter(|(_, r)| r.seconds < SHORT_RUN_SECONDS)
        .count();
    if short > 0 {
        out.push(format!(
            "{short} of {} runs lasted under {SHORT_RUN_SECONDS} s: start-up and caches weigh on their figures; give `duration = \"10s\"` (or a higher `limit`)",
            done.len()
        ));
    }
    let few = done
        .iter()
        .filter(|(_, r)| r.requests < REQUESTS_FOR_P999)
        .count();
    if few > 0 {
        out.push(format!(
            "{few} of {} runs measured under {REQUESTS_FOR_P999} requests: their p99.9 rests on fewer than 10 samples; run them longer",
            done.len()
        ));
    }
    let unstable: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            let t = c.throughput.as_ref()?;
            let cv = if t.mean > 0.0 { t.stddev / t.mean } else { 0.0 };
            (t.n >= 2 && cv > UNSTABLE_CV).then(|| format!("{} {:.0}%", c.id, cv * 100.0))
        })
        .collect();
    if !unstable.is_empty() {
        out.push(format!(
            "{} of {} cells' runs vary in throughput by more than {:.0}% (coefficient of variation: {}): the machine or the store is unstable; close other work, run longer, or add repetitions",
            unstable.len(),
            cells.len(),
            UNSTABLE_CV * 100.0,
            unstable.join(", ")
        ));
    }
    let host = |r: &RunReport| {
        r.context
            .as_ref()
            .map(|c| c.host.clone())
            .unwrap_or_default()
    };
    let cores = done
        .iter()
        .filter_map(|(_, r)| host(r).cpus)
        .max()
        .unwrap_or(0);
    let loaded = done
        .iter()
        .filter(|(_, r)| {
            host(r)
                .load_average_1m
                .is_some_and(|l| cores > 0 && l > cores as f64)
        })
        .count();
    if loaded > 0 {
        out.push(format!(
            "{loaded} of {} runs started with a load average above the {cores} cores: other work competed with the store; run on a quiet machine",
            done.len()
        ));
    }
    let stolen = done
        .iter()
        .filter(|(_, r)| host(r).cpu_steal_share.is_some_and(|s| s > 0.05))
        .count();
    if stolen > 0 {
        out.push(format!(
            "{stolen} of {} runs lost over 5% of their CPU time to steal (a virtual machine whose host is busy); their figures vary with the neighbours",
            done.len()
        ));
    }
    if e.baseline.is_some() && e.order != crate::experiment::file::RunOrder::Blocks {
        out.push("the runs did not go in blocks (`order`): a verdict pairs runs by repetition, which drift separates; use the default `order = \"blocks\"`".to_string());
    }
    out
}

/// The rate sweeps among `cells`: per workload, store and open-loop process with rates.
fn capacity(e: &Experiment, cells: &[CellSummary]) -> Vec<Capacity> {
    let mut out: Vec<Capacity> = Vec::new();
    for w in &e.workloads {
        for s in &e.stores {
            let mut processes: Vec<&str> = Vec::new();
            for a in e.arrivals.iter().filter(|a| a.rate.is_some()) {
                if !processes.contains(&a.process.as_str()) {
                    processes.push(&a.process);
                }
            }
            for process in processes {
                let mut points: Vec<CapacityPoint> = e
                    .arrivals
                    .iter()
                    .filter(|a| a.process == process)
                    .filter_map(|a| {
                        let rate = a.rate?;
                        let c = cells.iter().find(|c| {
                            c.workload == w.name && c.store == s.name && c.arrival == a.name()
                        })?;
                        let throughput = c.throughput.as_ref()?.mean;
                        let latency_ns = c.latency_ns.get(&e.latency_percentile)?.mean;
                        let within = e.latency_bound_ns.is_none_or(|b| latency_ns <= b as f64);
                        Some(CapacityPoint {
                            cell: c.id.clone(),
                            rate,
                            throughput,
                            latency_ns,
                            sustained: throughput >= SUSTAINED_SHARE * rate && within,
                        })
                    })
                    .collect();
                points.sort_by(|a, b| a.rate.total_cmp(&b.rate));
                if points.is_empty() {
                    continue;
                }
                out.push(Capacity {
                    workload: w.name.clone(),
                    store: s.name.clone(),
                    process: process.to_string(),
                    percentile: e.latency_percentile.clone(),
                    bound_ns: e.latency_bound_ns,
                    highest_sustained_rate: points
                        .iter()
                        .filter(|p| p.sustained)
                        .map(|p| p.rate)
                        .reduce(f64::max),
                    points,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(arrival: &str, throughput: &[f64], p99_ns: &[f64]) -> CellSummary {
        CellSummary {
            id: format!("w.memory.{arrival}"),
            workload: "w".into(),
            store: "memory".into(),
            arrival: arrival.into(),
            planned: 2,
            completed: 2,
            throughput: Stats::of(throughput),
            latency_ns: [("p99".to_string(), Stats::of(p99_ns).unwrap())].into(),
            median_run_spectrum: Vec::new(),
            against_baseline: None,
            verdict: None,
        }
    }

    #[test]
    fn the_highest_rate_sustained_keeps_up_and_stays_within_the_bound() {
        let e = Experiment::parse(
            "[experiment]\nlatency_bound = \"1ms\"\n[[workload]]\nname = \"w\"\ntrace = \"t\"\n\
             [[store]]\nkind = \"memory\"\n[[arrival]]\nprocess = \"poisson\"\nrates = [1000, 2000, 4000, 8000]\n",
            std::path::Path::new("e.toml"),
        )
        .unwrap();
        let cells = [
            cell("poisson-1000", &[1000.0, 999.0], &[1e5, 1e5]),
            // kept up, within the bound
            cell("poisson-2000", &[1990.0, 1985.0], &[9e5, 9e5]),
            // kept up, latency over the bound
            cell("poisson-4000", &[3990.0, 3980.0], &[2e6, 3e6]),
            // fell behind
            cell("poisson-8000", &[5000.0, 5100.0], &[5e7, 6e7]),
        ];
        let c = capacity(&e, &cells);
        assert_eq!(c.len(), 1);
        let sustained: Vec<bool> = c[0].points.iter().map(|p| p.sustained).collect();
        assert_eq!(sustained, [true, true, false, false]);
        assert_eq!(c[0].highest_sustained_rate, Some(2000.0));
        assert_eq!(c[0].points[2].latency_ns, 2.5e6);
    }
}
