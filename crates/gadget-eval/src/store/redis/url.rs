//! Redis URLs, as `redis-cli -u` and the Redis clients take them:
//! `redis://[[user]:password@]host[:port][/db]` and `unix:///path/to/socket[?db=N]`
//! (also `redis+unix://`).

use std::fmt;
use std::path::PathBuf;

/// Where a Redis server listens and how to log in to it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The server's address.
    pub address: Address,
    /// The ACL user, if the URL names one.
    pub user: Option<String>,
    /// The password, if the URL gives one.
    pub password: Option<String>,
    /// The database number (`SELECT`).
    pub db: u32,
}

/// A server's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Address {
    /// A host name or IP address and a port.
    Tcp(String, u16),
    /// A Unix socket.
    Unix(PathBuf),
}

impl fmt::Debug for Target {
    /// Never shows the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("address", &self.address)
            .field("user", &self.user)
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

/// Parses `url`; the error says what is wrong and what a URL looks like.
pub(crate) fn parse(url: &str) -> Result<Target, String> {
    const FORM: &str = "give redis://host:port (redis://[[user]:password@]host[:port][/db]) or unix:///path/to/socket";
    if let Some(rest) = url
        .strip_prefix("unix://")
        .or_else(|| url.strip_prefix("redis+unix://"))
    {
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if path.is_empty() {
            return Err(format!("no socket path in {url:?}; {FORM}"));
        }
        let mut db = 0;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("db", n)) => db = database(n, url)?,
                _ => {
                    return Err(format!(
                        "unknown parameter {pair:?} in {url:?}; only db=N is read"
                    ))
                }
            }
        }
        return Ok(Target {
            address: Address::Unix(PathBuf::from(decode(path, url)?)),
            user: None,
            password: None,
            db,
        });
    }
    if url.starts_with("rediss://") {
        return Err(format!(
            "{url:?} asks for TLS, which Gadget's Redis client does not speak; reach the server \
             without TLS, or through a local TLS tunnel (stunnel) at a redis:// address"
        ));
    }
    let Some(rest) = url.strip_prefix("redis://") else {
        return Err(format!("{url:?} is not a Redis URL; {FORM}"));
    };
    if rest.contains(['?', '#']) {
        return Err(format!(
            "{url:?} has parameters Gadget does not read; {FORM}"
        ));
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (login, host_port) = match authority.rsplit_once('@') {
        Some((login, host_port)) => (Some(login), host_port),
        None => (None, authority),
    };
    let (user, password) = match login {
        None => (None, None),
        Some(login) => {
            let (user, password) = match login.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (login, None),
            };
            let user = Some(decode(user, url)?).filter(|u| !u.is_empty());
            let password = password.map(|p| decode(p, url)).transpose()?;
            // `redis://secret@host`: a lone word is the password, as in Redis's clients
            match password {
                Some(p) => (user, Some(p)),
                None => (None, user),
            }
        }
    };
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("unclosed [ in {url:?}; {FORM}"))?;
            (host, after.strip_prefix(':'))
        }
        None => match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        },
    };
    let host = if host.is_empty() { "127.0.0.1" } else { host };
    let port = match port {
        None | Some("") => 6379,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("port {p:?} in {url:?} is not a port from 1 to 65535"))?,
    };
    let db = match path {
        "" => 0,
        n => database(n, url)?,
    };
    Ok(Target {
        address: Address::Tcp(host.to_string(), port),
        user,
        password,
        db,
    })
}

/// `url` with its password, if any, replaced by `***`, for messages.
pub(crate) fn redacted(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let authority_start = scheme_end + 3;
    let authority_end = url[authority_start..]
        .find('/')
        .map_or(url.len(), |i| authority_start + i);
    match url[authority_start..authority_end].rfind('@') {
        None => url.to_string(),
        Some(at) => {
            let login = &url[authority_start..authority_start + at];
            let shown = match login.split_once(':') {
                Some((user, _)) => format!("{user}:***"),
                None => "***".to_string(),
            };
            format!(
                "{}{shown}{}",
                &url[..authority_start],
                &url[authority_start + at..]
            )
        }
    }
}

fn database(n: &str, url: &str) -> Result<u32, String> {
    n.parse()
        .map_err(|_| format!("database {n:?} in {url:?} is not a number such as 0"))
}

/// `s` with its `%XX` escapes decoded.
fn decode(s: &str, url: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("a bad %-escape in {:?}", redacted(url)))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| format!("a %-escape that is not UTF-8 in {:?}", redacted(url)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Address {
        Address::Tcp(host.to_string(), port)
    }

    #[test]
    fn urls_as_redis_clients_read_them() {
        let t = parse("redis://127.0.0.1:6380").unwrap();
        assert_eq!(
            (t.address, t.user, t.password, t.db),
            (tcp("127.0.0.1", 6380), None, None, 0)
        );
        let t = parse("redis://alice:p%40ss@db.example:7000/3").unwrap();
        assert_eq!(t.address, tcp("db.example", 7000));
        assert_eq!(t.user.as_deref(), Some("alice"));
        assert_eq!(t.password.as_deref(), Some("p@ss"));
        assert_eq!(t.db, 3);
        let t = parse("redis://:secret@localhost").unwrap();
        assert_eq!((t.user, t.password.as_deref()), (None, Some("secret")));
        assert_eq!(t.address, tcp("localhost", 6379));
        assert_eq!(
            parse("redis://secret@h").unwrap().password.as_deref(),
            Some("secret")
        );
        assert_eq!(
            parse("redis://[::1]:6390").unwrap().address,
            tcp("::1", 6390)
        );
        let t = parse("unix:///run/redis.sock?db=2").unwrap();
        assert_eq!(
            (t.address, t.db),
            (Address::Unix("/run/redis.sock".into()), 2)
        );
    }

    #[test]
    fn bad_urls_say_what_a_url_looks_like() {
        for (url, says) in [
            ("http://x", "not a Redis URL"),
            ("rediss://x", "TLS"),
            ("redis://h:0", "port"),
            ("redis://h:99999", "port"),
            ("redis://h/x", "database"),
            ("redis://h?protocol=resp3", "parameters"),
            ("unix://", "socket path"),
            ("redis://a:%zz@h", "%-escape"),
        ] {
            let e = parse(url).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
        }
    }

    #[test]
    fn messages_never_show_the_password() {
        assert_eq!(
            redacted("redis://alice:pw@h:1/2"),
            "redis://alice:***@h:1/2"
        );
        assert_eq!(redacted("redis://pw@h"), "redis://***@h");
        assert_eq!(redacted("redis://h:1"), "redis://h:1");
        assert!(!format!("{:?}", parse("redis://:pw@h").unwrap()).contains("pw"));
    }
}
