//! A Redis Cluster of several `redis-server` processes on loopback, for tests, docs and
//! `gadget cluster up`: each node gets an equal share of the slots, the nodes meet, and the
//! cluster is ready when every node says `cluster_state:ok` and knows every other.
//!
//! Each node works in its own folder `DIR/node-PORT`, made for it (never one that exists
//! already). Until the cluster is detached, dropping it stops its nodes and removes those
//! folders.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::connection::{Connection, Failure};
use super::slot::SLOTS;
use super::url::{Address, Target};

/// The longest a cluster may take to form.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// Why a cluster could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// `redis-server` is not installed.
    #[error("cannot start redis-server ({0}); install it (apt-get install redis-server, or scripts/setup.sh)")]
    NoServer(std::io::Error),
    /// A node's folder could not be made.
    #[error("cannot create {path}: {source}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A node did not start or answer.
    #[error("node on port {port} {message}")]
    Node {
        /// Its port.
        port: u16,
        /// What happened.
        message: String,
    },
    /// The nodes did not agree on a complete cluster in time.
    #[error("the cluster did not become ready within {READY_WITHIN:?}: {0}")]
    NotReady(String),
    /// A stop request (Ctrl-C) came while the cluster was forming.
    #[error("stopped while the cluster was forming")]
    Stopped,
    /// Fewer than one node, or more than the slots.
    #[error("a cluster needs 1 to 100 nodes, not {0}")]
    Size(usize),
    /// Ports past 65535 (a node's, or its cluster bus port, 10000 above it), or port 0.
    #[error("{}", ports_message(.first, .nodes))]
    Ports {
        /// The first node's port.
        first: u16,
        /// How many nodes.
        nodes: usize,
    },
    /// A node's folder exists already: another cluster's, or one left by a cluster that
    /// was not stopped.
    #[error("{} exists already (a node folder of another cluster?); stop that cluster with `gadget cluster down`, remove the folder, or give another --dir or --port", .0.display())]
    FolderExists(PathBuf),
    /// The caller could not record a node (`gadget cluster up`'s description).
    #[error("{0}")]
    Record(String),
}

/// What [`ClusterError::Ports`] says.
fn ports_message(first: &u16, nodes: &usize) -> String {
    let (first, more) = (u32::from(*first), *nodes as u32 - 1);
    format!(
        "--port {first} with {nodes} nodes needs ports {first} to {} and cluster bus ports \
         (each port + {BUS_OFFSET}) up to {}, but ports go from 1 to 65535: give a --port from 1 to {}",
        first + more,
        first + more + BUS_OFFSET,
        65535 - BUS_OFFSET - more
    )
}

/// A node's cluster bus port is its port + this.
const BUS_OFFSET: u32 = 10000;

/// The folder of the node on `port` in `dir`.
pub fn node_folder(dir: &Path, port: u16) -> PathBuf {
    dir.join(format!("node-{port}"))
}

/// A running local cluster; its nodes are killed and their folders removed when it is
/// dropped, unless detached.
pub struct LocalCluster {
    children: Vec<Child>,
    ports: Vec<u16>,
    dir: PathBuf,
    /// The node folders made so far.
    made: Vec<PathBuf>,
}

impl LocalCluster {
    /// Checks a cluster's size and ports before anything is started: 1 to 100 nodes, and
    /// from `first_port` on every node's port and cluster bus port (port + 10000) at most
    /// 65535.
    pub fn check(nodes: usize, first_port: Option<u16>) -> Result<(), ClusterError> {
        if nodes == 0 || nodes > 100 {
            return Err(ClusterError::Size(nodes));
        }
        match first_port {
            Some(first)
                if first == 0 || u32::from(first) + nodes as u32 - 1 + BUS_OFFSET > 65535 =>
            {
                Err(ClusterError::Ports { first, nodes })
            }
            _ => Ok(()),
        }
    }

    /// Starts `nodes` nodes under `dir` (one folder each) on free loopback ports, or on
    /// `first_port`, `first_port + 1`, … when given, and forms the cluster. `stop` ends the
    /// wait within 50 ms.
    pub fn start(
        nodes: usize,
        first_port: Option<u16>,
        dir: &Path,
        stop: &AtomicBool,
    ) -> Result<LocalCluster, ClusterError> {
        Self::start_recorded(nodes, first_port, dir, stop, |_, _| Ok(()))
    }

    /// As [`Self::start`], telling `record` the ports and process ids so far each time a
    /// node is about to get its folder (its port is then the last, without a process id)
    /// and each time its process has started, before anything more is made or started: a
    /// caller that writes them down can stop every node and remove every folder, even when
    /// it is killed while the cluster forms. An error from `record` stops the start.
    pub fn start_recorded(
        nodes: usize,
        first_port: Option<u16>,
        dir: &Path,
        stop: &AtomicBool,
        mut record: impl FnMut(&[u16], &[u32]) -> Result<(), String>,
    ) -> Result<LocalCluster, ClusterError> {
        Self::check(nodes, first_port)?;
        std::fs::create_dir_all(dir).map_err(|source| ClusterError::Folder {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut cluster = LocalCluster {
            children: Vec::new(),
            ports: Vec::new(),
            dir: dir.to_path_buf(),
            made: Vec::new(),
        };
        for i in 0..nodes {
            if stop.load(Ordering::Relaxed) {
                return Err(ClusterError::Stopped);
            }
            let port = match first_port {
                // checked above: no overflow
                Some(p) => p + i as u16,
                None => free_port(&cluster.ports, dir)?,
            };
            cluster.ports.push(port);
            record(&cluster.ports, &cluster.pids()).map_err(ClusterError::Record)?;
            cluster.make_folder(port)?;
            cluster.spawn(port)?;
            record(&cluster.ports, &cluster.pids()).map_err(ClusterError::Record)?;
        }
        cluster.form(stop)?;
        Ok(cluster)
    }

    /// Makes the folder of the node on `port`, which must not exist.
    fn make_folder(&mut self, port: u16) -> Result<(), ClusterError> {
        let node_dir = node_folder(&self.dir, port);
        match std::fs::create_dir(&node_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(ClusterError::FolderExists(node_dir))
            }
            Err(source) => {
                return Err(ClusterError::Folder {
                    path: node_dir,
                    source,
                })
            }
        }
        self.made.push(node_dir);
        Ok(())
    }

    /// Starts the node on `port`, the last one added.
    fn spawn(&mut self, port: u16) -> Result<(), ClusterError> {
        let node_dir = node_folder(&self.dir, port);
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args(["--cluster-node-timeout", "5000"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&node_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // its own process group: a Ctrl-C at the terminal is for gadget, not the nodes
            .process_group(0)
            .spawn()
            .map_err(ClusterError::NoServer)?;
        self.children.push(child);
        Ok(())
    }

    /// Gives each node its slots, introduces them, and waits until all agree.
    fn form(&mut self, stop: &AtomicBool) -> Result<(), ClusterError> {
        let deadline = Instant::now() + READY_WITHIN;
        let mut cons = Vec::new();
        for i in 0..self.ports.len() {
            cons.push(self.connect(i, self.ports[i], deadline, stop)?);
        }
        if stop.load(Ordering::Relaxed) {
            return Err(ClusterError::Stopped);
        }
        let n = self.ports.len();
        for (i, con) in cons.iter_mut().enumerate() {
            let (first, last) = (SLOTS * i / n, SLOTS * (i + 1) / n - 1);
            con.command(4)
                .arg(b"CLUSTER")
                .arg(b"ADDSLOTSRANGE")
                .arg(first.to_string().as_bytes())
                .arg(last.to_string().as_bytes());
            con.exchange().map_err(|f| node_error(self.ports[i], f))?;
        }
        for &port in &self.ports[1..] {
            cons[0]
                .command(4)
                .arg(b"CLUSTER")
                .arg(b"MEET")
                .arg(b"127.0.0.1")
                .arg(port.to_string().as_bytes());
            cons[0]
                .exchange()
                .map_err(|f| node_error(self.ports[0], f))?;
        }
        loop {
            let mut waiting = None;
            for (i, con) in cons.iter_mut().enumerate() {
                con.command(2).arg(b"CLUSTER").arg(b"INFO");
                let info = con
                    .round_trip()
                    .and_then(|r| {
                        Ok(String::from_utf8_lossy(r.bulk()?.unwrap_or_default()).into_owned())
                    })
                    .map_err(|f| node_error(self.ports[i], f))?;
                let ok = info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{n}\r"))
                    && info.contains(&format!("cluster_slots_ok:{SLOTS}\r"));
                if !ok {
                    waiting = Some(format!(
                        "node {} says: {}",
                        self.ports[i],
                        info.lines().take(3).collect::<Vec<_>>().join(", ")
                    ));
                    break;
                }
            }
            match waiting {
                None => return Ok(()),
                Some(_) if stop.load(Ordering::Relaxed) => return Err(ClusterError::Stopped),
                Some(why) if Instant::now() >= deadline => return Err(ClusterError::NotReady(why)),
                Some(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// A connection to node `i`, once it listens.
    fn connect(
        &mut self,
        i: usize,
        port: u16,
        deadline: Instant,
        stop: &AtomicBool,
    ) -> Result<Connection, ClusterError> {
        let target = Target {
            address: Address::Tcp("127.0.0.1".into(), port),
            user: None,
            password: None,
            db: 0,
        };
        loop {
            if let Ok(Some(status)) = self.children[i].try_wait() {
                return Err(ClusterError::Node {
                    port,
                    message: format!(
                        "exited ({status}) at start; is the port (or its cluster bus port {}) taken?",
                        u32::from(port) + BUS_OFFSET
                    ),
                });
            }
            match Connection::open(&target, Duration::from_secs(5), Arc::default()) {
                Ok(_) if stop.load(Ordering::Relaxed) => return Err(ClusterError::Stopped),
                Ok(con) => return Ok(con),
                Err(_) if stop.load(Ordering::Relaxed) => return Err(ClusterError::Stopped),
                Err(f) if Instant::now() >= deadline => return Err(node_error(port, f)),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// `redis://127.0.0.1:PORT` of the first node: a client finds the others from it.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.ports[0])
    }

    /// The nodes' ports, in the order their slot ranges go (node 0 serves the first).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The nodes' process ids.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    /// Leaves the nodes running, and their folders, after this value is gone (`gadget
    /// cluster up`); their process ids, to stop them later.
    pub fn detach(mut self) -> Vec<u32> {
        let pids = self.pids();
        self.children.clear();
        self.made.clear();
        pids
    }
}

impl Drop for LocalCluster {
    /// Stops the nodes and removes the folders made for them.
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        for folder in &self.made {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
}

fn node_error(port: u16, f: Failure) -> ClusterError {
    ClusterError::Node {
        port,
        message: format!("failed: {f}"),
    }
}

/// A free loopback port whose cluster bus port (+10000) is free too, not among `taken`
/// and without a node folder in `dir`.
fn free_port(taken: &[u16], dir: &Path) -> Result<u16, ClusterError> {
    for _ in 0..100 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| ClusterError::Node {
                port: 0,
                message: format!("no free loopback port: {e}"),
            })?
            .port();
        if u32::from(port) + BUS_OFFSET > 65535
            || taken.contains(&port)
            || node_folder(dir, port).exists()
        {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port + BUS_OFFSET as u16)).is_ok() {
            return Ok(port);
        }
    }
    Err(ClusterError::Node {
        port: 0,
        message: "no free pair of loopback ports (a port and its cluster bus port) in 100 tries"
            .into(),
    })
}
