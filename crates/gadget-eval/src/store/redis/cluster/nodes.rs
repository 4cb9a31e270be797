//! The nodes of a Redis Cluster as one pipeline: commands are staged per node by their key's
//! slot, sent to every node before any reply is read (the round trips overlap), and a command
//! a node redirects (`MOVED`: the slot lives elsewhere now; `ASK`: it is being migrated) is
//! sent again where the node says, the slot map refreshed after a `MOVED`.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::super::connection::{Commands, Connection, Failure};
use super::super::reply::{frame, Frame, ProtocolError, Reply};
use super::super::slot::SLOTS;
use super::super::url::{Address, Target};
use crate::remote::NodeLink;

/// How many times a command follows redirects before the request fails: a slot moves once
/// per migration, so more means the cluster is reconfiguring faster than it answers.
const MAX_REDIRECTS: usize = 5;

/// Marks a slot served by no node.
const NO_SLOT: u16 = u16::MAX;

/// One command staged on a node.
#[derive(Debug, Clone, Copy)]
struct Unit {
    /// Its bytes in the node's staged commands.
    start: usize,
    end: usize,
    /// The slot of its key ([`NO_SLOT`] for none).
    slot: u16,
    /// Its reply is kept for the request under this ticket.
    keep: Option<u32>,
    /// Preceded by `ASKING` (one more reply, `+OK`, to read first).
    asking: bool,
}

/// A failure, and the node it came from: a message names that node, not the seed the
/// client was given.
#[derive(Debug)]
pub(crate) struct Failed {
    /// `host:port` of the node whose connection or reply failed; `None` for the cluster as a
    /// whole (its slots moving faster than it answers).
    pub(crate) node: Option<String>,
    /// What went wrong.
    pub(crate) failure: Failure,
}

impl Failed {
    /// `failure` on the node at `host:port`.
    fn at(host: &str, port: u16, failure: impl Into<Failure>) -> Failed {
        Failed {
            node: Some(format!("{host}:{port}")),
            failure: failure.into(),
        }
    }
}

/// One node: its connection and the commands staged for it.
struct Node {
    con: Connection,
    host: String,
    port: u16,
    staged: Commands,
    units: Vec<Unit>,
}

/// A redirect a node answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    /// `ASK` (once, to the importing node) rather than `MOVED` (for good).
    pub ask: bool,
    /// The slot.
    pub slot: u16,
    /// Where to go.
    pub host: String,
    /// Its port.
    pub port: u16,
}

/// `MOVED 3999 127.0.0.1:6381` or `ASK 3999 127.0.0.1:6381`, from an error reply's text.
pub(crate) fn redirect(error: &[u8]) -> Option<Redirect> {
    let text = std::str::from_utf8(error).ok()?;
    let mut words = text.split(' ');
    let ask = match words.next()? {
        "MOVED" => false,
        "ASK" => true,
        _ => return None,
    };
    let slot = words.next()?.parse().ok()?;
    let (host, port) = words.next()?.rsplit_once(':')?;
    Some(Redirect {
        ask,
        slot,
        host: if host.is_empty() { "127.0.0.1" } else { host }.to_string(),
        port: port.parse().ok()?,
    })
}

/// Every error in a reply (an `EXEC` answers with one reply per command): the redirect
/// among them, else the first error.
fn look_at(reply: &[u8]) -> (Option<Redirect>, Option<String>) {
    let mut at = 0;
    let mut first = None;
    while let Ok(Some((f, next))) = frame(reply, at) {
        if let Frame::Error(e) = f {
            if let Some(r) = redirect(e) {
                return (Some(r), None);
            }
            first.get_or_insert_with(|| String::from_utf8_lossy(e).into_owned());
        }
        at = next;
    }
    (None, first)
}

/// The nodes of one cluster, as one pipeline.
pub(crate) struct Nodes {
    nodes: Vec<Node>,
    /// The node of each slot.
    slots: Vec<u16>,
    /// How to log in to any node (its address is each node's own).
    login: Target,
    timeout: Duration,
    stop: Arc<AtomicBool>,
    /// Delayed links to nodes: every node but `home` is reached through its link.
    links: Vec<NodeLink>,
    home: usize,
    /// Replies kept for the request: their bytes, and each one's ticket and span.
    kept: Vec<u8>,
    kept_at: Vec<(u32, usize, usize)>,
    next_ticket: u32,
    /// Units to send again after this round, with their bytes.
    again: Vec<Again>,
    again_bytes: Commands,
}

impl Nodes {
    /// Connects to the cluster through `seed` (any node) and reads its slot map.
    pub(crate) fn connect(
        seed: &Target,
        timeout: Duration,
        stop: Arc<AtomicBool>,
    ) -> Result<Nodes, Failed> {
        let mut nodes = Nodes {
            nodes: Vec::new(),
            slots: vec![NO_SLOT; SLOTS],
            login: seed.clone(),
            timeout,
            stop,
            links: Vec::new(),
            home: 0,
            kept: Vec::new(),
            kept_at: Vec::new(),
            next_ticket: 0,
            again: Vec::new(),
            again_bytes: Commands::default(),
        };
        let Address::Tcp(host, port) = &seed.address else {
            return Err(Failed {
                node: None,
                failure: Failure::Server(
                    "a Redis Cluster is reached over TCP (redis://host:port), not a Unix socket"
                        .into(),
                ),
            });
        };
        nodes.node(host, *port)?;
        nodes.refresh(0)?;
        Ok(nodes)
    }

    /// The index of the node at `host:port`, connecting to it when it is new.
    fn node(&mut self, host: &str, port: u16) -> Result<usize, Failed> {
        if let Some(i) = self
            .nodes
            .iter()
            .position(|n| n.port == port && n.host == host)
        {
            return Ok(i);
        }
        let con = self
            .open(host, port, self.nodes.len())
            .map_err(|f| Failed::at(host, port, f))?;
        self.nodes.push(Node {
            con,
            host: host.to_string(),
            port,
            staged: Commands::default(),
            units: Vec::new(),
        });
        Ok(self.nodes.len() - 1)
    }

    /// A connection to node `index` at `host:port`: through its link when it has one and is
    /// not the home node.
    fn open(&self, host: &str, port: u16, index: usize) -> Result<Connection, Failure> {
        let link = (index != self.home)
            .then(|| {
                self.links
                    .iter()
                    .find(|l| l.node.port() == port && l.node.ip().to_string() == host)
            })
            .flatten();
        let address = match link {
            Some(l) => Address::Tcp(l.via.ip().to_string(), l.via.port()),
            None => Address::Tcp(host.to_string(), port),
        };
        let target = Target {
            address,
            db: 0,
            ..self.login.clone()
        };
        Connection::open(&target, self.timeout, self.stop.clone())
    }

    /// Reaches every node but `home` through its link from now on (connections to them are
    /// opened again through the links).
    pub(crate) fn link(&mut self, links: &[NodeLink], home: usize) -> Result<(), Failed> {
        self.links = links.to_vec();
        self.home = home;
        for i in 0..self.nodes.len() {
            if i != home {
                let (host, port) = (self.nodes[i].host.clone(), self.nodes[i].port);
                self.nodes[i].con = self
                    .open(&host, port, i)
                    .map_err(|f| Failed::at(&host, port, f))?;
            }
        }
        Ok(())
    }

    /// Reads the slot map (`CLUSTER SLOTS`) from node `from`; every slot must be served.
    pub(crate) fn refresh(&mut self, from: usize) -> Result<(), Failed> {
        let node = &mut self.nodes[from];
        let ranges =
            slot_ranges(&mut node.con).map_err(|f| Failed::at(&node.host, node.port, f))?;
        for slot in self.slots.iter_mut() {
            *slot = NO_SLOT;
        }
        for (start, end, host, port) in ranges {
            let host = if host.is_empty() {
                "127.0.0.1".to_string()
            } else {
                host
            };
            let n = self.node(&host, port)? as u16;
            for s in start..=end.min(SLOTS as u16 - 1) {
                self.slots[s as usize] = n;
            }
        }
        if let Some(s) = self.slots.iter().position(|&n| n == NO_SLOT) {
            let node = &self.nodes[from];
            return Err(Failed::at(&node.host, node.port, Failure::Server(format!(
                "slot {s} is served by no node: the cluster is not complete (CLUSTER INFO says cluster_state:fail)"
            ))));
        }
        Ok(())
    }

    /// How many nodes serve slots.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The node serving `slot`.
    pub(crate) fn of_slot(&self, slot: u16) -> usize {
        self.slots[slot as usize] as usize
    }

    /// `host:port` of every node, in index order.
    pub(crate) fn addresses(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("{}:{}", n.host, n.port))
            .collect()
    }

    /// Stages one command for `slot`'s node, written by `write`; with `keep`, its reply is
    /// kept under the returned ticket. The node it went to.
    pub(crate) fn stage(
        &mut self,
        slot: u16,
        keep: bool,
        write: impl FnOnce(&mut Commands),
    ) -> (usize, Option<u32>) {
        let n = self.of_slot(slot);
        let ticket = keep.then(|| self.ticket());
        self.push(n, slot, ticket, write);
        (n, ticket)
    }

    fn ticket(&mut self) -> u32 {
        self.next_ticket = self.next_ticket.wrapping_add(1);
        self.next_ticket
    }

    fn push(&mut self, n: usize, slot: u16, keep: Option<u32>, write: impl FnOnce(&mut Commands)) {
        let node = &mut self.nodes[n];
        let start = node.staged.bytes().len();
        write(&mut node.staged);
        node.units.push(Unit {
            start,
            end: node.staged.bytes().len(),
            slot,
            keep,
            asking: false,
        });
    }

    /// True when nothing is staged.
    pub(crate) fn is_idle(&self) -> bool {
        self.nodes.iter().all(|n| n.units.is_empty())
    }

    /// The kept reply of `ticket`, after [`Self::flush`].
    pub(crate) fn kept(&self, ticket: u32) -> Option<Reply<'_>> {
        self.kept_at
            .iter()
            .find(|k| k.0 == ticket)
            .map(|&(_, a, b)| Reply::new(&self.kept[a..b]))
    }

    /// Sends everything staged, to every node before reading any reply, follows redirects,
    /// and keeps the replies asked for; the first error a node answered with fails it
    /// after every reply is read, so the connections stay usable.
    pub(crate) fn flush(&mut self) -> Result<(), Failed> {
        self.kept.clear();
        self.kept_at.clear();
        let mut first_error: Option<Failed> = None;
        for round in 0..=MAX_REDIRECTS {
            if self.is_idle() {
                break;
            }
            if round == MAX_REDIRECTS {
                self.discard();
                return Err(Failed {
                    node: None,
                    failure: Failure::Server(format!(
                        "still redirected after {MAX_REDIRECTS} tries: the cluster's slots are moving faster than it answers"
                    )),
                });
            }
            for node in &mut self.nodes {
                if !node.units.is_empty() {
                    let count = node.units.len() + node.units.iter().filter(|u| u.asking).count();
                    node.con.commands().push_raw(node.staged.bytes(), count);
                    node.con
                        .send()
                        .map_err(|f| Failed::at(&node.host, node.port, f))?;
                }
            }
            let mut moved = false;
            for n in 0..self.nodes.len() {
                moved |= self.read_replies(n, &mut first_error)?;
            }
            if moved {
                self.refresh(0)?;
            }
            self.restage()?;
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Reads node `n`'s replies, in the order its units were sent; redirected units are
    /// copied to `again`. Whether a `MOVED` was among them.
    fn read_replies(&mut self, n: usize, first_error: &mut Option<Failed>) -> Result<bool, Failed> {
        let mut moved = false;
        let node = &mut self.nodes[n];
        let at = |f: Failure| Failed::at(&node.host, node.port, f);
        for u in &node.units {
            if u.asking {
                node.con.raw_reply().map_err(at)?;
            }
            let reply = node.con.raw_reply().map_err(at)?;
            match look_at(reply) {
                (Some(r), _) => {
                    moved |= !r.ask;
                    let bytes = &node.staged.bytes()[u.start..u.end];
                    let ask = r.ask.then_some(r);
                    self.again
                        .push(Again::copy(&mut self.again_bytes, bytes, *u, ask));
                }
                (None, Some(e)) => {
                    first_error.get_or_insert_with(|| at(Failure::Server(e)));
                }
                (None, None) => {
                    if let Some(ticket) = u.keep {
                        let start = self.kept.len();
                        self.kept.extend_from_slice(reply);
                        self.kept_at.push((ticket, start, self.kept.len()));
                    }
                }
            }
        }
        node.staged.clear();
        node.units.clear();
        Ok(moved)
    }

    /// Stages the redirected units again: after an `ASK` on the node it names, preceded by
    /// `ASKING`; after a `MOVED` on its slot's node in the refreshed map.
    fn restage(&mut self) -> Result<(), Failed> {
        let again = std::mem::take(&mut self.again);
        let bytes = std::mem::take(&mut self.again_bytes);
        for a in &again {
            let b = &bytes.bytes()[a.unit.start..a.unit.end];
            let (n, asking) = match &a.ask {
                Some(r) => (self.node(&r.host, r.port)?, true),
                None => (self.of_slot(a.unit.slot), false),
            };
            let node = &mut self.nodes[n];
            if asking {
                node.staged.command(1).arg(b"ASKING");
            }
            let start = node.staged.bytes().len();
            node.staged.push_raw(b, 1);
            node.units.push(Unit {
                start,
                end: node.staged.bytes().len(),
                asking,
                ..a.unit
            });
        }
        self.again = again;
        self.again.clear();
        self.again_bytes = bytes;
        self.again_bytes.clear();
        Ok(())
    }

    /// Forgets everything staged (after a failure).
    pub(crate) fn discard(&mut self) {
        for node in &mut self.nodes {
            node.staged.clear();
            node.units.clear();
            node.con.discard_unsent();
        }
        self.again.clear();
        self.again_bytes.clear();
    }

    /// True when a connection failed part-way and must not be used again.
    pub(crate) fn is_broken(&self) -> bool {
        self.nodes.iter().any(|n| n.con.is_broken())
    }

    /// Runs `f` on a fresh connection to every node (the run's cleanup), in order.
    pub(crate) fn each_fresh(
        &self,
        timeout: Duration,
        mut f: impl FnMut(&mut Connection) -> Result<(), Failure>,
    ) -> Result<(), Failed> {
        for node in &self.nodes {
            let target = Target {
                address: Address::Tcp(node.host.clone(), node.port),
                db: 0,
                ..self.login.clone()
            };
            let at = |f: Failure| Failed::at(&node.host, node.port, f);
            let mut con = Connection::open(&target, timeout, Arc::default()).map_err(at)?;
            f(&mut con).map_err(at)?;
        }
        Ok(())
    }

    /// Runs `f` on every node's own connection, in order.
    pub(crate) fn each(
        &mut self,
        mut f: impl FnMut(&mut Connection) -> Result<(), Failure>,
    ) -> Result<(), Failed> {
        for node in &mut self.nodes {
            f(&mut node.con).map_err(|e| Failed::at(&node.host, node.port, e))?;
        }
        Ok(())
    }
}

/// A unit to send again, its bytes copied out of the node that redirected it.
struct Again {
    unit: Unit,
    /// The `ASK` that redirected it (it goes to that node, once), `None` for a `MOVED`.
    ask: Option<Redirect>,
}

impl Again {
    fn copy(out: &mut Commands, bytes: &[u8], unit: Unit, ask: Option<Redirect>) -> Again {
        let start = out.bytes().len();
        out.push_raw(bytes, 1);
        Again {
            unit: Unit {
                start,
                end: out.bytes().len(),
                asking: false,
                ..unit
            },
            ask,
        }
    }
}

/// The slot ranges `CLUSTER SLOTS` on `con` lists: first slot, last slot, master host, port.
fn slot_ranges(con: &mut Connection) -> Result<Vec<(u16, u16, String, u16)>, Failure> {
    con.command(2).arg(b"CLUSTER").arg(b"SLOTS");
    let reply = con.round_trip()?;
    let mut ranges: Vec<(u16, u16, String, u16)> = Vec::new();
    for range in reply.items()? {
        let mut fields = range?.items()?;
        let mut number = |what: &'static str| -> Result<Reply<'_>, ProtocolError> {
            fields.next().unwrap_or(Err(ProtocolError {
                offset: 0,
                message: what,
            }))
        };
        let start = integer(number("a CLUSTER SLOTS range without a start")?)?;
        let end = integer(number("a CLUSTER SLOTS range without an end")?)?;
        let mut master = number("a CLUSTER SLOTS range without a master")?.items()?;
        let host = master
            .next()
            .transpose()?
            .and_then(|h| h.bulk().ok().flatten());
        let port = master.next().transpose()?.map(integer).transpose()?;
        let (Some(host), Some(port)) = (host, port) else {
            return Err(ProtocolError {
                offset: 0,
                message: "a CLUSTER SLOTS master without an address",
            }
            .into());
        };
        let host = String::from_utf8_lossy(host).into_owned();
        ranges.push((start as u16, end as u16, host, port as u16));
    }
    Ok(ranges)
}

/// An integer reply (`:123`).
fn integer(r: Reply<'_>) -> Result<i64, ProtocolError> {
    r.integer()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_are_read_from_error_replies() {
        assert_eq!(
            redirect(b"MOVED 3999 127.0.0.1:6381"),
            Some(Redirect {
                ask: false,
                slot: 3999,
                host: "127.0.0.1".into(),
                port: 6381
            })
        );
        let ask = redirect(b"ASK 12 :7002").unwrap();
        assert!(ask.ask);
        assert_eq!((ask.host.as_str(), ask.port), ("127.0.0.1", 7002));
        assert_eq!(redirect(b"ERR unknown command"), None);
        assert_eq!(redirect(b"MOVED x 1:2"), None);
    }

    #[test]
    fn a_redirect_inside_an_exec_reply_is_found() {
        let (r, e) = look_at(b"*2\r\n+OK\r\n-MOVED 7 10.0.0.1:7001\r\n");
        assert_eq!(r.map(|r| r.port), Some(7001));
        assert_eq!(e, None);
        let (r, e) = look_at(b"-EXECABORT Transaction discarded\r\n");
        assert!(r.is_none());
        assert!(e.unwrap().starts_with("EXECABORT"));
    }
}
