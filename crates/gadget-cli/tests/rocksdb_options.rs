//! `--rocksdb-options`: RocksDB opened as db_bench or Flink opens it, or with a user's options;
//! what was applied is in the results and in RocksDB's own OPTIONS file, and a typo is refused
//! before anything runs, naming where it is and what is allowed.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn workloada() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.join("examples/ycsb/workloada.toml")
        .display()
        .to_string()
}

/// `gadget run` with `args` (the default library, whatever the environment says).
fn run(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("gadget")
        .unwrap()
        .env_remove("GADGET_ROCKSDB_LIB")
        .arg("run")
        .args(args)
        .output()
        .unwrap()
}

/// The standard error of a run refused as bad input is (exit 1, no panic).
fn fails(out: std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// The newest OPTIONS file RocksDB wrote in `dir`.
fn options_file(dir: &Path) -> String {
    let newest = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let n: u64 = name.strip_prefix("OPTIONS-")?.parse().ok()?;
            Some((n, name))
        })
        .max()
        .expect("an OPTIONS file");
    std::fs::read_to_string(dir.join(newest.1)).unwrap()
}

#[test]
fn each_option_set_is_applied_recorded_in_the_results_and_in_rocksdbs_options_file() {
    for (set, line) in [
        ("db_bench", "enable_pipelined_write=true"),
        ("flink", "cache_index_and_filter_blocks=true"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let w = workloada();
        let d = db.display().to_string();
        let out = run(&[
            &w,
            "--store",
            "rocksdb",
            "--dir",
            &d,
            "--rocksdb-options",
            set,
            "--limit",
            "2000",
            "--json",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{set}: {err}");
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let applied = r["context"]["store_settings"]["rocksdb_options"]
            .as_str()
            .unwrap_or_else(|| panic!("{set}: no rocksdb_options in {r}"));
        assert!(applied.contains(line), "{set}: {applied}");
        assert!(options_file(&db).contains(line), "{set}: {line}");
        let settings = &r["context"]["store_settings"];
        let manager = settings["write_buffer_manager_bytes"].as_str();
        let pool = settings["block_cache_high_pri_pool_ratio"].as_str();
        if set == "flink" {
            // Flink's cache and write buffer manager, made beside the options from the 320 MiB
            // the settings give RocksDB (64 MiB of cache, two 128 MiB write buffers) as Flink
            // splits a slot's managed memory: five sixths the cache, a third the manager
            let cache = settings["block_cache_bytes"].as_str();
            assert_eq!(cache, Some("279620266"), "{settings}");
            assert_eq!(manager, Some("111848106"), "{settings}");
            assert_eq!(pool, Some("0.1"), "{settings}");
        } else {
            assert!(applied.contains("capacity=67108864"), "{set}: {applied}");
            assert_eq!((manager, pool), (None, None), "{settings}");
        }
    }
}

#[test]
fn flinks_write_buffer_manager_on_a_library_that_cannot_make_it_is_refused_naming_those_that_can() {
    // refused as the settings resolve, before the library is loaded: it need not be installed
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db").display().to_string();
    let err = fails(run(&[
        &workloada(),
        "--store",
        "rocksdb",
        "--dir",
        &d,
        "--rocksdb-lib",
        "debian",
        "--rocksdb-options",
        "flink",
        "--limit",
        "10",
    ]));
    assert!(
        err.contains("write buffer manager")
            && err.contains("`--rocksdb-lib`")
            && err.contains("flink-1.20, flink-2.x, forst, current"),
        "{err}"
    );
}

#[test]
fn a_config_asking_flinks_memory_of_a_library_that_cannot_make_it_is_refused_at_its_line() {
    // checked as the settings resolve, before the library is loaded: no library needed
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("run.toml");
    let workload = std::fs::read_to_string(workloada()).unwrap();
    std::fs::write(
        &config,
        format!("{workload}\n[run.rocksdb]\nlibrary = \"debian\"\noptions = \"flink\"\n"),
    )
    .unwrap();
    let lines = workload.lines().count();
    let c = config.display().to_string();
    let err = fails(run(&[&c, "--limit", "10"]));
    let at = format!("run.toml:{}:", lines + 4);
    assert!(
        err.contains(&at) && err.contains("`run.rocksdb.library` in a config"),
        "{at}: {err}"
    );
    // the flag over the file is named instead of the file's line
    let err = fails(run(&[&c, "--rocksdb-options", "flink", "--limit", "10"]));
    assert!(
        err.contains("--rocksdb-options: ") && !err.contains("run.toml:"),
        "{err}"
    );
}

#[test]
fn without_the_flag_the_results_name_no_options() {
    let out = run(&[
        &workloada(),
        "--store",
        "rocksdb",
        "--limit",
        "500",
        "--json",
    ]);
    assert!(out.status.success());
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let settings = &r["context"]["store_settings"];
    assert!(settings.get("library").is_some(), "{settings}");
    assert!(settings.get("rocksdb_options").is_none(), "{settings}");
}

#[test]
fn a_typo_in_a_flag_or_a_config_is_refused_with_what_is_allowed() {
    // a flag's value is checked as the command line is read: a usage error (exit status 2)
    let out = run(&[&workloada(), "--rocksdb-options", "db-bench"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--rocksdb-options") && err.contains("db_bench, flink"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(workloada()).unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!("{base}\n[run.rocksdb]\noptions = \"flinck\"\n"),
    )
    .unwrap();
    let err = fails(run(&[&config.display().to_string(), "--limit", "10"]));
    let line = base.lines().count() + 3;
    assert!(
        err.contains(&format!("c.toml:{line}")) && err.contains("db_bench, flink"),
        "{err}"
    );
}

#[test]
fn an_option_rocksdb_does_not_know_fails_the_run_naming_it() {
    let err = fails(run(&[
        &workloada(),
        "--store",
        "rocksdb",
        "--rocksdb-options",
        "max_open_files=64;max_open_filez=3",
        "--limit",
        "10",
    ]));
    assert!(
        err.contains("--rocksdb-options") && err.contains("max_open_filez"),
        "{err}"
    );
}
