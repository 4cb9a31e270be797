//! `gadget cluster up/down`: a Redis Cluster on loopback that outlives the command, described
//! in `DIR/cluster.json` so that `down` finds its nodes. `gadget cluster ray`: a run's shards
//! on a Ray cluster ([`ray`]).

pub mod ray;

#[cfg(feature = "redis")]
use std::path::Path;
#[cfg(feature = "redis")]
use std::time::{Duration, Instant};

#[cfg(feature = "redis")]
use anyhow::{bail, Context};
#[cfg(feature = "redis")]
use gadget::atomic::write_atomically;
#[cfg(feature = "redis")]
use gadget_eval::store::redis::local_cluster::LocalCluster;
#[cfg(feature = "redis")]
use serde::{Deserialize, Serialize};

use crate::cli::{ClusterArgs, ClusterCommand};
#[cfg(feature = "redis")]
use crate::stdout::outln;

/// `DIR/cluster.json`.
#[cfg(feature = "redis")]
#[derive(Debug, Serialize, Deserialize)]
struct Described {
    /// The URL to give `--redis-url`.
    url: String,
    /// The nodes' ports.
    ports: Vec<u16>,
    /// Their process ids.
    pids: Vec<u32>,
}

/// Runs `gadget cluster`.
pub fn cluster(args: ClusterArgs) -> anyhow::Result<i32> {
    match args.command {
        #[cfg(feature = "redis")]
        ClusterCommand::Up { nodes, port, dir } => up(nodes, port, &dir),
        #[cfg(feature = "redis")]
        ClusterCommand::Down { dir } => down(&dir),
        ClusterCommand::Ray(a) => ray::launch(a),
    }
}

#[cfg(feature = "redis")]
fn up(nodes: usize, port: Option<u16>, dir: &Path) -> anyhow::Result<i32> {
    let described = dir.join("cluster.json");
    if described.exists() {
        bail!(
            "{} describes a cluster already; stop it with `gadget cluster down --dir {}` or give another --dir",
            described.display(),
            dir.display()
        );
    }
    let stop = crate::interrupt::stop_flag();
    let cluster = LocalCluster::start(nodes, port, dir, &stop)?;
    let d = Described {
        url: cluster.url(),
        ports: cluster.ports().to_vec(),
        pids: cluster.pids(),
    };
    write_atomically(&described, |w| {
        serde_json::to_writer_pretty(&mut *w, &d)?;
        writeln!(w)
    })
    .with_context(|| format!("cannot write {}", described.display()))?;
    cluster.detach();
    outln!("{}", d.url);
    eprintln!(
        "a Redis Cluster of {nodes} nodes on ports {:?}; use --store redis-cluster --redis-url {}; stop it with `gadget cluster down --dir {}`",
        d.ports,
        d.url,
        dir.display()
    );
    Ok(0)
}

#[cfg(feature = "redis")]
fn down(dir: &Path) -> anyhow::Result<i32> {
    let described = dir.join("cluster.json");
    let text = std::fs::read_to_string(&described).with_context(|| {
        format!(
            "cannot read {}; is a cluster running from `gadget cluster up --dir {}`?",
            described.display(),
            dir.display()
        )
    })?;
    let d: Described = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a cluster description", described.display()))?;
    for &pid in &d.pids {
        // SAFETY: kill(2) with a plain signal number has no memory effects
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    // SAFETY: as above; signal 0 only asks whether the process exists
    let alive = |pid: u32| unsafe { libc::kill(pid as libc::pid_t, 0) == 0 };
    while d.pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for &pid in d.pids.iter().filter(|&&p| alive(p)) {
        // SAFETY: as above
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    eprintln!("stopped the cluster on ports {:?}", d.ports);
    Ok(0)
}
