//! A "remote" Redis on this machine: a redis-server in a network namespace of its own, across
//! a rate-limited veth link, behind a delaying proxy; against a local one on loopback.
//!
//! These need root (namespaces), `ip`/`tc`, `redis-server` and, for whole-millisecond delays,
//! `toxiproxy-server`. Outside CI a test without them is skipped with a message; with
//! `CI=true` it fails, since `.ci/run` runs as root and `scripts/setup.sh` installs them.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gadget_eval::remote::{process_alive, Delayer, RemoteError, RemoteRedis, RemoteSpec};

/// Starts a remote Redis, or `None` (skipped) when this machine cannot outside CI.
fn remote(test: &str, spec: &RemoteSpec) -> Option<RemoteRedis> {
    match RemoteRedis::start(spec, Arc::new(AtomicBool::new(false))) {
        Ok(remote) => Some(remote),
        Err(
            e @ (RemoteError::NeedsRoot { .. }
            | RemoteError::ToolMissing { .. }
            | RemoteError::RedisServerMissing
            | RemoteError::ToxiproxyMissing { .. }),
        ) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{test}: {e}; but CI=true, and .ci/run runs as root after scripts/setup.sh installed everything");
            }
            eprintln!("skipping {test}: {e}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

/// Namespaces as `ip netns list` shows them.
fn namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Whether the host has a link of this name.
fn link_exists(name: &str) -> bool {
    Command::new("ip")
        .args(["link", "show", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// The median of `n` sequential `PING` round trips on one connection to `port` on loopback,
/// after a few to warm up.
fn median_ping(port: u16, n: usize) -> Duration {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut ping = || {
        let start = Instant::now();
        s.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
        let mut answer = Vec::new();
        let mut buf = [0u8; 16];
        while !answer.ends_with(b"\r\n") {
            match s.read(&mut buf) {
                Ok(0) => panic!("the connection closed"),
                Ok(k) => answer.extend_from_slice(&buf[..k]),
                // a signal to this process (a child of another test ending) interrupts reads
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("no answer to PING within 10 s: {e}"),
            }
        }
        assert_eq!(answer, b"+PONG\r\n");
        start.elapsed()
    };
    for _ in 0..10 {
        ping();
    }
    let mut times: Vec<Duration> = (0..n).map(|_| ping()).collect();
    times.sort();
    times[n / 2]
}

#[test]
fn a_redis_200_us_away_answers_no_sooner_than_two_delays_and_a_local_one_sooner_than_one() {
    let delay = Duration::from_micros(200);
    let spec = RemoteSpec {
        delay,
        jitter: Duration::ZERO,
        ..RemoteSpec::default()
    };
    let Some(remote) = remote("remote store 200 µs away", &spec) else {
        return;
    };
    assert_eq!(remote.delayer(), Delayer::Builtin);
    assert!(
        remote.url().starts_with("redis://127.0.0.1:"),
        "{}",
        remote.url()
    );
    assert!(!remote.server_addr().ip().is_loopback());
    assert!(namespaces().contains(&remote.namespace().to_string()));

    // the delay holds each direction, so a round trip gains two of them
    let far = median_ping(remote.port(), 200);
    assert!(
        far >= 2 * delay,
        "median round trip to the remote store {far:?}, below twice the {delay:?} delay"
    );

    let Some(local) = support::RedisServer::start("local store beside the remote one") else {
        return;
    };
    let port: u16 = local.url.rsplit(':').next().unwrap().parse().unwrap();
    let near = median_ping(port, 200);
    assert!(
        near < delay,
        "median round trip to a local store {near:?}, not below {delay:?}"
    );
    eprintln!("median PING round trip: local {near:?}, remote ({delay:?} each way) {far:?}");
}

#[test]
fn a_redis_a_whole_millisecond_away_is_delayed_by_toxiproxy_both_ways() {
    let delay = Duration::from_millis(1);
    let spec = RemoteSpec {
        delay,
        jitter: Duration::ZERO,
        ..RemoteSpec::default()
    };
    let Some(remote) = remote("remote store 1 ms away through Toxiproxy", &spec) else {
        return;
    };
    assert_eq!(remote.delayer(), Delayer::Toxiproxy);
    assert_eq!(remote.pids().len(), 2, "redis-server and toxiproxy-server");
    let far = median_ping(remote.port(), 50);
    assert!(
        far >= 2 * delay,
        "median round trip through Toxiproxy {far:?}, below twice the {delay:?} delay"
    );
}

#[test]
fn dropping_a_remote_redis_removes_its_namespace_link_folder_and_processes() {
    for spec in [
        RemoteSpec::default(),
        RemoteSpec {
            delay: Duration::from_millis(1),
            jitter: Duration::ZERO,
            ..RemoteSpec::default()
        },
    ] {
        let Some(remote) = remote("dropping a remote store", &spec) else {
            return;
        };
        // a client still connected when it goes
        let mut client = TcpStream::connect(("127.0.0.1", remote.port())).unwrap();
        client.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
        let (namespace, link, dir, pids) = (
            remote.namespace().to_string(),
            remote.host_link().to_string(),
            remote.dir().to_path_buf(),
            remote.pids(),
        );
        assert!(namespaces().contains(&namespace));
        assert!(link_exists(&link));
        assert!(dir.is_dir());
        assert!(pids.iter().all(|&p| process_alive(p)));

        drop(remote);
        assert!(
            !namespaces().contains(&namespace),
            "{namespace} is still listed"
        );
        assert!(!link_exists(&link), "link {link} is still there");
        assert!(!dir.exists(), "{} is still there", dir.display());
        for pid in pids {
            assert!(!process_alive(pid), "process {pid} still runs");
        }
    }
}

#[test]
fn a_namespace_left_by_a_crashed_run_is_removed_with_what_runs_in_it_by_the_next_start() {
    // a Gadget process that no longer runs: a pid beyond any this machine has in use
    let dead = (4_000_000u32..4_100_000)
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .unwrap();
    let stale = format!("gadget-{dead}-0");
    // a process in a network namespace of its own, which then gets the stale name: it is in
    // there from the moment the name exists (other tests here clean up stale ones too)
    let Ok(mut left_running) = Command::new("unshare")
        .args(["--net", "sleep", "600"])
        .stderr(Stdio::null())
        .spawn()
    else {
        let _ = remote("clean-up after a crashed run", &RemoteSpec::default());
        return;
    };
    let pid = left_running.id();
    let own_net = std::fs::read_link("/proc/self/ns/net").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_link(format!("/proc/{pid}/ns/net")).is_ok_and(|n| n == own_net)
        && left_running.try_wait().unwrap().is_none()
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let own_namespace =
        std::fs::read_link(format!("/proc/{pid}/ns/net")).map_or(true, |n| n == own_net);
    // never give the host's namespace the stale name: its clean-up would kill what runs here
    let attached = !own_namespace
        && Command::new("ip")
            .args(["netns", "attach", &stale, &pid.to_string()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !attached {
        // not root (unshare failed, or ip did): skipped, or failed in CI, as every test here
        let _ = left_running.kill();
        let _ = left_running.wait();
        let _ = remote("clean-up after a crashed run", &RemoteSpec::default());
        return;
    }
    let Some(remote) = remote("clean-up after a crashed run", &RemoteSpec::default()) else {
        let _ = left_running.kill();
        let _ = left_running.wait();
        let _ = Command::new("ip").args(["netns", "del", &stale]).status();
        return;
    };
    assert!(!namespaces().contains(&stale), "{stale} is still listed");
    // the process left in it was killed
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = left_running.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = left_running.kill();
            panic!("the process left in {stale} was not killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(!status.success(), "{status}");
    assert!(namespaces().contains(&remote.namespace().to_string()));
}

/// Set for the child process of the test below: hold a remote store until killed.
const HOLD: &str = "GADGET_REMOTE_STORE_HOLD";

#[test]
fn a_run_killed_before_it_cleaned_up_leaves_nothing_once_the_next_run_starts() {
    if std::env::var_os(HOLD).is_some() {
        return hold_a_remote_store_until_killed();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_run_killed_before_it_cleaned_up_leaves_nothing_once_the_next_run_starts",
            "--nocapture",
        ])
        .env(HOLD, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let held = lines
        .find_map(|l| l.ok()?.strip_prefix("HOLDING ").map(str::to_string))
        .unwrap_or_default();
    // SIGKILL: no drop, no clean-up, as when a run is killed
    let _ = child.kill();
    let _ = child.wait();
    let mut fields = held.split_whitespace();
    let (Some(namespace), Some(dir)) = (fields.next(), fields.next()) else {
        // the child skipped (not root, or something missing, outside CI)
        let _ = remote("clean-up after a killed run", &RemoteSpec::default());
        return;
    };
    let pids: Vec<u32> = fields.map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2, "redis-server and toxiproxy-server: {held}");
    // (another test's start, running beside this one, may already have cleaned up after it)

    let Some(_next) = remote("clean-up after a killed run", &RemoteSpec::default()) else {
        return;
    };
    assert!(
        !namespaces().contains(&namespace.to_string()),
        "{namespace} is still listed"
    );
    assert!(!std::path::Path::new(dir).exists(), "{dir} is still there");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| process_alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for pid in pids {
        assert!(
            !process_alive(pid),
            "process {pid} of the killed run still runs"
        );
    }
}

/// The child's part: starts a remote store through Toxiproxy, says what it made, and waits
/// to be killed (a minute at most).
fn hold_a_remote_store_until_killed() {
    let spec = RemoteSpec {
        delay: Duration::from_millis(1),
        jitter: Duration::ZERO,
        ..RemoteSpec::default()
    };
    let Some(remote) = remote("holding a remote store", &spec) else {
        println!("HOLDING");
        return;
    };
    let pids: Vec<String> = remote.pids().iter().map(u32::to_string).collect();
    println!(
        "HOLDING {} {} {}",
        remote.namespace(),
        remote.dir().display(),
        pids.join(" ")
    );
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn without_root_the_error_says_root_or_cap_net_admin_is_needed_and_what_to_do() {
    let message = RemoteError::NeedsRoot {
        detail: "this process runs as user 1000, without those capabilities".into(),
    }
    .to_string();
    assert!(message.contains("needs root"), "{message}");
    assert!(message.contains("CAP_NET_ADMIN"), "{message}");
    assert!(message.contains("sudo"), "{message}");
    assert!(message.contains("real remote host"), "{message}");
}

#[test]
fn a_missing_toxiproxy_says_how_to_install_it() {
    let message = RemoteError::ToxiproxyMissing {
        deps_path: gadget_eval::remote::deps_binary(),
    }
    .to_string();
    assert!(message.contains("scripts/setup.sh"), "{message}");
    assert!(
        message.contains("go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0"),
        "{message}"
    );
    assert!(message.contains("GADGET_TOXIPROXY"), "{message}");
    assert!(message.contains(".deps/bin/toxiproxy-server"), "{message}");
}

#[test]
fn the_default_link_is_a_10_gbit_switch_hop_and_impossible_links_are_refused() {
    let spec = RemoteSpec::default();
    assert_eq!(spec.delay, Duration::from_micros(25));
    assert_eq!(spec.jitter, Duration::from_micros(5));
    assert_eq!(spec.rate_bits_per_s, 10_000_000_000);
    assert_eq!(
        spec.delayer(),
        Delayer::Builtin,
        "finer than Toxiproxy's milliseconds"
    );
    spec.validate().unwrap();

    let whole_ms = RemoteSpec {
        delay: Duration::from_millis(2),
        jitter: Duration::from_millis(1),
        ..spec.clone()
    };
    assert_eq!(whole_ms.delayer(), Delayer::Toxiproxy);

    let negative = RemoteSpec {
        delay: Duration::from_micros(10),
        jitter: Duration::from_micros(20),
        ..spec.clone()
    };
    let message = negative.validate().unwrap_err().to_string();
    assert!(
        message.contains("make the jitter at most the delay"),
        "{message}"
    );

    let no_rate = RemoteSpec {
        rate_bits_per_s: 0,
        ..spec
    };
    let message = no_rate.validate().unwrap_err().to_string();
    assert!(message.contains("at least"), "{message}");
    let stopped = RemoteRedis::start(&RemoteSpec::default(), Arc::new(AtomicBool::new(true)));
    assert!(matches!(stopped, Err(RemoteError::Stopped)));
}
