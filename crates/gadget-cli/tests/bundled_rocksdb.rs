//! The opt-in `gadget` with RocksDB built from source (`bundled-rocksdb/`, a workspace of its
//! own) keeps up with the CLI. Building it takes about 20 minutes, so these tests check what
//! would break it without building: its lockfile resolves as committed, with one RocksDB (the
//! current one); it builds the CLI's own sources with every dependency the CLI has and the
//! same stores.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `cargo metadata` of a workspace, resolved from its committed lockfile.
fn metadata(manifest: &Path) -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo metadata of {} failed (is the lockfile up to date?): {}",
        manifest.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

fn package<'a>(metadata: &'a Value, name: &str) -> &'a Value {
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name && p["source"].is_null())
        .unwrap_or_else(|| panic!("no local package {name}"))
}

/// The names of `package`'s normal (not dev or build) dependencies.
fn normal_dependencies(package: &Value) -> BTreeSet<String> {
    package["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"].is_null())
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_bundled_rocksdb_build_tracks_the_cli_and_links_only_the_current_rocksdb() {
    let root = project_root();
    let main = metadata(&root.join("Cargo.toml"));
    let bundled = metadata(&root.join("bundled-rocksdb/Cargo.toml"));
    let cli = package(&main, "gadget-cli");
    let this = package(&bundled, "gadget-bundled-rocksdb");

    // the same sources, as the same command
    let bin = &this["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"][0] == "bin")
        .unwrap();
    assert_eq!(bin["name"], "gadget");
    assert_eq!(
        std::fs::canonicalize(bin["src_path"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(root.join("crates/gadget-cli/src/main.rs")).unwrap()
    );
    assert_eq!(this["version"], cli["version"]);

    // every dependency of the CLI, and the stores of its default features
    let missing: Vec<_> = normal_dependencies(cli)
        .difference(&normal_dependencies(this))
        .cloned()
        .collect();
    assert!(
        missing.is_empty(),
        "bundled-rocksdb/Cargo.toml lacks the CLI's dependencies {missing:?}"
    );
    let default_stores: BTreeSet<String> = cli["features"]["default"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| cli["features"][f.as_str().unwrap()].as_array().unwrap())
        .filter_map(|f| f.as_str().unwrap().strip_prefix("gadget-eval/"))
        .map(str::to_string)
        .collect();
    let eval = this["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "gadget-eval")
        .unwrap();
    let bundled_stores: BTreeSet<String> = eval["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert_eq!(bundled_stores, default_stores);

    // one RocksDB, built from source: the current line, not Debian's
    let rocksdb_sys: Vec<&str> = bundled["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "librocksdb-sys")
        .map(|p| p["version"].as_str().unwrap())
        .collect();
    assert_eq!(rocksdb_sys.len(), 1, "{rocksdb_sys:?}");
    assert!(
        !rocksdb_sys[0].starts_with("0.10."),
        "the bundled build resolves Debian's line {}",
        rocksdb_sys[0]
    );
}
