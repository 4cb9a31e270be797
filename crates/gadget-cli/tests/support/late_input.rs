//! Input with late records for the recorder tests: the Borg job events (in time order) with
//! every tenth record moved back in time, so that windows close before some of their records
//! arrive when the file is read in file order.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// The Borg events at `borg` with every tenth record `shift_us` µs earlier (clamped at 0),
/// written to `dir/name`.
pub fn late_input(borg: &Path, dir: &Path, shift_us: i64, name: &str) -> PathBuf {
    let gz = flate2::read::MultiGzDecoder::new(std::fs::File::open(borg).unwrap());
    let path = dir.join(name);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for (i, line) in BufReader::new(gz).lines().enumerate() {
        let line = line.unwrap();
        let mut fields: Vec<&str> = line.splitn(3, ',').collect();
        let moved;
        if i % 10 == 3 {
            if let Some(us) = fields.get(1).and_then(|t| t.parse::<i64>().ok()) {
                moved = (us - shift_us).max(0).to_string();
                fields[1] = &moved;
            }
        }
        writeln!(out, "{}", fields.join(",")).unwrap();
    }
    out.flush().unwrap();
    path
}
