//! `gadget cluster up/down`: a Redis Cluster on loopback that outlives the command, described
//! in `DIR/cluster.json` ([`description`]) so that `down` finds its nodes and what `up` made.
//! `gadget cluster ray`: a run's shards on a Ray cluster ([`ray`]).

#[cfg(feature = "redis")]
mod description;
#[cfg(feature = "redis")]
mod down;
#[cfg(feature = "redis")]
mod process;
pub mod ray;

#[cfg(feature = "redis")]
use std::path::Path;

#[cfg(feature = "redis")]
use anyhow::{bail, Context};
#[cfg(feature = "redis")]
use gadget_eval::store::redis::local_cluster::{ClusterError, LocalCluster};

use crate::cli::{ClusterArgs, ClusterCommand};
#[cfg(feature = "redis")]
use crate::stdout::outln;
#[cfg(feature = "redis")]
use description::{Description, Node, State, FILE};

/// Runs `gadget cluster`.
pub fn cluster(args: ClusterArgs) -> anyhow::Result<i32> {
    match args.command {
        #[cfg(feature = "redis")]
        ClusterCommand::Up { nodes, port, dir } => up(nodes, port, &dir),
        #[cfg(feature = "redis")]
        ClusterCommand::Down { dir } => down::down(&dir),
        ClusterCommand::Ray(a) => ray::launch(a),
    }
}

/// Starts the cluster. The description is created first (one `up` per folder) and written
/// again as each node starts; a failure or Ctrl-C stops the nodes and removes what was made.
#[cfg(feature = "redis")]
fn up(nodes: usize, port: Option<u16>, dir: &Path) -> anyhow::Result<i32> {
    LocalCluster::check(nodes, port)?;
    let stop = crate::interrupt::stop_flag();
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let made_dir = match std::fs::create_dir(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => false,
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
    };
    let path = dir.join(FILE);
    let mut d = Description::forming(made_dir);
    // removes DIR when this `up` made it and nothing else is in it
    let undo = || {
        if made_dir {
            let _ = std::fs::remove_dir(dir);
        }
    };
    match d.create(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            undo();
            let forming = Description::read(dir).is_ok_and(|d| d.state == State::Forming);
            bail!(
                "{} describes a cluster already{}; stop it with `gadget cluster down --dir {}` or give another --dir",
                path.display(),
                if forming {
                    " (still forming, or its `gadget cluster up` was killed)"
                } else {
                    ""
                },
                dir.display()
            );
        }
        Err(e) => {
            undo();
            return Err(e).with_context(|| format!("cannot write {}", path.display()));
        }
    }
    let started = LocalCluster::start_recorded(nodes, port, dir, &stop, |ports, pids| {
        d.nodes = ports
            .iter()
            .enumerate()
            .map(|(i, &port)| Node {
                port,
                pid: pids.get(i).map(|&p| i64::from(p)),
            })
            .collect();
        d.write(&path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    });
    // the cluster, stopped and its folders removed when dropped, unless detached
    let ready = started.and_then(|cluster| {
        d.state = State::Ready;
        d.url = cluster.url();
        d.write(&path)
            .map_err(|e| ClusterError::Record(format!("cannot write {}: {e}", path.display())))?;
        Ok(cluster)
    });
    let cluster = match ready {
        Ok(cluster) => cluster,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            undo();
            if matches!(e, ClusterError::Stopped) {
                eprintln!(
                    "stopped while the cluster was forming: its nodes are stopped and what `up` made in {} is removed",
                    dir.display()
                );
                return Ok(crate::interrupt::INTERRUPTED);
            }
            return Err(e.into());
        }
    };
    cluster.detach();
    outln!("{}", d.url);
    eprintln!(
        "a Redis Cluster of {nodes} nodes on ports {:?}; use --store redis-cluster --redis-url {}; stop it with `gadget cluster down --dir {}`",
        d.ports(),
        d.url,
        dir.display()
    );
    Ok(0)
}
