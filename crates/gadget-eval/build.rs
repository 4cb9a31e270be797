//! Builds the small C shim over BerkeleyDB when the `berkeleydb` feature is on, and records
//! the versions of the store crates compiled in (from the workspace's Cargo.lock), for results
//! to say which store ran.

use std::path::Path;

/// The crates whose version results name, and the variable each is recorded in.
const STORE_CRATES: &[(&str, &str)] = &[
    ("heed", "GADGET_HEED_VERSION"),
    ("redb", "GADGET_REDB_VERSION"),
    ("fjall", "GADGET_FJALL_VERSION"),
    ("rusqlite", "GADGET_RUSQLITE_VERSION"),
    ("faster-rs", "GADGET_FASTER_RS_VERSION"),
];

fn main() {
    println!("cargo:rerun-if-changed=csrc/bdb_shim.c");
    if std::env::var_os("CARGO_FEATURE_BERKELEYDB").is_some() {
        cc::Build::new()
            .file("csrc/bdb_shim.c")
            .warnings(true)
            .compile("gadget_bdb_shim");
        println!("cargo:rustc-link-lib=db-5.3");
    }
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    for (name, variable) in STORE_CRATES {
        let version = locked_version(&text, name).unwrap_or_else(|| "of unknown version".into());
        println!("cargo:rustc-env={variable}={version}");
    }
}

/// The version Cargo.lock gives the package `name` (the first, if several).
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{name}\"") {
            let version = lines.next()?.trim().strip_prefix("version = ")?;
            return Some(version.trim_matches('"').to_string());
        }
    }
    None
}
