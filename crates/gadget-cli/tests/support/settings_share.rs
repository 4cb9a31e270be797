//! Which of a recorder test's settings this run records. CI records one third of them,
//! every third setting, the third rotating by UTC day, so that the recorder tests stay within
//! CI's time and every setting is recorded every third day. `GADGET_RECORDER_SETTINGS=all`
//! (`scripts/record-all.sh`) records every one; `=0`, `=1` or `=2` records that third (to
//! repeat a day's run).

use std::time::{SystemTime, UNIX_EPOCH};

/// The variable that chooses.
const VARIABLE: &str = "GADGET_RECORDER_SETTINGS";

/// Into how many shares a list of settings is split; CI records one a day.
const SHARES: usize = 3;

/// The settings of `settings` to record in this run (every one, or every third one from the
/// share's index), with a line on stderr saying which and how to record the others.
pub fn this_runs_share<'a, S>(settings: &'a [S], test: &str) -> Vec<&'a S> {
    let share = match std::env::var(VARIABLE).ok().as_deref() {
        Some("all") => return settings.iter().collect(),
        Some(index) => match index.parse::<usize>() {
            Ok(i) if i < SHARES => i,
            _ => panic!(
                "{VARIABLE}={index}: use all, or a share from 0 to {}",
                SHARES - 1
            ),
        },
        None => {
            let day = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() / 86_400);
            (day % SHARES as u64) as usize
        }
    };
    let chosen: Vec<&S> = settings.iter().skip(share).step_by(SHARES).collect();
    eprintln!(
        "{test}: recording share {share} of {SHARES} of the settings ({} of {}; the share \
         rotates daily): {VARIABLE}={share} repeats this run, {VARIABLE}=all \
         (scripts/record-all.sh) records every one",
        chosen.len(),
        settings.len(),
    );
    chosen
}
