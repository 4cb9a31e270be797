//! Stores a run puts at a distance before timing starts: a route's `[remote]` makes a Redis
//! server in a network namespace of its own ([`RemoteRedis`]), or, for a Redis Cluster, one
//! delayed link per node that every instance but the node's own crosses ([`NodeLinks`]).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::remote::{NodeLinks, RemoteError, RemoteRedis};

use super::Route;
use super::StoreError;

/// Why a store could not be put at a distance.
#[derive(Debug, thiserror::Error)]
pub enum FarError {
    /// The namespace, the server or a proxy could not be made.
    #[error("cannot start the remote store `{store}`: {source}")]
    Remote {
        /// The store's config name.
        store: String,
        /// What failed.
        source: RemoteError,
    },
    /// The cluster's nodes could not be listed.
    #[error("cannot list the nodes of the Redis Cluster `{store}` to link them: {source}")]
    Cluster {
        /// The store's config name.
        store: String,
        /// What failed.
        source: StoreError,
    },
    /// A node's address is a host name, which a link cannot be matched against.
    #[error("the Redis Cluster `{store}` announces node `{node}`, not an IP address and port; start its nodes with IP addresses (`gadget cluster up` does) to link them")]
    NodeAddress {
        /// The store's config name.
        store: String,
        /// The address it announced.
        node: String,
    },
}

/// What a run started to put its stores at a distance; all of it removed when dropped.
#[derive(Debug, Default)]
pub struct FarStores {
    servers: Vec<RemoteRedis>,
    links: Vec<NodeLinks>,
}

impl FarStores {
    /// Starts what every route with a `[remote]` needs and points the route at it: a server
    /// route's URL becomes its proxy's, a cluster route learns its nodes' links. Returns one
    /// line per store saying where it is, for the user.
    pub fn start(
        routes: &mut [Route],
        stop: Arc<AtomicBool>,
    ) -> Result<(FarStores, Vec<String>), FarError> {
        let mut far = FarStores::default();
        let mut said = Vec::new();
        for route in routes {
            let Some(spec) = route.remote.clone() else {
                continue;
            };
            let remote = |source| FarError::Remote {
                store: route.name.clone(),
                source,
            };
            if route.kind.name() == "redis-cluster" {
                let nodes = node_addresses(route)?;
                let links = NodeLinks::start(&nodes, &spec, stop.clone()).map_err(remote)?;
                said.push(format!(
                    "store `{}`: every node but an instance's own is {:?} ± {:?} away each way ({})",
                    route.name,
                    spec.delay,
                    spec.jitter,
                    links.delayer()
                ));
                route.settings.redis_links = links.links();
                far.links.push(links);
            } else {
                let server = RemoteRedis::start(&spec, stop.clone()).map_err(remote)?;
                said.push(format!(
                    "store `{}`: redis-server in network namespace {}, reached at {}",
                    route.name,
                    server.namespace(),
                    server.url()
                ));
                route.settings.redis_url = server.url();
                far.servers.push(server);
            }
        }
        Ok((far, said))
    }
}

/// The addresses of the nodes of the cluster `route` names, in the order instances are placed
/// on them.
#[cfg(feature = "redis")]
fn node_addresses(route: &Route) -> Result<Vec<std::net::SocketAddr>, FarError> {
    let cluster =
        super::redis::cluster::RedisClusterStore::open(&[], &route.settings).map_err(|source| {
            FarError::Cluster {
                store: route.name.clone(),
                source,
            }
        })?;
    cluster
        .node_addresses()
        .into_iter()
        .map(|node| {
            node.parse().map_err(|_| FarError::NodeAddress {
                store: route.name.clone(),
                node,
            })
        })
        .collect()
}

/// Without Redis support there is no cluster to link.
#[cfg(not(feature = "redis"))]
fn node_addresses(route: &Route) -> Result<Vec<std::net::SocketAddr>, FarError> {
    Err(FarError::Cluster {
        store: route.name.clone(),
        source: StoreError::Open {
            store: "redis-cluster",
            path: std::path::PathBuf::new(),
            message: "this build has no Redis support; build with --features redis".into(),
        },
    })
}
