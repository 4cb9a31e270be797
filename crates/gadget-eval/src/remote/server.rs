//! A `redis-server` inside the namespace, bound to the namespace's end of the link, with no
//! persistence and protected mode off (its clients reach it over the link, not loopback);
//! killed when dropped.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::command::{log_tail, poll};
use super::RemoteError;

/// The port the server listens on: the namespace is fresh, so Redis's own is free.
const PORT: u16 = 6379;

/// How long a starting server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A `redis-server` running in a namespace.
pub(crate) struct NamespacedRedis {
    child: Child,
    addr: SocketAddr,
}

impl NamespacedRedis {
    /// Starts `redis-server` in namespace `ns`, bound to `addr`, writing its log and working
    /// files to `dir`, and waits until it accepts connections across the link.
    pub(crate) fn start(
        ns: &str,
        addr: Ipv4Addr,
        dir: &std::path::Path,
        stop: &AtomicBool,
    ) -> Result<NamespacedRedis, RemoteError> {
        let log = dir.join("redis-server.log");
        let child = Command::new("ip")
            .args(["netns", "exec", ns, "redis-server"])
            .args(["--bind", &addr.to_string(), "--port", &PORT.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            // clients come from the host's end of the link, not loopback, and have no
            // password; the server is bound to the link only, which nothing else reaches
            .args(["--protected-mode", "no"])
            .arg("--dir")
            .arg(dir)
            .arg("--logfile")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| RemoteError::io("cannot run `ip netns exec … redis-server`", e))?;
        // `ip netns exec` replaces itself with redis-server: the child is the server
        let mut server = NamespacedRedis {
            child,
            addr: SocketAddr::from((addr, PORT)),
        };
        poll("redis-server in the namespace", stop, START_TIMEOUT, || {
            if let Some(status) = server
                .child
                .try_wait()
                .map_err(|e| RemoteError::io("cannot wait for redis-server", e))?
            {
                return Err(RemoteError::Exited {
                    what: "redis-server in the namespace",
                    status: status.to_string(),
                    log: log_tail(&log),
                    log_path: log.clone(),
                });
            }
            Ok(
                TcpStream::connect_timeout(&server.addr, Duration::from_millis(50))
                    .map(drop)
                    .map_err(|e| format!("connecting to {}: {e}", server.addr)),
            )
        })?;
        Ok(server)
    }

    /// Where it listens, inside the namespace.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NamespacedRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
