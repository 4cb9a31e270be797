//! `gadget cluster up/down` misused: a cluster.json naming other processes, a folder holding
//! the user's files, ports past 65535, `up` killed or interrupted while the cluster forms,
//! two `up` on one folder, and a node killed under a run. Nothing of the user's is signalled
//! or removed, and no node is left running without a way to stop it.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn gadget_child(args: &[&str], dir: &Path) -> Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args(args)
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `redis-server` is here; outside CI a missing one skips the test with a message.
fn redis_server(test: &str) -> bool {
    let here = std::process::Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if !here {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{test}: redis-server is missing, but CI=true: .ci/run installs it"
        );
        eprintln!("skipping {test}: redis-server is not installed (apt-get install redis-server)");
    }
    here
}

/// Stops the cluster of `dir` when the test ends, passed or not.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if self.0.join("cluster.json").exists() {
            let _ = gadget()
                .args(["cluster", "down", "--dir"])
                .arg(&self.0)
                .output();
        }
    }
}

/// Ends a process this test started, when the test ends.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `redis-server` processes working in a folder under `dir` (`dir` canonical).
fn nodes_in(dir: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let p = entry.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        let zombie = stat
            .rfind(')')
            .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z'));
        let cwd = std::fs::read_link(p.join("cwd")).unwrap_or_default();
        if comm.trim() == "redis-server" && !zombie && cwd.starts_with(dir) {
            found.push(pid);
        }
    }
    found
}

/// `DIR/cluster.json`, once it is there and whole and `ready` says it has what is wanted.
fn wait_for_description(
    dir: &Path,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(dir.join("cluster.json")).unwrap_or_default();
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            if ready(&v) {
                return v;
            }
        }
        assert!(Instant::now() < deadline, "no such cluster.json: {text}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How many of the described nodes have a process id.
fn started(v: &serde_json::Value) -> usize {
    v["nodes"]
        .as_array()
        .map_or(0, |n| n.iter().filter(|n| n["pid"].is_i64()).count())
}

/// `gadget cluster down --dir DIR` in a process group of its own: a process id 0 it
/// signalled would reach no other process.
fn down_alone(dir: &Path) -> std::process::Output {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("gadget"))
        .args(["cluster", "down", "--dir"])
        .arg(dir)
        .process_group(0)
        .output()
        .unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn down_signals_no_listed_process_that_is_not_its_node() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cluster");
    std::fs::create_dir(&dir).unwrap();
    let sleep = Reap(
        std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap(),
    );
    let pid = sleep.0.id();
    // a description as gadget before format 2 wrote it, edited or stale (process ids that
    // kill(2) reads as every process are tried below in format 2, which a gadget that does
    // not check them cannot read: this test must not signal every process there)
    std::fs::write(
        dir.join("cluster.json"),
        format!(
            r#"{{"url": "redis://127.0.0.1:7000", "ports": [7000, 7001], "pids": [{pid}, 0]}}"#
        ),
    )
    .unwrap();
    let out = down_alone(&dir);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    for named in [
        format!("process id {pid} (port 7000) is `sleep 1000`"),
        "process id 0 (port 7001): not a process id".into(),
        "nothing was signalled or removed".into(),
    ] {
        assert!(said.contains(&named), "{named} in: {said}");
    }
    let mut sleep = sleep;
    assert!(sleep.0.try_wait().unwrap().is_none(), "sleep was killed");
    assert!(dir.join("cluster.json").exists());

    // 4294967295 became -1: every process the user may signal
    std::fs::write(
        dir.join("cluster.json"),
        r#"{"format": 2, "state": "ready", "url": "redis://127.0.0.1:7000", "up_pid": 1,
            "boot_id": "", "made_dir": true,
            "nodes": [{"port": 7000, "pid": 4294967295}, {"port": 7001, "pid": -1}]}"#,
    )
    .unwrap();
    let out = down_alone(&dir);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    for named in [
        "process id 4294967295 (port 7000): above the largest process id",
        "process id -1 (port 7001): not a process id",
    ] {
        assert!(said.contains(named), "{named} in: {said}");
    }
    assert!(sleep.0.try_wait().unwrap().is_none(), "sleep was killed");
    assert!(dir.exists() && dir.join("cluster.json").exists());

    // a redis-server of another folder, listed for its own port, is not this cluster's
    if !redis_server("down refuses another folder's redis-server") {
        return;
    }
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let redis = Reap(
        std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--save", ""])
            .arg("--dir")
            .arg(&other)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::create_dir(dir.join(format!("node-{port}"))).unwrap();
    std::fs::write(
        dir.join("cluster.json"),
        format!(
            r#"{{"format": 2, "state": "ready", "url": "redis://127.0.0.1:{port}", "up_pid": 1,
                "boot_id": "", "made_dir": true, "nodes": [{{"port": {port}, "pid": {}}}]}}"#,
            redis.0.id()
        ),
    )
    .unwrap();
    let out = down_alone(&dir);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("a redis-server in") && said.contains("other"),
        "{said}"
    );
    let mut redis = redis;
    assert!(
        redis.0.try_wait().unwrap().is_none(),
        "the redis-server was stopped"
    );
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
}

#[test]
fn down_removes_only_what_up_made_and_keeps_the_users_files() {
    if !redis_server("down keeps the user's files") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // a folder of the user's, holding their work
    let own = tmp.path().join("thesis");
    std::fs::create_dir(&own).unwrap();
    std::fs::write(own.join("thesis.tex"), "\\chapter{Results}\n").unwrap();
    // a folder `up` makes, where the user then puts a file
    let made = tmp.path().join("new/cluster");
    for dir in [&own, &made] {
        let _down = Down(dir.clone());
        let up = gadget()
            .args(["cluster", "up", "--nodes", "1", "--dir"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(up.status.success(), "{}", stderr(&up));
        if dir == &made {
            std::fs::write(made.join("notes.txt"), "ports").unwrap();
        }
        let down = gadget()
            .args(["cluster", "down", "--dir"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(down.status.success(), "{}", stderr(&down));
        assert!(stderr(&down).contains(&format!("kept {}", dir.display())));
        let left: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let theirs = if dir == &own {
            "thesis.tex"
        } else {
            "notes.txt"
        };
        assert_eq!(left, [theirs], "{}", dir.display());
    }
    assert_eq!(
        std::fs::read_to_string(own.join("thesis.tex")).unwrap(),
        "\\chapter{Results}\n"
    );
}

#[test]
fn ports_past_65535_are_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cluster");
    for (port, nodes, highest) in [
        ("65535", "3", "55533"),
        ("55535", "2", "55534"),
        ("55536", "1", "55535"),
        ("0", "1", "55535"),
    ] {
        let out = gadget()
            .args(["cluster", "up", "--port", port, "--nodes", nodes, "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "--port {port}: {said}");
        assert!(
            said.contains(&format!("give a --port from 1 to {highest}")),
            "--port {port} --nodes {nodes}: {said}"
        );
        assert!(!dir.exists(), "nothing is made");
    }
}

#[test]
fn a_cluster_up_killed_while_forming_is_stopped_by_down() {
    if !redis_server("up killed while forming") {
        return;
    }
    // killed as its nodes start, and while they are meeting
    for (nodes_started, then) in [(2, 0), (3, 50)] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let dir = root.join("cluster");
        let _down = Down(dir.clone());
        let mut up = gadget_child(&["cluster", "up", "--nodes", "3"], &dir);
        let seen = wait_for_description(&dir, |v| started(v) >= nodes_started);
        std::thread::sleep(Duration::from_millis(then));
        up.kill().unwrap();
        up.wait().unwrap();
        assert_eq!(seen["state"], "forming", "{seen}");
        // at once: a node may have started without its process id recorded yet, or not yet
        // be in its folder
        let down = gadget()
            .args(["cluster", "down", "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(down.status.success(), "{}", stderr(&down));
        assert_eq!(nodes_in(&root), Vec::<u32>::new(), "a node is left running");
        for node in seen["nodes"].as_array().unwrap() {
            let pid = node["pid"].as_i64().unwrap_or(0);
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            assert!(
                !stat.contains("(redis-server)") || stat.contains(") Z"),
                "node {node} runs on: {stat}"
            );
        }
        let left: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            !dir.exists(),
            "up made the folder; down removes it, yet {left:?} are left: {}",
            stderr(&down)
        );
    }
}

#[test]
fn two_ups_on_one_folder_at_once_one_is_refused() {
    if !redis_server("two ups at once") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let dir = root.join("cluster");
    let _down = Down(dir.clone());
    let ups: Vec<Child> = (0..2)
        .map(|_| gadget_child(&["cluster", "up", "--nodes", "1"], &dir))
        .collect();
    let outs: Vec<std::process::Output> = ups
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let won: Vec<bool> = outs.iter().map(|o| o.status.success()).collect();
    assert_eq!(
        won.iter().filter(|&&w| w).count(),
        1,
        "{:?}",
        outs.iter().map(stderr).collect::<Vec<_>>()
    );
    let lost = &outs[won.iter().position(|&w| !w).unwrap()];
    assert!(
        stderr(lost).contains("describes a cluster already"),
        "{}",
        stderr(lost)
    );
    assert_eq!(nodes_in(&root).len(), 1, "the refused up started no node");
    let down = gadget()
        .args(["cluster", "down", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(down.status.success(), "{}", stderr(&down));
    assert_eq!(nodes_in(&root), Vec::<u32>::new());
}

#[test]
fn ctrl_c_while_forming_stops_the_nodes_removes_what_up_made_and_exits_130() {
    if !redis_server("ctrl-c while forming") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let dir = root.join("thesis");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("thesis.tex"), "x").unwrap();
    let _down = Down(dir.clone());
    let up = gadget_child(&["cluster", "up", "--nodes", "3"], &dir);
    wait_for_description(&dir, |v| started(v) >= 1);
    // `down` leaves a cluster that its `up` is forming to that `up`
    let early = gadget()
        .args(["cluster", "down", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(early.status.code(), Some(1), "{}", stderr(&early));
    assert!(
        stderr(&early).contains("is still forming"),
        "{}",
        stderr(&early)
    );
    // SAFETY: kill(2) of the gadget this test started
    unsafe { libc::kill(up.id() as libc::pid_t, libc::SIGINT) };
    let out = up.wait_with_output().unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(
        said.contains("stopped while the cluster was forming"),
        "{said}"
    );
    assert_eq!(nodes_in(&root), Vec::<u32>::new(), "a node is left running");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["thesis.tex"]);
}

#[test]
fn a_run_on_a_cluster_with_a_killed_node_names_that_node() {
    if !redis_server("a killed node named") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cluster");
    let _down = Down(dir.clone());
    let up = gadget()
        .args(["cluster", "up", "--nodes", "2", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(up.status.success(), "{}", stderr(&up));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cluster.json")).unwrap()).unwrap();
    // (a gadget before format 2 wrote ports and pids)
    let node = |i: usize, key: &str| {
        v["nodes"][i][key]
            .as_i64()
            .or_else(|| v[format!("{key}s")][i].as_i64())
            .unwrap()
    };
    let (seed, killed) = (node(0, "port"), node(1, "port"));
    // SAFETY: kill(2) of a node this test started
    unsafe { libc::kill(node(1, "pid") as libc::pid_t, libc::SIGKILL) };
    let out = gadget()
        .arg("run")
        .arg(project_root().join("examples/ycsb/workloadb.toml"))
        .args(["--store", "redis-cluster", "--redis-url"])
        .arg(v["url"].as_str().unwrap())
        .args(["--limit", "100"])
        .output()
        .unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("redis://127.0.0.1:{killed}")),
        "the killed node {killed} is named: {said}"
    );
    assert!(
        !said.contains("the node lost"),
        "not as the seed {seed}: {said}"
    );
    let down = gadget()
        .args(["cluster", "down", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(down.status.success(), "{}", stderr(&down));
    assert!(stderr(&down).contains("had stopped"), "{}", stderr(&down));
}
