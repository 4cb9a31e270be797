//! `gadget cluster down`: stops the nodes `up` started in DIR, each checked to be that node
//! before it is signalled, and removes what `up` made there (the node folders,
//! `cluster.json`, and DIR itself when `up` made it and nothing else is left in it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;

use super::description::{Description, State, FILE};
use super::process::{self, Found};

/// How long the nodes get to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// A node's process, checked.
struct Running {
    pid: i64,
    port: u16,
    folder: PathBuf,
}

impl Running {
    /// Whether its process id still names the node.
    fn is_running(&self) -> bool {
        process::identify(self.pid, self.port, &self.folder) == Found::Node
    }
}

/// Runs `gadget cluster down --dir DIR`.
pub fn down(dir: &Path) -> anyhow::Result<i32> {
    if !process::can_tell() {
        bail!("gadget cluster down checks each node's process through /proc (Linux), which is not here; stop the redis-server processes of {} yourself", dir.display());
    }
    let d = Description::read(dir)?;
    let path = dir.join(FILE);
    if d.state == State::Forming && up_is_running(d.up_pid) {
        bail!(
            "`gadget cluster up` (process {}) is still forming the cluster of {}; wait for it, or stop it with Ctrl-C (it then stops its nodes itself)",
            d.up_pid,
            dir.display()
        );
    }
    let (nodes, notes, refused) = find_nodes(dir, &d);
    if !refused.is_empty() {
        bail!(
            "{} lists processes that are not this cluster's nodes; nothing was signalled or removed:\n  {}\nIf the nodes are gone, remove {} and the node-PORT folders beside it yourself",
            path.display(),
            refused.join("\n  "),
            path.display()
        );
    }
    let stop = crate::interrupt::stop_flag();
    for node in &nodes {
        process::signal(node.pid, libc::SIGTERM);
    }
    let mut left = nodes;
    let deadline = Instant::now() + GRACE;
    while !left.is_empty() && Instant::now() < deadline {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!(
                "interrupted: the nodes were asked to stop; {} is kept, run `gadget cluster down --dir {}` again",
                path.display(),
                dir.display()
            );
            return Ok(crate::interrupt::INTERRUPTED);
        }
        std::thread::sleep(Duration::from_millis(20));
        left.retain(Running::is_running);
    }
    if !left.is_empty() {
        // checked again just now: still the nodes
        for node in &left {
            process::signal(node.pid, libc::SIGKILL);
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            left.retain(Running::is_running);
        }
        if !left.is_empty() {
            let pids: Vec<i64> = left.iter().map(|n| n.pid).collect();
            bail!(
                "the nodes with process ids {pids:?} did not stop even after SIGKILL; {} is kept",
                path.display()
            );
        }
    }
    remove_made(dir, &d)?;
    for note in notes {
        eprintln!("{note}");
    }
    eprintln!("stopped the cluster on ports {:?}", d.ports());
    Ok(0)
}

/// The processes of the nodes (process id and folder), checked; notes on nodes already
/// gone; and the listed process ids that are not the nodes, each said.
fn find_nodes(dir: &Path, d: &Description) -> (Vec<Running>, Vec<String>, Vec<String>) {
    let (mut nodes, mut notes, mut refused) = (Vec::new(), Vec::new(), Vec::new());
    for node in &d.nodes {
        let folder = Description::folder(dir, node);
        let port = node.port;
        if d.started_before_a_restart() {
            notes.push(format!(
                "the node on port {port} had stopped (the machine restarted since `up`)"
            ));
            continue;
        }
        let mut found = false;
        if let Some(pid) = node.pid {
            match process::identify(pid, port, &folder) {
                Found::Node => {
                    nodes.push(Running {
                        pid,
                        port,
                        folder: folder.clone(),
                    });
                    found = true;
                }
                Found::Gone => {}
                Found::Invalid(why) => {
                    refused.push(format!("process id {pid} (port {port}): {why}"))
                }
                Found::Other(what) => {
                    refused.push(format!("process id {pid} (port {port}) is {what}"))
                }
            }
        }
        // `up` killed between starting a node and recording it: the node in its folder
        if !found && d.state == State::Forming {
            for pid in process::find(port, &folder) {
                nodes.push(Running {
                    pid,
                    port,
                    folder: folder.clone(),
                });
                found = true;
            }
        }
        if !found {
            notes.push(match node.pid {
                Some(pid) => format!("the node on port {port} (process {pid}) had stopped"),
                None => format!(
                    "the node on port {port} had not started (`up` was stopped before it recorded it)"
                ),
            });
        }
    }
    (nodes, notes, refused)
}

/// Whether `folder` is missing or holds no more than [`NODE_FILES`].
fn holds_only_node_files(folder: &Path) -> bool {
    match std::fs::read_dir(folder) {
        Ok(entries) => entries.flatten().all(|e| {
            NODE_FILES
                .iter()
                .any(|&f| e.file_name() == f && e.file_type().is_ok_and(|t| t.is_file()))
        }),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Whether the `up` that wrote a forming description still runs: a `gadget cluster up`
/// with its process id.
fn up_is_running(pid: u32) -> bool {
    let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
        return false;
    };
    let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<&[u8]> = args.split(|&b| b == 0).collect();
    let cluster_up = args.windows(2).any(|w| w[0] == b"cluster" && w[1] == b"up");
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| s[i + 1..].split_whitespace().next() == Some("Z"))
        })
        .unwrap_or(true);
    pid != 0 && pid != std::process::id() && comm.trim() == "gadget" && cluster_up && !zombie
}

/// What a node writes in its folder as it starts.
const NODE_FILES: [&str; 1] = ["nodes.conf"];

/// Removes what `up` made: the node folders, the description, and DIR when `up` made it
/// and nothing else is in it.
fn remove_made(dir: &Path, d: &Description) -> anyhow::Result<()> {
    for node in &d.nodes {
        let folder = Description::folder(dir, node);
        // a node recorded just before its folder was made, when `up` was killed then: its
        // folder, if it is there, holds at most what a node writes as it starts
        if node.pid.is_none() && !holds_only_node_files(&folder) {
            eprintln!(
                "kept {}: `up` was killed before it started that node, and the folder holds other files",
                folder.display()
            );
            continue;
        }
        match std::fs::remove_dir_all(&folder) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => bail!(
                "the nodes are stopped, but {} cannot be removed: {e}; {} is kept",
                folder.display(),
                dir.join(FILE).display()
            ),
        }
    }
    let path = dir.join(FILE);
    std::fs::remove_file(&path).or_else(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Ok(()),
        _ => Err(anyhow::anyhow!("cannot remove {}: {e}", path.display())),
    })?;
    // a description's temporary file left by an `up` killed while writing it
    gadget::atomic::remove_stale_temporary_files(dir);
    if !d.made_dir {
        let why = if d.earlier_format {
            "its cluster.json, from an earlier gadget, does not say whether `up` made it"
        } else {
            "it was there before `up`"
        };
        eprintln!("kept {}: {why}", dir.display());
    } else if std::fs::remove_dir(dir).is_err() && dir.exists() {
        eprintln!(
            "kept {}: it holds files `gadget cluster up` did not make",
            dir.display()
        );
    }
    Ok(())
}
