//! Against a real Redis Cluster of three `redis-server` nodes on loopback: the store contract
//! under each placement, where requests go, and redirects while a slot migrates.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::*;
use crate::store::contract;
use crate::store::redis::connection::Connection;
use crate::store::redis::local_cluster::LocalCluster;
use crate::store::redis::slot::slot_of;
use crate::store::redis::url;

/// A 3-node cluster, or `None` (skipped) when `redis-server` is missing outside CI.
fn cluster(test: &str) -> Option<(LocalCluster, tempfile::TempDir)> {
    if std::process::Command::new("redis-server")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status()
        .is_err()
    {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{test}: redis-server is missing, but CI=true: .ci/run installs it"
        );
        eprintln!("skipping {test}: redis-server is not installed (apt-get install redis-server)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let c = LocalCluster::start(3, None, dir.path(), &AtomicBool::new(false)).unwrap();
    Some((c, dir))
}

fn settings(url: &str, placement: Placement, instance: usize) -> StoreSettings {
    StoreSettings {
        redis_url: url.to_string(),
        redis_placement: placement,
        instance,
        redis_timeout: Duration::from_secs(10),
        ..StoreSettings::default()
    }
}

fn open(url: &str, placement: Placement, instance: usize) -> RedisClusterStore {
    RedisClusterStore::open(
        &["s0".to_string(), "s1".to_string()],
        &settings(url, placement, instance),
    )
    .unwrap()
}

/// (local, remote) reads and writes.
fn counts(s: &RedisClusterStore) -> [(u64, u64); 2] {
    let c = s.counters();
    [(c[0].1, c[1].1), (c[2].1, c[3].1)]
}

#[test]
fn every_request_kind_passes_the_contract_under_every_placement_and_instance() {
    let Some((c, _dir)) = cluster("the cluster contract") else {
        return;
    };
    for (name, placement) in Placement::ALL {
        for instance in 0..3 {
            let checks: [fn(&mut dyn Store); 7] = [
                contract::merge_appends_with_flinks_delimiter,
                contract::states_are_separate,
                contract::seek_and_next_walk_in_key_order_and_batches_apply_on_commit,
                contract::next_after_a_write_sees_the_write,
                contract::range_ops_cover_start_up_to_end,
                contract::a_drop_empties_its_state_and_nothing_else,
                contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator,
            ];
            for check in checks {
                let mut s = open(&c.url(), placement, instance);
                check(&mut s);
                let [reads, writes] = counts(&s);
                assert!(reads.0 + reads.1 > 0, "{name}: reads are counted");
                assert!(writes.0 + writes.1 > 0, "{name}: writes are counted");
                if placement != Placement::Native {
                    assert_eq!(reads.1, 0, "{name}, instance {instance}: every read local");
                }
                match placement {
                    Placement::Aligned => assert_eq!(writes.1, 0, "every write local"),
                    Placement::Replicated => assert!(writes.1 > 0, "writes go to every node"),
                    Placement::Native => {}
                }
            }
        }
    }
}

#[test]
fn a_drop_by_one_instance_leaves_the_other_instances_keys_on_every_node() {
    let Some((c, _dir)) = cluster("drops across instances") else {
        return;
    };
    for (name, placement) in Placement::ALL {
        let mut stores: Vec<RedisClusterStore> =
            (0..3).map(|i| open(&c.url(), placement, i)).collect();
        for s in &mut stores {
            for i in 0..50u32 {
                s.put(0, format!("ad-{i}").as_bytes(), b"campaign").unwrap();
                s.put(1, format!("ad-{i}").as_bytes(), b"c").unwrap();
            }
        }
        stores[1].drop_state(0).unwrap();
        for (i, s) in stores.iter_mut().enumerate() {
            let left = if i == 1 { 0 } else { 50 };
            assert_eq!(s.range_query(0, b"", b"zz").unwrap(), left, "{name}, {i}");
            assert_eq!(s.range_query(1, b"", b"zz").unwrap(), 50, "{name}, {i}");
        }
        // the dropped state's keys and index entries are gone from every node
        let run_tag = stores[1].run_tag.clone();
        for &port in c.ports() {
            let mut con = raw(port);
            con.command(6)
                .arg(b"SCAN")
                .arg(b"0")
                .arg(b"MATCH")
                .arg(format!("*{run_tag}[:#]0*").as_bytes())
                .arg(b"COUNT")
                .arg(b"100000");
            let reply = con.round_trip().unwrap();
            let mut items = reply.items().unwrap();
            items.next();
            let left = items.next().unwrap().unwrap().items().unwrap().count();
            assert_eq!(left, 0, "{name}: node {port} still holds state 0's keys");
        }
        assert!(stores[1].emulated().contains(&Op::Drop));
    }
}

#[test]
fn native_placement_keeps_about_a_third_local_and_aligned_and_replicated_all() {
    let Some((c, _dir)) = cluster("placement locality") else {
        return;
    };
    for (name, placement) in Placement::ALL {
        for instance in 0..3 {
            let mut s = open(&c.url(), placement, instance);
            for i in 0..600u32 {
                let key = format!("ad-{i}");
                s.put(0, key.as_bytes(), b"campaign").unwrap();
                assert_eq!(s.get(0, key.as_bytes()).unwrap(), Some(8));
            }
            let [reads, writes] = counts(&s);
            let fraction = |(local, remote): (u64, u64)| local as f64 / (local + remote) as f64;
            match placement {
                Placement::Native => {
                    assert!(
                        (0.25..0.42).contains(&fraction(reads)),
                        "{name}, instance {instance}: {reads:?} reads local, remote"
                    );
                    assert_eq!(
                        fraction(reads),
                        fraction(writes),
                        "a key's read and write go to one node"
                    );
                }
                Placement::Aligned => {
                    assert_eq!((fraction(reads), fraction(writes)), (1.0, 1.0), "{name}")
                }
                Placement::Replicated => {
                    assert_eq!((fraction(reads), fraction(writes)), (1.0, 0.0), "{name}")
                }
            }
        }
    }
}

#[test]
fn replicated_writes_reach_every_node_and_each_instance_reads_its_own() {
    let Some((c, _dir)) = cluster("replication") else {
        return;
    };
    let mut s = open(&c.url(), Placement::Replicated, 1);
    s.put(0, b"ad-7", b"campaign-3").unwrap();
    // every node holds a copy under its own tag
    let pattern = format!("*{}:0:ad-7", s.run_tag);
    let copies = |port: u16, pattern: &str| {
        let mut con = raw(port);
        con.command(6)
            .arg(b"SCAN")
            .arg(b"0")
            .arg(b"MATCH")
            .arg(pattern.as_bytes())
            .arg(b"COUNT")
            .arg(b"100000");
        let reply = con.round_trip().unwrap();
        let mut items = reply.items().unwrap();
        items.next();
        items.next().unwrap().unwrap().items().unwrap().count()
    };
    for &port in c.ports() {
        assert_eq!(copies(port, &pattern), 1, "node {port} holds one copy");
    }
    assert_eq!(s.get(0, b"ad-7").unwrap(), Some(10));
    let addresses = s.node_addresses();
    assert_eq!(addresses.len(), 3);
    // the run's keys, and its index entries, are gone from every node once it is dropped
    let every_key = format!("*{}[:#]*", s.run_tag);
    drop(s);
    for &port in c.ports() {
        assert_eq!(copies(port, &every_key), 0, "node {port} is clean");
    }
}

/// A plain connection to the node on `port`.
fn raw(port: u16) -> Connection {
    let target = url::parse(&format!("redis://127.0.0.1:{port}")).unwrap();
    Connection::open(&target, Duration::from_secs(5), Default::default()).unwrap()
}

fn ask(con: &mut Connection, args: &[&[u8]]) -> Vec<u8> {
    let c = con.command(args.len());
    for a in args {
        c.arg(a);
    }
    let reply = con.round_trip().unwrap();
    match reply.bulk() {
        Ok(b) => b.unwrap_or_default().to_vec(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn requests_follow_ask_during_a_slot_migration_and_moved_after_it() {
    let Some((c, _dir)) = cluster("redirects") else {
        return;
    };
    let mut s = open(&c.url(), Placement::Native, 0);
    let key = b"migrating-key";
    let slot = slot_of(&[&s.prefixes[0], key]);
    let from = s.nodes.of_slot(slot);
    let to = (from + 1) % 3;
    let ports = c.ports().to_vec();
    let ids: Vec<Vec<u8>> = ports
        .iter()
        .map(|&p| ask(&mut raw(p), &[b"CLUSTER", b"MYID"]))
        .collect();
    let slot_text = slot.to_string();
    let (mut source, mut dest) = (raw(ports[from]), raw(ports[to]));
    ask(
        &mut dest,
        &[
            b"CLUSTER",
            b"SETSLOT",
            slot_text.as_bytes(),
            b"IMPORTING",
            &ids[from],
        ],
    );
    ask(
        &mut source,
        &[
            b"CLUSTER",
            b"SETSLOT",
            slot_text.as_bytes(),
            b"MIGRATING",
            &ids[to],
        ],
    );

    // a key new to a migrating slot is written on the importing node (ASK), and read there
    s.put(0, key, b"v1").unwrap();
    assert_eq!(s.get(0, key).unwrap(), Some(2));
    // a write batch in the slot: its write there follows the ASK too
    s.batch_put(0, key, b"v22").unwrap();
    s.batch_put(0, b"other-key", b"x").unwrap();
    s.batch_commit().unwrap();
    assert_eq!(s.get(0, key).unwrap(), Some(3));
    assert_eq!(s.get(0, b"other-key").unwrap(), Some(1));

    // the migration ends: every node hands the slot to the destination
    for &p in &ports {
        ask(
            &mut raw(p),
            &[
                b"CLUSTER",
                b"SETSLOT",
                slot_text.as_bytes(),
                b"NODE",
                &ids[to],
            ],
        );
    }
    // the store's map is stale: a MOVED refreshes it, for a read, a batch and iteration
    assert_eq!(s.get(0, key).unwrap(), Some(3));
    assert_eq!(s.nodes.of_slot(slot), to, "the slot map was refreshed");
    s.batch_delete(0, key).unwrap();
    s.batch_commit().unwrap();
    assert_eq!(s.get(0, key).unwrap(), None);
    assert_eq!(s.seek(0, b"").unwrap(), Some(1), "other-key is first now");
}

#[test]
fn a_plain_redis_server_is_refused_with_what_to_use_instead() {
    let Some((_c, _dir)) = cluster("plain server refused") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut plain = std::process::Command::new("redis-server")
        .args(["--port", &port.to_string(), "--save", ""])
        .arg("--dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("redis://127.0.0.1:{port}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = RedisClusterStore::open(&["s".into()], &settings(&url, Placement::Native, 0))
        .unwrap_err()
        .to_string();
    let _ = plain.kill();
    let _ = plain.wait();
    assert!(
        e.contains("without cluster mode") && e.contains("--store redis"),
        "{e}"
    );
}

#[test]
fn linked_nodes_are_reached_across_the_delay_and_the_own_node_directly() {
    let Some((c, _dir)) = cluster("node links") else {
        return;
    };
    let delay = Duration::from_micros(900);
    let spec = crate::remote::RemoteSpec {
        delay,
        jitter: Duration::ZERO,
        ..crate::remote::RemoteSpec::default()
    };
    let nodes: Vec<std::net::SocketAddr> = open(&c.url(), Placement::Native, 0)
        .node_addresses()
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
    let links = crate::remote::NodeLinks::start(&nodes, &spec, std::sync::Arc::default()).unwrap();
    for instance in 0..3 {
        let mut s = RedisClusterStore::open(
            &["s0".to_string()],
            &StoreSettings {
                redis_links: links.links(),
                ..settings(&c.url(), Placement::Native, instance)
            },
        )
        .unwrap();
        let (mut local, mut remote) = (Vec::new(), Vec::new());
        for i in 0..60u32 {
            let key = format!("ad-{i}");
            s.put(0, key.as_bytes(), b"campaign").unwrap();
            let before = counts(&s)[0];
            let started = std::time::Instant::now();
            assert_eq!(s.get(0, key.as_bytes()).unwrap(), Some(8));
            let took = started.elapsed();
            if counts(&s)[0].0 > before.0 {
                local.push(took);
            } else {
                remote.push(took);
            }
        }
        assert!(
            !local.is_empty() && !remote.is_empty(),
            "{local:?} {remote:?}"
        );
        let fastest_remote = remote.iter().min().unwrap();
        assert!(
            *fastest_remote >= 2 * delay,
            "instance {instance}: a read on another node took {fastest_remote:?}, under the link's round trip"
        );
        local.sort();
        let median_local = local[local.len() / 2];
        assert!(
            median_local < delay,
            "instance {instance}: reads on the own node take {median_local:?}: they crossed a link"
        );
    }
}

#[test]
fn a_request_to_a_killed_node_names_that_node_not_the_seed() {
    let Some((c, _dir)) = cluster("a killed node named") else {
        return;
    };
    let seed = c.ports()[0];
    let mut s = open(&c.url(), Placement::Native, 0);
    // a key on another node than the seed's, and that node's process
    let addresses = s.node_addresses();
    let (key, node) = (0u32..)
        .map(|i| format!("ad-{i}"))
        .map(|k| {
            let n = s.nodes.of_slot(slot_of(&[&s.prefixes[0], k.as_bytes()]));
            (k, n)
        })
        .find(|(_, n)| addresses[*n] != format!("127.0.0.1:{seed}"))
        .unwrap();
    let port: u16 = addresses[node].rsplit(':').next().unwrap().parse().unwrap();
    let pid = c.pids()[c.ports().iter().position(|&p| p == port).unwrap()];
    // SAFETY: kill(2) of a redis-server this test started
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(100));
    let e = s.get(0, key.as_bytes()).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "redis://127.0.0.1:{port} (a node of the cluster at redis://127.0.0.1:{seed})"
        )),
        "the error names node {port}, which was killed: {e}"
    );
    assert!(
        !e.contains(&format!("redis://127.0.0.1:{seed} lost")),
        "{e}"
    );
}
