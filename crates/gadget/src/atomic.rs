//! Files written atomically: a temporary file beside the target, renamed into place when
//! complete, so readers see the old file or the whole new one, never half of it.

use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Writes `path` through `fill`, atomically: readers see the old file or the complete new one.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".gadget-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        fill(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
