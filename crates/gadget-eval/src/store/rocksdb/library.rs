//! Loading a RocksDB library at run time: where each `--rocksdb-lib` choice lives, which C
//! functions it must have, and which RocksDB it is. A library is loaded once and stays loaded
//! (RocksDB's background threads and static state must never be unloaded), and a process runs
//! one RocksDB library only: the builds export C++ "unique" symbols (function-local statics of
//! inline functions, `nm` type `u`) that the dynamic loader binds process-wide even for
//! libraries loaded with `RTLD_LOCAL`, so a second RocksDB would run on the first one's
//! objects (current RocksDB loaded after frocksdb 6.20 aborts in `std::random_device`).
//!
//! Before a library is used for a store it opens a scratch database: the `OPTIONS` file that
//! RocksDB writes there says its version and default compression. A named build must be the
//! version it is named for, and no other library may be older than RocksDB 6.20 (the oldest
//! release whose C API has everything Gadget calls; Lethe's fork of 6.12 has it too).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::api::{Api, PERF_ENABLE_COUNT, PERF_USER_KEY_COMPARISONS};
use crate::store::rocksdb_lib::RocksDbLib;

/// The oldest RocksDB Gadget drives (major, minor).
const OLDEST: (u32, u32) = (6, 20);

/// Where Debian and other distributions put `librocksdb.so`, in the order they are tried.
const SYSTEM_LIBRARIES: [&str; 5] = [
    "/usr/lib/x86_64-linux-gnu/librocksdb.so",
    "/usr/lib/aarch64-linux-gnu/librocksdb.so",
    "/usr/lib64/librocksdb.so",
    "/usr/lib/librocksdb.so",
    "/usr/local/lib/librocksdb.so",
];

/// A RocksDB library that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    /// A named build is not where `scripts/setup.sh` puts it.
    #[error(
        "the RocksDB library {choice} is not installed (no {path}): run scripts/setup.sh, which \
         fetches {artifact} from Maven Central, or set GADGET_ROCKSDB_DIR to a directory that \
         holds {choice}/{file}, or choose another with --rocksdb-lib: {}",
        RocksDbLib::choices()
    )]
    NotInstalled {
        /// The choice.
        choice: String,
        /// Where it was looked for.
        path: PathBuf,
        /// The Maven artifact that carries it.
        artifact: &'static str,
        /// Its file name.
        file: &'static str,
    },
    /// Lethe is not where `scripts/lethe/build.sh` puts it.
    #[error(
        "Lethe is not built (no {path}): run scripts/lethe/build.sh (scripts/setup.sh runs it \
         when ../shared/vendor holds Lethe's source; a few minutes, once per machine), or set \
         GADGET_LETHE_LIB to the liblethe.so it built"
    )]
    LetheNotBuilt {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The dynamic loader refused the file.
    #[error("cannot load the RocksDB library {path}: {message}")]
    Load {
        /// The file.
        path: PathBuf,
        /// What the loader said.
        message: String,
    },
    /// The library lacks C functions Gadget calls.
    #[error(
        "the library {path} lacks RocksDB C API functions Gadget calls ({}): it is older than \
         RocksDB 6.20 or not a RocksDB build; choose another with --rocksdb-lib",
        missing.join(", ")
    )]
    MissingFunctions {
        /// The file.
        path: PathBuf,
        /// The functions it lacks.
        missing: Vec<String>,
    },
    /// The library could not open a scratch database to tell its version.
    #[error("the RocksDB library {path} failed to open a scratch database in {dir}: {message}")]
    Probe {
        /// The file.
        path: PathBuf,
        /// The scratch directory.
        dir: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A named build is another version than its name says.
    #[error(
        "the RocksDB library {path} is RocksDB {found}, but {choice} is RocksDB {expected}: run \
         scripts/setup.sh to fetch or build it again"
    )]
    WrongVersion {
        /// The file.
        path: PathBuf,
        /// The choice.
        choice: String,
        /// The version it must be.
        expected: &'static str,
        /// The version it is.
        found: String,
    },
    /// Another RocksDB library runs in this process already.
    #[error(
        "this process already runs RocksDB {running}, and one process can run one RocksDB \
         library only (their C++ symbols would mix); run {wanted} in a gadget process of its own"
    )]
    AnotherLoaded {
        /// The library loaded already.
        running: String,
        /// The one asked for.
        wanted: String,
    },
    /// The library was built without RocksDB's perf context, so it cannot keep counters.
    #[error(
        "RocksDB {library} keeps no perf-context counters (it was built without them), so \
         --store-counters cannot count on it: drop --store-counters or choose another \
         --rocksdb-lib (flink-1.20, current and debian count)"
    )]
    NoCounters {
        /// The library.
        library: String,
    },
    /// The library is older than Gadget supports.
    #[error(
        "the RocksDB library {path} is RocksDB {found}; Gadget drives RocksDB 6.20 or newer \
         through its C API: choose another with --rocksdb-lib"
    )]
    TooOld {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: String,
    },
}

/// A loaded RocksDB library, its C API resolved and its version known.
pub struct Library {
    pub(super) api: Api,
    choice: RocksDbLib,
    path: PathBuf,
    version: String,
    compression: String,
    counts: bool,
    /// Keeps the library mapped for as long as the process runs.
    library: libloading::Library,
}

impl Library {
    /// The choice it was loaded for.
    pub fn choice(&self) -> &RocksDbLib {
        &self.choice
    }

    /// The file, symbolic links resolved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// RocksDB's version, as the library writes it into its OPTIONS files (`6.20.3`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The compression a column family gets by default (`kSnappyCompression`), which Gadget
    /// leaves as it is.
    pub fn compression(&self) -> &str {
        &self.compression
    }

    /// A C function the library exports beyond RocksDB's C API (Lethe's tuning hook), by its
    /// NUL-terminated name; `None` when it has none of that name.
    ///
    /// # Safety
    /// `F` must be the function's true signature.
    pub(crate) unsafe fn function<F: Copy>(&self, name: &[u8]) -> Option<F> {
        // SAFETY: the caller states the signature; the library stays loaded for the process.
        unsafe { self.library.get::<F>(name) }.ok().map(|f| *f)
    }

    /// Whether its perf context counts (some release builds leave it out).
    pub fn keeps_counters(&self) -> bool {
        self.counts
    }

    /// One line for results and logs: choice, version, origin and file.
    pub fn describe(&self) -> String {
        let origin = match self.choice.release() {
            Some(r) => format!(" from {}", r.artifact),
            None => String::new(),
        };
        format!(
            "{}: RocksDB {}{origin} at {}",
            self.choice,
            self.version,
            self.path.display()
        )
    }
}

/// The library this process runs, once loaded.
static LOADED: Mutex<Option<&'static Library>> = Mutex::new(None);

/// The directory of the named builds: `$GADGET_ROCKSDB_DIR`, else this checkout's
/// `.deps/rocksdb`, where `scripts/setup.sh` puts them.
pub fn deps_dir() -> PathBuf {
    match std::env::var_os("GADGET_ROCKSDB_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/rocksdb"),
    }
}

/// Where `choice`'s file is.
pub fn location(choice: &RocksDbLib) -> PathBuf {
    let system: Vec<&Path> = SYSTEM_LIBRARIES.iter().map(Path::new).collect();
    choice.location(&deps_dir(), &system)
}

/// The library of `choice` if this process loaded it.
pub fn loaded(choice: &RocksDbLib) -> Option<&'static Library> {
    let loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    loaded.filter(|l| &l.choice == choice)
}

/// Loads `choice`'s library (once per process), checks its C API and version; an error if
/// the process runs another RocksDB library already.
pub fn load(choice: &RocksDbLib) -> Result<&'static Library, LibraryError> {
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    match *loaded {
        Some(l) if &l.choice == choice => return Ok(l),
        Some(l) => {
            return Err(LibraryError::AnotherLoaded {
                running: l.describe(),
                wanted: choice.name(),
            })
        }
        None => {}
    }
    let library: &'static Library = Box::leak(Box::new(open(choice, location(choice))?));
    *loaded = Some(library);
    Ok(library)
}

/// Loads `choice`'s library from `path` and checks it.
fn open(choice: &RocksDbLib, path: PathBuf) -> Result<Library, LibraryError> {
    let release = choice.release();
    if choice == &RocksDbLib::Lethe && !path.exists() {
        return Err(LibraryError::LetheNotBuilt { path });
    }
    if let Some(r) = release.filter(|_| !path.exists()) {
        return Err(LibraryError::NotInstalled {
            choice: choice.name(),
            path,
            artifact: r.artifact,
            file: r.file,
        });
    }
    let load_error = |message: String| LibraryError::Load {
        path: path.clone(),
        message,
    };
    // RTLD_NOW: an unresolvable symbol fails here, not in the middle of a run; RTLD_LOCAL:
    // several RocksDB libraries can be loaded side by side without binding to each other.
    let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL;
    // SAFETY: loading runs the library's initializers; RocksDB's only set up its own statics.
    let library: libloading::Library =
        unsafe { libloading::os::unix::Library::open(Some(&path), flags) }
            .map_err(|e| load_error(e.to_string()))?
            .into();
    let api = Api::resolve(&library).map_err(|missing| LibraryError::MissingFunctions {
        path: path.clone(),
        missing,
    })?;
    let (version, compression, counts) = probe(&api, &path)?;
    let expected = choice.expected_version();
    if let Some(expected) = expected.filter(|&e| e != version) {
        return Err(LibraryError::WrongVersion {
            path,
            choice: choice.name(),
            expected,
            found: version,
        });
    }
    // a named build is the version it is named for (Lethe's fork of 6.12 among them)
    if expected.is_none() && major_minor(&version).is_none_or(|v| v < OLDEST) {
        return Err(LibraryError::TooOld {
            path,
            found: version,
        });
    }
    Ok(Library {
        api,
        choice: choice.clone(),
        path: std::fs::canonicalize(&path).unwrap_or(path),
        version,
        compression,
        counts,
        library,
    })
}

/// Opens a scratch database and writes and reads a key in it; the RocksDB version and default
/// compression its OPTIONS file states, and whether the perf context counted the read.
fn probe(api: &Api, path: &Path) -> Result<(String, String, bool), LibraryError> {
    let scratch = tempfile::tempdir().map_err(|e| LibraryError::Probe {
        path: path.to_path_buf(),
        dir: std::env::temp_dir(),
        message: e.to_string(),
    })?;
    let dir = scratch.path();
    let probe_error = |message: String| LibraryError::Probe {
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        message,
    };
    let name = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|e| probe_error(e.to_string()))?;
    let mut err = std::ptr::null_mut();
    // SAFETY: everything is created, used and released here; the database is closed at once.
    let counts = unsafe {
        let options = (api.options_create)();
        (api.options_set_create_if_missing)(options, 1);
        let db = (api.open)(options, name.as_ptr(), &mut err);
        (api.options_destroy)(options);
        if let Some(message) = api.take_error(err) {
            return Err(probe_error(message));
        }
        let (write, read) = ((api.writeoptions_create)(), (api.readoptions_create)());
        (api.set_perf_level)(PERF_ENABLE_COUNT);
        let perf = (api.perfcontext_create)();
        (api.perfcontext_reset)(perf);
        for key in [&b"a"[..], b"b"] {
            (api.put)(
                db,
                write,
                key.as_ptr().cast(),
                1,
                key.as_ptr().cast(),
                1,
                &mut err,
            );
            api.take_error(err);
            err = std::ptr::null_mut();
        }
        let pinned = (api.get_pinned)(db, read, b"a".as_ptr().cast(), 1, &mut err);
        api.take_error(err);
        if !pinned.is_null() {
            (api.pinnableslice_destroy)(pinned);
        }
        let counts = (api.perfcontext_metric)(perf, PERF_USER_KEY_COMPARISONS) > 0;
        (api.perfcontext_destroy)(perf);
        (api.writeoptions_destroy)(write);
        (api.readoptions_destroy)(read);
        (api.close)(db);
        counts
    };
    let text = latest_options_file(dir).map_err(probe_error)?;
    let setting = |key: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_string)
    };
    let version = setting("rocksdb_version")
        .ok_or_else(|| probe_error("its OPTIONS file states no rocksdb_version".into()))?;
    let compression = setting("compression").unwrap_or_else(|| "unknown".into());
    Ok((version, compression, counts))
}

/// The text of the newest `OPTIONS-NNNNNN` file in `dir`.
pub(super) fn latest_options_file(dir: &Path) -> Result<String, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
    let newest = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let number: u64 = name.strip_prefix("OPTIONS-")?.parse().ok()?;
            Some((number, e.path()))
        })
        .max()
        .ok_or("it wrote no OPTIONS file")?;
    std::fs::read_to_string(&newest.1).map_err(|e| format!("{}: {e}", newest.1.display()))
}

/// `6.20` of `6.20.3`.
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_major_then_minor() {
        assert_eq!(major_minor("6.20.3"), Some((6, 20)));
        assert!(major_minor("6.9.0").unwrap() < OLDEST);
        assert!(major_minor("10.10.1").unwrap() > OLDEST);
        assert_eq!(major_minor("x"), None);
    }

    #[test]
    fn a_file_that_is_not_a_library_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("librocksdb.so");
        std::fs::write(&fake, b"not an ELF file").unwrap();
        let e = open(&RocksDbLib::Path(fake.clone()), fake.clone())
            .err()
            .unwrap();
        assert!(matches!(e, LibraryError::Load { .. }), "{e}");
        assert!(e.to_string().contains(&fake.display().to_string()), "{e}");
    }

    #[test]
    fn a_library_without_rocksdbs_c_api_names_what_it_lacks() {
        // libc is a shared library, but not RocksDB
        let libc = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib/aarch64-linux-gnu/libc.so.6",
        ]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
        let Some(libc) = libc else {
            eprintln!("skipped: no libc.so.6 at a Debian path on this machine");
            return;
        };
        let e = open(&RocksDbLib::Path(libc.clone()), libc).err().unwrap();
        let LibraryError::MissingFunctions { missing, .. } = &e else {
            panic!("{e}")
        };
        assert!(missing.contains(&"rocksdb_open".to_string()), "{e}");
        assert!(
            missing.contains(&"rocksdb_drop_column_family".to_string()),
            "{e}"
        );
        assert!(e.to_string().contains("rocksdb_put_cf"), "{e}");
    }

    #[test]
    fn a_named_build_that_is_missing_says_how_to_get_it() {
        let empty = tempfile::tempdir().unwrap();
        let choice = RocksDbLib::Flink120;
        let e = open(&choice, choice.location(empty.path(), &[]))
            .err()
            .unwrap();
        assert!(matches!(e, LibraryError::NotInstalled { .. }), "{e}");
        let message = e.to_string();
        assert!(message.contains("scripts/setup.sh"), "{message}");
        assert!(
            message.contains("frocksdbjni:6.20.3-ververica-2.0"),
            "{message}"
        );
        assert!(
            message.contains("flink-1.20/librocksdbjni-linux64.so"),
            "{message}"
        );
    }
}
