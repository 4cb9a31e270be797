//! What can go wrong while setting up or tearing down a remote store, each said with what to do.

use std::path::PathBuf;
use std::time::Duration;

/// Why a remote store could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// Not root (nor holding the capabilities a network namespace needs).
    #[error(
        "a remote store on this machine needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) to create a \
         network namespace and a veth pair ({detail}): run Gadget as root (sudo), or give it the \
         URL of a store on a real remote host instead"
    )]
    NeedsRoot {
        /// What showed it: the effective user, or the failing command's message.
        detail: String,
    },

    /// `ip` or `tc` is not installed.
    #[error(
        "`{tool}` is not installed; a remote store on this machine creates its namespace and link \
         with it: run scripts/setup.sh, or apt-get install iproute2"
    )]
    ToolMissing {
        /// The missing command.
        tool: &'static str,
    },

    /// `redis-server` is not installed.
    #[error(
        "redis-server is not installed; a remote Redis runs one in its namespace: run \
         scripts/setup.sh, or apt-get install redis-server"
    )]
    RedisServerMissing,

    /// Toxiproxy is needed for this delay and was not found.
    #[error(
        "toxiproxy-server was not found (GADGET_TOXIPROXY is not set, it is not on PATH, and \
         {} does not exist); a delay of whole milliseconds goes through Toxiproxy: run \
         scripts/setup.sh, which builds it with Go, or `go install \
         github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0` and point GADGET_TOXIPROXY at the \
         binary",
        deps_path.display()
    )]
    ToxiproxyMissing {
        /// Where the project's own copy was looked for.
        deps_path: PathBuf,
    },

    /// `GADGET_TOXIPROXY` names no executable file.
    #[error(
        "GADGET_TOXIPROXY is {} but that is not an executable file: point it at a \
         toxiproxy-server binary, or unset it to use the one scripts/setup.sh installs",
        path.display()
    )]
    ToxiproxyNotExecutable {
        /// The value of `GADGET_TOXIPROXY`.
        path: PathBuf,
    },

    /// The settings cannot describe a link.
    #[error("remote store settings: {0}")]
    Spec(String),

    /// A command that sets up or tears down the link failed.
    #[error("`{command}` failed: {message}; {hint}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status and standard error.
        message: String,
        /// What to do about it.
        hint: &'static str,
    },

    /// No private subnet was free for the link.
    #[error(
        "no free /30 subnet in 10.128.0.0/9 for the link to the remote store after {tried} tries: \
         the host's routes cover them all; remove stale routes (ip route) or namespaces \
         (ip netns list) left by other tools"
    )]
    NoSubnet {
        /// How many subnets were tried.
        tried: usize,
    },

    /// A process the remote store runs exited while starting.
    #[error("{what} exited while starting ({status}); its log ({}) ends with: {log}", log_path.display())]
    Exited {
        /// Which process.
        what: &'static str,
        /// Its exit status.
        status: String,
        /// Where its log is (removed with the remote store).
        log_path: PathBuf,
        /// The end of its log.
        log: String,
    },

    /// A process did not answer in time.
    #[error(
        "{what} did not answer within {waited:?}: {detail}; the machine may be overloaded, or \
         something blocks traffic to the namespace (a firewall rule on veth links?)"
    )]
    Timeout {
        /// Which process.
        what: &'static str,
        /// How long it was waited for.
        waited: Duration,
        /// The last error seen.
        detail: String,
    },

    /// Toxiproxy's API refused a request.
    #[error("Toxiproxy's API answered {request} with {status}: {body}; check that toxiproxy-server is version 2.x (scripts/setup.sh installs v2.12.0)")]
    Toxiproxy {
        /// The request, such as `POST /proxies`.
        request: String,
        /// The HTTP status line.
        status: String,
        /// The response body.
        body: String,
    },

    /// The stop flag was raised before the remote store was ready.
    #[error("stopped before the remote store was ready; everything it had set up was removed")]
    Stopped,

    /// An I/O error with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl RemoteError {
    /// An I/O error while doing `context`.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> RemoteError {
        RemoteError::Io {
            context: context.into(),
            source,
        }
    }
}
