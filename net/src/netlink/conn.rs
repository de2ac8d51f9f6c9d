//! One netlink socket ([`Conn`]): sequence numbers, the receive buffer,
//! the request/ack loop, pipelined requests, nfnetlink batches and
//! multicast subscriptions; and the child processes that take over the end
//! of a request or the last reference to a socket, so the plugin does not
//! wait for the kernel's cleanup (see [`crate::Netlink`]'s `Drop` and
//! `delete_link_detached`).

use std::cell::{Cell, RefCell};
use std::os::fd::AsFd;

use netlink_sys::Socket;

use super::msg::{
    Message, Msg, NLM_F_ACK, NLM_F_DUMP, NLM_F_DUMP_INTR, NLMSG_DONE, NLMSG_ERROR, NLMSG_NOOP,
    NLMSG_OVERRUN, i32_of, messages,
};
use crate::error::{Errno, Error, Result};

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
pub(super) unsafe fn request_and_exit(sock: i32, msg: &[u8]) -> ! {
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
    pub(super) sock: Socket,
    seq: Cell<u32>,
    /// `NETLINK_GET_STRICT_CHK` is on.
    strict: Cell<bool>,
    /// Receive buffer, reused across requests.
    buf: RefCell<Vec<u8>>,
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

    pub(super) fn open(protocol: isize) -> Result<Conn> {
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

    pub(super) fn set_strict(&self) {
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
