//! "Remote" stores on this one machine: local against remote, measured for real.
//!
//! [`RemoteRedis::start`] makes a Linux network namespace of its own (`gadget-<pid>-<n>`),
//! joins it to the host with a veth pair on a private /30 subnet (so requests cross a real
//! TCP link, not loopback), limits the link's rate in both directions with a token bucket
//! (`tc … tbf`), starts a `redis-server` inside the namespace, and puts a delaying proxy on a
//! loopback port in front of it: requests and answers are each held for the configured
//! one-way delay ± jitter. A client is given the proxy's `redis://127.0.0.1:PORT`; the same
//! client pointed at a plain loopback server is the "local" case.
//!
//! The delay is added by a proxy because the netem qdisc, which would add it in the kernel,
//! is missing from the kernels these machines run (`tc qdisc add … netem` says "Specified
//! qdisc kind is unknown"); where a kernel has it, [`RemoteRedis::netem_available`] says so,
//! and the delay still goes through the proxy so that runs on every machine are measured the
//! same way. Delays of whole milliseconds go through Toxiproxy, the fault-injection proxy
//! (its latency toxic counts in milliseconds); finer ones, such as the default switch hop,
//! through Gadget's own proxy, which keeps time to a few microseconds ([`Delayer`]).
//!
//! Only addresses on the link the run makes and loopback are used. Everything is removed when
//! the [`RemoteRedis`] is dropped, which a run stopped by Ctrl-C does too; what a killed run
//! left behind (its namespace, the processes in it, its Toxiproxy) is removed by the next run's
//! start. Root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) is needed.
//!
//! - `namespace`: the namespace, the veth pair, addresses and the rate limit (`ip`, `tc`);
//! - `server`: the `redis-server` inside it;
//! - `delay`: Gadget's own delaying proxy;
//! - `toxiproxy`: Toxiproxy through its HTTP API;
//! - `links`: delayed links to a Redis Cluster's nodes ([`NodeLinks`]);
//! - `command`: running commands, waiting with a stop flag;
//! - `error`: [`RemoteError`].

mod command;
mod delay;
mod error;
mod links;
mod namespace;
mod server;
mod toxiproxy;

use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use command::process_alive;
pub use error::RemoteError;
pub use links::{NodeLink, NodeLinks};
pub use toxiproxy::{deps_binary, find_toxiproxy, TOXIPROXY_ENV};

use delay::DelayProxy;
use namespace::Namespace;
use server::NamespacedRedis;
use toxiproxy::Toxiproxy;

/// The link to a remote store: added one-way delay, its jitter, and the link's rate.
///
/// The defaults model one hop through a 10 Gb/s top-of-rack switch between two servers:
/// - `delay` 25 µs each way: what a NIC, the wire and a cut-through switch add to a request
///   beyond the kernel's own TCP path (which loopback already has), so that a round trip gains
///   50 µs, as a ping between two servers of one rack (~50–60 µs) takes over a loopback
///   ping (~10 µs);
/// - `jitter` 5 µs: interrupt coalescing and switch queueing on a quiet network;
/// - `rate_bits_per_s` 10 Gbit/s: the port's line rate, in each direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSpec {
    /// Added delay in each direction (a round trip gains twice this).
    pub delay: Duration,
    /// Each chunk's delay is drawn uniformly from `delay ± jitter` (at most `delay`); bytes
    /// are never reordered.
    pub jitter: Duration,
    /// The link's rate in each direction, bits per second (token bucket, `tc … tbf`).
    pub rate_bits_per_s: u64,
}

impl RemoteSpec {
    /// The default one-way delay: 25 µs.
    pub const DEFAULT_DELAY: Duration = Duration::from_micros(25);
    /// The default jitter: 5 µs.
    pub const DEFAULT_JITTER: Duration = Duration::from_micros(5);
    /// The default rate: 10 Gbit/s.
    pub const DEFAULT_RATE_BITS_PER_S: u64 = 10_000_000_000;
    /// The lowest rate accepted: 8 kbit/s (one byte a millisecond).
    pub const MIN_RATE_BITS_PER_S: u64 = 8_000;
    /// The longest delay accepted: 10 s.
    pub const MAX_DELAY: Duration = Duration::from_secs(10);

    /// Checks that the settings describe a link: jitter no larger than the delay, a delay of
    /// at most [`RemoteSpec::MAX_DELAY`], a rate of at least
    /// [`RemoteSpec::MIN_RATE_BITS_PER_S`].
    pub fn validate(&self) -> Result<(), RemoteError> {
        if self.jitter > self.delay {
            return Err(RemoteError::Spec(format!(
                "jitter {:?} is larger than the delay {:?}; a delay cannot be negative: make the \
                 jitter at most the delay",
                self.jitter, self.delay
            )));
        }
        if self.delay > Self::MAX_DELAY {
            return Err(RemoteError::Spec(format!(
                "delay {:?} is longer than {:?}; no network hop takes that long: give a shorter \
                 delay",
                self.delay,
                Self::MAX_DELAY
            )));
        }
        if self.rate_bits_per_s < Self::MIN_RATE_BITS_PER_S {
            return Err(RemoteError::Spec(format!(
                "rate {} bit/s is below {} bit/s: give a rate of at least that (10 Gbit/s is \
                 10000000000)",
                self.rate_bits_per_s,
                Self::MIN_RATE_BITS_PER_S
            )));
        }
        Ok(())
    }

    /// What adds the delay: Toxiproxy for whole milliseconds (1 ms or more), Gadget's own
    /// proxy for anything finer.
    pub fn delayer(&self) -> Delayer {
        let whole_ms = |d: Duration| d.subsec_nanos() % 1_000_000 == 0;
        if self.delay >= Duration::from_millis(1) && whole_ms(self.delay) && whole_ms(self.jitter) {
            Delayer::Toxiproxy
        } else {
            Delayer::Builtin
        }
    }
}

impl Default for RemoteSpec {
    fn default() -> RemoteSpec {
        RemoteSpec {
            delay: Self::DEFAULT_DELAY,
            jitter: Self::DEFAULT_JITTER,
            rate_bits_per_s: Self::DEFAULT_RATE_BITS_PER_S,
        }
    }
}

/// What delays the traffic to a remote store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delayer {
    /// Gadget's own proxy, accurate to a few microseconds.
    Builtin,
    /// Toxiproxy's latency toxics, in whole milliseconds.
    Toxiproxy,
}

impl fmt::Display for Delayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Delayer::Builtin => "gadget-proxy",
            Delayer::Toxiproxy => "toxiproxy",
        })
    }
}

/// The delaying proxy in front of the server.
enum Proxy {
    Builtin(DelayProxy),
    Toxiproxy(Toxiproxy),
}

impl Proxy {
    /// The loopback port it listens on.
    fn port(&self) -> u16 {
        match self {
            Proxy::Builtin(p) => p.port(),
            Proxy::Toxiproxy(p) => p.port(),
        }
    }
}

/// A `redis-server` in a fresh network namespace, across a rate-limited veth link, behind a
/// delaying proxy on loopback. Dropping it stops the proxy and the server and deletes the
/// namespace and the link (in that order: the fields drop as declared).
pub struct RemoteRedis {
    proxy: Proxy,
    server: NamespacedRedis,
    namespace: Namespace,
    dir: tempfile::TempDir,
    spec: RemoteSpec,
}

impl RemoteRedis {
    /// Sets up the namespace, the link, the server and the proxy, and checks that a `PING`
    /// through the proxy is answered. Fails before making anything when a privilege or a
    /// program is missing; `stop` raised while waiting ends it with
    /// [`RemoteError::Stopped`] within 100 ms, with whatever was made removed again.
    pub fn start(spec: &RemoteSpec, stop: Arc<AtomicBool>) -> Result<RemoteRedis, RemoteError> {
        spec.validate()?;
        if stop.load(Ordering::Relaxed) {
            return Err(RemoteError::Stopped);
        }
        let status = std::fs::read_to_string("/proc/self/status")
            .map_err(|e| RemoteError::io("cannot read /proc/self/status", e))?;
        namespace::check_privileges(&status)?;
        for tool in ["ip", "tc"] {
            command::run(tool, &["-V"], "reinstall iproute2")?;
        }
        let redis_installed = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !redis_installed {
            return Err(RemoteError::RedisServerMissing);
        }
        let toxiproxy = match spec.delayer() {
            Delayer::Toxiproxy => Some(find_toxiproxy()?),
            Delayer::Builtin => None,
        };

        let namespace = Namespace::create(spec.rate_bits_per_s)?;
        let dir = namespace::run_dir(namespace.name())?;
        let server =
            NamespacedRedis::start(namespace.name(), namespace.ns_addr(), dir.path(), &stop)?;
        let proxy = match toxiproxy {
            Some(binary) => Proxy::Toxiproxy(Toxiproxy::start(
                &binary,
                server.addr(),
                spec.delay,
                spec.jitter,
                dir.path(),
                &stop,
            )?),
            None => Proxy::Builtin(DelayProxy::start(server.addr(), spec.delay, spec.jitter)?),
        };
        let remote = RemoteRedis {
            proxy,
            server,
            namespace,
            dir,
            spec: spec.clone(),
        };
        let round_trip = 2 * (spec.delay + spec.jitter) + Duration::from_secs(1);
        command::poll(
            "redis-server through the proxy",
            &stop,
            Duration::from_secs(10),
            || ping(remote.port(), round_trip, &stop),
        )?;
        Ok(remote)
    }

    /// `redis://127.0.0.1:PORT`: the proxy's loopback listener, for any Redis client.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port())
    }

    /// The loopback port of the proxy.
    pub fn port(&self) -> u16 {
        self.proxy.port()
    }

    /// The name of its network namespace, as `ip netns list` shows it.
    pub fn namespace(&self) -> &str {
        self.namespace.name()
    }

    /// The host's end of the veth pair (`ip link`, `tc -s qdisc show dev …`).
    pub fn host_link(&self) -> &str {
        self.namespace.host_if()
    }

    /// The folder of the server's log and files (and Toxiproxy's), removed with it.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Where the server listens inside the namespace (reachable from the host too, without
    /// the delay).
    pub fn server_addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The link's settings.
    pub fn spec(&self) -> &RemoteSpec {
        &self.spec
    }

    /// What adds the delay.
    pub fn delayer(&self) -> Delayer {
        match self.proxy {
            Proxy::Builtin(_) => Delayer::Builtin,
            Proxy::Toxiproxy(_) => Delayer::Toxiproxy,
        }
    }

    /// Whether this machine's kernel has the netem qdisc (the delay goes through the proxy
    /// either way).
    pub fn netem_available(&self) -> bool {
        self.namespace.netem()
    }

    /// The process ids of what it runs: the server, and Toxiproxy when it delays.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.server.pid()];
        if let Proxy::Toxiproxy(t) = &self.proxy {
            pids.push(t.pid());
        }
        pids
    }
}

impl fmt::Debug for RemoteRedis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteRedis")
            .field("url", &self.url())
            .field("namespace", &self.namespace())
            .field("server", &self.server_addr())
            .field("delayer", &self.delayer())
            .field("spec", &self.spec)
            .finish()
    }
}

/// One `PING` on a new connection to the proxy on `port`: `Ok(Ok(()))` on `+PONG`,
/// `Ok(Err(detail))` when not (yet).
fn ping(port: u16, within: Duration, stop: &AtomicBool) -> Result<Result<(), String>, RemoteError> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = match TcpStream::connect_timeout(&addr, Duration::from_millis(50)) {
        Ok(s) => s,
        Err(e) => return Ok(Err(format!("connecting to {addr}: {e}"))),
    };
    let sent = stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .and_then(|()| stream.write_all(b"PING\r\n"));
    if let Err(e) = sent {
        return Ok(Err(format!("sending PING: {e}")));
    }
    let deadline = Instant::now() + within;
    let mut answer = Vec::new();
    let mut buf = [0u8; 64];
    while !answer.ends_with(b"\r\n") {
        if stop.load(Ordering::Relaxed) {
            return Err(RemoteError::Stopped);
        }
        if Instant::now() > deadline {
            return Ok(Err(format!("no answer to PING within {within:?}")));
        }
        match stream.read(&mut buf) {
            Ok(0) => return Ok(Err("the connection closed without an answer to PING".into())),
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Ok(Err(format!("reading the answer to PING: {e}"))),
        }
    }
    if answer == b"+PONG\r\n" {
        Ok(Ok(()))
    } else {
        Ok(Err(format!(
            "PING answered {:?}",
            String::from_utf8_lossy(&answer)
        )))
    }
}
