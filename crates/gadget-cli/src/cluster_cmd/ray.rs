//! `gadget cluster ray`: the shards of one run on a Ray cluster. The work is the Python
//! launcher's in `launcher/ray` (Ray's API is Python's); this command finds it and becomes it
//! (exec), giving it its own path as the binary to ship (docs/scale-out.md, "Running shards on
//! a cluster: Ray and Kubernetes").

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// The Ray release the launcher is tested with: keep it equal to `RAY_VERSION` in
/// `launcher/ray/gadget_ray/__init__.py` and the pin in `scripts/setup.sh` (a test checks).
pub const RAY_VERSION: &str = "2.60.0";

/// Where the launcher's package is, under a Gadget checkout.
const LAUNCHER_DIR: &str = "launcher/ray";

/// `gadget cluster ray`.
#[derive(Debug, clap::Args)]
pub struct RayArgs {
    /// The Ray cluster's address: HOST:PORT of its head (what `ray start --head` prints), or
    /// `auto` for a cluster started on this machine.
    #[arg(long, env = "RAY_ADDRESS", value_name = "ADDR")]
    pub address: String,
    /// How many shards: `gadget run --shard I/N` for I from 0 to N-1, one per node when the
    /// cluster has N nodes with --cpus-per-shard CPUs free, else spread over its nodes.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: u32,
    /// Where to write shard-I.json and shard-I.log per shard, launch.json (where each shard
    /// ran, how it ended, the start instant) and merged.json; a folder holding an earlier
    /// launch's files is refused.
    #[arg(long, value_name = "DIR", default_value = "out/ray")]
    pub out: PathBuf,
    /// Seconds between the moment every shard is ready on its node and the agreed start:
    /// enough to start gadget and open its store. A shard not ready by then fails and says so.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub lead: f64,
    /// The CPUs Ray reserves for each shard.
    #[arg(long, value_name = "C", default_value_t = 1.0)]
    pub cpus_per_shard: f64,
    /// Ship this file to every shard too, into its folder under its file name (repeat for
    /// more): files the config reads, or a RocksDB library for `--rocksdb-lib ./NAME` on nodes
    /// without Gadget's `.deps/`.
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// How long to wait for Ray to place the shards on distinct nodes.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub placement_timeout: f64,
    /// The workload config (YCSB or KVBench), shipped to every shard.
    pub config: PathBuf,
    /// After `--`: the arguments of every shard's `gadget run` (--store, --arrival, --rate,
    /// --limit, --seed, ...); the launcher sets --shard, --start-at and -o itself.
    #[arg(last = true, value_name = "RUN_ARGS")]
    pub run_args: Vec<OsString>,
}

/// Runs the launcher in place of this process; returns only when it cannot be started.
pub fn launch(args: RayArgs) -> anyhow::Result<i32> {
    let exe = std::env::current_exe().context("cannot find the gadget executable to ship")?;
    let launcher = find_launcher(
        &exe,
        std::env::var_os("GADGET_RAY_LAUNCHER").as_deref(),
        Path::new(env!("CARGO_MANIFEST_DIR")),
    )?;
    let python = std::env::var_os("GADGET_PYTHON").unwrap_or_else(|| "python3".into());
    let error = Command::new(&python)
        .arg("-m")
        .arg("gadget_ray")
        .args(launcher_args(&args, &exe))
        .env(
            "PYTHONPATH",
            python_path(&launcher, std::env::var_os("PYTHONPATH").as_deref()),
        )
        .exec();
    if error.kind() == std::io::ErrorKind::NotFound {
        bail!(
            "cannot run {}: it is not installed (or not on PATH). `gadget cluster ray` runs its \
             launcher with Python 3 and Ray: install python3, then `pip install ray=={RAY_VERSION}` \
             (scripts/setup.sh installs both for the tests), or set GADGET_PYTHON to a Python that \
             has Ray",
            python.to_string_lossy()
        );
    }
    Err(error).with_context(|| format!("cannot run {}", python.to_string_lossy()))
}

/// The launcher's arguments for `args`, with `exe` as the binary to ship.
fn launcher_args(args: &RayArgs, exe: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![
        "--address".into(),
        args.address.clone().into(),
        "--shards".into(),
        args.shards.to_string().into(),
        "--out".into(),
        args.out.clone().into(),
        "--lead".into(),
        args.lead.to_string().into(),
        "--cpus-per-shard".into(),
        args.cpus_per_shard.to_string().into(),
        "--placement-timeout".into(),
        args.placement_timeout.to_string().into(),
        "--gadget".into(),
        exe.into(),
    ];
    for f in &args.files {
        a.push("--file".into());
        a.push(f.into());
    }
    a.push(args.config.clone().into());
    a.push("--".into());
    a.extend(args.run_args.iter().cloned());
    a
}

/// The folder holding the `gadget_ray` package: `$GADGET_RAY_LAUNCHER`, else `launcher/ray`
/// in the first folder above the executable that has it (a checkout's `target/debug/gadget`),
/// else in the checkout this binary was built from.
fn find_launcher(exe: &Path, env: Option<&OsStr>, manifest_dir: &Path) -> anyhow::Result<PathBuf> {
    let holds = |dir: &Path| dir.join("gadget_ray").join("__main__.py").is_file();
    if let Some(dir) = env.filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if holds(&dir) {
            return Ok(dir);
        }
        bail!(
            "GADGET_RAY_LAUNCHER is {}, which holds no gadget_ray/__main__.py; point it at the \
             {LAUNCHER_DIR} folder of a Gadget checkout",
            dir.display()
        );
    }
    // crates/gadget-cli -> the checkout
    let built_from = manifest_dir.ancestors().nth(2).unwrap_or(manifest_dir);
    for root in exe.ancestors().skip(1).chain([built_from]) {
        let dir = root.join(LAUNCHER_DIR);
        if holds(&dir) {
            return Ok(dir);
        }
    }
    bail!(
        "cannot find the Ray launcher ({LAUNCHER_DIR}/gadget_ray in Gadget's sources) above {} \
         or in {}; set GADGET_RAY_LAUNCHER to the {LAUNCHER_DIR} folder of a Gadget checkout",
        exe.display(),
        built_from.display()
    )
}

/// PYTHONPATH with the launcher's folder first.
fn python_path(launcher: &Path, existing: Option<&OsStr>) -> OsString {
    let mut p = OsString::from(launcher);
    if let Some(rest) = existing.filter(|e| !e.is_empty()) {
        p.push(":");
        p.push(rest);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        ray: RayArgs,
    }

    fn parsed(args: &[&str]) -> RayArgs {
        Wrapper::try_parse_from(std::iter::once("ray").chain(args.iter().copied()))
            .expect("parses")
            .ray
    }

    #[test]
    fn the_launcher_gets_every_option_the_binary_and_the_run_args_after_a_double_dash() {
        let args = parsed(&[
            "--address",
            "10.0.0.1:6379",
            "--shards",
            "3",
            "--lead",
            "2.5",
            "--file",
            "lib.so",
            "w.toml",
            "--",
            "--store",
            "memory",
            "--limit",
            "10",
        ]);
        let got: Vec<String> = launcher_args(&args, Path::new("/x/gadget"))
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let want = [
            "--address",
            "10.0.0.1:6379",
            "--shards",
            "3",
            "--out",
            "out/ray",
            "--lead",
            "2.5",
            "--cpus-per-shard",
            "1",
            "--placement-timeout",
            "60",
            "--gadget",
            "/x/gadget",
            "--file",
            "lib.so",
            "w.toml",
            "--",
            "--store",
            "memory",
            "--limit",
            "10",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn zero_shards_are_refused() {
        let e = Wrapper::try_parse_from(["ray", "--address", "a:1", "--shards", "0", "w.toml"])
            .expect_err("0 shards");
        assert!(e.to_string().contains("--shards"), "{e}");
    }

    #[test]
    fn the_launcher_is_found_above_the_executable_then_where_it_was_built() {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let checkout = tmp.path().join("checkout");
        let package = checkout.join(LAUNCHER_DIR).join("gadget_ray");
        std::fs::create_dir_all(&package).expect("mkdir");
        std::fs::write(package.join("__main__.py"), "").expect("write");
        let exe = checkout.join("target/debug/gadget");
        let nowhere = tmp.path().join("nowhere/crates/gadget-cli");
        assert_eq!(
            find_launcher(&exe, None, &nowhere).expect("found"),
            checkout.join(LAUNCHER_DIR)
        );
        // an installed binary: the checkout it was built from
        let installed = tmp.path().join("usr/local/bin/gadget");
        let manifest = checkout.join("crates/gadget-cli");
        let found = find_launcher(&installed, None, &manifest).expect("found");
        assert!(found.join("gadget_ray/__main__.py").is_file(), "{found:?}");
        // neither
        let e = find_launcher(&installed, None, &nowhere).expect_err("not found");
        assert!(e.to_string().contains("GADGET_RAY_LAUNCHER"), "{e}");
    }

    #[test]
    fn gadget_ray_launcher_wins_and_must_hold_the_package() {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let package = tmp.path().join("gadget_ray");
        std::fs::create_dir_all(&package).expect("mkdir");
        std::fs::write(package.join("__main__.py"), "").expect("write");
        let exe = Path::new("/nowhere/gadget");
        let manifest = Path::new("/nowhere/crates/gadget-cli");
        assert_eq!(
            find_launcher(exe, Some(tmp.path().as_os_str()), manifest).expect("found"),
            tmp.path()
        );
        let e = find_launcher(exe, Some(OsStr::new("/nowhere")), manifest).expect_err("bad");
        assert!(e.to_string().contains("holds no gadget_ray"), "{e}");
    }

    #[test]
    fn the_launcher_comes_first_on_the_python_path() {
        let l = Path::new("/g/launcher/ray");
        assert_eq!(python_path(l, None), OsString::from("/g/launcher/ray"));
        assert_eq!(
            python_path(l, Some(OsStr::new(""))),
            OsString::from("/g/launcher/ray")
        );
        assert_eq!(
            python_path(l, Some(OsStr::new("/a:/b"))),
            OsString::from("/g/launcher/ray:/a:/b")
        );
    }
}
