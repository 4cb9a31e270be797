//! Fuzzing of experiment files, what `gadget bench` plans from them and the command lines it
//! gives its runs. Every bundled experiment, and a file that sets every store setting, is
//! mutated: a key's value made extreme (huge and negative numbers, NaN, empty strings, strings
//! that look like flags, paths, names with `.`, `-`, 300 characters, a NUL), lines dropped or
//! added, the text cut. Each must load or fail with an error naming the file; when it loads,
//! its plan is bounded, its cell names are unique, and no argument of any run can be read by
//! the run as a flag it was not meant to be.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use gadget_eval::experiment::file::{
    experiment_store_settings, Experiment, SettingValue, MAX_RUNS,
};
use gadget_eval::experiment::plan::Plan;
use proptest::prelude::*;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled experiments, and one that sets every store setting.
fn experiments() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for dir in ["examples/experiments", "examples/experiments/paper"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(project_root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap();
            out.push((p, text));
        }
    }
    let every: Vec<String> = experiment_store_settings()
        .map(|s| {
            // a value of each setting's type, read from the one table of settings
            let value = match s.value {
                SettingValue::Library => "\"current\"".to_string(),
                SettingValue::Url => "\"redis://127.0.0.1:6379\"".to_string(),
                SettingValue::Time { .. } => "\"5s\"".to_string(),
                SettingValue::Switch => "true".to_string(),
                SettingValue::Float(b) => (0.5f64).clamp(b.min, b.max).to_string(),
                SettingValue::Int(b) => {
                    let (min, max) = b.ints();
                    4.clamp(min, max).to_string()
                }
                SettingValue::Choice(names) => format!("\"{}\"", names[0]),
                SettingValue::RocksDbOptions => "\"db_bench\"".to_string(),
            };
            format!("{} = {value}", s.key)
        })
        .collect();
    out.push((
        project_root().join("examples/experiments/every-setting.toml"),
        format!(
            "[experiment]\nseed = 3\nrepetitions = 2\nlimit = 100\nduration = \"1s\"\nwarmup = \"10ms\"\n\
             [[workload]]\nname = \"w\"\nconfig = \"../ycsb/workloada.toml\"\n[workload.properties]\nrecordcount = 10\n\
             [[store]]\nkind = \"rocksdb\"\nname = \"r\"\n{}\n\
             [[arrival]]\nprocess = \"poisson\"\nrates = {{ from = 100, to = 1000, steps = 3, spacing = \"log\" }}\n",
            every.join("\n")
        ),
    ));
    out
}

const ODD_VALUES: &[&str] = &[
    "0",
    "-1",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "1e308",
    "nan",
    "inf",
    "-0.0",
    "true",
    "\"\"",
    "\"-w\"",
    "\"--help\"",
    "\"-dash.gtrace\"",
    "\"/x.gtrace\"",
    "\"a.b\"",
    "\"w.x\"",
    "\"x\\u0000y\"",
    "\"tab\\tname\"",
    "\"NAME_300\"",
    "[20000, 20000]",
    "{ from = 10, to = 11, steps = 1000 }",
    "{ from = 1, to = 1e12, steps = 1000, spacing = \"log\" }",
    "[]",
    "{}",
];

#[derive(Debug, Clone)]
enum Mutation {
    ReplaceValue(usize, usize),
    DropLine(usize),
    Truncate(usize),
    InsertLine(usize, String),
}

fn value(v: usize) -> String {
    ODD_VALUES[v % ODD_VALUES.len()].replace("NAME_300", &"n".repeat(300))
}

fn apply(text: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    match m {
        Mutation::ReplaceValue(i, v) => {
            let targets: Vec<usize> = (0..lines.len())
                .filter(|&j| lines[j].contains('=') && !lines[j].trim_start().starts_with('#'))
                .collect();
            if let Some(&t) = targets.get(i % targets.len().max(1)) {
                let key = lines[t].split('=').next().unwrap();
                out[t] = format!("{key}= {}", value(*v));
            }
        }
        Mutation::DropLine(i) if !out.is_empty() => {
            out.remove(i % lines.len());
        }
        Mutation::DropLine(_) => {}
        Mutation::Truncate(at) => {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            return text[..at].to_string();
        }
        Mutation::InsertLine(i, line) => out.insert(i % (lines.len() + 1), line.clone()),
    }
    out.join("\n")
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let keys: Vec<String> = experiment_store_settings()
        .map(|s| s.key.to_string())
        .chain(
            [
                "name",
                "kind",
                "seed",
                "repetitions",
                "limit",
                "rates",
                "trace",
                "config",
            ]
            .map(String::from),
        )
        .collect();
    prop_oneof![
        3 => (any::<usize>(), any::<usize>()).prop_map(|(i, v)| Mutation::ReplaceValue(i, v)),
        1 => any::<usize>().prop_map(Mutation::DropLine),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        2 => (any::<usize>(), proptest::sample::select(keys), any::<usize>())
            .prop_map(|(i, k, v)| Mutation::InsertLine(i, format!("{k} = {}", value(v)))),
    ]
}

/// The switches a run may be given without a value.
fn switches() -> HashSet<String> {
    experiment_store_settings()
        .filter(|s| matches!(s.value, gadget_eval::experiment::file::SettingValue::Switch))
        .map(|s| format!("--{}", s.key.replace('_', "-")))
        .collect()
}

fn check(text: &str, path: &Path) {
    let e = match Experiment::parse(text, path) {
        Ok(e) => e,
        Err(err) => {
            let said = err.to_string();
            assert!(
                said.contains(path.file_name().unwrap().to_str().unwrap()),
                "{said}"
            );
            return;
        }
    };
    let cells = e.workloads.len() * e.stores.len() * e.arrivals.len();
    assert!((cells as u64) * u64::from(e.repetitions) <= MAX_RUNS);
    let plan = Plan::of(&e);
    let ids: HashSet<String> = plan.runs.iter().map(|&r| plan.run_id(r)).collect();
    assert_eq!(ids.len(), plan.runs.len(), "two runs share a name");
    for id in &ids {
        assert!(id.len() < 250, "{id} cannot name a file");
        assert!(
            !id.starts_with('-') && !id.contains('/') && !id.contains('\0'),
            "{id}"
        );
    }
    let switches = switches();
    for cell in &plan.cells {
        let args = Plan::arguments(&e, cell, &cell.id, Path::new("out.json"));
        for a in &args[1..] {
            let a = a.to_str().expect("arguments are text");
            assert!(!a.contains('\0'), "{a:?}");
            if a.starts_with('-') {
                assert!(
                    (a.starts_with("--") && a.contains('=')) || switches.contains(a),
                    "{a:?} would be read as a flag"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_experiments_load_or_fail_and_never_plan_what_a_run_misreads(
        which in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let all = experiments();
        let (path, text) = &all[which % all.len()];
        let mut mutated = text.clone();
        for m in &mutations {
            mutated = apply(&mutated, m);
        }
        check(&mutated, path);
    }
}

#[test]
fn every_bundled_experiment_plans_runs_that_read_no_stray_flag() {
    for (path, text) in experiments() {
        check(&text, &path);
        Experiment::parse(&text, &path).unwrap();
    }
}
