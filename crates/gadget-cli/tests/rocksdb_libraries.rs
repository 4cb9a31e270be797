//! `--rocksdb-lib`: one `gadget` binary runs each RocksDB library it is given (Flink's
//! frocksdb builds, ForSt, current RocksDB, the system's), says which ran, and refuses what it
//! cannot run with a message that says what to do.

use std::path::PathBuf;

use assert_cmd::Command;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn workloada() -> String {
    let path = project_root().join("examples/ycsb/workloada.toml");
    path.display().to_string()
}

/// `gadget run` with `args`, with `env` set (and no library chosen by the environment).
fn run(args: &[&str], env: &[(&str, &std::path::Path)]) -> std::process::Output {
    let mut c = Command::cargo_bin("gadget").unwrap();
    c.env_remove("GADGET_ROCKSDB_LIB").arg("run").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The JSON results of `gadget run ARGS --json`, which must succeed.
fn succeeds(args: &[&str]) -> serde_json::Value {
    let out = run(&[args, &["--json"]].concat(), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The standard error of a `gadget run` that must fail as bad input does (exit 1, no panic).
fn fails(out: std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Whether `scripts/setup.sh` put the named build `name` in place (required under CI).
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
        let w = workloada();
        let r = succeeds(&[
            &w,
            "--store",
            "rocksdb",
            "--rocksdb-lib",
            name,
            "--limit",
            "3000",
        ]);
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
fn the_systems_library_runs_when_installed_and_its_path_names_the_same() {
    let system = [
        "/usr/lib/x86_64-linux-gnu/librocksdb.so",
        "/usr/lib/aarch64-linux-gnu/librocksdb.so",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists());
    let Some(system) = system else {
        let why = "no librocksdb.so (Debian's librocksdb-dev): run scripts/setup.sh";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("skipped: {why}");
        return;
    };
    let w = workloada();
    let version = |choice: &str| {
        let r = succeeds(&[
            &w,
            "--store",
            "rocksdb",
            "--rocksdb-lib",
            choice,
            "--limit",
            "1000",
        ]);
        r["context"]["store_settings"]["rocksdb_version"].clone()
    };
    let debian = version("debian");
    assert_eq!(debian, version(system));
    assert!(debian
        .as_str()
        .unwrap()
        .starts_with(|c: char| c.is_ascii_digit()));
}

#[test]
fn an_unknown_library_is_refused_with_the_choices() {
    let w = workloada();
    // a flag's value is checked as the command line is read: a usage error (exit status 2)
    let out = run(&[&w, "--rocksdb-lib", "flink-1.19", "--limit", "10"], &[]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("flink-1.19") && err.contains("flink-2.x") && err.contains("forst"),
        "{err}"
    );
}

#[test]
fn a_named_build_that_is_not_installed_says_to_run_setup() {
    let empty = tempfile::tempdir().unwrap();
    let w = workloada();
    let err = fails(run(
        &[&w, "--limit", "10"],
        &[("GADGET_ROCKSDB_DIR", empty.path())],
    ));
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
    let fake = fake.display().to_string();
    let err = fails(run(
        &[&workloada(), "--limit", "10", "--rocksdb-lib", &fake],
        &[],
    ));
    assert!(err.contains(&fake), "{err}");
}

#[test]
fn a_config_names_the_library_and_a_bad_name_points_at_its_line() {
    if !installed("current", "librocksdbjni-linux64.so") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(workloada()).unwrap();
    let config = |name: &str, library: &str| {
        let path = dir.path().join(name);
        let text = format!("{base}\n[run.rocksdb]\nlibrary = \"{library}\"\n");
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let good = config("good.toml", "current");
    let r = succeeds(&[&good, "--store", "rocksdb", "--limit", "500"]);
    assert_eq!(r["context"]["store_settings"]["rocksdb_version"], "10.10.1");

    let bad = config("bad.toml", "rocksdb-9");
    let err = fails(run(&[&bad, "--limit", "10"], &[]));
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
    let w = workloada();
    let args = [
        &w[..],
        "--rocksdb-lib",
        "flink-2.x",
        "--limit",
        "10",
        "--store-counters",
    ];
    let err = fails(run(&args, &[]));
    assert!(
        err.contains("--store-counters") && err.contains("8.10.0"),
        "{err}"
    );
}
