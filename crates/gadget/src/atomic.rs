//! Files written atomically: a temporary file beside the target, renamed into place when
//! complete, so readers see the old file or the whole new one, never half of it.
//!
//! - The temporary file is created when the output is prepared ([`AtomicFile::create`]), so an
//!   unwritable destination (a missing or read-only directory, a directory named as the file)
//!   fails before any work is done.
//! - Its name says which process made it (`.NAME.gadget-PID-START.N.tmp`, START being the
//!   process's start time), so a later run recognises the files of a process that is gone
//!   (killed by SIGKILL, or its machine restarted) and removes them
//!   ([`remove_stale_temporary_files`], done whenever an output is prepared in a directory).
//! - A destination that is a symbolic link is written through: its target is replaced, the
//!   link stays.
//! - Targets that are not regular files (`/dev/null`, a FIFO, a terminal) are written in
//!   place: renaming a file over them would replace the device or pipe itself.
//! - New files get the permissions of the umask, as any file a command creates.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// True when `path` exists and is not a regular file or directory (a device, a FIFO, a
/// socket): such a target is written in place, never renamed over.
pub fn is_special_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// True when `a` and `b` name the same existing file (through links and relative paths).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
    }
}

/// An output file being written atomically. Dropping it before [`AtomicFile::commit`] removes
/// the temporary file and leaves the destination as it was.
#[derive(Debug)]
pub struct AtomicFile {
    /// The file written: the temporary one, or the special file itself.
    file: Option<File>,
    /// The temporary file's path; `None` for a special file written in place.
    tmp: Option<PathBuf>,
    /// Where the file goes: the destination, symbolic links resolved.
    dest: PathBuf,
}

impl AtomicFile {
    /// Prepares writing `path`: creates the temporary file beside it now (after removing stale
    /// ones of processes that are gone), or opens a special file for writing.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let dest = resolve_links(path)?;
        if is_special_file(&dest) {
            let file = File::options().write(true).open(&dest)?;
            return Ok(AtomicFile {
                file: Some(file),
                tmp: None,
                dest,
            });
        }
        if dest.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "it is a directory; give the name of a file in it",
            ));
        }
        let dir = parent_dir(&dest);
        remove_stale_temporary_files(dir);
        let name = dest
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let owner = this_process();
        let mut attempt = 0u32;
        loop {
            let tmp = dir.join(format!(".{name}.gadget-{owner}.{attempt}.tmp"));
            match File::options().write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    return Ok(AtomicFile {
                        file: Some(file),
                        tmp: Some(tmp),
                        dest,
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 1000 => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The destination (symbolic links resolved).
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// The file to write, taken out (to be handed back to [`AtomicFile::commit`]).
    pub fn take_file(&mut self) -> io::Result<File> {
        self.file
            .take()
            .ok_or_else(|| io::Error::other("the output file was already taken"))
    }

    /// Moves the written `file` into place: synced, then renamed over the destination.
    pub fn commit(mut self, file: File) -> io::Result<()> {
        match self.tmp.take() {
            Some(tmp) => {
                let renamed = file
                    .sync_all()
                    .and_then(|()| std::fs::rename(&tmp, &self.dest));
                if renamed.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                renamed
            }
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            self.file = None;
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Writes `path` through `fill`, atomically: readers see the old file or the complete new one.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let out = AtomicFile::create(path)?;
    write_prepared(out, fill)
}

/// Writes a prepared output through `fill` and moves it into place.
pub fn write_prepared(
    mut out: AtomicFile,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut w = BufWriter::new(out.take_file()?);
    fill(&mut w)?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    out.commit(file)
}

/// A prepared output that could not be written, and where its content went instead.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}; {}", dest.display(), fallback_said(fallback))]
pub struct OutputFailure {
    /// The destination.
    pub dest: PathBuf,
    /// Why it could not be written.
    pub source: io::Error,
    /// The fallback file written instead, or why that failed too.
    pub fallback: Result<PathBuf, io::Error>,
}

fn fallback_said(fallback: &Result<PathBuf, io::Error>) -> String {
    match fallback {
        Ok(p) => format!("its content is in {} instead", p.display()),
        Err(e) => format!("a fallback file in the temporary directory failed too ({e})"),
    }
}

/// Writes a prepared output through `fill`; when that fails (a full disk, a directory gone),
/// writes the same content to a fallback file in the temporary directory
/// (`$TMPDIR/gadget-PID-NAME`) and says where.
pub fn write_or_fall_back(
    out: AtomicFile,
    fill: impl Fn(&mut dyn Write) -> io::Result<()>,
) -> Result<(), OutputFailure> {
    let dest = out.dest.clone();
    let Err(source) = write_prepared(out, &fill) else {
        return Ok(());
    };
    let name = dest
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let fallback = std::env::temp_dir().join(format!("gadget-{}-{name}", std::process::id()));
    let fallback = write_atomically(&fallback, &fill).map(|()| fallback);
    Err(OutputFailure {
        dest,
        source,
        fallback,
    })
}

/// Refuses to write `output` over one of `inputs` (the same file by any name): the message
/// names the option (`what`) so the user knows which path to change.
pub fn refuse_overwriting_an_input(
    what: &str,
    output: &Path,
    inputs: &[&Path],
) -> Result<(), String> {
    match inputs.iter().find(|i| same_file(output, i)) {
        Some(i) => Err(format!(
            "{what} {} is also an input ({}); give another path: Gadget never writes over its inputs",
            output.display(),
            i.display()
        )),
        None => Ok(()),
    }
}

/// The directory a file at `path` lives in.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `path` with every symbolic link at its end followed (a dangling one too: its target is
/// what gets created), at most 40 deep as the kernel allows.
fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = if target.is_absolute() {
                    target
                } else {
                    parent_dir(&p).join(target)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other(
        "too many levels of symbolic links; give the file itself",
    ))
}

/// This process as temporary names state it: `PID-START`.
fn this_process() -> String {
    let pid = std::process::id();
    format!("{pid}-{}", process_start(pid).unwrap_or(0))
}

/// When process `pid` started (clock ticks since boot, from `/proc`), `None` when there is
/// no such process or no `/proc`.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name in parentheses may hold spaces; the fields after it are plain
    let rest = &stat[stat.rfind(')')? + 1..];
    // after the name: state is field 3, starttime field 22
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The owner `PID-START` of a temporary file named by [`AtomicFile::create`], if `name` is one.
fn temporary_owner(name: &str) -> Option<(u32, u64)> {
    let stem = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (before, _attempt) = stem.rsplit_once('.')?;
    let (_, owner) = before.rsplit_once(".gadget-")?;
    let (pid, start) = owner.split_once('-')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Removes the temporary files in `dir` left by processes that are gone: those named by
/// [`AtomicFile::create`] whose process id now belongs to no process, or to one that started
/// at another time. Only where `/proc` tells (Linux); elsewhere nothing is removed. Returns
/// how many were removed.
pub fn remove_stale_temporary_files(dir: &Path) -> usize {
    if !Path::new("/proc/self/stat").exists() {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(temporary_owner) else {
            continue;
        };
        if process_start(pid) != Some(start) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

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

    #[test]
    fn an_unwritable_destination_fails_when_prepared_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-dir/r.json");
        assert_eq!(
            AtomicFile::create(&missing).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let err = AtomicFile::create(dir.path()).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        let prepared = AtomicFile::create(&dir.path().join("r.json")).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(prepared);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "an output never committed leaves no file"
        );
    }

    #[test]
    fn a_symbolic_link_is_written_through_to_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.json");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomically(&link, |w| w.write_all(b"new")).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        // a dangling link creates its target
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink("made.json", &dangling).unwrap();
        write_atomically(&dangling, |w| w.write_all(b"made")).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("made.json")).unwrap(),
            "made"
        );
    }

    #[test]
    fn new_files_get_the_permissions_of_the_umask_not_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        write_atomically(&path, |w| w.write_all(b"x")).unwrap();
        // what a plain create gives under this process's umask
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&plain));
    }

    #[test]
    fn temporary_files_of_processes_that_are_gone_are_removed_and_live_ones_kept() {
        if process_start(std::process::id()).is_none() {
            eprintln!("skipping: no /proc here to tell whether a process is alive");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let live = AtomicFile::create(&dir.path().join("t.gtrace")).unwrap();
        let live_tmp = live.tmp.clone().unwrap();
        // a process id that is alive but started at another time: its id was reused
        let reused = dir
            .path()
            .join(format!(".t.gtrace.gadget-{}-1.0.tmp", std::process::id()));
        // a process id above the kernel's limit (4194304): no such process
        let gone = dir.path().join(".r.json.gadget-4194305-77.3.tmp");
        let unrelated = dir.path().join(".r.json.tmp");
        for p in [&reused, &gone, &unrelated] {
            std::fs::write(p, "x").unwrap();
        }
        assert_eq!(remove_stale_temporary_files(dir.path()), 2);
        assert!(live_tmp.exists() && unrelated.exists());
        assert!(!reused.exists() && !gone.exists());
        assert_eq!(
            temporary_owner(".my.file.json.gadget-12-345.0.tmp"),
            Some((12, 345))
        );
        assert_eq!(temporary_owner(".x.gadget-12.0.tmp"), None);
    }
}
