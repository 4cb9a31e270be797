//! Every bundled example generates, byte for byte, the trace recorded in `example_traces.txt`
//! (its first 20,000 requests): refactoring the pipeline, the configs or the engines changes
//! no workload unless it says so by recording the new line.

use std::path::PathBuf;
use std::time::Duration;

use assert_cmd::Command;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// FNV-1a, 64 bits: a fixed hash that needs no dependency and never changes with Rust.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether `../shared` (the Borg input some examples read) is beside the checkout; without it
/// the test skips, saying why, except under `CI=true`, where it fails.
fn shared_is_there() -> bool {
    let shared = project_root().join("../shared/data");
    if shared.is_dir() {
        return true;
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{} is missing, but CI=true: CI must provide ../shared beside the checkout",
        shared.display()
    );
    eprintln!(
        "skipping: {} (the Borg input of the examples) is not beside this checkout",
        shared.display()
    );
    false
}

#[test]
fn every_bundled_example_generates_the_trace_recorded_for_it() {
    if !shared_is_there() {
        return;
    }
    let root = project_root();
    let recorded =
        std::fs::read_to_string(root.join("crates/gadget-cli/tests/example_traces.txt")).unwrap();
    let mut listed = Vec::new();
    for line in recorded.lines().filter(|l| !l.starts_with('#')) {
        let mut fields = line.split_whitespace();
        let (Some(example), Some(hash), Some(bytes)) =
            (fields.next(), fields.next(), fields.next())
        else {
            panic!("example_traces.txt: `{line}` is not `PATH HASH BYTES`");
        };
        listed.push(example.to_string());
        let out = Command::cargo_bin("gadget")
            .unwrap()
            .current_dir(&root)
            .args(["gen", example, "-o", "-", "--limit", "20000"])
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{example}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let now = format!("{:016x} {}", fnv1a(&out.stdout), out.stdout.len());
        assert_eq!(now, format!("{hash} {bytes}"), "{example}'s trace changed");
    }
    // every example is listed: a new one records its line
    let mut bundled = Vec::new();
    let mut folders = vec![root.join("examples")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(&root).unwrap().display().to_string();
            if path.is_dir() && !relative.ends_with("experiments") {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "toml" || e == "conf") {
                bundled.push(relative);
            }
        }
    }
    bundled.sort();
    listed.sort();
    assert_eq!(
        bundled, listed,
        "example_traces.txt lists every bundled example"
    );
}
