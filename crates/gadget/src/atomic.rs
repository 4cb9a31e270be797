//! Files written atomically: a temporary file beside the target, renamed into place when
//! complete, so readers see the old file or the whole new one, never half of it.
//!
//! Targets that are not regular files (`/dev/null`, a FIFO, a terminal) are written in place:
//! renaming a file over them would replace the device or pipe itself.

use std::io::{self, BufWriter, Write};
use std::path::Path;

/// True when `path` exists and is not a regular file or directory (a device, a FIFO, a
/// socket): such a target is written in place, never renamed over.
pub fn is_special_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes `path` through `fill`, atomically: readers see the old file or the complete new one.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if is_special_file(path) {
        let mut w = BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
        fill(&mut w)?;
        return w.flush();
    }
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn regular_files_are_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_fifo_is_written_into_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipping: mkfifo is not available");
            return;
        }
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut got = String::new();
                std::fs::File::open(fifo)
                    .unwrap()
                    .read_to_string(&mut got)
                    .unwrap();
                got
            })
        };
        write_atomically(&fifo, |w| w.write_all(b"through the pipe")).unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }
}
