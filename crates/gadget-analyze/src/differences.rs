//! What two or more runs differ in, so that `compare` can say when a comparison mixes the
//! effects of several changes.

use std::path::Path;

use gadget_results::{RunContext, RunReport};

/// The settings in which `runs` are not all the same, in a fixed order: store, store
/// settings, store library, workload, arrival, values, machine, Gadget build (a change of
/// store counts once, not also as settings and library). Runs whose results do not record a
/// setting (older versions) are not counted for it.
pub fn differences(runs: &[&RunReport]) -> Vec<&'static str> {
    type Aspect = (&'static str, fn(&RunReport) -> Option<String>);
    fn context(r: &RunReport, f: fn(&RunContext) -> String) -> Option<String> {
        r.context.as_ref().map(f)
    }
    let aspects: [Aspect; 8] = [
        ("store", |r| Some(r.store.clone())),
        ("store settings", |r| {
            context(r, |c| format!("{:?}", c.store_settings))
        }),
        ("store library", |r| {
            context(r, |c| format!("{:?}", c.store_libraries))
        }),
        ("workload", |r| context(r, |c| format!("{:?}", c.workloads))),
        ("arrival", |r| Some(r.arrival.clone())),
        ("value compressibility", |r| {
            r.value_compression_ratio.map(|v| v.to_string())
        }),
        ("machine", |r| {
            context(r, |c| format!("{:?}", c.host.machine()))
        }),
        ("Gadget build", |r| {
            r.context.as_ref().and_then(|c| c.gadget_commit.clone())
        }),
    ];
    let differ: Vec<&'static str> = aspects
        .iter()
        .filter(|(_, value)| {
            let mut seen = runs.iter().filter_map(|r| value(r));
            seen.next()
                .is_some_and(|first| seen.any(|other| other != first))
        })
        .map(|(name, _)| *name)
        .collect();
    // another store has other settings and libraries: one change, not three
    let store_changed = differ.contains(&"store");
    differ
        .into_iter()
        .filter(|d| !store_changed || !d.starts_with("store "))
        .collect()
}

/// What to call each run: its label, else its file name, else (when two share a file name)
/// its path.
pub fn run_names(paths: &[&Path], runs: &[&RunReport]) -> Vec<String> {
    let file_name = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let names: Vec<String> = paths
        .iter()
        .zip(runs)
        .map(|(p, r)| {
            r.context
                .as_ref()
                .and_then(|c| c.label.clone())
                .unwrap_or_else(|| file_name(p))
        })
        .collect();
    names
        .iter()
        .zip(paths)
        .map(|(name, path)| {
            if names.iter().filter(|n| *n == name).count() > 1 {
                format!("{name} ({})", path.display())
            } else {
                name.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget_results::{Host, WorkloadUsed};

    fn results(store: &str, label: Option<&str>, workload: &str) -> RunReport {
        let context = RunContext {
            label: label.map(str::to_string),
            workloads: vec![WorkloadUsed {
                kind: "trace".into(),
                path: workload.into(),
                ..WorkloadUsed::default()
            }],
            host: Host {
                cpus: Some(2),
                ..Host::default()
            },
            ..RunContext::default()
        };
        RunReport {
            store: store.into(),
            arrival: "closed loop".into(),
            requests: 1,
            throughput: 1.0,
            context: Some(context),
            ..RunReport::default()
        }
    }

    #[test]
    fn runs_differing_in_one_setting_name_it_and_in_two_name_both() {
        let a = results("rocksdb", None, "t.gtrace");
        let b = results("lmdb", None, "t.gtrace");
        let c = results("lmdb", None, "u.gtrace");
        assert_eq!(differences(&[&a, &b]), ["store"]);
        assert_eq!(differences(&[&a, &c]), ["store", "workload"]);
        assert!(differences(&[&b, &b]).is_empty());
    }

    #[test]
    fn a_machine_under_other_load_is_the_same_machine() {
        let with_host = |cpus: usize, load: f64, steal: Option<f64>| {
            let mut r = results("rocksdb", None, "t.gtrace");
            r.context.as_mut().unwrap().host = Host {
                cpus: Some(cpus),
                load_average_1m: Some(load),
                cpu_steal_share: steal,
                ..Host::default()
            };
            r
        };
        let quiet = with_host(2, 0.1, None);
        let busy = with_host(2, 3.5, Some(0.2));
        let bigger = with_host(8, 0.1, None);
        assert!(differences(&[&quiet, &busy]).is_empty());
        assert_eq!(differences(&[&quiet, &bigger]), ["machine"]);
    }

    #[test]
    fn runs_are_named_by_label_then_file_name_then_path() {
        let a = results("rocksdb", Some("baseline"), "t");
        let b = results("rocksdb", None, "t");
        let c = results("rocksdb", None, "t");
        let paths = [
            Path::new("x/r.json"),
            Path::new("y/r.json"),
            Path::new("z/s.json"),
        ];
        assert_eq!(
            run_names(&paths, &[&a, &b, &c]),
            ["baseline", "r.json", "s.json"]
        );
        let paths = [Path::new("x/r.json"), Path::new("y/r.json")];
        assert_eq!(
            run_names(&paths, &[&b, &c]),
            ["r.json (x/r.json)", "r.json (y/r.json)"]
        );
    }
}
