//! A prefix of the Borg events for recorder tests whose engine's cost grows with the input
//! (Spark: about a second per micro-batch), and the variable that asks for all of them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// How many of the Borg events a recorder test plays: `default` (enough for every setting's
/// behaviour, in a fraction of the time), or what `GADGET_RECORDER_EVENTS` says (`all`, or a
/// count), for a full run (`scripts/record-all.sh`).
pub fn recorded_events(default: usize) -> Option<usize> {
    match std::env::var("GADGET_RECORDER_EVENTS") {
        Ok(v) if v == "all" => None,
        Ok(v) => Some(v.parse().unwrap_or_else(|_| {
            panic!("GADGET_RECORDER_EVENTS={v:?}: give `all` or a number of events")
        })),
        Err(_) => Some(default),
    }
}

/// The first `events` lines of the Borg events at `borg`, gzipped into `dir/name`; all of them
/// (the file itself) with `events` = `None`.
pub fn first_events(borg: &Path, dir: &Path, events: Option<usize>, name: &str) -> PathBuf {
    let Some(events) = events else {
        return borg.to_path_buf();
    };
    let gz = flate2::read::MultiGzDecoder::new(std::fs::File::open(borg).unwrap());
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut out = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    for line in BufReader::new(gz).lines().take(events) {
        writeln!(out, "{}", line.unwrap()).unwrap();
    }
    out.finish().unwrap();
    path
}
