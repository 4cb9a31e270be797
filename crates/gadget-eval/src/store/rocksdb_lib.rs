//! Which RocksDB library `--store rocksdb` runs on (`--rocksdb-lib`): the release builds that
//! Flink ships, fetched from Maven Central by `scripts/setup.sh`, current RocksDB, Debian's
//! package, or any `librocksdb` given by path. The store loads the library at run time through
//! RocksDB's C API, so one `gadget` binary compares them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A RocksDB library to run on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RocksDbLib {
    /// The frocksdb 6.20.3 that Flink 1.x ships (the default: the store Flink users run).
    #[default]
    Flink120,
    /// The frocksdb 8.10.0 of Flink 2.x's RocksDB state backend.
    Flink2,
    /// ForSt 0.1.8 (a RocksDB 8.10 fork), Flink 2.x's disaggregated state backend.
    Forst,
    /// Current RocksDB, from RocksJava (`org.rocksdb:rocksdbjni`).
    Current,
    /// The system's `librocksdb` (Debian's `librocksdb-dev`; 7.8 on bookworm, a build with
    /// its assertions compiled in).
    Debian,
    /// A `librocksdb` shared library at this path.
    Path(PathBuf),
    /// Lethe (RocksDB 6.12 with FADE), which `--store lethe` runs on: built by
    /// `scripts/lethe/build.sh` into a cache outside the checkout, not chosen with
    /// `--rocksdb-lib` (its tuning is the lethe store's).
    Lethe,
}

/// Where a named build comes from and what it must report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// The Maven Central artifact whose jar carries the library.
    pub artifact: &'static str,
    /// The library's file inside the jar (and under `.deps/rocksdb/NAME/`).
    pub file: &'static str,
    /// The RocksDB version the library writes into its OPTIONS files.
    pub rocksdb_version: &'static str,
}

impl RocksDbLib {
    /// The named choices, in the order `--help` lists them.
    pub const NAMED: [RocksDbLib; 5] = [
        RocksDbLib::Flink120,
        RocksDbLib::Flink2,
        RocksDbLib::Forst,
        RocksDbLib::Current,
        RocksDbLib::Debian,
    ];

    /// The named libraries that are RocksJava builds (Maven Central's JNI libraries), by name:
    /// those that can make Flink's block cache and write buffer manager as Flink does.
    pub fn rocksjava_builds() -> Vec<String> {
        Self::NAMED
            .iter()
            .filter(|lib| lib.release().is_some())
            .map(RocksDbLib::name)
            .collect()
    }

    /// The name users choose it by (`flink-1.20`), or the path given.
    pub fn name(&self) -> String {
        match self {
            RocksDbLib::Flink120 => "flink-1.20".into(),
            RocksDbLib::Flink2 => "flink-2.x".into(),
            RocksDbLib::Forst => "forst".into(),
            RocksDbLib::Current => "current".into(),
            RocksDbLib::Debian => "debian".into(),
            RocksDbLib::Path(p) => p.display().to_string(),
            RocksDbLib::Lethe => "lethe".into(),
        }
    }

    /// The RocksDB version a named build must report (a release's, or Lethe's 6.12.0); `None`
    /// for a library whose version is whatever it says.
    pub fn expected_version(&self) -> Option<&'static str> {
        match self {
            RocksDbLib::Lethe => Some(LETHE_VERSION),
            _ => self.release().map(|r| r.rocksdb_version),
        }
    }

    /// The Maven Central release of a named build fetched by `scripts/setup.sh`.
    pub fn release(&self) -> Option<Release> {
        let jni = "librocksdbjni-linux64.so";
        match self {
            RocksDbLib::Flink120 => Some(Release {
                artifact: "com.ververica:frocksdbjni:6.20.3-ververica-2.0",
                file: jni,
                rocksdb_version: "6.20.3",
            }),
            RocksDbLib::Flink2 => Some(Release {
                artifact: "com.ververica:frocksdbjni:8.10.0-ververica-1.0",
                file: jni,
                rocksdb_version: "8.10.0",
            }),
            RocksDbLib::Forst => Some(Release {
                artifact: "com.ververica:forstjni:0.1.8",
                file: "libforstjni-linux64.so",
                rocksdb_version: "8.10.0",
            }),
            RocksDbLib::Current => Some(Release {
                artifact: "org.rocksdb:rocksdbjni:10.10.1.1:linux64",
                file: jni,
                rocksdb_version: "10.10.1",
            }),
            RocksDbLib::Debian | RocksDbLib::Path(_) | RocksDbLib::Lethe => None,
        }
    }

    /// Where the library file is: a named build under `deps` (`.deps/rocksdb`), Debian's in
    /// the system's library directory (the first of `system` that exists), Lethe's in its
    /// cache ([`lethe_location`]), a path as given.
    pub fn location(&self, deps: &Path, system: &[&Path]) -> PathBuf {
        match (self, self.release()) {
            (RocksDbLib::Path(p), _) => p.clone(),
            (RocksDbLib::Lethe, _) => lethe_location(),
            (_, Some(release)) => deps.join(self.name()).join(release.file),
            _ => system
                .iter()
                .find(|p| p.exists())
                .or(system.first())
                .map_or_else(|| PathBuf::from("librocksdb.so"), |p| p.to_path_buf()),
        }
    }

    /// One line per named choice, for `--help` and error messages.
    pub fn choices() -> String {
        "flink-1.20 (frocksdb 6.20.3, Flink 1.x's; the default), flink-2.x (frocksdb 8.10.0), \
         forst (ForSt 0.1.8, Flink 2.x), current (RocksDB 10.10.1), debian (the system's \
         librocksdb), or the path of a librocksdb .so"
            .into()
    }
}

/// The RocksDB version Lethe's source is a fork of.
pub const LETHE_VERSION: &str = "6.12.0";

/// Where `scripts/lethe/build.sh` puts Lethe's library: `$GADGET_LETHE_LIB`, else
/// `$XDG_CACHE_HOME/gadget/lethe-7c60c4e/liblethe.so` (`~/.cache` without it, `/tmp/.cache`
/// without a home), a cache that outlives checkouts, since the build takes minutes.
pub fn lethe_location() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = var("GADGET_LETHE_LIB") {
        return PathBuf::from(path);
    }
    let cache = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| Path::new(&home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp/.cache"));
    cache.join("gadget/lethe-7c60c4e/liblethe.so")
}

impl fmt::Display for RocksDbLib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A `--rocksdb-lib` value that names no library.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown RocksDB library {given:?}: choose {}", RocksDbLib::choices())]
pub struct UnknownRocksDbLib {
    /// What was given.
    pub given: String,
}

impl FromStr for RocksDbLib {
    type Err = UnknownRocksDbLib;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(named) = RocksDbLib::NAMED.iter().find(|n| n.name() == s) {
            return Ok(named.clone());
        }
        if gadget::config::store_settings::is_library_path(s) {
            return Ok(RocksDbLib::Path(PathBuf::from(s)));
        }
        Err(UnknownRocksDbLib { given: s.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_accept_the_same_names() {
        let names: Vec<String> = RocksDbLib::NAMED.iter().map(RocksDbLib::name).collect();
        assert_eq!(names, gadget::config::store_settings::ROCKSDB_LIBRARIES);
    }

    #[test]
    fn names_parse_back_and_paths_are_paths() {
        for named in RocksDbLib::NAMED {
            assert_eq!(named.name().parse::<RocksDbLib>(), Ok(named.clone()));
        }
        assert_eq!(
            "./lib/librocksdb.so".parse::<RocksDbLib>(),
            Ok(RocksDbLib::Path("./lib/librocksdb.so".into()))
        );
        assert_eq!(
            "librocksdb.so.9".parse::<RocksDbLib>(),
            Ok(RocksDbLib::Path("librocksdb.so.9".into()))
        );
        let e = "flink-1.19".parse::<RocksDbLib>().unwrap_err().to_string();
        assert!(
            e.contains("\"flink-1.19\"") && e.contains("flink-1.20"),
            "{e}"
        );
    }

    #[test]
    fn named_builds_live_under_the_deps_directory_and_debian_in_the_systems() {
        let deps = Path::new("/x/.deps/rocksdb");
        assert_eq!(
            RocksDbLib::Flink120.location(deps, &[]),
            Path::new("/x/.deps/rocksdb/flink-1.20/librocksdbjni-linux64.so")
        );
        assert_eq!(
            RocksDbLib::Forst.location(deps, &[]),
            Path::new("/x/.deps/rocksdb/forst/libforstjni-linux64.so")
        );
        let missing = Path::new("/nonexistent/librocksdb.so");
        assert_eq!(RocksDbLib::Debian.location(deps, &[missing]), missing);
        assert_eq!(RocksDbLib::default(), RocksDbLib::Flink120);
    }
}
