//! `--rocksdb-lib`: one `gadget` binary runs each RocksDB library it is given (Flink's
//! frocksdb builds, ForSt, current RocksDB, the system's), says which ran, and refuses what it
//! cannot run with a message that says what to do.

use std::path::PathBuf;

use assert_cmd::Command;

fn gadget() -> Command {
    let mut c = Command::cargo_bin("gadget").unwrap();
    c.env_remove("GADGET_ROCKSDB_LIB");
    c
}

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn workloada() -> String {
    project_root()
        .join("examples/ycsb/workloada.toml")
        .display()
        .to_string()
}

/// Where `scripts/setup.sh` puts the named builds.
fn installed(name: &str, file: &str) -> bool {
    let path = project_root().join(".deps/rocksdb").join(name).join(file);
    if path.exists() {
        return true;
    }
    let why = format!("{} is missing: run scripts/setup.sh", path.display());
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("skipped {name}: {why}");
    false
}

#[test]
fn each_named_library_runs_ycsb_a_and_the_results_say_which_ran() {
    let libraries = [
        ("flink-1.20", "librocksdbjni-linux64.so", "6.20.3"),
        ("flink-2.x", "librocksdbjni-linux64.so", "8.10.0"),
        ("forst", "libforstjni-linux64.so", "8.10.0"),
        ("current", "librocksdbjni-linux64.so", "10.10.1"),
    ];
    let mut requests = Vec::new();
    for (name, file, version) in libraries {
        if !installed(name, file) {
            continue;
        }
        let out = gadget()
            .args([
                "run",
                &workloada(),
                "--store",
                "rocksdb",
                "--rocksdb-lib",
                name,
            ])
            .args(["--limit", "3000", "--write-buffer-mb", "4", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // the same workload, request for request, on every library
        requests.push(r["requests"].as_u64().unwrap());
        assert!(
            requests.iter().all(|&n| n == requests[0] && n > 0),
            "{name}: {requests:?}"
        );
        let settings = &r["context"]["store_settings"];
        assert_eq!(settings["library"], name);
        assert_eq!(settings["rocksdb_version"], version, "{name}");
        let described = r["context"]["store_libraries"][0].as_str().unwrap();
        assert!(described.contains(file), "{described}");
    }
}

#[test]
fn the_systems_library_runs_when_installed_and_a_path_names_the_same() {
    let Some(system) = [
        "/usr/lib/x86_64-linux-gnu/librocksdb.so",
        "/usr/lib/aarch64-linux-gnu/librocksdb.so",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists()) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "librocksdb-dev is missing: run scripts/setup.sh"
        );
        eprintln!("skipped: no librocksdb.so (Debian's librocksdb-dev) here");
        return;
    };
    let mut versions = Vec::new();
    for choice in ["debian", system] {
        let out = gadget()
            .args([
                "run",
                &workloada(),
                "--store",
                "rocksdb",
                "--rocksdb-lib",
                choice,
            ])
            .args(["--limit", "1000", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{choice}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        versions.push(r["context"]["store_settings"]["rocksdb_version"].clone());
    }
    assert_eq!(versions[0], versions[1]);
    assert!(versions[0]
        .as_str()
        .unwrap()
        .starts_with(|c: char| c.is_ascii_digit()));
}

#[test]
fn an_unknown_library_is_refused_with_the_choices() {
    let out = gadget()
        .args([
            "run",
            &workloada(),
            "--store",
            "rocksdb",
            "--rocksdb-lib",
            "flink-1.19",
        ])
        .args(["--limit", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("flink-1.19") && err.contains("flink-2.x") && err.contains("forst"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_named_build_that_is_not_installed_says_to_run_setup() {
    let empty = tempfile::tempdir().unwrap();
    let out = gadget()
        .env("GADGET_ROCKSDB_DIR", empty.path())
        .args(["run", &workloada(), "--store", "rocksdb", "--limit", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scripts/setup.sh") && err.contains("com.ververica:frocksdbjni"),
        "{err}"
    );
}

#[test]
fn a_file_that_is_not_rocksdb_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("librocksdb.so");
    std::fs::write(&fake, "not a library").unwrap();
    let out = gadget()
        .args([
            "run",
            &workloada(),
            "--store",
            "rocksdb",
            "--limit",
            "10",
            "--rocksdb-lib",
        ])
        .arg(&fake)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&fake.display().to_string()), "{err}");
}

#[test]
fn a_config_names_the_library_and_a_bad_name_points_at_its_line() {
    if !installed("current", "librocksdbjni-linux64.so") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base =
        std::fs::read_to_string(project_root().join("examples/ycsb/workloada.toml")).unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        format!("{base}\n[run.rocksdb]\nlibrary = \"current\"\n"),
    )
    .unwrap();
    let out = gadget()
        .args([
            "run",
            good.to_str().unwrap(),
            "--store",
            "rocksdb",
            "--limit",
            "500",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["context"]["store_settings"]["rocksdb_version"], "10.10.1");

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        format!("{base}\n[run.rocksdb]\nlibrary = \"rocksdb-9\"\n"),
    )
    .unwrap();
    let out = gadget()
        .args([
            "run",
            bad.to_str().unwrap(),
            "--store",
            "rocksdb",
            "--limit",
            "10",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = base.lines().count() + 3;
    assert!(
        err.contains(&format!("bad.toml:{line}")) && err.contains("flink-1.20"),
        "{err}"
    );
}

#[test]
fn store_counters_on_a_library_without_a_perf_context_fail_loudly() {
    if !installed("flink-2.x", "librocksdbjni-linux64.so") {
        return;
    }
    let out = gadget()
        .args([
            "run",
            &workloada(),
            "--store",
            "rocksdb",
            "--rocksdb-lib",
            "flink-2.x",
        ])
        .args(["--limit", "10", "--store-counters"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--store-counters") && err.contains("8.10.0"),
        "{err}"
    );
}
