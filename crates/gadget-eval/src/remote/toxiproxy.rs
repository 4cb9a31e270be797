//! Toxiproxy (github.com/Shopify/toxiproxy), the fault-injection proxy, for delays of whole
//! milliseconds: `toxiproxy-server` on a loopback port, one proxy to the server made through
//! its HTTP API (a minimal HTTP/1.1 client over a `TcpStream`, below), and a `latency` toxic on
//! each direction, so a request and its answer are each delayed by `delay ± jitter`.
//!
//! Toxiproxy's latency toxic takes milliseconds as integers; finer delays go through
//! [`super::delay`] instead.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::command::{log_tail, poll};
use super::namespace::TOXIPROXY_PID;
use super::RemoteError;

/// The environment variable that names the `toxiproxy-server` binary to use.
pub const TOXIPROXY_ENV: &str = "GADGET_TOXIPROXY";

/// How long a starting `toxiproxy-server` may take to answer its API.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one API request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a wait looks at the stop flag, at most.
const TICK: Duration = Duration::from_millis(50);

/// The name of the one proxy Gadget makes in its own `toxiproxy-server`.
const PROXY: &str = "gadget";

/// Where `scripts/setup.sh` puts `toxiproxy-server` when it does not run as root.
pub fn deps_binary() -> PathBuf {
    // the crate lives in <project>/crates/gadget-eval
    let mut project = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    project.pop();
    project.pop();
    project.join(".deps/bin/toxiproxy-server")
}

/// The `toxiproxy-server` to run: `$GADGET_TOXIPROXY` when set, else the first on `PATH`, else
/// the one `scripts/setup.sh` builds into the project's `.deps/bin/`.
pub fn find_toxiproxy() -> Result<PathBuf, RemoteError> {
    if let Some(path) = std::env::var_os(TOXIPROXY_ENV).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(RemoteError::ToxiproxyNotExecutable { path })
        };
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join("toxiproxy-server"))
        .find(|p| executable(p));
    if let Some(path) = on_path {
        return Ok(path);
    }
    let deps_path = deps_binary();
    if executable(&deps_path) {
        Ok(deps_path)
    } else {
        Err(RemoteError::ToxiproxyMissing { deps_path })
    }
}

/// Whether `path` is a file someone may execute.
fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A running `toxiproxy-server` with one delaying proxy; killed when dropped.
pub(crate) struct Toxiproxy {
    child: Child,
    port: u16,
}

impl Toxiproxy {
    /// Starts `binary` on a free loopback port, logging to `dir`, and makes a proxy from
    /// another loopback port to `upstream` with `delay ± jitter` (whole milliseconds) on
    /// each direction.
    pub(crate) fn start(
        binary: &Path,
        upstream: SocketAddr,
        delay: Duration,
        jitter: Duration,
        dir: &Path,
        stop: &AtomicBool,
    ) -> Result<Toxiproxy, RemoteError> {
        let (mut child, api) = start_server(binary, dir, stop)?;
        // for the next run's clean-up, should this one be killed before it removes Toxiproxy
        let _ = std::fs::write(dir.join(TOXIPROXY_PID), child.id().to_string());
        match configure(api, upstream, delay, jitter, stop) {
            Ok(port) => Ok(Toxiproxy { child, port }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// The loopback port its proxy listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server and waits for its API; another port is tried when the one chosen was
/// taken between choosing and binding it.
fn start_server(binary: &Path, dir: &Path, stop: &AtomicBool) -> Result<(Child, u16), RemoteError> {
    let log = dir.join("toxiproxy-server.log");
    let mut last_error = None;
    for _attempt in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| RemoteError::io("cannot find a free loopback port for Toxiproxy", e))?
            .port();
        let log_file = std::fs::File::create(&log)
            .map_err(|e| RemoteError::io(format!("cannot create {}", log.display()), e))?;
        let mut child = Command::new(binary)
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| RemoteError::io(format!("cannot run {}", binary.display()), e))?;
        let ready = poll("toxiproxy-server", stop, START_TIMEOUT, || {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| RemoteError::io("cannot wait for toxiproxy-server", e))?
            {
                return Err(RemoteError::Exited {
                    what: "toxiproxy-server",
                    status: status.to_string(),
                    log_path: log.clone(),
                    log: log_tail(&log),
                });
            }
            match TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), TICK) {
                Err(e) => Ok(Err(format!("connecting to its API on port {port}: {e}"))),
                Ok(_) => Ok(request(port, "GET", "/version", None, stop)?.and_then(
                    |(status, body)| {
                        if status == 200 {
                            Ok(())
                        } else {
                            Err(format!("GET /version answered {status}: {body}"))
                        }
                    },
                )),
            }
        });
        match ready {
            Ok(()) => return Ok((child, port)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                match e {
                    // it exited: most likely its port was taken; try another
                    RemoteError::Exited { .. } => last_error = Some(e),
                    e => return Err(e),
                }
            }
        }
    }
    Err(last_error.unwrap_or(RemoteError::Stopped))
}

/// Makes the proxy and its two latency toxics; returns the proxy's port.
fn configure(
    api: u16,
    upstream: SocketAddr,
    delay: Duration,
    jitter: Duration,
    stop: &AtomicBool,
) -> Result<u16, RemoteError> {
    let proxy = json!({
        "name": PROXY,
        "listen": "127.0.0.1:0",
        "upstream": upstream.to_string(),
        "enabled": true,
    });
    let body = call(api, "POST", "/proxies", &proxy, 201, stop)?;
    let listen = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["listen"].as_str()?.parse::<SocketAddr>().ok())
        .ok_or_else(|| RemoteError::Toxiproxy {
            request: "POST /proxies".into(),
            status: "an answer without a listen address".into(),
            body: body.clone(),
        })?;
    for stream in ["upstream", "downstream"] {
        let toxic = json!({
            "name": format!("delay-{stream}"),
            "type": "latency",
            "stream": stream,
            "toxicity": 1.0,
            "attributes": {
                "latency": delay.as_millis() as u64,
                "jitter": jitter.as_millis() as u64,
            },
        });
        call(
            api,
            "POST",
            &format!("/proxies/{PROXY}/toxics"),
            &toxic,
            200,
            stop,
        )?;
    }
    Ok(listen.port())
}

/// One API request that must answer `expected`; returns the body.
fn call(
    api: u16,
    method: &str,
    path: &str,
    body: &serde_json::Value,
    expected: u16,
    stop: &AtomicBool,
) -> Result<String, RemoteError> {
    let (status, answer) =
        request(api, method, path, Some(&body.to_string()), stop)?.map_err(|detail| {
            RemoteError::Toxiproxy {
                request: format!("{method} {path}"),
                status: "no answer".into(),
                body: detail,
            }
        })?;
    if status == expected {
        Ok(answer)
    } else {
        Err(RemoteError::Toxiproxy {
            request: format!("{method} {path}"),
            status: status.to_string(),
            body: answer,
        })
    }
}

/// One HTTP/1.1 request to the API on `port` (`Connection: close`, JSON body): `Ok(Ok((status,
/// body)))`, or `Ok(Err(detail))` when it got no complete answer in time; `Err(Stopped)` when
/// `stop` was raised.
fn request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    stop: &AtomicBool,
) -> Result<Result<(u16, String), String>, RemoteError> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = match TcpStream::connect_timeout(&addr, TICK) {
        Ok(s) => s,
        Err(e) => return Ok(Err(format!("connecting to {addr}: {e}"))),
    };
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: gadget\r\n\
         Accept: application/json\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let sent = stream
        .set_read_timeout(Some(TICK))
        .and_then(|()| stream.set_write_timeout(Some(REQUEST_TIMEOUT)))
        .and_then(|()| stream.write_all(head.as_bytes()))
        .and_then(|()| stream.write_all(body.as_bytes()));
    if let Err(e) = sent {
        return Ok(Err(format!("sending {method} {path}: {e}")));
    }
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(RemoteError::Stopped);
        }
        if Instant::now() > deadline {
            return Ok(Err(format!(
                "{method} {path}: no complete answer in {REQUEST_TIMEOUT:?}"
            )));
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Ok(Err(format!("reading the answer to {method} {path}: {e}"))),
        }
    }
    Ok(parse_response(&answer).ok_or_else(|| {
        format!(
            "{method} {path}: an answer that is not HTTP: {}",
            String::from_utf8_lossy(&answer)
        )
    }))
}

/// The status and body of a whole HTTP/1.1 response (plain or chunked).
fn parse_response(answer: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_string()
    };
    Some((status, body))
}

/// The body of a chunked transfer encoding.
fn dechunk(mut rest: &str) -> Option<String> {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_chunked_answers_are_read() {
        let plain = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain), Some((201, "{}".to_string())));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(
            parse_response(chunked),
            Some((200, "{\"a\":1}".to_string()))
        );
        assert_eq!(parse_response(b"garbage"), None);
    }

    #[test]
    fn the_projects_own_copy_is_looked_for_under_deps_bin() {
        let path = deps_binary();
        assert!(
            path.ends_with(".deps/bin/toxiproxy-server"),
            "{}",
            path.display()
        );
        assert!(!path.to_string_lossy().contains(".."), "{}", path.display());
    }
}
