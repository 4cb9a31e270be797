//! Helpers shared by the evaluator's tests: a real `redis-server` on loopback.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` started for one test on a free loopback port; stopped when dropped.
pub struct RedisServer {
    child: Child,
    /// `redis://127.0.0.1:<port>`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts one, or `None` (the Redis part skipped) when `redis-server` is not installed
    /// outside CI; with `CI=true` a missing server fails the test, since `.ci/run` installs it.
    pub fn start(test: &str) -> Option<RedisServer> {
        Self::start_with(test, &[])
    }

    /// As [`RedisServer::start`], with extra `redis-server` arguments (such as
    /// `["--requirepass", "s3cret"]`). A port taken between choosing and binding it makes
    /// the server exit; then another port is tried, so a test never talks to a neighbour's
    /// server.
    pub fn start_with(test: &str, extra: &[&str]) -> Option<RedisServer> {
        if !Self::installed(test) {
            return None;
        }
        for _attempt in 0..5 {
            if let Some(server) = Self::try_start(extra) {
                return Some(server);
            }
        }
        panic!("{test}: redis-server did not start on any of 5 free loopback ports");
    }

    /// Whether `redis-server` is installed; outside CI a missing one is said and skipped,
    /// with `CI=true` it fails the test, since `.ci/run` installs it.
    pub fn installed(test: &str) -> bool {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{test}: redis-server is missing, but CI=true: .ci/run installs it (apt-get install redis-server)");
            }
            eprintln!("skipping Redis in {test}: redis-server is not installed (apt-get install redis-server)");
            return false;
        }
        true
    }

    /// One attempt on one free port: `None` when the server exited (its port was taken).
    fn try_start(extra: &[&str]) -> Option<RedisServer> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting redis-server");
        let url = format!("redis://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if child
                .try_wait()
                .expect("waiting for redis-server")
                .is_some()
            {
                return None;
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // the port answers; make sure it is this server that holds it, not one that won a race
        std::thread::sleep(Duration::from_millis(50));
        if child
            .try_wait()
            .expect("waiting for redis-server")
            .is_some()
        {
            return None;
        }
        Some(RedisServer {
            child,
            url,
            _dir: dir,
        })
    }
}

impl RedisServer {
    /// Kills the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen server go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status()
            .expect("running kill");
        assert!(status.success(), "kill {signal} failed");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // SIGKILL ends a frozen server too
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A three-node Redis Cluster on loopback for one test; its nodes are stopped when dropped.
#[cfg(feature = "redis")]
pub struct RedisCluster {
    cluster: gadget_eval::store::redis::local_cluster::LocalCluster,
    _dir: tempfile::TempDir,
}

/// No Redis Cluster in a build without the Redis stores, which has no store to point at one:
/// there is no value of this type.
#[cfg(not(feature = "redis"))]
pub enum RedisCluster {}

#[cfg(not(feature = "redis"))]
impl RedisCluster {
    /// `None`: this build has no Redis store (cargo's feature `redis`) to test on a cluster.
    pub fn start(_test: &str) -> Option<RedisCluster> {
        None
    }

    /// Any node's URL (there is no cluster to ask).
    pub fn url(&self) -> String {
        match *self {}
    }
}

#[cfg(feature = "redis")]
impl RedisCluster {
    /// Starts one, or `None` when `redis-server` is missing outside CI (as [`RedisServer`]).
    pub fn start(test: &str) -> Option<RedisCluster> {
        RedisServer::installed(test).then(|| {
            let dir = tempfile::tempdir().unwrap();
            let cluster = gadget_eval::store::redis::local_cluster::LocalCluster::start(
                3,
                None,
                dir.path(),
                &std::sync::atomic::AtomicBool::new(false),
            )
            .unwrap_or_else(|e| panic!("{test}: {e}"));
            RedisCluster { cluster, _dir: dir }
        })
    }

    /// Any node's URL.
    pub fn url(&self) -> String {
        self.cluster.url()
    }
}

/// `settings` for a store of `kind`: a Redis Cluster gets `cluster_url`.
pub fn settings_for(
    kind: gadget_eval::store::StoreKind,
    settings: &gadget_eval::store::StoreSettings,
    cluster_url: Option<&str>,
) -> gadget_eval::store::StoreSettings {
    let mut s = settings.clone();
    if let (Some(url), "redis-cluster") = (cluster_url, kind.name()) {
        s.redis_url = url.to_string();
    }
    s
}
