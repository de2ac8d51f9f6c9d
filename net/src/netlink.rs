//! Netlink connections: plain blocking sockets bound to one namespace,
//! hand-built messages ([`Msg`]) and one synchronous request/ack loop, for
//! every netlink protocol the suite speaks (`NETLINK_ROUTE` for links,
//! addresses, routes and tc; `NETLINK_NETFILTER` for nf_tables and
//! later conntrack).
//!
//! A socket is created while the thread is switched into the target
//! namespace (through [`crate::netns`]) and keeps that namespace for its
//! whole life, so no later request needs `setns`. A [`Netlink`] handle
//! opens its rtnetlink socket at once and its netfilter socket on first use,
//! in the same namespace.
//!
//! Messages are written and read here byte by byte instead of through
//! `netlink-packet-route`: the plugins need a handful of message kinds and
//! attributes, and the generic parser cost about 0.5 MiB of code per binary
//! and most of the CPU time of a request (it decodes every attribute of
//! every reply, statistics included). The tests decode what we build with
//! it, so our encoders are checked against an independent one. No async
//! runtime is involved: every call is a fresh process doing a few dozen
//! requests, one after another, pipelined ([`crate::Batch`]) or as one
//! nfnetlink batch ([`crate::nftables`]).

use std::cell::{Cell, OnceCell, RefCell};
use std::fs::File;
use std::os::fd::AsFd;

use netlink_sys::Socket;
use netlink_sys::protocols::{NETLINK_NETFILTER, NETLINK_ROUTE};

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
const MSG_DONTWAIT: i32 = 0x40;

/// How often a dump the kernel flagged `NLM_F_DUMP_INTR` (the table changed
/// while it was read) is retried, as the reference's netlinksafe does.
const DUMP_ATTEMPTS: usize = 5;

/// At most this many pipelined requests wait for their answers at once.
/// The kernel queues every answer on our socket as it handles the request,
/// and drops what does not fit in the receive buffer (about 200 KiB: some
/// 250 acks, each a small skb with its overhead); waiting for a dropped
/// answer would never end (3000 conntrack deletes in one go hung).
const PIPELINE_WINDOW: usize = 64;

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
            flags
        } else {
            NLM_F_ACK | flags
        };
        Msg::with_flags(kind, flags, header)
    }

    /// A message with exactly `flags` besides `NLM_F_REQUEST` (no implied
    /// `NLM_F_ACK`): the parts of a batch that need no answer of their own.
    pub fn with_flags(kind: u16, flags: u16, header: &[u8]) -> Msg {
        let flags = NLM_F_REQUEST | flags;
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
    pub fn body(&self) -> &[u8] {
        &self.buf[HEADER_LEN..]
    }

    /// The whole message as sent (length and sequence number are filled in
    /// when it is sent).
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn kind(&self) -> u16 {
        u16::from_ne_bytes([self.buf[4], self.buf[5]])
    }

    pub fn flags(&self) -> u16 {
        u16::from_ne_bytes([self.buf[6], self.buf[7]])
    }

    /// Add `flags` to the message's flags.
    pub fn add_flags(&mut self, flags: u16) {
        let f = self.flags() | flags;
        self.buf[6..8].copy_from_slice(&f.to_ne_bytes());
    }

    /// Fill in the length and sequence number.
    fn seal(&mut self, seq: u32) {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
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

    /// A big-endian 32-bit attribute (nf_tables' integers).
    pub fn be32(&mut self, kind: u16, v: u32) -> &mut Msg {
        self.attr(kind, &v.to_be_bytes())
    }

    /// A big-endian 64-bit attribute (nf_tables' handles).
    pub fn be64(&mut self, kind: u16, v: u64) -> &mut Msg {
        self.attr(kind, &v.to_be_bytes())
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

pub fn be32_of(d: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(..4)?.try_into().ok()?))
}

pub fn be64_of(d: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(d.get(..8)?.try_into().ok()?))
}

/// A string attribute without its terminating NUL.
pub fn str_of(d: &[u8]) -> String {
    let end = d.iter().position(|b| *b == 0).unwrap_or(d.len());
    String::from_utf8_lossy(&d[..end]).into_owned()
}

/// One message of a datagram, as [`messages`] splits it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Message<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    /// The sender's port id: 0 for the kernel's answers, the committing
    /// socket's for nf_tables' notifications.
    pub port: u32,
    pub body: &'a [u8],
}

/// The messages of one datagram.
pub(crate) fn messages(mut data: &[u8]) -> impl Iterator<Item = Message<'_>> {
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
        let port = u32_of(&data[12..])?;
        let body = &data[HEADER_LEN..len];
        data = &data[align4(len).min(data.len())..];
        Some(Message {
            kind,
            flags,
            seq,
            port,
            body,
        })
    })
}

/// The error code leading an `NLMSG_ERROR` or `NLMSG_DONE` body.
fn i32_of(body: &[u8]) -> i32 {
    body.get(..4)
        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// The bodies of a request's reply messages.
pub(crate) type Replies = Vec<Vec<u8>>;

/// A kernel error answered to one message of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub seq: u32,
    pub errno: Errno,
}

/// In a child holding only the socket `keep` and the read end `gate` of a
/// pipe whose writer is the parent: wait for the writer to close, so this
/// holds the socket's last reference, then exit (which closes it).
///
/// # Safety
///
/// Call only in a freshly forked child: every other descriptor is closed.
unsafe fn hold_until_closed(keep: i32, gate: i32) -> ! {
    use nix::libc;
    // SAFETY: see the function's contract.
    unsafe {
        crate::child_fds::close_all_but(&[keep, gate]);
        let mut b = 0u8;
        // Only an interrupted read is retried: any other error would come
        // back at once, forever (a child spinning on a CPU).
        while libc::read(gate, (&raw mut b).cast(), 1) < 0
            && *libc::__errno_location() == libc::EINTR
        {}
        // Wait out a grace period before closing (MEMBARRIER_CMD_GLOBAL is
        // a synchronize_rcu): by then the cleanup is usually done, so the
        // close does not wait for it while holding the namespace's
        // nf_tables commit mutex, which every link deletion there takes.
        libc::syscall(libc::SYS_membarrier, 1, 0);
        libc::_exit(0)
    }
}

/// In a freshly forked child holding only the socket `sock`: send the
/// sealed request `msg` (which asks for an ack), read the answer and exit
/// with the errno the kernel answered, 0 for success (255: no answer).
///
/// # Safety
///
/// Call only in a freshly forked child: every other descriptor is closed,
/// and `msg` must stay valid (the parent's memory, copied by the fork).
unsafe fn request_and_exit(sock: i32, msg: &[u8]) -> ! {
    use nix::libc;
    // SAFETY: see the function's contract; only async-signal-safe calls
    // on a stack buffer.
    unsafe {
        crate::child_fds::close_all_but(&[sock]);
        while libc::send(sock, msg.as_ptr().cast(), msg.len(), 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                libc::_exit(255);
            }
        }
        let mut buf = [0u8; 512];
        let n = loop {
            let n = libc::recv(sock, buf.as_mut_ptr().cast(), buf.len(), 0);
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break n;
            }
        };
        // nlmsghdr (16 bytes), then the negated errno of an NLMSG_ERROR.
        let kind = u16::from_ne_bytes([buf[4], buf[5]]);
        if n < 20 || kind != NLMSG_ERROR {
            libc::_exit(255);
        }
        let errno = i32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]);
        libc::_exit(errno.unsigned_abs().min(255) as i32)
    }
}

/// One netlink socket of one protocol, bound to the namespace it was
/// opened in: sequence numbers, the receive buffer and the request loop.
#[derive(Debug)]
pub(crate) struct Conn {
    sock: Socket,
    seq: Cell<u32>,
    /// `NETLINK_GET_STRICT_CHK` is on.
    strict: Cell<bool>,
    /// Receive buffer, reused across requests.
    buf: RefCell<Vec<u8>>,
}

/// A netlink connection bound to one network namespace: rtnetlink at once,
/// netfilter (nf_tables) when first needed.
#[derive(Debug)]
pub struct Netlink {
    route: Conn,
    /// The namespace of the handle, kept to open the netfilter socket there
    /// later; `None` for the thread's own.
    netns: Option<File>,
    netfilter: OnceCell<Conn>,
}

impl Netlink {
    /// A connection in the calling thread's current namespace (the
    /// plugin's own, "host", namespace).
    pub fn host() -> Result<Netlink> {
        // Inside netns::run the "current" namespace is not the thread's
        // own: keep it, to open the netfilter socket there later.
        let netns = if netns::switched() {
            Some(netns::current()?)
        } else {
            None
        };
        Ok(Netlink {
            route: Conn::open(NETLINK_ROUTE)?,
            netns,
            netfilter: OnceCell::new(),
        })
    }

    /// A connection inside the namespace `ns` (e.g. `args.netns.file()?`).
    pub fn in_netns(ns: &File) -> Result<Netlink> {
        let route = netns::run(ns, || Conn::open(NETLINK_ROUTE))??;
        let own = ns
            .try_clone()
            .map_err(|e| Error::io("duplicate netns handle", &e))?;
        Ok(Netlink {
            route,
            netns: Some(own),
            netfilter: OnceCell::new(),
        })
    }

    /// The `NETLINK_NETFILTER` socket, opened in this handle's namespace on
    /// first use. A kernel without nfnetlink refuses the socket; that is
    /// [`crate::ErrorKind::NftUnavailable`].
    pub(crate) fn netfilter(&self) -> Result<&Conn> {
        if let Some(c) = self.netfilter.get() {
            return Ok(c);
        }
        let open = || {
            Conn::open(NETLINK_NETFILTER).map_err(|e| match e.code() {
                Some(code @ (Errno::EPROTONOSUPPORT | Errno::EAFNOSUPPORT)) => {
                    Error::nft_unavailable("open netfilter netlink socket", code)
                }
                _ => e,
            })
        };
        let conn = match &self.netns {
            Some(ns) => netns::run(ns, open)??,
            // A handle of the thread's own namespace used inside
            // netns::run would open its socket in the wrong namespace.
            None if netns::switched() => {
                return Err(Error::other(
                    "open netfilter netlink socket",
                    "connection of the thread's own namespace used inside another",
                ));
            }
            None => open()?,
        };
        Ok(self.netfilter.get_or_init(|| conn))
    }

    /// Send the rtnetlink request `msg` from a child process on a socket
    /// of its own in this handle's namespace, without waiting for it;
    /// `None` when no child could be made. The child exits with the
    /// errno of the answer (0: success).
    pub(crate) fn request_detached(&self, mut msg: Msg) -> Result<Option<nix::unistd::Pid>> {
        let conn = match &self.netns {
            Some(ns) => netns::run(ns, || Conn::open(NETLINK_ROUTE))??,
            None if netns::switched() => {
                return Err(Error::other(
                    "open netlink socket",
                    "connection of the thread's own namespace used inside another",
                ));
            }
            None => Conn::open(NETLINK_ROUTE)?,
        };
        msg.seal(1);
        let sock = std::os::fd::AsRawFd::as_raw_fd(&conn.sock);
        // SAFETY: the child only makes async-signal-safe calls (close,
        // send, recv, _exit) on memory the fork copied, so forking a
        // process that may have other threads (a test harness) is sound.
        let child = match unsafe { nix::unistd::fork() } {
            // SAFETY: plain syscalls on a descriptor number and the sealed
            // message; the child owns no Rust object that would use them.
            Ok(nix::unistd::ForkResult::Child) => unsafe { request_and_exit(sock, &msg.buf) },
            Ok(nix::unistd::ForkResult::Parent { child }) => Some(child),
            Err(_) => None,
        };
        drop(conn);
        Ok(child)
    }

    /// Send one rtnetlink request and collect the bodies (family header
    /// and attributes) of its replies. Dumps interrupted by concurrent
    /// changes are retried.
    pub(crate) fn request(&self, op: &str, msg: Msg) -> Result<Replies> {
        self.route.request(op, msg)
    }

    /// See [`Conn::pipeline`].
    pub(crate) fn pipeline(&self, reqs: Vec<(&str, Msg)>) -> Vec<Result<Replies>> {
        self.route.pipeline(reqs)
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
        self.route.set_strict();
    }
}

/// Closing the last reference to a netfilter socket makes the kernel first
/// finish nf_tables' deferred cleanup of committed transactions (ours or
/// anyone's): an RCU grace period, 5-15 ms on a busy two-CPU machine, which
/// would be most of a firewall ADD or DEL. The cleanup needs nothing from
/// us, so the netfilter socket's last reference goes to a child process
/// that closes it once we have closed ours, and the plugin goes on (and
/// exits) without waiting. Rules are in force from the commit on; only the
/// freeing of replaced objects is left to the kernel. The child first
/// waits out a grace period on its own: the kernel waits for the cleanup
/// with the namespace's nf_tables commit mutex held, which every link
/// deletion there needs too (measured: a bridge DEL right after an ADD
/// with masquerade took 10 ms longer without it). Where no one would reap
/// the child ([`skel::orphans`]), the socket is closed here, waiting.
impl Drop for Netlink {
    fn drop(&mut self) {
        if let Some(conn) = self.netfilter.take() {
            conn.release();
        }
    }
}

/// How many datagrams [`Conn::drain`] reads in one call.
const DRAIN_DATAGRAMS: usize = 256;

impl Conn {
    /// Close this socket: its final release left to a child process that
    /// whoever inherits it when we exit reaps ([`Conn::release_detached`])
    /// when [`skel::orphans::reaped`], else here.
    pub(crate) fn release(self) {
        if skel::orphans::reaped() {
            let _ = self.release_detached();
        }
    }

    /// Close this socket, its final release done by a child process (see
    /// [`Netlink`]'s `Drop`), whose pid is returned. Without a pipe or a
    /// child, the socket is closed here.
    pub(crate) fn release_detached(self) -> Option<nix::unistd::Pid> {
        use std::os::fd::AsRawFd;
        let Ok((gate_r, gate_w)) = std::io::pipe() else {
            return None;
        };
        let (sock, gate) = (self.sock.as_raw_fd(), gate_r.as_raw_fd());
        // SAFETY: the child only makes async-signal-safe calls (close,
        // read, _exit) before it ends, so forking a process that may have
        // other threads (a test harness) is sound.
        let child = match unsafe { nix::unistd::fork() } {
            // SAFETY: plain syscalls on descriptor numbers; the child owns
            // no Rust object that would use them again.
            Ok(nix::unistd::ForkResult::Child) => unsafe { hold_until_closed(sock, gate) },
            Ok(nix::unistd::ForkResult::Parent { child }) => Some(child),
            Err(_) => None,
        };
        // Ours first, then the gate: the child's close is the last.
        drop(self);
        drop(gate_w);
        drop(gate_r);
        child
    }

    fn open(protocol: isize) -> Result<Conn> {
        // Not bound explicitly: the kernel binds on the first send.
        let sock = Socket::new(protocol).map_err(|e| Error::io("open netlink socket", &e))?;
        Ok(Conn {
            sock,
            seq: Cell::new(0),
            strict: Cell::new(false),
            buf: RefCell::new(Vec::with_capacity(16 * 1024)),
        })
    }

    /// A socket bound in the calling thread's current namespace and joined
    /// to the multicast `group` of `protocol`. Bound explicitly: an unbound
    /// socket that joins a group is not sent its messages.
    pub(crate) fn subscribe(protocol: isize, group: u32) -> Result<Conn> {
        let mut conn = Conn::open(protocol)?;
        let op = "subscribe to netlink group";
        conn.sock.bind_auto().map_err(|e| Error::io(op, &e))?;
        conn.sock
            .add_membership(group)
            .map_err(|e| Error::io(op, &e))?;
        Ok(conn)
    }

    pub(crate) fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// Hand the messages queued on the socket to `each`, without waiting:
    /// at most [`DRAIN_DATAGRAMS`] datagrams, so that a namespace whose
    /// commits never stop cannot keep the caller here (what is left keeps
    /// the socket readable for its next call). A receive queue that
    /// overflowed (`ENOBUFS`: messages were lost) is an error.
    pub(crate) fn drain(&self, op: &str, mut each: impl FnMut(&Message<'_>)) -> Result<()> {
        for _ in 0..DRAIN_DATAGRAMS {
            let Some(data) = self.recv(op, false)? else {
                break;
            };
            messages(&data).for_each(|m| each(&m));
        }
        Ok(())
    }

    /// Send one request and collect the bodies of its replies, retrying
    /// dumps the kernel flagged as interrupted.
    pub(crate) fn request(&self, op: &str, mut msg: Msg) -> Result<Replies> {
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
    /// At most [`PIPELINE_WINDOW`] requests are sent ahead of their answers,
    /// in one datagram: the kernel handles all of them within the one
    /// `sendmsg`, so a process killed meanwhile has made every request of
    /// the window or none (bandwidth's IFB is created with its ownership
    /// alias that way).
    pub(crate) fn pipeline(&self, reqs: Vec<(&str, Msg)>) -> Vec<Result<Replies>> {
        let mut out = Vec::with_capacity(reqs.len());
        let mut reqs = reqs.into_iter().peekable();
        while reqs.peek().is_some() {
            let mut datagram = Vec::new();
            let sent: Vec<(&str, u32)> = reqs
                .by_ref()
                .take(PIPELINE_WINDOW)
                .map(|(op, mut msg)| {
                    let seq = self.next_seq();
                    msg.seal(seq);
                    datagram.extend_from_slice(&msg.buf);
                    (op, seq)
                })
                .collect();
            let op = sent.first().map_or("netlink", |(op, _)| *op);
            match self.send_bytes(op, &datagram) {
                Ok(()) => out.extend(
                    sent.into_iter()
                        .map(|(op, s)| self.collect(op, s).map(|(r, _)| r)),
                ),
                Err(e) => out.extend(sent.iter().map(|_| Err(e.clone()))),
            }
        }
        out
    }

    /// Send `msgs` as one datagram (an nfnetlink batch: the kernel applies
    /// it as one transaction while `sendmsg` runs) and return the errors it
    /// answered, by sequence number, with the sequence numbers used.
    ///
    /// The last message that asks for an ack ends the answer: the kernel
    /// answers the batch in order. Every answer is queued by the
    /// time `sendmsg` returns, so reading never waits; an answer that is
    /// missing is reported rather than waited for.
    pub(crate) fn send_batch(
        &self,
        op: &str,
        msgs: &mut [Msg],
    ) -> Result<(Vec<u32>, Vec<Refusal>)> {
        let mut seqs = Vec::with_capacity(msgs.len());
        let mut datagram = Vec::with_capacity(msgs.iter().map(|m| m.buf.len()).sum());
        for m in msgs.iter_mut() {
            let seq = self.next_seq();
            m.seal(seq);
            seqs.push(seq);
            datagram.extend_from_slice(&m.buf);
        }
        let acked = msgs.iter().zip(&seqs).rev();
        let Some(last) = acked
            .filter(|(m, _)| m.flags() & NLM_F_ACK != 0)
            .map(|(_, s)| *s)
            .next()
        else {
            return Err(Error::other(op, "no message of the batch asks for an ack"));
        };
        self.send_bytes(op, &datagram)?;
        let mut refused = Vec::new();
        let mut done = false;
        while !done {
            let got = self.read(op, false, |kind, _, seq, body| {
                if kind == NLMSG_ERROR {
                    let code = i32_of(body);
                    if code < 0 {
                        refused.push(Refusal {
                            seq,
                            errno: Errno::from_raw(-code),
                        });
                    }
                    done |= seq == last;
                }
                Ok(done)
            })?;
            if !got {
                if refused.is_empty() {
                    return Err(Error::other(op, "the kernel did not answer the batch"));
                }
                break;
            }
        }
        Ok((seqs, refused))
    }

    fn set_strict(&self) {
        if !self.strict.replace(true) {
            let _ = self.sock.set_netlink_get_strict_chk(true);
        }
    }

    fn next_seq(&self) -> u32 {
        let seq = self.seq.get().wrapping_add(1);
        self.seq.set(seq);
        seq
    }

    fn send(&self, op: &str, msg: &mut Msg) -> Result<u32> {
        let seq = self.next_seq();
        msg.seal(seq);
        self.send_bytes(op, &msg.buf)?;
        Ok(seq)
    }

    fn send_bytes(&self, op: &str, data: &[u8]) -> Result<()> {
        #[cfg(test)]
        wire::record(wire::Dir::Sent, data);
        let mut grown = false;
        loop {
            match self.sock.send(data, 0) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // A batch larger than the send buffer (about 200 KiB by
                // default): make room once.
                Err(e) if e.raw_os_error() == Some(Errno::EMSGSIZE as i32) && !grown => {
                    grown = true;
                    let size = data.len().saturating_mul(2);
                    nix::sys::socket::setsockopt(
                        &self.sock.as_fd(),
                        nix::sys::socket::sockopt::SndBuf,
                        &size,
                    )
                    .map_err(|e| Error::errno(op, e))?;
                }
                Err(e) => return Err(Error::io(op, &e)),
            }
        }
    }

    /// Read one datagram into the shared buffer, sized to fit it; `None`
    /// when `wait` is off and nothing is queued.
    fn recv(&self, op: &str, wait: bool) -> Result<Option<std::cell::RefMut<'_, Vec<u8>>>> {
        let mut buf = self.buf.borrow_mut();
        let nowait = if wait { 0 } else { MSG_DONTWAIT };
        loop {
            buf.clear();
            // MSG_TRUNC reports the datagram's real size; peek until the
            // buffer holds it, so a large reply is never cut short.
            let size = match self.sock.recv(&mut *buf, MSG_PEEK | MSG_TRUNC | nowait) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && !wait => return Ok(None),
                Err(e) => return Err(Error::io(op, &e)),
            };
            if size > buf.capacity() {
                buf.reserve(size);
                continue;
            }
            buf.clear();
            match self.sock.recv(&mut *buf, nowait) {
                Ok(_) => {
                    #[cfg(test)]
                    wire::record(wire::Dir::Received, &buf);
                    return Ok(Some(buf));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(op, &e)),
            }
        }
    }

    /// Read datagrams and hand each message (type, flags, sequence number,
    /// body) to `each` until it returns `true`. Returns `false` when `wait`
    /// is off and the socket ran dry first.
    fn read(
        &self,
        op: &str,
        wait: bool,
        mut each: impl FnMut(u16, u16, u32, &[u8]) -> Result<bool>,
    ) -> Result<bool> {
        loop {
            let Some(data) = self.recv(op, wait)? else {
                return Ok(false);
            };
            for m in messages(&data) {
                if each(m.kind, m.flags, m.seq, m.body)? {
                    return Ok(true);
                }
            }
        }
    }

    /// Read the answers to request `seq` until its ack (or `NLMSG_DONE`
    /// for a dump); also returns whether the dump was interrupted.
    fn collect(&self, op: &str, seq: u32) -> Result<(Replies, bool)> {
        let mut out = Vec::new();
        let mut interrupted = false;
        self.read(op, true, |kind, flags, mseq, body| {
            // Answers to earlier requests whose acks were not awaited.
            if mseq != seq {
                return Ok(false);
            }
            interrupted |= flags & NLM_F_DUMP_INTR != 0;
            match kind {
                NLMSG_NOOP => Ok(false),
                NLMSG_ERROR | NLMSG_DONE => {
                    let code = i32_of(body);
                    if code < 0 {
                        return Err(Error::errno(op, Errno::from_raw(-code)));
                    }
                    Ok(true)
                }
                NLMSG_OVERRUN => Err(Error::other(op, "netlink buffer overrun")),
                // Every request asks for an ack (dumps end with
                // NLMSG_DONE), so replies are collected until then.
                _ => {
                    out.push(body.to_vec());
                    Ok(false)
                }
            }
        })?;
        Ok((out, interrupted))
    }
}

/// Every datagram sent and received by this thread's connections, for
/// tests that decode them with an independent parser.
#[cfg(test)]
pub(crate) mod wire {
    use std::cell::RefCell;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Dir {
        Sent,
        Received,
    }

    /// Datagrams in the order they passed.
    pub(crate) type Log = Vec<(Dir, Vec<u8>)>;

    thread_local! {
        static LOG: RefCell<Option<Log>> = const { RefCell::new(None) };
    }

    /// Start recording.
    pub(crate) fn start() {
        LOG.with(|l| *l.borrow_mut() = Some(Vec::new()));
    }

    /// Stop recording and return what was recorded.
    pub(crate) fn take() -> Log {
        LOG.with(|l| l.borrow_mut().take().unwrap_or_default())
    }

    pub(super) fn record(dir: Dir, data: &[u8]) {
        LOG.with(|l| {
            if let Some(log) = l.borrow_mut().as_mut() {
                log.push((dir, data.to_vec()));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The netfilter socket of a handle that committed a transaction is
    /// released by a child, which outlives our close and then ends; what
    /// was committed stays.
    #[test]
    fn netfilter_socket_is_released_by_a_child() {
        use crate::nftables::{Family, Table};
        use nix::sys::wait::{WaitStatus, waitpid};
        let ns = testsupport::TestNetns::new("nlr");
        let file = File::open(ns.path()).unwrap();
        let mut nl = Netlink::in_netns(&file).unwrap();
        let t = Table::new(Family::Inet, "cnirs_release");
        nl.nft_transaction(|tx| {
            tx.add_table(t, None);
        })
        .unwrap();
        let conn = nl.netfilter.take().expect("the netfilter socket is open");
        let child = conn.release_detached().expect("a child holds the socket");
        assert_eq!(waitpid(child, None), Ok(WaitStatus::Exited(child, 0)));
        assert!(nl.nft_table(t).unwrap().is_some());
        // A handle that never used nf_tables makes no child.
        assert!(Netlink::in_netns(&file).unwrap().netfilter.get().is_none());
    }

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
        let b = Msg::with_flags(0x10, 0, &[0; 4]);
        assert_eq!(b.flags(), NLM_F_REQUEST);
        let mut n = Msg::new(1, 0, &[]);
        n.be32(1, 0x0102_0304).be64(2, 7);
        let got: Vec<_> = attrs(n.body()).collect();
        assert_eq!(be32_of(got[0].1), Some(0x0102_0304));
        assert_eq!(got[0].1, &[1, 2, 3, 4]);
        assert_eq!(be64_of(got[1].1), Some(7));
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
