//! The rtnetlink connection: one plain blocking netlink socket bound to one
//! namespace, with hand-built messages and a synchronous request/ack loop.
//!
//! The socket is created while the thread is switched into the target
//! namespace (through [`crate::netns`]) and keeps that namespace for its
//! whole life, so no later request needs `setns`.
//!
//! Messages are written and read here byte by byte instead of through
//! `netlink-packet-route`: the plugins need a handful of message kinds and
//! attributes, and the generic parser cost about 0.5 MiB of code per binary
//! and most of the CPU time of a request (it decodes every attribute of
//! every reply, statistics included). No async runtime is involved: every
//! call is a fresh process doing a few dozen requests, one after another or
//! pipelined with [`Netlink::requests`].

use std::cell::{Cell, RefCell};
use std::fs::File;

use rtnetlink::sys::Socket;
use rtnetlink::sys::protocols::NETLINK_ROUTE;

use crate::error::{Errno, Error, Result};
use crate::netns;

pub const NLM_F_REQUEST: u16 = 0x01;
pub const NLM_F_ACK: u16 = 0x04;
const NLM_F_DUMP_INTR: u16 = 0x10;
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;

const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_OVERRUN: u16 = 4;
const HEADER_LEN: usize = 16;

pub const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;

const MSG_PEEK: i32 = 0x02;
const MSG_TRUNC: i32 = 0x20;

/// How often a dump the kernel flagged `NLM_F_DUMP_INTR` (the table changed
/// while it was read) is retried, as the reference's netlinksafe does.
const DUMP_ATTEMPTS: usize = 5;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn pad(buf: &mut Vec<u8>) {
    buf.resize(align4(buf.len()), 0);
}

/// A request being built: netlink header, family header, attributes.
/// Public for netlink families the plugins speak themselves (nftables).
#[derive(Debug, Clone)]
pub struct Msg {
    buf: Vec<u8>,
}

impl Msg {
    /// A message of type `kind` with `flags` (added to `NLM_F_REQUEST`, and
    /// `NLM_F_ACK` unless it is a dump) and the family header `header`.
    pub fn new(kind: u16, flags: u16, header: &[u8]) -> Msg {
        let flags = if flags & NLM_F_DUMP == NLM_F_DUMP {
            NLM_F_REQUEST | flags
        } else {
            NLM_F_REQUEST | NLM_F_ACK | flags
        };
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&[0; 4]);
        buf.extend_from_slice(&kind.to_ne_bytes());
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&[0; 8]);
        buf.extend_from_slice(header);
        pad(&mut buf);
        Msg { buf }
    }

    /// The message after its netlink header: family header and attributes.
    #[cfg(test)]
    pub(crate) fn body(&self) -> &[u8] {
        &self.buf[HEADER_LEN..]
    }

    fn flags(&self) -> u16 {
        u16::from_ne_bytes([self.buf[6], self.buf[7]])
    }

    pub fn attr(&mut self, kind: u16, data: &[u8]) -> &mut Msg {
        // Attribute payloads here are a few bytes; never near u16::MAX.
        let len = u16::try_from(4 + data.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(data);
        pad(&mut self.buf);
        self
    }

    pub fn u32(&mut self, kind: u16, v: u32) -> &mut Msg {
        self.attr(kind, &v.to_ne_bytes())
    }

    pub fn u8(&mut self, kind: u16, v: u8) -> &mut Msg {
        self.attr(kind, &[v])
    }

    /// A NUL-terminated string attribute.
    pub fn str(&mut self, kind: u16, s: &str) -> &mut Msg {
        let mut data = Vec::with_capacity(s.len() + 1);
        data.extend_from_slice(s.as_bytes());
        data.push(0);
        self.attr(kind, &data)
    }

    /// A nested attribute whose content `f` writes.
    pub fn nest(&mut self, kind: u16, f: impl FnOnce(&mut Msg)) -> &mut Msg {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0, 0]);
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        f(self);
        let len = u16::try_from(self.buf.len() - start).unwrap_or(u16::MAX);
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
        self
    }

    /// Raw bytes inside a nest (the veth peer's `ifinfomsg`).
    pub fn raw(&mut self, data: &[u8]) -> &mut Msg {
        self.buf.extend_from_slice(data);
        pad(&mut self.buf);
        self
    }
}

/// The attributes of a message body, as (type, payload) pairs.
pub fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([b[0], b[1]]));
        if len < 4 || len > b.len() {
            return None;
        }
        let kind = u16::from_ne_bytes([b[2], b[3]]) & NLA_TYPE_MASK;
        let data = &b[4..len];
        b = &b[align4(len).min(b.len())..];
        Some((kind, data))
    })
}

pub fn u32_of(d: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(d.get(..4)?.try_into().ok()?))
}

pub(crate) fn u16_of(d: &[u8]) -> Option<u16> {
    Some(u16::from_ne_bytes(d.get(..2)?.try_into().ok()?))
}

/// A string attribute without its terminating NUL.
pub fn str_of(d: &[u8]) -> String {
    let end = d.iter().position(|b| *b == 0).unwrap_or(d.len());
    String::from_utf8_lossy(&d[..end]).into_owned()
}

/// The messages of one datagram: type, flags, sequence number, body.
fn messages(mut data: &[u8]) -> impl Iterator<Item = (u16, u16, u32, &[u8])> {
    std::iter::from_fn(move || {
        if data.len() < HEADER_LEN {
            return None;
        }
        let len = u32_of(data)? as usize;
        if len < HEADER_LEN || len > data.len() {
            return None;
        }
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        let flags = u16::from_ne_bytes([data[6], data[7]]);
        let seq = u32_of(&data[8..])?;
        let body = &data[HEADER_LEN..len];
        data = &data[align4(len).min(data.len())..];
        Some((kind, flags, seq, body))
    })
}

/// The error code leading an `NLMSG_ERROR` or `NLMSG_DONE` body.
fn i32_of(body: &[u8]) -> i32 {
    body.get(..4)
        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// The bodies of a request's reply messages.
pub(crate) type Replies = Vec<Vec<u8>>;

/// An rtnetlink connection bound to one network namespace.
#[derive(Debug)]
pub struct Netlink {
    sock: Socket,
    seq: Cell<u32>,
    /// `NETLINK_GET_STRICT_CHK` is on.
    strict: Cell<bool>,
    /// Receive buffer, reused across requests.
    buf: RefCell<Vec<u8>>,
}

impl Netlink {
    /// A connection in the calling thread's current namespace (the
    /// plugin's own, "host", namespace).
    pub fn host() -> Result<Netlink> {
        connect()
    }

    /// A connection inside the namespace `ns` (e.g. `args.netns.file()?`).
    pub fn in_netns(ns: &File) -> Result<Netlink> {
        netns::run(ns, connect)?
    }

    /// Send one request and collect the bodies (family header and
    /// attributes) of its replies. Dumps interrupted by concurrent changes
    /// are retried.
    pub(crate) fn request(&self, op: &str, mut msg: Msg) -> Result<Vec<Vec<u8>>> {
        let dump = msg.flags() & NLM_F_DUMP == NLM_F_DUMP;
        for _ in 0..DUMP_ATTEMPTS {
            let seq = self.send(op, &mut msg)?;
            let (replies, interrupted) = self.collect(op, seq)?;
            if !(dump && interrupted) {
                return Ok(replies);
            }
        }
        Err(Error::other(
            op,
            format!("dump interrupted {DUMP_ATTEMPTS} times"),
        ))
    }

    /// Send several non-dump requests before reading any answer (the
    /// kernel handles them in order, each on its own), then collect each
    /// one's replies: one round trip instead of one per request.
    pub(crate) fn pipeline(&self, reqs: Vec<(&str, Msg)>) -> Vec<Result<Replies>> {
        let sent: Vec<_> = reqs
            .into_iter()
            .map(|(op, mut msg)| (op, self.send(op, &mut msg)))
            .collect();
        sent.into_iter()
            .map(|(op, seq)| seq.and_then(|s| self.collect(op, s).map(|(r, _)| r)))
            .collect()
    }

    /// Two pipelined requests and their separate answers.
    pub(crate) fn request_pair(
        &self,
        a: (&str, Msg),
        b: (&str, Msg),
    ) -> (Result<Replies>, Result<Replies>) {
        let mut out = self.pipeline(vec![a, b]).into_iter();
        let first = out
            .next()
            .unwrap_or_else(|| Err(Error::other("netlink", "no answer")));
        let second = out
            .next()
            .unwrap_or_else(|| Err(Error::other("netlink", "no answer")));
        (first, second)
    }

    /// Ask the kernel to honour the filters in dump request headers (an
    /// interface index, say). Kernels without it ignore the option and dump
    /// everything, so callers filter the replies as well.
    pub(crate) fn set_strict(&self) {
        if !self.strict.replace(true) {
            let _ = self.sock.set_netlink_get_strict_chk(true);
        }
    }

    fn send(&self, op: &str, msg: &mut Msg) -> Result<u32> {
        let seq = self.seq.get().wrapping_add(1);
        self.seq.set(seq);
        let len = u32::try_from(msg.buf.len()).unwrap_or(u32::MAX);
        msg.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        msg.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        loop {
            match self.sock.send(&msg.buf, 0) {
                Ok(_) => return Ok(seq),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(op, &e)),
            }
        }
    }

    /// Read one datagram into the shared buffer, sized to fit it.
    fn recv(&self, op: &str) -> Result<std::cell::RefMut<'_, Vec<u8>>> {
        let mut buf = self.buf.borrow_mut();
        loop {
            buf.clear();
            // MSG_TRUNC reports the datagram's real size; peek until the
            // buffer holds it, so a large reply is never cut short.
            let size = match self.sock.recv(&mut *buf, MSG_PEEK | MSG_TRUNC) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(op, &e)),
            };
            if size > buf.capacity() {
                buf.reserve(size);
                continue;
            }
            buf.clear();
            match self.sock.recv(&mut *buf, 0) {
                Ok(_) => return Ok(buf),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(op, &e)),
            }
        }
    }

    /// Read the answers to request `seq` until its ack (or `NLMSG_DONE`
    /// for a dump); also returns whether the dump was interrupted.
    fn collect(&self, op: &str, seq: u32) -> Result<(Vec<Vec<u8>>, bool)> {
        let mut out = Vec::new();
        let mut interrupted = false;
        loop {
            let data = self.recv(op)?;
            for (kind, flags, mseq, body) in messages(&data) {
                // Answers to earlier requests whose acks were not awaited.
                if mseq != seq {
                    continue;
                }
                interrupted |= flags & NLM_F_DUMP_INTR != 0;
                match kind {
                    NLMSG_NOOP => {}
                    NLMSG_ERROR | NLMSG_DONE => {
                        let code = i32_of(body);
                        if code < 0 {
                            return Err(Error::errno(op, Errno::from_raw(-code)));
                        }
                        return Ok((out, interrupted));
                    }
                    NLMSG_OVERRUN => return Err(Error::other(op, "netlink buffer overrun")),
                    // Every request asks for an ack (dumps end with
                    // NLMSG_DONE), so replies are collected until then.
                    _ => out.push(body.to_vec()),
                }
            }
        }
    }
}

fn connect() -> Result<Netlink> {
    open(NETLINK_ROUTE)
}

fn open(protocol: isize) -> Result<Netlink> {
    // Not bound explicitly: the kernel binds on the first send.
    let sock = Socket::new(protocol).map_err(|e| Error::io("open netlink socket", &e))?;
    Ok(Netlink {
        sock,
        seq: Cell::new(0),
        strict: Cell::new(false),
        buf: RefCell::new(Vec::with_capacity(16 * 1024)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_padded_nested_attributes() {
        let mut m = Msg::new(16, NLM_F_CREATE, &[0; 16]);
        m.str(3, "eth0").nest(18, |m| {
            m.str(1, "veth");
        });
        let body = &m.buf[HEADER_LEN + 16..];
        let got: Vec<(u16, Vec<u8>)> = attrs(body).map(|(k, d)| (k, d.to_vec())).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], (3, b"eth0\0".to_vec()));
        assert_eq!(got[1].0, 18);
        let inner: Vec<(u16, &[u8])> = attrs(&got[1].1).collect();
        assert_eq!(inner, vec![(1, &b"veth\0"[..])]);
        assert_eq!(m.buf.len() % 4, 0);
        assert_eq!(m.flags(), NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE);
        let d = Msg::new(18, NLM_F_DUMP, &[0; 16]);
        assert_eq!(d.flags(), NLM_F_REQUEST | NLM_F_DUMP);
    }

    #[test]
    fn attribute_parser_stops_at_garbage() {
        // Second attribute claims more bytes than there are.
        let b = [8, 0, 1, 0, 1, 2, 3, 4, 200, 0, 2, 0];
        let got: Vec<_> = attrs(&b).collect();
        assert_eq!(got, vec![(1, &[1u8, 2, 3, 4][..])]);
        assert_eq!(str_of(b"lo\0\0"), "lo");
        assert_eq!(u32_of(&[1, 0]), None);
    }

    #[test]
    fn request_errors_carry_errno() {
        let nl = Netlink::host().unwrap();
        // RTM_GETLINK for an index that cannot exist.
        let mut hdr = [0u8; 16];
        hdr[4..8].copy_from_slice(&0x7fff_fff0i32.to_ne_bytes());
        let e = nl.request("find link", Msg::new(18, 0, &hdr)).unwrap_err();
        assert!(e.is(Errno::ENODEV), "{e}");
    }
}
