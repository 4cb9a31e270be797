//! The `context` of a run's results: what the command line, the workloads, the store and the
//! machine were, gathered as `gadget run`/`replay` start.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use gadget::config::Config;
use gadget_eval::store::{StoreKind, StoreSettings};
use gadget_results::context::{rfc3339_utc, RunContext, WorkloadUsed};
use gadget_results::host::{CpuTimes, Host};

/// A config's workload (`states` are filled from the run).
pub fn config_workload(path: &Path, config: &Config, limit: Option<u64>) -> WorkloadUsed {
    WorkloadUsed {
        kind: "config".into(),
        path: path.display().to_string(),
        seed: Some(config.seed),
        limit,
        config: std::fs::read_to_string(path).ok(),
        ..WorkloadUsed::default()
    }
}

/// A trace's workload (`states` are filled from the run).
pub fn trace_workload(path: &PathBuf) -> WorkloadUsed {
    WorkloadUsed {
        kind: "trace".into(),
        path: path.display().to_string(),
        bytes: std::fs::metadata(path).ok().map(|m| m.len()),
        ..WorkloadUsed::default()
    }
}

/// The context of a run that started at `started` (the CPU's counters then: `cpu`) on `kind`
/// (its files under `store_dir`); call it after the store was opened, so that its library is
/// loaded.
pub fn context(
    label: Option<String>,
    (started, cpu): (SystemTime, Option<CpuTimes>),
    workloads: Vec<WorkloadUsed>,
    kind: StoreKind,
    settings: &StoreSettings,
    store_dir: &Path,
) -> RunContext {
    RunContext {
        label,
        command_line: std::env::args().collect(),
        started_at: rfc3339_utc(started),
        gadget_commit: option_env!("GADGET_GIT_COMMIT").map(str::to_string),
        workloads,
        store_settings: settings.applied(kind),
        store_libraries: kind.libraries(settings),
        host: Host::this(store_dir, cpu),
    }
}
