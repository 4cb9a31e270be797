//! One connection to a Redis server: commands written into a reused buffer, replies read in
//! place, and every wait cut into short slices so that a stop request (Ctrl-C) is seen within
//! [`SLICE`] while the server is silent, and a server that stays silent for the timeout fails
//! the request.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::reply::{reply_len, ProtocolError, Reply};
use super::url::{Address, Target};

/// The longest a read or write waits before the stop flag is looked at again.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// Bytes read from the socket at a time, at least.
const READ_CHUNK: usize = 16 << 10;

/// Why a request to the server did not get its answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The server said nothing for the whole timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The stop flag was set while waiting.
    #[error("stopped while waiting for the server")]
    Stopped,
    /// The connection could not be made or broke.
    #[error("{0}")]
    Lost(io::Error),
    /// The server refused the command.
    #[error("{0}")]
    Server(String),
    /// The server's reply is not RESP2.
    #[error("a reply Gadget cannot read ({0})")]
    Protocol(ProtocolError),
}

impl From<ProtocolError> for Failure {
    fn from(e: ProtocolError) -> Self {
        Failure::Protocol(e)
    }
}

enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    fn connect(address: &Address, timeout: Duration) -> io::Result<Stream> {
        match address {
            Address::Tcp(host, port) => {
                let mut last = None;
                for a in (host.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&a, timeout) {
                        Ok(s) => {
                            s.set_nodelay(true)?;
                            return Ok(Stream::Tcp(s));
                        }
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or_else(|| io::Error::other(format!("{host} has no address"))))
            }
            #[cfg(unix)]
            Address::Unix(path) => Ok(Stream::Unix(std::os::unix::net::UnixStream::connect(path)?)),
            #[cfg(not(unix))]
            Address::Unix(_) => Err(io::Error::other("Unix sockets need a Unix system")),
        }
    }

    fn set_timeouts(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            #[cfg(unix)]
            Stream::Unix(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            #[cfg(unix)]
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            #[cfg(unix)]
            Stream::Unix(s) => s.write(buf),
        }
    }
}

/// Commands written in RESP, to be sent together.
#[derive(Debug, Default, Clone)]
pub(crate) struct Commands {
    bytes: Vec<u8>,
    count: usize,
    /// Arguments the last command announced and has not got yet (a miscount is a bug that
    /// the server would answer with a syntax error, or worse, by reading on).
    args_left: usize,
}

impl Commands {
    /// Starts a command of `args` arguments (its name counts); add them with [`Self::arg`].
    pub(crate) fn command(&mut self, args: usize) -> &mut Self {
        debug_assert_eq!(self.args_left, 0, "the last command lacks arguments");
        self.args_left = args;
        self.count += 1;
        self.bytes.push(b'*');
        push_number(&mut self.bytes, args);
        self.bytes.extend_from_slice(b"\r\n");
        self
    }

    /// Adds one argument to the command being written.
    pub(crate) fn arg(&mut self, a: &[u8]) -> &mut Self {
        self.arg_parts(a, &[])
    }

    /// Adds one argument made of `head` then `tail` (a prefix and a key), without joining
    /// them first.
    pub(crate) fn arg_parts(&mut self, head: &[u8], tail: &[u8]) -> &mut Self {
        self.arg_parts3(head, tail, &[])
    }

    /// Adds one argument made of three parts (a hash tag, a prefix and a key).
    pub(crate) fn arg_parts3(&mut self, a: &[u8], b: &[u8], c: &[u8]) -> &mut Self {
        debug_assert!(
            self.args_left > 0,
            "more arguments than the command announced"
        );
        self.args_left = self.args_left.wrapping_sub(1);
        self.bytes.push(b'$');
        push_number(&mut self.bytes, a.len() + b.len() + c.len());
        self.bytes.extend_from_slice(b"\r\n");
        self.bytes.extend_from_slice(a);
        self.bytes.extend_from_slice(b);
        self.bytes.extend_from_slice(c);
        self.bytes.extend_from_slice(b"\r\n");
        self
    }

    /// Adds every command of `other` after these.
    pub(crate) fn append(&mut self, other: &Commands) {
        debug_assert_eq!(
            self.args_left + other.args_left,
            0,
            "a command lacks arguments"
        );
        self.bytes.extend_from_slice(&other.bytes);
        self.count += other.count;
    }

    /// The commands written, in RESP.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Adds `commands` whole commands already written in RESP (a part of another
    /// [`Commands`]' bytes), as when a redirected command is sent again elsewhere.
    pub(crate) fn push_raw(&mut self, bytes: &[u8], commands: usize) {
        debug_assert_eq!(self.args_left, 0, "the last command lacks arguments");
        self.bytes.extend_from_slice(bytes);
        self.count += commands;
    }

    /// True when no command is written.
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Forgets every command, keeping the buffer.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.count = 0;
        self.args_left = 0;
    }
}

/// A connection to one server.
pub(crate) struct Connection {
    stream: Stream,
    /// Commands not sent yet.
    out: Commands,
    /// Bytes received: `input[read..filled]` are not consumed yet.
    input: Vec<u8>,
    read: usize,
    filled: usize,
    timeout: Duration,
    stop: Arc<AtomicBool>,
    /// A request failed part-way: what the server sends next may answer it, so the
    /// connection is not used again.
    broken: bool,
}

impl Connection {
    /// Connects to `target` and logs in (`AUTH`, `SELECT`); a silent server fails after
    /// `timeout`, and setting `stop` ends the wait within [`SLICE`].
    pub(crate) fn open(
        target: &Target,
        timeout: Duration,
        stop: Arc<AtomicBool>,
    ) -> Result<Connection, Failure> {
        let stream = Stream::connect(&target.address, timeout).map_err(Failure::Lost)?;
        stream
            .set_timeouts(timeout.min(SLICE))
            .map_err(Failure::Lost)?;
        let mut con = Connection {
            stream,
            out: Commands::default(),
            input: vec![0; READ_CHUNK],
            read: 0,
            filled: 0,
            timeout,
            stop,
            broken: false,
        };
        if let Some(password) = &target.password {
            match &target.user {
                Some(user) => con.command(3).arg(b"AUTH").arg(user.as_bytes()),
                None => con.command(2).arg(b"AUTH"),
            }
            .arg(password.as_bytes());
            con.exchange()?;
        }
        if target.db != 0 {
            con.command(2)
                .arg(b"SELECT")
                .arg(target.db.to_string().as_bytes());
            con.exchange()?;
        }
        Ok(con)
    }

    /// True when a request failed part-way and the connection must not be used again.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken
    }

    /// Starts a command of `args` arguments (its name counts) after the ones written.
    pub(crate) fn command(&mut self, args: usize) -> &mut Commands {
        self.out.command(args)
    }

    /// The commands written and not sent yet.
    pub(crate) fn commands(&mut self) -> &mut Commands {
        &mut self.out
    }

    /// Forgets the commands written and not sent.
    pub(crate) fn discard_unsent(&mut self) {
        self.out.clear();
    }

    /// Sends every command written so far; how many there were.
    pub(crate) fn send(&mut self) -> Result<usize, Failure> {
        debug_assert_eq!(self.out.args_left, 0, "the last command lacks arguments");
        let mut sent = 0;
        let mut last_progress = Instant::now();
        while sent < self.out.bytes.len() {
            match self.stream.write(&self.out.bytes[sent..]) {
                Ok(0) => return Err(self.fail(Failure::Lost(io::ErrorKind::WriteZero.into()))),
                Ok(n) => {
                    sent += n;
                    last_progress = Instant::now();
                }
                Err(e) => self.waited(e, last_progress)?,
            }
        }
        let count = self.out.count;
        self.out.clear();
        Ok(count)
    }

    /// Reads the next reply as it is, error replies included (a cluster client looks at them:
    /// `MOVED` and `ASK` say where to send the command again).
    pub(crate) fn raw_reply(&mut self) -> Result<&[u8], Failure> {
        let (start, end) = self.next_reply()?;
        Ok(&self.input[start..end])
    }

    /// Reads the next reply; an error reply anywhere in it is a [`Failure::Server`].
    pub(crate) fn reply(&mut self) -> Result<Reply<'_>, Failure> {
        let (start, end) = self.next_reply()?;
        let reply = Reply::new(&self.input[start..end]);
        match reply.error() {
            Some(e) => Err(Failure::Server(String::from_utf8_lossy(e).into_owned())),
            None => Ok(Reply::new(&self.input[start..end])),
        }
    }

    /// Sends the commands written and reads their replies, failing at the first timeout;
    /// an error reply fails it after every reply is read, so the connection stays usable.
    pub(crate) fn exchange(&mut self) -> Result<(), Failure> {
        let count = self.send()?;
        self.replies(count)
    }

    /// Sends the commands written and reads their replies; the last one, which the others'
    /// errors take the place of.
    pub(crate) fn round_trip(&mut self) -> Result<Reply<'_>, Failure> {
        let count = self.send()?;
        match self.replies(count.saturating_sub(1)) {
            Ok(()) => self.reply(),
            Err(Failure::Server(e)) => {
                // the last reply is read all the same, so the connection stays usable
                let _ = self.reply();
                Err(Failure::Server(e))
            }
            Err(e) => Err(e),
        }
    }

    /// Reads `count` replies; the first error reply after all of them are read.
    fn replies(&mut self, count: usize) -> Result<(), Failure> {
        let mut first_error = None;
        for _ in 0..count {
            match self.reply() {
                Ok(_) => {}
                Err(Failure::Server(e)) => {
                    first_error.get_or_insert(Failure::Server(e));
                }
                Err(e) => return Err(e),
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Where the next whole reply lies in `input`, reading until it is there.
    fn next_reply(&mut self) -> Result<(usize, usize), Failure> {
        if self.read == self.filled {
            self.read = 0;
            self.filled = 0;
        }
        let mut last_progress = Instant::now();
        loop {
            match reply_len(&self.input[self.read..self.filled]) {
                Ok(Some(n)) => {
                    let start = self.read;
                    self.read += n;
                    return Ok((start, start + n));
                }
                Ok(None) => {}
                Err(e) => return Err(self.fail(Failure::Protocol(e))),
            }
            self.make_room();
            match self.stream.read(&mut self.input[self.filled..]) {
                Ok(0) => {
                    return Err(self.fail(Failure::Lost(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ))))
                }
                Ok(n) => {
                    self.filled += n;
                    last_progress = Instant::now();
                }
                Err(e) => self.waited(e, last_progress)?,
            }
        }
    }

    /// Room for at least [`READ_CHUNK`] more bytes after `filled`, moving the unread bytes to
    /// the front first.
    fn make_room(&mut self) {
        if self.read > 0 {
            self.input.copy_within(self.read..self.filled, 0);
            self.filled -= self.read;
            self.read = 0;
        }
        if self.input.len() - self.filled < READ_CHUNK {
            let len = (self.input.len() * 2).max(self.filled + READ_CHUNK);
            self.input.resize(len, 0);
        }
    }

    /// After a read or write returned `e`: `Ok` to try again when it only timed out a slice
    /// and neither the stop flag nor the whole timeout has come, the failure otherwise.
    fn waited(&mut self, e: io::Error, last_progress: Instant) -> Result<(), Failure> {
        match e.kind() {
            io::ErrorKind::Interrupted => Ok(()),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                if self.stop.load(Ordering::Relaxed) {
                    Err(self.fail(Failure::Stopped))
                } else if last_progress.elapsed() >= self.timeout {
                    Err(self.fail(Failure::Timeout(self.timeout)))
                } else {
                    Ok(())
                }
            }
            _ => Err(self.fail(Failure::Lost(e))),
        }
    }

    fn fail(&mut self, f: Failure) -> Failure {
        self.broken = true;
        f
    }
}

/// Appends `n` in decimal without allocating.
fn push_number(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server on loopback that answers every connection with `script`: each step writes
    /// its bytes after its pause.
    fn fake_server(script: Vec<(Duration, &'static [u8])>) -> Target {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            for (pause, bytes) in script {
                std::thread::sleep(pause);
                if s.write_all(bytes).is_err() {
                    return;
                }
            }
            // keep the connection open, silent, until the client goes
            while matches!(s.read(&mut [0; 1024]), Ok(n) if n > 0) {}
        });
        Target {
            address: Address::Tcp("127.0.0.1".into(), port),
            user: None,
            password: None,
            db: 0,
        }
    }

    fn no_stop() -> Arc<AtomicBool> {
        Arc::new(AtomicBool::new(false))
    }

    #[test]
    fn commands_are_written_in_resp() {
        let mut out = Vec::new();
        push_number(&mut out, 0);
        push_number(&mut out, 1234567);
        assert_eq!(out, b"01234567");
    }

    #[test]
    fn a_reply_that_arrives_in_pieces_slower_than_a_slice_is_read_whole() {
        let pause = SLICE * 3;
        let target = fake_server(vec![
            (Duration::ZERO, b"*2\r\n$5\r\nhel"),
            (pause, b"lo\r\n:4"),
            (pause, b"2\r\n+OK\r\n"),
        ]);
        let mut con = Connection::open(&target, Duration::from_secs(10), no_stop()).unwrap();
        con.command(1).arg(b"PING");
        let reply = con.round_trip().unwrap();
        let mut items = reply.items().unwrap();
        assert_eq!(
            items.next().unwrap().unwrap().bulk(),
            Ok(Some(&b"hello"[..]))
        );
        assert_eq!(con.reply().unwrap().error(), None, "the next reply follows");
        assert!(!con.is_broken());
    }

    #[test]
    fn a_silent_server_fails_the_request_after_the_timeout() {
        let target = fake_server(vec![]);
        let mut con = Connection::open(&target, SLICE * 2, no_stop()).unwrap();
        con.command(1).arg(b"PING");
        assert!(matches!(con.round_trip(), Err(Failure::Timeout(_))));
        assert!(con.is_broken());
    }

    #[test]
    fn the_stop_flag_ends_a_wait_long_before_the_timeout() {
        let target = fake_server(vec![]);
        let stop = no_stop();
        let mut con = Connection::open(&target, Duration::from_secs(3600), stop.clone()).unwrap();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(SLICE * 2);
            stop.store(true, Ordering::SeqCst);
        });
        con.command(1).arg(b"PING");
        assert!(matches!(con.round_trip(), Err(Failure::Stopped)));
        setter.join().unwrap();
    }

    #[test]
    fn error_replies_in_a_pipeline_are_reported_after_every_reply_is_read() {
        let target = fake_server(vec![(
            Duration::ZERO,
            b"+OK\r\n-ERR wrong\r\n:1\r\n+NEXT\r\n",
        )]);
        let mut con = Connection::open(&target, Duration::from_secs(10), no_stop()).unwrap();
        con.command(1)
            .arg(b"A")
            .command(1)
            .arg(b"B")
            .command(1)
            .arg(b"C");
        match con.exchange() {
            Err(Failure::Server(e)) => assert_eq!(e, "ERR wrong"),
            other => panic!("{other:?}"),
        }
        assert_eq!(con.reply().unwrap().error(), None);
        assert!(!con.is_broken());
    }

    #[test]
    fn a_closed_connection_is_lost_not_a_hang() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || drop(listener.accept()));
        let target = Target {
            address: Address::Tcp("127.0.0.1".into(), port),
            user: None,
            password: None,
            db: 0,
        };
        let mut con = Connection::open(&target, Duration::from_secs(3600), no_stop()).unwrap();
        con.command(1).arg(b"PING");
        assert!(matches!(con.round_trip(), Err(Failure::Lost(_))));
    }
}
