//! Records the git commit Gadget is built from (GADGET_GIT_COMMIT), for results to say what
//! ran; nothing when the sources are not a git checkout (a crate download).

use std::path::Path;
use std::process::Command;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let git = root.join(".git");
    if git.is_dir() {
        println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
        println!("cargo:rerun-if-changed={}", git.join("index").display());
        println!("cargo:rerun-if-changed={}", git.join("refs").display());
    }
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let Some(commit) = run(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty()) {
        let dirty =
            run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        let suffix = if dirty { "-dirty" } else { "" };
        println!("cargo:rustc-env=GADGET_GIT_COMMIT={commit}{suffix}");
    }
}
