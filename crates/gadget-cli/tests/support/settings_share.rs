//! Which of a recorder test's settings this run records. CI records one half of them,
//! alternating halves by UTC day, so that the recorder tests stay within CI's time and every
//! setting is recorded every other day. `GADGET_RECORDER_SETTINGS=all`
//! (`scripts/record-all.sh`) records every one; `=0` or `=1` records that half (to repeat a
//! day's run).

use std::time::{SystemTime, UNIX_EPOCH};

/// The variable that chooses.
const VARIABLE: &str = "GADGET_RECORDER_SETTINGS";

/// The settings of `settings` to record in this run (every one, or every other one from
/// the half's index), with a line on stderr saying which and how to record the others.
pub fn this_runs_share<'a, S>(settings: &'a [S], test: &str) -> Vec<&'a S> {
    let half = match std::env::var(VARIABLE).ok().as_deref() {
        Some("all") => return settings.iter().collect(),
        Some("0") => 0,
        Some("1") => 1,
        Some(other) => panic!("{VARIABLE}={other}: use all, 0 or 1"),
        None => {
            let day = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() / 86_400);
            (day % 2) as usize
        }
    };
    let chosen: Vec<&S> = settings.iter().skip(half).step_by(2).collect();
    eprintln!(
        "{test}: recording half {half} of the settings ({} of {}; today's half alternates \
         daily): {VARIABLE}={} repeats this run, {VARIABLE}=all (scripts/record-all.sh) \
         records every one",
        chosen.len(),
        settings.len(),
        half
    );
    chosen
}
