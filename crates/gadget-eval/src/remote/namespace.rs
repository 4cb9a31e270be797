//! The "remote" host: a network namespace of its own, reached over a veth pair whose two ends
//! get a private /30 subnet and a token-bucket rate limit (`tc … tbf`) in each direction. Made
//! with the `ip` and `tc` commands; removed when dropped.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use super::command::{process_alive, run, run_quietly};
use super::RemoteError;

/// Namespaces of this process are numbered from 0 on: `gadget-<pid>-<n>`.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// Held while choosing a subnet and giving it to a link, so two namespaces of this process
/// made at once never choose the same one.
static SUBNETS: Mutex<()> = Mutex::new(());

/// Whether the kernel has the netem qdisc, found out on the first link made.
static NETEM: OnceLock<bool> = OnceLock::new();

/// The prefix of every namespace Gadget makes.
const PREFIX: &str = "gadget-";

/// What to do when `ip` or `tc` fails while making the link.
const HINT: &str = "the kernel may lack veth or tbf support (modprobe veth sch_tbf), or another \
                    tool holds a namespace or link of that name";

/// A network namespace with a veth pair to it; removed when dropped.
pub(crate) struct Namespace {
    name: String,
    host_if: String,
    ns_addr: Ipv4Addr,
    netem: bool,
}

impl Namespace {
    /// Makes a fresh namespace, its link, addresses and rate limit. A namespace of the same
    /// name left by a crashed run is removed first, and so are those of any Gadget process
    /// that is no longer running.
    pub(crate) fn create(rate_bits_per_s: u64) -> Result<Namespace, RemoteError> {
        let pid = std::process::id();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("{PREFIX}{pid}-{n}");
        let (host_if, ns_if) = link_names(pid, n);
        if host_if.len() > 15 {
            return Err(RemoteError::Spec(format!(
                "this process has made {n} remote stores; link names would pass Linux's 15 \
                 characters: start a new process"
            )));
        }
        remove_stale(pid, &name)?;
        run_quietly("ip", &["link", "del", &host_if]);
        run("ip", &["netns", "add", &name], HINT)?;
        let mut namespace = Namespace {
            name,
            host_if,
            ns_addr: Ipv4Addr::UNSPECIFIED,
            netem: false,
        };
        let ns = namespace.name.clone();
        let host_if = namespace.host_if.clone();
        run(
            "ip",
            &[
                "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if, "netns", &ns,
            ],
            HINT,
        )?;
        {
            let _held = SUBNETS.lock().unwrap_or_else(|e| e.into_inner());
            let network = free_subnet(pid, n)?;
            let host_addr = Ipv4Addr::from(network + 1);
            namespace.ns_addr = Ipv4Addr::from(network + 2);
            run(
                "ip",
                &["addr", "add", &format!("{host_addr}/30"), "dev", &host_if],
                HINT,
            )?;
            run(
                "ip",
                &[
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("{}/30", namespace.ns_addr),
                    "dev",
                    &ns_if,
                ],
                HINT,
            )?;
        }
        run("ip", &["link", "set", &host_if, "up"], HINT)?;
        run("ip", &["-n", &ns, "link", "set", "lo", "up"], HINT)?;
        run("ip", &["-n", &ns, "link", "set", &ns_if, "up"], HINT)?;
        namespace.netem = *NETEM.get_or_init(|| has_netem(&host_if));
        let tbf = tbf_args(rate_bits_per_s);
        let tbf: Vec<&str> = tbf.iter().map(String::as_str).collect();
        let mut host_side = vec!["qdisc", "add", "dev", &host_if, "root"];
        host_side.extend(&tbf);
        run("tc", &host_side, HINT)?;
        let mut ns_side = vec!["-n", &ns, "qdisc", "add", "dev", &ns_if, "root"];
        ns_side.extend(&tbf);
        run("tc", &ns_side, HINT)?;
        Ok(namespace)
    }

    /// The namespace's name (`ip netns list`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The name of the host's end of the link.
    pub(crate) fn host_if(&self) -> &str {
        &self.host_if
    }

    /// The address of the namespace's end of the link.
    pub(crate) fn ns_addr(&self) -> Ipv4Addr {
        self.ns_addr
    }

    /// Whether this kernel has the netem qdisc.
    pub(crate) fn netem(&self) -> bool {
        self.netem
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // deleting one end deletes the pair; the namespace itself goes once nothing runs in it
        run_quietly("ip", &["link", "del", &self.host_if]);
        run_quietly("ip", &["netns", "del", &self.name]);
    }
}

/// The names of the host's and the namespace's end of the link of namespace `n` of process
/// `pid` (at most 15 characters for pids up to 2^22 and n below 1000).
fn link_names(pid: u32, n: u32) -> (String, String) {
    (format!("gd{pid}h{n}"), format!("gd{pid}n{n}"))
}

/// Removes namespace `name` if it exists (a crashed run of a process that had this pid), and
/// every Gadget namespace whose process is gone: what runs in it is killed, its link deleted.
/// A namespace of a live Gadget process is left alone.
fn remove_stale(own_pid: u32, name: &str) -> Result<(), RemoteError> {
    let list = run("ip", &["netns", "list"], HINT)?;
    for existing in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some((pid, n)) = parse_name(existing) else {
            continue;
        };
        if existing == name || (pid != own_pid && !process_alive(pid)) {
            purge(existing, pid, n);
        }
    }
    Ok(())
}

/// `gadget-<pid>-<n>` as (pid, n).
fn parse_name(name: &str) -> Option<(u32, u32)> {
    let (pid, n) = name.strip_prefix(PREFIX)?.split_once('-')?;
    Some((pid.parse().ok()?, n.parse().ok()?))
}

/// Kills what runs in a stale namespace (and the Toxiproxy its run started) and deletes it
/// with its link and its folder.
fn purge(name: &str, pid: u32, n: u32) {
    // a name given to this process's own namespace (the host's) would list every process here
    let foreign = is_foreign(name);
    if let (true, Ok(pids)) = (foreign, run("ip", &["netns", "pids", name], HINT)) {
        for p in pids.split_whitespace() {
            run_quietly("kill", &["-KILL", p]);
        }
    }
    let dir = std::env::temp_dir().join(name);
    if let Some(toxiproxy) = std::fs::read_to_string(dir.join(TOXIPROXY_PID))
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    {
        // only if that pid is still a Toxiproxy, not a process that got its number since
        let cmdline = std::fs::read(format!("/proc/{toxiproxy}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("toxiproxy") {
            run_quietly("kill", &["-KILL", &toxiproxy.to_string()]);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    run_quietly("ip", &["link", "del", &link_names(pid, n).0]);
    run_quietly("ip", &["netns", "del", name]);
}

/// Whether namespace `name` (`/run/netns/NAME`) is another namespace than this process's.
fn is_foreign(name: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = |path: &str| std::fs::metadata(path).map(|m| (m.dev(), m.ino()));
    match (id(&format!("/run/netns/{name}")), id("/proc/self/ns/net")) {
        (Ok(theirs), Ok(ours)) => theirs != ours,
        _ => false,
    }
}

/// The file in a namespace's folder that holds the id of the Toxiproxy its run started.
pub(crate) const TOXIPROXY_PID: &str = "toxiproxy.pid";

/// The folder of namespace `name`'s server log and files (and its Toxiproxy's), named after
/// it in the temporary directory so that a later run can clean up after a crashed one;
/// removed when dropped.
pub(crate) fn run_dir(name: &str) -> Result<tempfile::TempDir, RemoteError> {
    // one of this name can only be left by a crashed process that had this pid
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(name));
    tempfile::Builder::new()
        .prefix(name)
        .rand_bytes(0)
        .tempdir()
        .map_err(|e| {
            RemoteError::io(
                format!(
                    "cannot create {}",
                    std::env::temp_dir().join(name).display()
                ),
                e,
            )
        })
}

/// A /30 network in 10.128.0.0/9 that none of the host's routes overlaps, chosen from the pid
/// and the namespace's number so that concurrent runs start from different ones.
fn free_subnet(pid: u32, n: u32) -> Result<u32, RemoteError> {
    let routes = run("ip", &["-4", "route", "show", "table", "all"], HINT)?;
    let taken: Vec<(u32, u32)> = routes.lines().filter_map(route_prefix).collect();
    const TRIES: usize = 64;
    for attempt in 0..TRIES as u64 {
        let mix = u64::from(pid)
            .wrapping_mul(2_654_435_761)
            .wrapping_add(u64::from(n).wrapping_mul(40_503))
            .wrapping_add(attempt.wrapping_mul(7_919));
        let index = (mix % (1 << 21)) as u32;
        let network = (10 << 24) | (1 << 23) | (index << 2);
        if !taken
            .iter()
            .any(|&(net, len)| overlaps((network, 30), (net, len)))
        {
            return Ok(network);
        }
    }
    Err(RemoteError::NoSubnet { tried: TRIES })
}

/// The destination of one line of `ip -4 route show table all` as (network, prefix length);
/// `None` for the default route and lines without one.
fn route_prefix(line: &str) -> Option<(u32, u32)> {
    line.split_whitespace().take(2).find_map(|token| {
        let (addr, len) = token.split_once('/').unwrap_or((token, "32"));
        Some((u32::from(addr.parse::<Ipv4Addr>().ok()?), len.parse().ok()?))
    })
}

/// Whether two IPv4 prefixes share an address.
fn overlaps((a, a_len): (u32, u32), (b, b_len): (u32, u32)) -> bool {
    let len = a_len.min(b_len).min(32);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    a & mask == b & mask
}

/// Whether `tc` can put a netem qdisc on `dev` (tried and removed at once).
fn has_netem(dev: &str) -> bool {
    let added = run(
        "tc",
        &["qdisc", "add", "dev", dev, "root", "netem", "delay", "1us"],
        HINT,
    )
    .is_ok();
    if added {
        run_quietly("tc", &["qdisc", "del", "dev", dev, "root"]);
    }
    added
}

/// `tbf rate … burst … latency …` for a link of `rate_bits_per_s`: a bucket of one
/// millisecond at that rate (at least two full Ethernet frames), and a queue of up to 10 ms
/// beyond which packets are dropped, as a switch port's buffer would.
fn tbf_args(rate_bits_per_s: u64) -> Vec<String> {
    let burst = (rate_bits_per_s / 8 / 1000).max(2 * 1514);
    vec![
        "tbf".into(),
        "rate".into(),
        format!("{rate_bits_per_s}bit"),
        "burst".into(),
        burst.to_string(),
        "latency".into(),
        "10ms".into(),
    ]
}

/// Whether `/proc/self/status` shows the privileges a namespace needs: effective user 0, or
/// both CAP_NET_ADMIN (links, addresses, qdiscs) and CAP_SYS_ADMIN (`ip netns add` mounts).
pub(crate) fn check_privileges(status: &str) -> Result<(), RemoteError> {
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::split_whitespace)
    };
    let euid = field("Uid:").and_then(|mut f| f.nth(1)?.parse::<u32>().ok());
    if euid == Some(0) {
        return Ok(());
    }
    let cap_eff = field("CapEff:")
        .and_then(|mut f| u64::from_str_radix(f.next()?, 16).ok())
        .unwrap_or(0);
    const CAP_NET_ADMIN: u64 = 1 << 12;
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    if cap_eff & (CAP_NET_ADMIN | CAP_SYS_ADMIN) == CAP_NET_ADMIN | CAP_SYS_ADMIN {
        return Ok(());
    }
    Err(RemoteError::NeedsRoot {
        detail: match euid {
            Some(uid) => format!("this process runs as user {uid}, without those capabilities"),
            None => "this process's user could not be read from /proc/self/status".into(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_without_root_or_capabilities_is_told_to_run_as_root() {
        let status = "Name:\tgadget\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n";
        let message = check_privileges(status).unwrap_err().to_string();
        assert!(message.contains("needs root"), "{message}");
        assert!(message.contains("CAP_NET_ADMIN"), "{message}");
        assert!(message.contains("user 1000"), "{message}");
        assert!(message.contains("sudo"), "{message}");
    }

    #[test]
    fn root_or_both_capabilities_are_enough() {
        check_privileges("Uid:\t1000\t0\t0\t0\nCapEff:\t0\n").unwrap();
        check_privileges("Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000201000\n").unwrap();
        assert!(check_privileges("Uid:\t1000\t1000\t1000\t1000\nCapEff:\t1000\n").is_err());
    }

    #[test]
    fn a_subnet_is_never_one_a_route_covers() {
        let routes = "default via 172.17.0.1 dev eth0\n\
                      10.128.0.0/9 dev tun0 scope link\n";
        let taken: Vec<_> = routes.lines().filter_map(route_prefix).collect();
        assert_eq!(taken, vec![(u32::from(Ipv4Addr::new(10, 128, 0, 0)), 9)]);
        assert!(overlaps(
            (u32::from(Ipv4Addr::new(10, 200, 3, 4)), 30),
            taken[0]
        ));
        assert!(!overlaps(
            (u32::from(Ipv4Addr::new(10, 20, 3, 4)), 30),
            taken[0]
        ));
        assert_eq!(
            route_prefix("local 10.1.2.3 dev lo table local proto kernel"),
            Some((u32::from(Ipv4Addr::new(10, 1, 2, 3)), 32))
        );
    }

    #[test]
    fn a_name_on_this_processs_own_namespace_is_not_foreign() {
        assert!(!is_foreign("gadget-no-such-namespace"));
        // as root: give the host's namespace a name, as a careless tool might
        let name = format!("gadget-unit-{}", std::process::id());
        let pid = std::process::id().to_string();
        if run("ip", &["netns", "attach", &name, &pid], HINT).is_ok() {
            let foreign = is_foreign(&name);
            run_quietly("ip", &["netns", "del", &name]);
            assert!(!foreign, "the host's own namespace under another name");
        }
    }

    #[test]
    fn names_of_crashed_runs_are_recognised_and_others_are_not() {
        assert_eq!(parse_name("gadget-4194304-12"), Some((4194304, 12)));
        assert_eq!(parse_name("gadget-x-1"), None);
        assert_eq!(parse_name("cni-1234"), None);
        assert!(link_names(4194304, 999).0.len() <= 15);
    }
}
