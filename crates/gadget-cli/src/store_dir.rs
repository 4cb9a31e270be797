//! Where a command's store keeps its data: the user's folder (`--dir`), or a fresh temporary
//! one that is removed unless `--keep` keeps it.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::cli::EvalArgs;

/// The store's directory: the user's, or a fresh temporary one (removed unless `--keep`).
pub enum StoreDir {
    /// The user's folder, `--dir`.
    User(PathBuf),
    /// A fresh temporary folder.
    Temporary(tempfile::TempDir),
}

impl StoreDir {
    /// `--dir` (created if missing), or a fresh temporary folder.
    pub fn of(a: &EvalArgs) -> anyhow::Result<StoreDir> {
        Ok(match &a.dir {
            Some(d) => {
                std::fs::create_dir_all(d).with_context(|| {
                    format!("cannot create the store directory {}", d.display())
                })?;
                StoreDir::User(d.clone())
            }
            None => StoreDir::Temporary(
                tempfile::Builder::new()
                    .prefix("gadget-store-")
                    .tempdir()
                    .context(
                        "cannot create a temporary store directory (set TMPDIR or use --dir)",
                    )?,
            ),
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        match self {
            StoreDir::User(p) => p,
            StoreDir::Temporary(t) => t.path(),
        }
    }

    /// Keeps a temporary folder when `--keep` asks for it, saying where.
    pub fn keep_if(self, keep: bool) {
        if let StoreDir::Temporary(t) = self {
            if keep {
                eprintln!("store data kept in {}", t.keep().display());
            }
        }
    }
}
