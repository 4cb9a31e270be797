//! Whether a process id names a node of this cluster, from `/proc`: `down` signals a process
//! only when its command is `redis-server`, its command line names the node's port, and it
//! works in the node's folder (or, just started, has it as its `--dir` argument).

use std::path::{Path, PathBuf};

/// What a process id listed for a node names.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Not a process id a node can have (kill(2) reads 0 and negative values as process
    /// groups, -1 as every process); why.
    Invalid(&'static str),
    /// No process (or one that has exited and waits for its parent).
    Gone,
    /// The node's `redis-server`.
    Node,
    /// Another process: what it is.
    Other(String),
}

/// Whether `/proc` tells about processes here (Linux).
pub fn can_tell() -> bool {
    Path::new("/proc/self/stat").exists()
}

/// What `pid`, listed for the node on `port` working in `folder`, names.
pub fn identify(pid: i64, port: u16, folder: &Path) -> Found {
    if pid <= 0 {
        return Found::Invalid(
            "not a process id: kill(2) reads 0 and below as process groups, or every process",
        );
    }
    if pid > i64::from(i32::MAX) {
        return Found::Invalid(
            "above the largest process id (2147483647): kill(2) would read it as a negative \
             number, a process group or every process",
        );
    }
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let stat = match std::fs::read_to_string(proc.join("stat")) {
        Ok(stat) => stat,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Gone,
        Err(e) => return Found::Other(format!("a process that cannot be looked at ({e})")),
    };
    // after the command name in parentheses: the state, `Z` for one that has exited
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    if state == Some("Z") {
        return Found::Gone;
    }
    let comm = std::fs::read_to_string(proc.join("comm")).unwrap_or_default();
    let args: Vec<String> = std::fs::read(proc.join("cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let cmdline = args.join(" ");
    if comm.trim() != "redis-server" {
        return Found::Other(format!("`{cmdline}`, not redis-server"));
    }
    if !names_port(&cmdline, port) {
        return Found::Other(format!(
            "`{cmdline}`, a redis-server of another port than {port}"
        ));
    }
    let cwd = match std::fs::read_link(proc.join("cwd")) {
        Ok(cwd) => cwd,
        Err(e) => {
            return Found::Other(format!(
                "`{cmdline}`, a redis-server whose folder cannot be read ({e})"
            ))
        }
    };
    if works_in(&cwd, folder) || starts_in(&args, &cwd, folder) {
        Found::Node
    } else {
        Found::Other(format!(
            "`{cmdline}`, a redis-server in {}, not in {}",
            cwd.display(),
            folder.display()
        ))
    }
}

/// The processes that are the node on `port` in `folder`, looked for through `/proc`: for a
/// node whose `up` was killed before it recorded the node's process id.
pub fn find(port: u16, folder: &Path) -> Vec<i64> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i64>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "redis-server")
                && identify(pid, port, folder) == Found::Node
        })
        .collect()
}

/// Whether a redis-server's command line names `port`: its title (`redis-server
/// 127.0.0.1:PORT [cluster]`) or its arguments (`--port PORT`).
fn names_port(cmdline: &str, port: u16) -> bool {
    let port = port.to_string();
    let words: Vec<&str> = cmdline.split_whitespace().collect();
    words
        .iter()
        .any(|w| w.rsplit_once(':').is_some_and(|(_, p)| p == port))
        || words.windows(2).any(|w| w[0] == "--port" && w[1] == port)
}

/// Whether a process's working folder `cwd` (as `/proc` shows it) is `folder`, or was,
/// when the folder has been removed since.
fn works_in(cwd: &Path, folder: &Path) -> bool {
    if let Ok(f) = folder.canonicalize() {
        return cwd == f;
    }
    let (Some(parent), Some(name)) = (folder.parent(), folder.file_name()) else {
        return false;
    };
    let Ok(parent) = parent.canonicalize() else {
        return false;
    };
    let mut gone = parent.join(name).into_os_string();
    gone.push(" (deleted)");
    cwd.as_os_str() == gone
}

/// Whether a redis-server's arguments, read from its working folder `cwd`, give `folder` as
/// its `--dir`: one that has not yet moved there (it sets its title, and moves, as it starts).
fn starts_in(args: &[String], cwd: &Path, folder: &Path) -> bool {
    let Ok(folder) = folder.canonicalize() else {
        return false;
    };
    args.windows(2)
        .any(|w| w[0] == "--dir" && cwd.join(&w[1]).canonicalize().is_ok_and(|d| d == folder))
}

/// Sends `signal` to `pid`, which [`identify`] found to be a node.
pub fn signal(pid: i64, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        if pid > 0 {
            // SAFETY: kill(2) of one process id above 0 has no memory effects
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_kill_reads_as_groups_are_invalid() {
        let here = Path::new(".");
        for pid in [0, -1, 4294967295, i64::from(i32::MAX) + 1] {
            assert!(
                matches!(identify(pid, 7000, here), Found::Invalid(_)),
                "{pid}"
            );
        }
    }

    #[test]
    fn this_test_is_not_a_node_and_ports_are_read_from_titles_and_arguments() {
        let me = i64::from(std::process::id());
        assert!(matches!(
            identify(me, 7000, Path::new(".")),
            Found::Other(_)
        ));
        assert!(names_port("redis-server 127.0.0.1:7000 [cluster]", 7000));
        assert!(names_port(
            "redis-server --bind 127.0.0.1 --port 7000",
            7000
        ));
        assert!(!names_port("redis-server 127.0.0.1:17000 [cluster]", 7000));
        assert!(!names_port("redis-server 127.0.0.1:7001", 7000));
    }
}
