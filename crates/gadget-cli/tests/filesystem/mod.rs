//! A small filesystem of its own (a tmpfs), for the tests of full disks. Each test uses
//! part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// A tmpfs of `kib` KiB mounted on a fresh directory; unmounted when dropped.
pub struct SmallFilesystem {
    dir: tempfile::TempDir,
}

impl SmallFilesystem {
    /// Mounts one, or `None` (the test skipped) where this process may not mount; with
    /// `CI=true` a failed mount as root fails the test, since CI runs as root.
    pub fn mount(kib: u64, test: &str) -> Option<SmallFilesystem> {
        let dir = tempfile::tempdir().unwrap();
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout == b"0\n");
        let mounted = root
            && Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
        if !mounted {
            if root && std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{test}: cannot mount a tmpfs as root under CI=true");
            }
            eprintln!("skipping {test}: mounting a small tmpfs needs root");
            return None;
        }
        Some(SmallFilesystem { dir })
    }

    /// The mounted directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the filesystem to the last byte.
    pub fn fill(&self) {
        let filler = vec![0u8; 4096];
        let mut f = std::fs::File::create(self.path().join("filler")).unwrap();
        use std::io::Write;
        while f.write_all(&filler).is_ok() {}
    }
}

impl Drop for SmallFilesystem {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}
