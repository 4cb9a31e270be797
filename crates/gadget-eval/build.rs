//! Builds the small C shim over BerkeleyDB when the `berkeleydb` feature is on.

fn main() {
    println!("cargo:rerun-if-changed=csrc/bdb_shim.c");
    if std::env::var_os("CARGO_FEATURE_BERKELEYDB").is_some() {
        cc::Build::new()
            .file("csrc/bdb_shim.c")
            .warnings(true)
            .compile("gadget_bdb_shim");
        println!("cargo:rustc-link-lib=db-5.3");
    }
}
