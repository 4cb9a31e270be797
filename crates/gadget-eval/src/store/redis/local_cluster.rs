//! A Redis Cluster of several `redis-server` processes on loopback, for tests, docs and
//! `gadget cluster up`: each node gets an equal share of the slots, the nodes meet, and the
//! cluster is ready when every node says `cluster_state:ok` and knows every other.

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
}

/// A running local cluster; its nodes are killed when it is dropped, unless detached.
pub struct LocalCluster {
    children: Vec<Child>,
    ports: Vec<u16>,
    dir: PathBuf,
}

impl LocalCluster {
    /// Starts `nodes` nodes under `dir` (one folder each) on free loopback ports, or on
    /// `first_port`, `first_port + 1`, … when given, and forms the cluster. `stop` ends the
    /// wait within 50 ms.
    pub fn start(
        nodes: usize,
        first_port: Option<u16>,
        dir: &Path,
        stop: &AtomicBool,
    ) -> Result<LocalCluster, ClusterError> {
        if nodes == 0 || nodes > 100 {
            return Err(ClusterError::Size(nodes));
        }
        let mut cluster = LocalCluster {
            children: Vec::new(),
            ports: Vec::new(),
            dir: dir.to_path_buf(),
        };
        for i in 0..nodes {
            let port = match first_port {
                Some(p) => p + i as u16,
                None => free_port(&cluster.ports)?,
            };
            cluster.spawn(port)?;
        }
        cluster.form(stop)?;
        Ok(cluster)
    }

    fn spawn(&mut self, port: u16) -> Result<(), ClusterError> {
        let node_dir = self.dir.join(format!("node-{port}"));
        std::fs::create_dir_all(&node_dir).map_err(|source| ClusterError::Folder {
            path: node_dir.clone(),
            source,
        })?;
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
        self.ports.push(port);
        Ok(())
    }

    /// Gives each node its slots, introduces them, and waits until all agree.
    fn form(&mut self, stop: &AtomicBool) -> Result<(), ClusterError> {
        let deadline = Instant::now() + READY_WITHIN;
        let mut cons = Vec::new();
        for i in 0..self.ports.len() {
            cons.push(self.connect(i, self.ports[i], deadline, stop)?);
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
                        u32::from(port) + 10000
                    ),
                });
            }
            match Connection::open(&target, Duration::from_secs(5), Arc::default()) {
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

    /// Leaves the nodes running after this value is gone (`gadget cluster up`); their
    /// process ids, to stop them later.
    pub fn detach(mut self) -> Vec<u32> {
        let pids = self.pids();
        self.children.clear();
        pids
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn node_error(port: u16, f: Failure) -> ClusterError {
    ClusterError::Node {
        port,
        message: format!("failed: {f}"),
    }
}

/// A free loopback port whose cluster bus port (+10000) is free too, not among `taken`.
fn free_port(taken: &[u16]) -> Result<u16, ClusterError> {
    for _ in 0..100 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| ClusterError::Node {
                port: 0,
                message: format!("no free loopback port: {e}"),
            })?
            .port();
        if port > 55535 || taken.contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return Ok(port);
        }
    }
    Err(ClusterError::Node {
        port: 0,
        message: "no free pair of loopback ports (a port and its cluster bus port) in 100 tries"
            .into(),
    })
}
