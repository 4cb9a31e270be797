//! `DIR/cluster.json`: what `gadget cluster up` started and made, so that `down` stops those
//! nodes and removes those folders and nothing else. `up` creates it (exclusively: one `up`
//! per folder) before it starts any node, marked `forming`, and writes it again as each
//! node's folder is made and as its process starts; a `up` killed outright leaves a
//! description `down` can act on.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use gadget::atomic::write_atomically;
use serde::{Deserialize, Serialize};

/// The description's name in DIR.
pub const FILE: &str = "cluster.json";

/// The format this gadget writes; files without one come from gadget before it.
const FORMAT: u32 = 2;

/// A description is a few hundred bytes; more is not one `up` wrote.
const MAX_BYTES: u64 = 1 << 20;

/// Whether the cluster is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// `up` is starting its nodes or waiting for them to agree (or was killed meanwhile).
    Forming,
    /// Every node agreed; `up` has ended.
    Ready,
}

/// One node `up` made: its folder `DIR/node-PORT` (always made by `up`) and its process.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// Its port.
    pub port: u16,
    /// Its `redis-server`'s process id, once started. Read as written (any integer), so
    /// that `down` can refuse one that is not a process id by its value.
    pub pid: Option<i64>,
}

/// `DIR/cluster.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Description {
    /// [`FORMAT`].
    pub format: u32,
    /// Ready, or still forming.
    pub state: State,
    /// The URL to give `--redis-url` (empty while forming).
    pub url: String,
    /// The process id of the `up` that wrote it.
    pub up_pid: u32,
    /// The boot the nodes started in (`/proc/sys/kernel/random/boot_id`; empty where
    /// unknown): after a restart none of them runs.
    pub boot_id: String,
    /// Whether `up` made DIR itself; `down` then removes it once nothing else is in it.
    pub made_dir: bool,
    /// The nodes, in the order of their slot ranges.
    pub nodes: Vec<Node>,
    /// Read from a file of gadget before format 2 (not written).
    #[serde(skip)]
    pub earlier_format: bool,
}

/// What gadget before format 2 wrote: no state, nothing on what `up` made.
#[derive(Deserialize)]
struct Format1 {
    url: String,
    ports: Vec<u16>,
    pids: Vec<i64>,
}

impl Description {
    /// A description of a cluster about to start, by this process.
    pub fn forming(made_dir: bool) -> Description {
        Description {
            format: FORMAT,
            state: State::Forming,
            url: String::new(),
            up_pid: std::process::id(),
            boot_id: boot_id(),
            made_dir,
            nodes: Vec::new(),
            earlier_format: false,
        }
    }

    /// The node folder of `node`.
    pub fn folder(dir: &Path, node: &Node) -> PathBuf {
        gadget_eval::store::redis::local_cluster::node_folder(dir, node.port)
    }

    /// The nodes' ports.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// Whether the machine has restarted since the nodes started (then none of them runs).
    pub fn started_before_a_restart(&self) -> bool {
        let now = boot_id();
        !self.boot_id.is_empty() && !now.is_empty() && self.boot_id != now
    }

    /// Creates `path` with this description; fails with `AlreadyExists` when it exists, so
    /// that two `up` cannot both own one folder.
    pub fn create(&self, path: &Path) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        serde_json::to_writer_pretty(&mut file, self)?;
        writeln!(file)?;
        file.sync_all()
    }

    /// Replaces `path` with this description, atomically.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        write_atomically(path, |w| {
            serde_json::to_writer_pretty(&mut *w, self)?;
            writeln!(w)
        })
    }

    /// Reads `DIR/cluster.json`, of this format or the one before it.
    pub fn read(dir: &Path) -> anyhow::Result<Description> {
        let path = dir.join(FILE);
        let mut text = String::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_BYTES + 1).read_to_string(&mut text))
            .with_context(|| {
                format!(
                    "cannot read {}; is a cluster running from `gadget cluster up --dir {}`?",
                    path.display(),
                    dir.display()
                )
            })?;
        if text.len() as u64 > MAX_BYTES {
            bail!(
                "{} is larger than {MAX_BYTES} bytes: not a description `gadget cluster up` wrote",
                path.display()
            );
        }
        let not_one = || format!("{} is not a cluster description", path.display());
        let value: serde_json::Value = serde_json::from_str(&text).with_context(not_one)?;
        match value.get("format") {
            None => {
                let old: Format1 = serde_json::from_str(&text).with_context(not_one)?;
                if old.ports.len() != old.pids.len() {
                    bail!(
                        "{}: {} ports but {} pids; each node has one of each",
                        not_one(),
                        old.ports.len(),
                        old.pids.len()
                    );
                }
                Ok(Description {
                    format: 1,
                    state: State::Ready,
                    url: old.url,
                    up_pid: 0,
                    boot_id: String::new(),
                    made_dir: false,
                    nodes: old
                        .ports
                        .into_iter()
                        .zip(old.pids)
                        .map(|(port, pid)| Node {
                            port,
                            pid: Some(pid),
                        })
                        .collect(),
                    earlier_format: true,
                })
            }
            Some(f) if f.as_u64() == Some(u64::from(FORMAT)) => {
                serde_json::from_str(&text).with_context(not_one)
            }
            Some(f) => bail!(
                "{} is of format {f}, which this gadget does not know (it reads 1 and {FORMAT}); stop the cluster with the gadget that started it",
                path.display()
            ),
        }
    }
}

/// This boot's id, or empty where unknown.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_of_gadget_before_format_2_is_read_as_made_dir_unknown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE),
            r#"{"url": "redis://127.0.0.1:7000", "ports": [7000, 7001], "pids": [10, 4294967295]}"#,
        )
        .unwrap();
        let d = Description::read(dir.path()).unwrap();
        assert!(d.earlier_format && !d.made_dir);
        assert_eq!(d.ports(), [7000, 7001]);
        assert_eq!(d.nodes[1].pid, Some(4294967295));
    }

    #[test]
    fn a_description_round_trips_and_an_unknown_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let mut d = Description::forming(true);
        d.nodes.push(Node {
            port: 7000,
            pid: None,
        });
        d.create(&path).unwrap();
        assert_eq!(
            d.create(&path).unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists
        );
        let back = Description::read(dir.path()).unwrap();
        assert_eq!((back.state, back.made_dir), (State::Forming, true));
        assert!(!back.started_before_a_restart());
        std::fs::write(&path, r#"{"format": 3}"#).unwrap();
        let e = Description::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("format 3"), "{e}");
    }
}
