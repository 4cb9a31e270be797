//! Delayed links between a Redis Cluster's nodes and the operator instances placed on other
//! nodes: seed 003's multi-node setup on one machine.
//!
//! In the seed's multi-3 runs each server hosts one Flink task and one Redis node: a task's
//! requests to its own node stay on the machine, the others cross the switch. Here the nodes
//! run on loopback (`gadget cluster up`), and [`NodeLinks`] puts one delaying proxy in front
//! of each node; an instance connects to its own node directly and to every other node
//! through that node's proxy ([`NodeLink`]). The delay is the same
//! proxy's as for a [`super::RemoteRedis`]; the rate limit is not applied, since the nodes
//! are not in namespaces of their own.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{find_toxiproxy, DelayProxy, Delayer, Proxy, RemoteError, RemoteSpec, Toxiproxy};

/// A delayed link to one node of a cluster: an instance reaches `node` through `via` (a
/// delaying proxy), unless `node` is its own ([`NodeLinks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLink {
    /// The node's address, as the cluster announces it.
    pub node: std::net::SocketAddr,
    /// Where to connect instead to reach it across the link.
    pub via: std::net::SocketAddr,
}

/// One delaying proxy per node of a cluster; all stopped when dropped.
pub struct NodeLinks {
    proxies: Vec<(SocketAddr, Proxy)>,
    spec: RemoteSpec,
    _dir: tempfile::TempDir,
}

impl NodeLinks {
    /// Starts a proxy adding `spec`'s delay and jitter in front of each of `nodes`. The rate
    /// in `spec` is not applied (see the module's documentation).
    pub fn start(
        nodes: &[SocketAddr],
        spec: &RemoteSpec,
        stop: Arc<AtomicBool>,
    ) -> Result<NodeLinks, RemoteError> {
        spec.validate()?;
        let dir = tempfile::Builder::new()
            .prefix("gadget-links-")
            .tempdir()
            .map_err(|e| RemoteError::io("cannot make a folder for the proxies' logs", e))?;
        let toxiproxy = match spec.delayer() {
            Delayer::Toxiproxy => Some(find_toxiproxy()?),
            Delayer::Builtin => None,
        };
        let mut proxies = Vec::with_capacity(nodes.len());
        for (i, &node) in nodes.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return Err(RemoteError::Stopped);
            }
            let proxy = match &toxiproxy {
                Some(binary) => {
                    let own = dir.path().join(format!("node-{i}"));
                    std::fs::create_dir_all(&own)
                        .map_err(|e| RemoteError::io("cannot make a proxy's log folder", e))?;
                    Proxy::Toxiproxy(Toxiproxy::start(
                        binary,
                        node,
                        spec.delay,
                        spec.jitter,
                        &own,
                        &stop,
                    )?)
                }
                None => Proxy::Builtin(DelayProxy::start(node, spec.delay, spec.jitter)?),
            };
            proxies.push((node, proxy));
        }
        Ok(NodeLinks {
            proxies,
            spec: spec.clone(),
            _dir: dir,
        })
    }

    /// Each node and the proxy in front of it.
    pub fn links(&self) -> Vec<NodeLink> {
        self.proxies
            .iter()
            .map(|(node, proxy)| NodeLink {
                node: *node,
                via: SocketAddr::from(([127, 0, 0, 1], proxy.port())),
            })
            .collect()
    }

    /// The links' settings.
    pub fn spec(&self) -> &RemoteSpec {
        &self.spec
    }

    /// What adds the delay.
    pub fn delayer(&self) -> Delayer {
        self.spec.delayer()
    }
}

impl std::fmt::Debug for NodeLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeLinks")
            .field("links", &self.links())
            .field("spec", &self.spec)
            .finish()
    }
}
