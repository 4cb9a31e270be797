//! What two or more runs differ in, so that `compare` can say when a comparison mixes the
//! effects of several changes.

use std::path::Path;

use crate::results::RunResults;

/// The settings in which `runs` are not all the same, in a fixed order: store, store
/// settings, store library, workload, arrival, values, machine, Gadget build (a change of
/// store counts once, not also as settings and library). Runs whose results do not record a
/// setting (older versions) are not counted for it.
pub fn differences(runs: &[&RunResults]) -> Vec<&'static str> {
    type Aspect = (&'static str, fn(&RunResults) -> Option<String>);
    fn context(r: &RunResults, f: fn(&crate::results::RunContext) -> String) -> Option<String> {
        r.context.as_ref().map(f)
    }
    let aspects: [Aspect; 8] = [
        ("store", |r| Some(r.store.clone())),
        ("store settings", |r| {
            context(r, |c| c.store_settings.to_string())
        }),
        ("store library", |r| {
            context(r, |c| c.store_libraries.to_string())
        }),
        ("workload", |r| context(r, |c| c.workloads.to_string())),
        ("arrival", |r| Some(r.arrival.clone())),
        ("value compressibility", |r| {
            r.value_compression_ratio.map(|v| v.to_string())
        }),
        ("machine", |r| context(r, |c| machine(&c.host))),
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

/// The machine a run's results describe, without what changes from run to run on one machine
/// (its load and the time stolen from it), which says how quiet it was, not which it was.
fn machine(host: &serde_json::Value) -> String {
    let mut host = host.clone();
    if let Some(fields) = host.as_object_mut() {
        for moment in TRANSIENT_HOST_FIELDS {
            fields.remove(*moment);
        }
    }
    host.to_string()
}

/// Host fields that describe the moment of a run rather than the machine.
const TRANSIENT_HOST_FIELDS: &[&str] = &["load_average_1m", "cpu_steal_share"];

/// What to call each run: its label, else its file name, else (when two share a file name)
/// its path.
pub fn run_names(paths: &[&Path], runs: &[&RunResults]) -> Vec<String> {
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

    fn results(store: &str, label: Option<&str>, workload: &str) -> RunResults {
        let context = serde_json::json!({
            "label": label,
            "workloads": [{"kind": "trace", "path": workload, "states": []}],
            "store_settings": {}, "store_libraries": [], "host": {"cpus": 2},
        });
        let text = serde_json::json!({
            "store": store, "arrival": "closed loop", "requests": 1, "throughput": 1.0,
            "latency": [], "service": [], "context": context,
        });
        RunResults::from_json(&text.to_string()).unwrap()
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
        let with_host = |host: serde_json::Value| {
            let mut r = results("rocksdb", None, "t.gtrace");
            r.context.as_mut().unwrap().host = host;
            r
        };
        let quiet = with_host(serde_json::json!({"cpus": 2, "load_average_1m": 0.1}));
        let busy = with_host(
            serde_json::json!({"cpus": 2, "load_average_1m": 3.5, "cpu_steal_share": 0.2}),
        );
        let bigger = with_host(serde_json::json!({"cpus": 8, "load_average_1m": 0.1}));
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
