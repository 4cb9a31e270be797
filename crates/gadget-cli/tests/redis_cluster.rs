//! `gadget cluster up/down` and `gadget run --store redis-cluster` as users run them: a real
//! three-node Redis Cluster on loopback, each placement's locality in the results.

use std::path::PathBuf;

use assert_cmd::Command;

fn gadget() -> Command {
    Command::cargo_bin("gadget").unwrap()
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `redis-server` is here; outside CI a missing one skips the test with a message.
fn redis_server(test: &str) -> bool {
    let here = std::process::Command::new("redis-server")
        .arg("--version")
        .stdout(std::process::Stdio::null())
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

#[test]
fn a_cluster_started_by_gadget_serves_runs_under_each_placement_and_stops() {
    if !redis_server("gadget cluster") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cluster");
    let up = gadget()
        .args(["cluster", "up", "--nodes", "3", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let _down = Down(dir.clone());
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let url = String::from_utf8(up.stdout).unwrap().trim().to_string();
    assert!(url.starts_with("redis://127.0.0.1:"), "{url}");
    // a second `up` on the same folder is refused, the first cluster untouched
    let again = gadget()
        .args(["cluster", "up", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("gadget cluster down"));

    let workload = project_root().join("examples/ycsb/workloadb.toml");
    for placement in ["native", "aligned", "replicated"] {
        let out = gadget()
            .arg("run")
            .arg(&workload)
            .args(["--store", "redis-cluster", "--redis-url", &url])
            .args(["--redis-placement", placement, "--instances", "3"])
            .args(["--limit", "3000", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{placement}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["store"], "redis-cluster");
        let settings = &r["context"]["store_settings"];
        assert_eq!(settings["placement"], placement, "{settings}");
        // the server that answered, with its version as INFO gives it
        let libraries = r["context"]["store_libraries"].to_string();
        assert!(
            libraries.contains("Redis ")
                && libraries.contains("(cluster mode) at redis://127.0.0.1:")
                && !libraries.contains("unknown"),
            "{libraries}"
        );
        let c = &r["store_counters"];
        let count = |name: &str| c[name].as_u64().unwrap_or_else(|| panic!("{name} in {c}"));
        let reads = (count("reads_local"), count("reads_remote"));
        let local = reads.0 as f64 / (reads.0 + reads.1) as f64;
        match placement {
            // three instances, each on its own node: a third of the keys hash to it
            "native" => assert!((0.2..0.45).contains(&local), "{placement}: {reads:?}"),
            _ => assert_eq!(reads.1, 0, "{placement}: every read local"),
        }
    }

    // the poster's job: the window's state in embedded RocksDB, the table and the sink in
    // the cluster, each instance's table keys on its own node
    let job = tmp.path().join("ysb-3.toml");
    let text = std::fs::read_to_string(project_root().join("examples/external/ysb-3.toml"))
        .unwrap()
        + &format!(
            "\n[run.stores.external]\nkind = \"redis-cluster\"\nurl = \"{url}\"\nplacement = \"aligned\"\n\
             [run.states]\n\"ad-campaigns\" = \"external\"\n\"campaign-windows\" = \"external\"\n"
        );
    std::fs::write(&job, text).unwrap();
    let out = gadget()
        .arg("run")
        .arg(&job)
        .args(["--store", "rocksdb", "--limit", "20000", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["store"], "rocksdb+redis-cluster");
    let home = |state: &str| {
        r["per_state"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == state)
            .unwrap_or_else(|| panic!("{state} in {}", r["per_state"]))["store"]
            .clone()
    };
    assert_eq!(home("window-contents"), "rocksdb");
    assert_eq!(home("ad-campaigns"), "external");
    let stores: Vec<&str> = r["per_store"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(stores, ["rocksdb", "external"]);
    assert_eq!(
        r["store_counters"]["reads_remote"], 0,
        "aligned: every lookup local"
    );
    assert!(r["store_counters"]["reads_local"].as_u64().unwrap() > 1000);
    let settings = &r["context"]["store_settings"];
    assert_eq!(settings["stores.external.kind"], "redis-cluster");
    assert_eq!(settings["stores.external.placement"], "aligned");
    assert_eq!(settings["states.ad-campaigns"], "external");

    // seed 003's multi-3 on one machine: every node but an instance's own 200 us away
    let table_p50_ns = |placement: &str| -> u64 {
        let text = std::fs::read_to_string(project_root().join("examples/external/ysb-3.toml"))
            .unwrap()
            + &format!(
                "\n[run.stores.external]\nkind = \"redis-cluster\"\nurl = \"{url}\"\nplacement = \"{placement}\"\n\
                 [run.stores.external.remote]\ndelay = \"200us\"\njitter = \"0us\"\n\
                 [run.states]\n\"ad-campaigns\" = \"external\"\n"
            );
        std::fs::write(&job, text).unwrap();
        let out = gadget()
            .arg("run")
            .arg(&job)
            .args(["--store", "rocksdb", "--limit", "6000", "--json"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{placement}: {said}");
        assert!(said.contains("every node but an instance's own"), "{said}");
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            r["context"]["store_settings"]["stores.external.remote"]
                .as_str()
                .is_some_and(|s| s.contains("200µs")),
            "{}",
            r["context"]["store_settings"]
        );
        r["per_state"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "ad-campaigns")
            .unwrap()["latency"]["p50_ns"]
            .as_u64()
            .unwrap()
    };
    let native = table_p50_ns("native");
    assert!(
        native >= 400_000,
        "native: two of three lookups cross a 200 us link each way, yet p50 is {native} ns"
    );
    let replicated = table_p50_ns("replicated");
    assert!(
        replicated < 200_000,
        "replicated: every lookup on the own node, yet p50 is {replicated} ns"
    );

    let down = gadget()
        .args(["cluster", "down", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert!(!dir.exists(), "down removes the folder");
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the nodes are gone"
    );
}

#[test]
fn a_state_placed_in_an_unknown_store_is_refused_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job.toml");
    let base =
        std::fs::read_to_string(project_root().join("examples/external/ysb-1.toml")).unwrap();
    std::fs::write(
        &job,
        format!("{base}\n[run.states]\n\"ad-campaigns\" = \"elsewhere\"\n"),
    )
    .unwrap();
    let out = gadget().arg("run").arg(&job).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        said.contains("job.toml:")
            && said.contains("run.states.ad-campaigns")
            && said.contains("elsewhere"),
        "{said}"
    );
    std::fs::write(
        &job,
        format!("{base}\n[run.stores.external]\nkind = \"cassandra\"\n"),
    )
    .unwrap();
    let out = gadget().arg("run").arg(&job).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        said.contains("run.stores.external.kind") && said.contains("use one of: memory"),
        "{said}"
    );
    std::fs::write(
        &job,
        format!("{base}\n[run.stores.external]\nkind = \"redis-cluster\"\n[run.stores.external.remote]\nrate_mbit = 100\n"),
    )
    .unwrap();
    let out = gadget().arg("run").arg(&job).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        said.contains("job.toml:") && said.contains("drop `rate_mbit`"),
        "{said}"
    );
}
