//! The `context` of merged results: what the shards ran, said once where they agree.

use super::MergeOptions;
use gadget_results::context::RunContext;
use gadget_results::host::Host;
use gadget_results::RunReport;

/// The merged run's context: the merging command, the earliest start, every shard's workloads
/// in shard order, the settings they share; the machine when they all ran on one.
pub(super) fn context(reports: &[&RunReport], options: &MergeOptions) -> Option<RunContext> {
    let contexts: Vec<&RunContext> = reports.iter().filter_map(|r| r.context.as_ref()).collect();
    let first = *contexts.first()?;
    let common = |f: fn(&RunContext) -> &Option<String>| -> Option<String> {
        let v = f(first);
        contexts
            .iter()
            .all(|c| f(c) == v)
            .then(|| v.clone())
            .flatten()
    };
    let mut libraries: Vec<String> = Vec::new();
    for c in &contexts {
        for l in &c.store_libraries {
            if !libraries.contains(l) {
                libraries.push(l.clone());
            }
        }
    }
    Some(RunContext {
        label: options.label.clone().or_else(|| common(|c| &c.label)),
        command_line: options.command_line.clone(),
        started_at: contexts
            .iter()
            .map(|c| c.started_at.clone())
            .min()
            .unwrap_or_default(),
        gadget_commit: common(|c| &c.gadget_commit),
        workloads: contexts
            .iter()
            .flat_map(|c| c.workloads.iter().cloned())
            .collect(),
        store_settings: first.store_settings.clone(),
        store_libraries: libraries,
        host: Host::of_runs(contexts.iter().map(|c| &c.host)),
    })
}
