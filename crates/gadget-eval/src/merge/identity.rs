//! Whether results are shards of one run: what each says it ran (its identity), compared
//! field by field, and the seeds that must differ.

use std::path::Path;

use super::part::Part;
use gadget_results::RunReport;

/// What must be the same in every shard of one run, as (field, value) pairs in a fixed order.
pub(super) fn identity(r: &RunReport, part: &Part) -> Vec<(String, String)> {
    let mut id = vec![
        ("gadget_version".to_string(), r.gadget_version.clone()),
        ("store".into(), r.store.clone()),
        ("arrival".into(), r.arrival.clone()),
        (
            "value_compression_ratio".into(),
            format!("{:?}", r.value_compression_ratio),
        ),
        (
            "time-series interval (wall_clock.interval_ns)".into(),
            r.wall_clock
                .map_or_else(|| "none".into(), |c| c.interval_ns.to_string()),
        ),
        (
            "context".into(),
            if r.context.is_some() {
                "present"
            } else {
                "absent"
            }
            .into(),
        ),
    ];
    id.push((
        "split into shards (--shard I/N)".into(),
        part.shard
            .map_or_else(|| "no".into(), |s| format!("into {}", s.count)),
    ));
    id.push((
        "split into subtasks (--subtask)".into(),
        if part.subtask.is_some() { "yes" } else { "no" }.into(),
    ));
    id.push((
        "parallelism (--parallelism)".into(),
        part.parallelism
            .map_or_else(|| "as the config says".into(), |p| p.to_string()),
    ));
    if part.is_split() {
        // the parts of one split run draw one workload and one schedule from one seed
        id.push((
            "seeds (one for all the parts of a run)".into(),
            format!("{:?}", seeds(r)),
        ));
    }
    let Some(c) = &r.context else {
        return id;
    };
    id.push((
        "number of workloads (context.workloads)".into(),
        c.workloads.len().to_string(),
    ));
    for (i, w) in c.workloads.iter().enumerate() {
        let field = |name: &str| format!("workload (context.workloads[{i}].{name})");
        id.push((field("kind"), w.kind.clone()));
        if let Some(text) = &w.config {
            id.push((field("config"), shortened(text)));
        } else {
            // a trace (or a config that could not be read back): its file
            let name = Path::new(&w.path)
                .file_name()
                .map_or_else(|| w.path.clone(), |n| n.to_string_lossy().into_owned());
            id.push((field("path"), name));
        }
        id.push((field("limit"), format!("{:?}", w.limit)));
        id.push((field("bytes"), format!("{:?}", w.bytes)));
    }
    let keys: std::collections::BTreeSet<&String> = c.store_settings.keys().collect();
    id.push((
        "store settings (context.store_settings)".into(),
        keys.iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    ));
    for (k, v) in &c.store_settings {
        id.push((
            format!("store setting (context.store_settings.{k})"),
            v.clone(),
        ));
    }
    id
}

/// The first field in which two identities differ, and its two values.
pub(super) fn difference(
    a: &[(String, String)],
    b: &[(String, String)],
) -> Option<(String, String, String)> {
    (0..a.len().max(b.len())).find_map(|k| {
        let (x, y) = (a.get(k), b.get(k));
        (x != y).then(|| {
            let field = x.or(y).map(|f| f.0.clone()).unwrap_or_default();
            let value = |v: Option<&(String, String)>| {
                v.filter(|v| v.0 == field)
                    .map_or_else(|| "absent".to_string(), |v| v.1.clone())
            };
            (field.clone(), value(x), value(y))
        })
    })
}

/// A long value as its start, length and hash, so that an error message stays short.
pub(super) fn shortened(text: &str) -> String {
    if text.chars().count() <= 60 {
        return format!("{text:?}");
    }
    // FNV-1a: enough to tell two texts apart in a message
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let start: String = text.chars().take(30).collect();
    format!("{start:?}… ({} bytes, hash {hash:016x})", text.len())
}

/// The seeds a run's instances ran: its own, or each instance's (seed + i).
pub(super) fn seeds(r: &RunReport) -> Vec<u64> {
    if r.instances.is_empty() {
        vec![r.seed]
    } else {
        // a job's subtasks share the job's seed
        let mut seeds: Vec<u64> = r.instances.iter().map(|i| i.seed).collect();
        seeds.dedup();
        seeds
    }
}
