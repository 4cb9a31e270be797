//! Gadget's own delaying TCP proxy, for delays finer than Toxiproxy's whole milliseconds (a
//! 10 Gb/s switch hop adds tens of microseconds).
//!
//! It listens on a loopback port and forwards each connection to the server, one thread per
//! direction, holding every chunk of bytes until `delay ± jitter` after the kernel received
//! it (the socket's receive timestamp, `SO_TIMESTAMPNS`), in order: a chunk is never released
//! before the one read ahead of it. Counting from the kernel's timestamp makes the proxy's own
//! wake-up part of the delay rather than added to it, and keeps chunks that arrive while an
//! earlier one waits on their own schedule. Writers sleep with a timer slack of 1 ns and spin
//! the last few microseconds, so a 25 µs delay is 25 µs rather than the ~90 µs an ordinary
//! sleep of 25 µs takes on Linux.

use std::io::{ErrorKind, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::RemoteError;

/// How often every thread of the proxy looks at its shutdown flag, at most.
const TICK: Duration = Duration::from_millis(20);

/// Below this much time left, a writer spins instead of sleeping (a wake-up takes ~15 µs).
const SPIN: Duration = Duration::from_micros(30);

/// The delaying proxy; stopped, with all its connections closed, when dropped.
pub(crate) struct DelayProxy {
    port: u16,
    shutdown: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl DelayProxy {
    /// Starts forwarding a loopback port to `upstream` with `delay ± jitter` each way.
    pub(crate) fn start(
        upstream: SocketAddr,
        delay: Duration,
        jitter: Duration,
    ) -> Result<DelayProxy, RemoteError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| RemoteError::io("cannot listen on a loopback port for the proxy", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| RemoteError::io("cannot read the proxy's port", e))?
            .port();
        let shutdown = Arc::new(AtomicBool::new(false));
        let link = Link {
            delay,
            jitter,
            shutdown: shutdown.clone(),
        };
        let acceptor = std::thread::Builder::new()
            .name("gadget-delay-proxy".into())
            .spawn(move || accept(listener, upstream, link))
            .map_err(|e| RemoteError::io("cannot start the proxy's thread", e))?;
        Ok(DelayProxy {
            port,
            shutdown,
            acceptor: Some(acceptor),
        })
    }

    /// The loopback port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::Relaxed);
        if let Some(acceptor) = self.acceptor.take() {
            // the acceptor waits in accept(): a connection wakes it to see the flag
            let listener = SocketAddr::from(([127, 0, 0, 1], self.port));
            while !acceptor.is_finished() {
                let _ = TcpStream::connect_timeout(&listener, TICK);
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = acceptor.join();
        }
    }
}

/// What every connection's threads share: the delay and the shutdown flag.
#[derive(Clone)]
struct Link {
    delay: Duration,
    jitter: Duration,
    shutdown: Arc<AtomicBool>,
}

impl Link {
    fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed)
    }
}

/// One forwarded connection: both sockets (to close them at shutdown) and its two threads.
struct Connection {
    sockets: [TcpStream; 2],
    threads: Vec<JoinHandle<()>>,
}

/// Accepts connections until shutdown (whose connection to the listener wakes it), then
/// closes them all and waits for their threads.
fn accept(listener: TcpListener, upstream: SocketAddr, link: Link) {
    let mut connections: Vec<Connection> = Vec::new();
    loop {
        let accepted = listener.accept();
        if link.stopping() {
            break;
        }
        match accepted {
            Ok((client, _)) => {
                if let Some(c) = connect(client, upstream, &link) {
                    connections.push(c);
                }
            }
            // out of file descriptors, say: let some close
            Err(_) => std::thread::sleep(TICK),
        }
        connections.retain(|c| !c.threads.iter().all(JoinHandle::is_finished));
    }
    for c in &connections {
        for s in &c.sockets {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
    for c in connections {
        for t in c.threads {
            let _ = t.join();
        }
    }
}

/// Connects a new client to the server and starts its two directions; `None` (the client
/// closed) when the server cannot be reached.
fn connect(client: TcpStream, upstream: SocketAddr, link: &Link) -> Option<Connection> {
    let deadline = Instant::now() + Duration::from_secs(2);
    let server = loop {
        match TcpStream::connect_timeout(&upstream, TICK) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline && !link.stopping() => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return None,
        }
    };
    for s in [&client, &server] {
        s.set_nodelay(true).ok()?;
        s.set_read_timeout(Some(TICK)).ok()?;
    }
    let mut threads = Vec::with_capacity(2);
    for (from, to, name) in [
        (&client, &server, "gadget-delay-up"),
        (&server, &client, "gadget-delay-down"),
    ] {
        timestamp_arrivals(from).ok()?;
        let (from, to, link) = (from.try_clone().ok()?, to.try_clone().ok()?, link.clone());
        threads.push(
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || forward(from, to, link))
                .ok()?,
        );
    }
    Some(Connection {
        sockets: [client, server],
        threads,
    })
}

/// Forwards one direction: each chunk read is written `delay ± jitter` after it arrived; the
/// end of the stream is passed on; an error or shutdown closes both sockets.
fn forward(from: TcpStream, mut to: TcpStream, link: Link) {
    precise_sleeps();
    let mut random = Random::seeded();
    let mut buf = vec![0u8; 64 * 1024];
    let mut last_due = Instant::now();
    loop {
        match receive(&from, &mut buf) {
            Ok((0, _)) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok((n, arrived)) => {
                let delay = random.delay(link.delay, link.jitter);
                let due = due_at(arrived, delay).max(last_due);
                last_due = due;
                if !sleep_until(due, &link) || to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if link.stopping() {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// When a chunk the kernel received at `arrived` (now, if unknown) is due after `delay`.
fn due_at(arrived: Option<SystemTime>, delay: Duration) -> Instant {
    let now = Instant::now();
    let Some(arrived) = arrived else {
        return now + delay;
    };
    // how long ago it arrived, on the clock the kernel stamped it with
    let ago = SystemTime::now()
        .duration_since(arrived)
        .unwrap_or(Duration::ZERO);
    (now + delay).checked_sub(ago).unwrap_or(now)
}

/// Asks the kernel to stamp what `socket` receives with the time it arrived.
fn timestamp_arrivals(socket: &TcpStream) -> std::io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket, and an int option of the size given.
    let done = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Reads what is there (waiting up to the socket's read timeout) with the time the kernel
/// received it, when it says.
fn receive(socket: &TcpStream, buf: &mut [u8]) -> std::io::Result<(usize, Option<SystemTime>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // room for one timestamp message, aligned as control messages must be
    let mut control = [0u64; 8];
    // SAFETY: all-zero is a valid msghdr (null pointers, zero lengths).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points at a buffer and a control buffer that outlive the call, with their
    // true lengths.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut arrived = None;
    // SAFETY: msg was filled by recvmsg; the CMSG macros walk its control buffer within
    // msg_controllen, and a SCM_TIMESTAMPNS message's data is a timespec (read unaligned).
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                arrived = Some(
                    SystemTime::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
                );
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, arrived))
}

/// Waits until `due`: sleeps, then spins the last few microseconds. `false` on shutdown.
fn sleep_until(due: Instant, link: &Link) -> bool {
    loop {
        let now = Instant::now();
        if now >= due {
            return true;
        }
        if link.stopping() {
            return false;
        }
        let left = due - now;
        if left > SPIN {
            std::thread::sleep((left - SPIN).min(TICK));
        } else {
            // not yield_now(): on a busy machine a yield gives the core away for a time
            // slice, milliseconds
            std::hint::spin_loop();
        }
    }
}

/// Makes this thread's sleeps end on time: Linux lets a sleep overrun by the thread's timer
/// slack, 50 µs by default, which would be twice the delay of a switch hop.
fn precise_sleeps() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and changes only this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// A small xorshift generator for the jitter (no need for a random crate).
struct Random(u64);

impl Random {
    fn seeded() -> Random {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let thread = std::thread::current().id();
        let mut hasher = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(&thread, &mut hasher);
        Random((nanos ^ std::hash::Hasher::finish(&hasher)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[delay - jitter, delay + jitter]` (`jitter <= delay`).
    fn delay(&mut self, delay: Duration, jitter: Duration) -> Duration {
        let jitter_ns = jitter.as_nanos() as u64;
        if jitter_ns == 0 {
            return delay;
        }
        let offset = self.next() % (2 * jitter_ns + 1);
        (delay - jitter) + Duration::from_nanos(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jittered_delays_stay_within_delay_plus_or_minus_jitter() {
        let mut random = Random::seeded();
        let (delay, jitter) = (Duration::from_micros(25), Duration::from_micros(5));
        let drawn: Vec<Duration> = (0..10_000).map(|_| random.delay(delay, jitter)).collect();
        assert!(drawn
            .iter()
            .all(|d| *d >= delay - jitter && *d <= delay + jitter));
        assert!(drawn.iter().any(|d| *d < delay) && drawn.iter().any(|d| *d > delay));
        assert_eq!(random.delay(delay, Duration::ZERO), delay);
    }
}
