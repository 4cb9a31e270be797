//! What a run ran, as its results record it: enough to rerun it and to tell two runs'
//! numbers apart (docs/results.schema.json, `context`).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::host::Host;

/// What ran, where and when.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    /// The user's name for the run (`--label`); `compare` shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The command line, as given.
    pub command_line: Vec<String>,
    /// When the run started, UTC (RFC 3339).
    pub started_at: String,
    /// The git commit Gadget was built from (`-dirty` with uncommitted changes), when built
    /// from a git checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gadget_commit: Option<String>,
    /// Each workload, in instance order.
    pub workloads: Vec<WorkloadUsed>,
    /// The store's settings as Gadget applied them.
    pub store_settings: BTreeMap<String, String>,
    /// The shared libraries the store ran on: RocksDB's choice, version, artifact and file;
    /// others' file as the loader found it (`libleveldb.so.1d`); empty for stores built in.
    pub store_libraries: Vec<String>,
    /// The machine.
    pub host: Host,
}

/// One workload of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadUsed {
    /// `config` (generated as the run goes) or `trace` (replayed).
    pub kind: String,
    /// The config's or the trace's path.
    pub path: String,
    /// The workload's seed (a config's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The most events generated (`--limit`, `limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// The config's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// The trace's size, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The states its requests name, in state-id order.
    pub states: Vec<String>,
}

/// `time` as RFC 3339 in UTC, to the second (`2026-11-26T05:20:51Z`).
pub fn rfc3339_utc(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn start_times_are_rfc3339_in_utc() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_583_751);
        assert_eq!(rfc3339_utc(t), "2026-11-25T05:15:51Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339_utc(leap), "2000-02-29T00:00:00Z");
    }
}
