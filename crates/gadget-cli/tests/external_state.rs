//! The lookup-join with its table in Redis beside the job and in a "remote" Redis: a network
//! namespace the run creates, behind a link with an added delay (docs/external-state.md).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use assert_cmd::Command;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether this test can run here: root (for namespaces) and redis-server. Outside CI a
/// missing one skips with a message; in CI (`CI=true`) it fails, as `.ci/run` provides both.
fn runnable(test: &str) -> bool {
    let redis = std::process::Command::new("redis-server")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok();
    // SAFETY: geteuid has no preconditions
    let root = unsafe { libc::geteuid() } == 0;
    if redis && root {
        return true;
    }
    let why = if redis {
        "network namespaces need root"
    } else {
        "redis-server is not installed (apt-get install redis-server)"
    };
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{test}: {why}, but CI=true: .ci/run runs as root and installs redis-server"
    );
    eprintln!("skipping {test}: {why}");
    false
}

/// The p50 latency of the table's gets, from a run's results.
fn table_p50_ns(results: &serde_json::Value) -> u64 {
    results["per_state"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "ad-campaigns")
        .unwrap_or_else(|| panic!("ad-campaigns in {}", results["per_state"]))["latency"]["p50_ns"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_table_200_us_away_is_read_no_sooner_than_the_delay_and_a_local_one_sooner() {
    if !runnable("remote table") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let base =
        std::fs::read_to_string(project_root().join("examples/external/ysb-1.toml")).unwrap();
    let run = |placement: &str| -> (serde_json::Value, String) {
        let job = tmp.path().join("job.toml");
        std::fs::write(
            &job,
            format!("{base}\n{placement}\n[run.states]\n\"ad-campaigns\" = \"table\"\n"),
        )
        .unwrap();
        let out = gadget()
            .arg("run")
            .arg(&job)
            .args(["--store", "rocksdb", "--limit", "6000", "--json"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{said}");
        (serde_json::from_slice(&out.stdout).unwrap(), said)
    };

    let (remote, said) = run("[run.stores.table]\nkind = \"redis\"\n[run.stores.table.remote]\ndelay = \"200us\"\njitter = \"0us\"\n");
    assert_eq!(remote["store"], "rocksdb+redis");
    let settings = &remote["context"]["store_settings"];
    assert!(
        settings["stores.table.remote"]
            .as_str()
            .unwrap()
            .contains("200µs"),
        "{settings}"
    );
    let remote_p50 = table_p50_ns(&remote);
    assert!(remote_p50 >= 200_000, "remote p50 {remote_p50} ns");
    // the run said which namespace it made, and removed it
    let namespace = said
        .split("network namespace ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no namespace named in: {said}"))
        .to_string();
    assert!(namespace.starts_with("gadget-"), "{namespace}");
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&namespaces.stdout);
    assert!(
        !listed
            .lines()
            .any(|l| l.split_whitespace().next() == Some(namespace.as_str())),
        "{namespace} is left: {listed}"
    );

    // the same job with the table on a Redis server on loopback
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = std::process::Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(tmp.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    // a bound on wall-clock time, which a busy machine can break: the best of up to five
    // runs, a second apart, is judged (a delay wrongly applied to the local store is in every
    // run; a CI run once found the machine busy enough for one run to take 432 µs)
    let mut medians = Vec::new();
    for attempt in 0..5 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        let (local, _) = run(&format!(
            "[run.stores.table]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:{port}\"\n"
        ));
        medians.push(table_p50_ns(&local));
        if medians.last().is_some_and(|&p50| p50 < 200_000) {
            break;
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        medians.iter().any(|&p50| p50 < 200_000),
        "local p50 in every run: {medians:?} ns"
    );
}
