//! The machine a run ran on, as results record it: CPU model and count, memory, kernel, the
//! filesystem of the store's directory and the store's shared library as loaded. Read from
//! Linux's `/proc`; anything not found is `None`, never a guess.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The machine a run ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// `model name` of the first CPU in `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// CPUs this process may run on.
    pub cpus: Option<usize>,
    /// `MemTotal` of `/proc/meminfo`, bytes.
    pub memory_bytes: Option<u64>,
    /// The kernel's release (`uname -r`).
    pub kernel: Option<String>,
    /// Type of the filesystem holding the store's directory (ext4, tmpfs, overlay, …).
    pub store_filesystem: Option<String>,
    /// The 1-minute load average as the run ended (`/proc/loadavg`): above `cpus`, other work
    /// competed with the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average_1m: Option<f64>,
    /// The share of CPU time the hypervisor took from this machine during the run (steal, of
    /// `/proc/stat`): above a few percent, the figures vary with the neighbours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_steal_share: Option<f64>,
    /// The CPU frequency governor (cpu0's `scaling_governor`: `performance`, `powersave`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_governor: Option<String>,
}

/// The machine's CPU time counters (`/proc/stat`'s `cpu` line), to tell what was stolen over
/// a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    total: u64,
    steal: u64,
}

impl CpuTimes {
    /// The counters now; `None` without `/proc/stat`.
    pub fn now() -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        CpuTimes::parse(stat.lines().next()?)
    }

    /// From `cpu  user nice system idle iowait irq softirq steal …`.
    fn parse(line: &str) -> Option<CpuTimes> {
        let mut fields = line.split_whitespace();
        (fields.next()? == "cpu").then_some(())?;
        let ticks: Vec<u64> = fields
            .take(8)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        Some(CpuTimes {
            total: ticks.iter().sum(),
            steal: *ticks.get(7)?,
        })
    }

    /// The share of the CPU time since `self` that was stolen.
    fn steal_share_until(&self, later: &CpuTimes) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        let steal = later.steal.checked_sub(self.steal)?;
        (total > 0).then(|| steal as f64 / total as f64)
    }
}

impl Host {
    /// This machine, with the filesystem of `store_dir`, and the CPU time stolen since
    /// `since` (the run's start).
    pub fn this(store_dir: &Path, since: Option<CpuTimes>) -> Host {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Host {
            cpu_model: field(&cpuinfo, "model name").map(str::to_string),
            cpus: std::thread::available_parallelism().ok().map(usize::from),
            memory_bytes: field(&meminfo, "MemTotal").and_then(kibibytes),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|k| k.trim().to_string()),
            store_filesystem: std::fs::canonicalize(store_dir)
                .ok()
                .and_then(|dir| filesystem_of(&mountinfo, &dir)),
            load_average_1m: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|l| l.split_whitespace().next()?.parse().ok()),
            cpu_steal_share: since.and_then(|s| s.steal_share_until(&CpuTimes::now()?)),
            cpu_governor: std::fs::read_to_string(
                "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            )
            .ok()
            .map(|g| g.trim().to_string()),
        }
    }

    /// The machine alone: this host without what describes the moment of a run on it (the
    /// load and the stolen time), which says how quiet it was, not which it was.
    pub fn machine(&self) -> Host {
        Host {
            load_average_1m: None,
            cpu_steal_share: None,
            ..self.clone()
        }
    }

    /// Whether `other` describes the same machine: every field but those of the moment (the
    /// load and the stolen time) equal.
    pub fn same_machine(&self, other: &Host) -> bool {
        self.machine() == other.machine()
    }

    /// One host for runs made together on `hosts`: the machine if they share one (with the
    /// highest load and steal any saw, so a busy moment is not hidden), else nothing known.
    pub fn of_runs<'a>(hosts: impl IntoIterator<Item = &'a Host>) -> Host {
        let mut hosts = hosts.into_iter();
        let Some(first) = hosts.next() else {
            return Host::default();
        };
        let mut merged = first.clone();
        for h in hosts {
            if !first.same_machine(h) {
                return Host::default();
            }
            merged.load_average_1m = max(merged.load_average_1m, h.load_average_1m);
            merged.cpu_steal_share = max(merged.cpu_steal_share, h.cpu_steal_share);
        }
        merged
    }
}

/// The larger of two optional figures, either if only one is known.
fn max(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The shared libraries mapped into this process whose file name contains `name` (such as
/// `librocksdb`), by file name: the library a store runs on as the loader found it.
pub fn loaded_libraries(name: &str) -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut found: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter_map(|path| Path::new(path).file_name()?.to_str())
        .filter(|file| file.contains(name))
        .map(str::to_string)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The value of `key` in a `key : value` listing.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// `16318748 kB` in bytes.
fn kibibytes(v: &str) -> Option<u64> {
    v.strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()
        .map(|k| k * 1024)
}

/// The type of the filesystem mounted at the longest mount point that contains `dir`, from
/// `/proc/self/mountinfo` (`… mount-point … - fstype source options`).
fn filesystem_of(mountinfo: &str, dir: &Path) -> Option<String> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            let mount_point = unescape(fields.get(4)?);
            let dash = fields.iter().position(|f| *f == "-")?;
            let fstype = fields.get(dash + 1)?;
            dir.starts_with(&mount_point)
                .then(|| (mount_point.len(), fstype.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fstype)| fstype)
}

/// A mountinfo path with its octal escapes (`\040` for a space) decoded.
fn unescape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        match rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            Some(b) => {
                out.push(b as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod steal_tests {
    use super::CpuTimes;

    #[test]
    fn steal_is_the_share_of_the_ticks_between_two_readings() {
        let a = CpuTimes::parse("cpu  100 0 50 800 10 0 0 40 0 0").unwrap();
        let b = CpuTimes::parse("cpu  200 0 100 1600 20 0 0 80 0 0").unwrap();
        assert_eq!(a.steal_share_until(&b), Some(40.0 / 1000.0));
        assert_eq!(CpuTimes::parse("intr 1 2 3"), None);
        assert_eq!(b.steal_share_until(&a), None, "counters do not go back");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_directorys_filesystem_is_its_longest_mount_point() {
        let mountinfo = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /tmp rw,nosuid shared:2 - tmpfs tmpfs rw
31 22 0:27 / /mnt/my\\040disk rw - xfs /dev/sdb1 rw";
        let fs = |d: &str| filesystem_of(mountinfo, Path::new(d));
        assert_eq!(fs("/home/u/store").as_deref(), Some("ext4"));
        assert_eq!(fs("/tmp/gadget-store-1").as_deref(), Some("tmpfs"));
        assert_eq!(fs("/mnt/my disk/s").as_deref(), Some("xfs"));
        assert_eq!(fs("/tmpx").as_deref(), Some("ext4"), "a path, not a prefix");
    }

    #[test]
    fn runs_on_one_machine_under_other_loads_share_it_with_the_busiest_moment() {
        let at = |load: f64, steal: Option<f64>| Host {
            cpus: Some(2),
            cpu_model: Some("a CPU".into()),
            load_average_1m: Some(load),
            cpu_steal_share: steal,
            ..Host::default()
        };
        let merged = Host::of_runs([&at(0.5, None), &at(3.0, Some(0.1)), &at(1.0, None)]);
        assert_eq!(merged.cpus, Some(2));
        assert_eq!(merged.load_average_1m, Some(3.0));
        assert_eq!(merged.cpu_steal_share, Some(0.1));
        let other = Host {
            cpus: Some(8),
            ..at(0.5, None)
        };
        assert_eq!(Host::of_runs([&at(0.5, None), &other]), Host::default());
        assert_eq!(Host::of_runs([]), Host::default());
    }

    #[test]
    fn this_machine_is_described_from_proc() {
        let start = CpuTimes::now();
        let host = Host::this(Path::new("/"), start);
        assert!(host.load_average_1m.is_some_and(|l| l >= 0.0), "{host:?}");
        assert!(start.is_some(), "/proc/stat read");
        // no tick may have passed since the start: then no share, never a guess
        assert!(
            host.cpu_steal_share
                .is_none_or(|s| (0.0..=1.0).contains(&s)),
            "{host:?}"
        );
        assert!(host.cpus.unwrap() >= 1);
        if Path::new("/proc/meminfo").exists() {
            assert!(host.memory_bytes.unwrap() > 0);
            assert!(host.kernel.is_some());
            assert!(host.store_filesystem.is_some());
        }
        assert_eq!(
            field("model name\t: Some CPU\n", "model name"),
            Some("Some CPU")
        );
        assert_eq!(kibibytes("2048 kB"), Some(2 << 20));
    }
}
