//! The runs of an experiment: one cell per workload × store × arrival (and rate), each run
//! `repetitions` times, in an order shuffled by the experiment's seed and recorded, so the same
//! file and seed give the same order.

use std::ffi::OsString;
use std::path::Path;

use crate::experiment::file::{Experiment, RunOrder, WorkloadFile};

use super::random::SplitMix;

/// One combination of workload, store and arrival.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// `workload.store.arrival`, as file names and tables show it.
    pub id: String,
    /// Index into [`Experiment::workloads`].
    pub workload: usize,
    /// Index into [`Experiment::stores`].
    pub store: usize,
    /// Index into [`Experiment::arrivals`].
    pub arrival: usize,
}

/// One run of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedRun {
    /// Index into [`Plan::cells`].
    pub cell: usize,
    /// 1-based repetition.
    pub repetition: u32,
}

/// Every cell and every run, in the order the runs go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The cells, in listed order.
    pub cells: Vec<Cell>,
    /// The runs, in execution order.
    pub runs: Vec<PlannedRun>,
}

impl Plan {
    /// The plan of `e`.
    pub fn of(e: &Experiment) -> Plan {
        let mut cells = Vec::new();
        for (wi, w) in e.workloads.iter().enumerate() {
            for (si, s) in e.stores.iter().enumerate() {
                for (ai, a) in e.arrivals.iter().enumerate() {
                    cells.push(Cell {
                        id: format!("{}.{}.{}", w.name, s.name, a.name()),
                        workload: wi,
                        store: si,
                        arrival: ai,
                    });
                }
            }
        }
        let mut runs: Vec<PlannedRun> = Vec::with_capacity(cells.len() * e.repetitions as usize);
        match e.order {
            RunOrder::Blocks => {
                for repetition in 1..=e.repetitions {
                    let mut block: Vec<PlannedRun> = (0..cells.len())
                        .map(|cell| PlannedRun { cell, repetition })
                        .collect();
                    shuffle(
                        &mut block,
                        e.seed ^ u64::from(repetition).wrapping_mul(0xA24B_AED4_963E_E407),
                    );
                    runs.extend(block);
                }
            }
            RunOrder::Random | RunOrder::Listed => {
                runs.extend((0..cells.len()).flat_map(|cell| {
                    (1..=e.repetitions).map(move |repetition| PlannedRun { cell, repetition })
                }));
                if e.order == RunOrder::Random {
                    shuffle(&mut runs, e.seed);
                }
            }
        }
        Plan { cells, runs }
    }

    /// The name of `run` (`workload.store.arrival.r2`), which its results file is named by.
    pub fn run_id(&self, run: PlannedRun) -> String {
        format!("{}.r{}", self.cells[run.cell].id, run.repetition)
    }

    /// The `gadget` arguments of a run of `cell` that writes its results to `output` and is
    /// labelled `label`. Every value goes with its flag (`--label=NAME`) and every path is
    /// anchored, so that no setting, name or file can be read as a flag by the run.
    pub fn arguments(e: &Experiment, cell: &Cell, label: &str, output: &Path) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let workload = &e.workloads[cell.workload];
        match &workload.file {
            WorkloadFile::Config(configs) => {
                a.push("run".into());
                // paths come anchored from the experiment (`./-x.toml`)
                a.extend(configs.iter().map(OsString::from));
                for (k, v) in &workload.properties {
                    a.push(format!("--property={k}={v}").into());
                }
                if let Some(n) = workload.input_passes {
                    a.push(format!("--input-passes={n}").into());
                }
            }
            WorkloadFile::Trace(p) => {
                a.push("replay".into());
                a.push(p.into());
            }
        }
        let store = &e.stores[cell.store];
        a.push(format!("--store={}", store.kind.name()).into());
        for (flag, value) in &store.flags {
            a.push(match value {
                Some(v) => format!("{flag}={v}").into(),
                None => flag.into(),
            });
        }
        let arrival = &e.arrivals[cell.arrival];
        a.push(format!("--arrival={}", arrival.process).into());
        if let Some(rate) = arrival.rate {
            a.push(format!("--rate={rate}").into());
        }
        let options = [
            ("--limit", workload.limit.or(e.limit).map(|n| n.to_string())),
            ("--duration", e.duration.clone()),
            ("--warmup", e.warmup.clone()),
        ];
        for (flag, value) in options {
            if let Some(v) = value {
                a.push(format!("{flag}={v}").into());
            }
        }
        a.push(format!("--label={label}").into());
        let mut out = OsString::from("--output=");
        out.push(output);
        a.push(out);
        a
    }
}

/// Fisher–Yates with SplitMix64: the same order for the same seed on every machine and
/// version.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut rng = SplitMix(seed);
    for i in (1..items.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(seed: u64, order: &str) -> Experiment {
        let text = format!(
            "[experiment]\nseed = {seed}\nrepetitions = 3\norder = \"{order}\"\nlimit = 500\n\
             [[workload]]\nconfig = \"a.toml\"\n[[workload]]\ntrace = \"b.gtrace\"\n\
             [[store]]\nkind = \"memory\"\n[[store]]\nkind = \"rocksdb\"\nrocksdb_lib = \"current\"\nwal = true\n\
             [[arrival]]\nprocess = \"poisson\"\nrates = [1000]\n"
        );
        Experiment::parse(&text, Path::new("/x/e.toml")).unwrap()
    }

    #[test]
    fn blocks_run_every_cell_once_each_in_its_own_shuffled_order() {
        let plan = Plan::of(&experiment(5, "blocks"));
        assert_eq!(
            plan,
            Plan::of(&experiment(5, "blocks")),
            "same seed, same order"
        );
        for (b, block) in plan.runs.chunks(plan.cells.len()).enumerate() {
            let mut cells: Vec<usize> = block.iter().map(|r| r.cell).collect();
            assert!(block.iter().all(|r| r.repetition == b as u32 + 1));
            cells.sort_unstable();
            assert_eq!(cells, [0, 1, 2, 3]);
        }
        let orders: Vec<Vec<usize>> = plan
            .runs
            .chunks(4)
            .map(|b| b.iter().map(|r| r.cell).collect())
            .collect();
        assert!(orders.windows(2).any(|w| w[0] != w[1]), "{orders:?}");
    }

    #[test]
    fn every_cell_runs_once_per_repetition_in_an_order_the_seed_decides() {
        let plan = Plan::of(&experiment(1, "random"));
        assert_eq!(plan.cells.len(), 4);
        assert_eq!(plan.runs.len(), 12);
        let mut sorted = plan.runs.clone();
        sorted.sort_by_key(|r| (r.cell, r.repetition));
        assert_eq!(sorted, Plan::of(&experiment(1, "listed")).runs);
        assert_eq!(
            plan,
            Plan::of(&experiment(1, "random")),
            "same seed, same order"
        );
        assert_ne!(plan.runs, Plan::of(&experiment(2, "random")).runs);
        assert_ne!(plan.runs, sorted, "shuffled");
        assert_eq!(
            plan.run_id(PlannedRun {
                cell: 3,
                repetition: 2
            }),
            "b.rocksdb.poisson-1000.r2"
        );
    }

    #[test]
    fn a_run_is_a_gadget_command_line() {
        let e = experiment(1, "listed");
        let plan = Plan::of(&e);
        let args = Plan::arguments(
            &e,
            &plan.cells[3],
            "b.rocksdb.poisson-1000.r1",
            Path::new("o.json"),
        );
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            "replay /x/b.gtrace --store=rocksdb --rocksdb-lib=current --wal --arrival=poisson \
             --rate=1000 --limit=500 --label=b.rocksdb.poisson-1000.r1 --output=o.json"
        );
    }
}
