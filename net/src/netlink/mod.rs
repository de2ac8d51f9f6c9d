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
//!
//! Submodules: `msg` (the message codec) and `conn` (one socket: the
//! request loop, pipelining, batches, detached requests). This module is
//! the [`Netlink`] handle over them.

mod conn;
mod msg;

use std::cell::OnceCell;
use std::fs::File;

use netlink_sys::protocols::{NETLINK_NETFILTER, NETLINK_ROUTE};

#[cfg(test)]
pub(crate) use conn::wire;
pub(crate) use conn::{Conn, Replies};
#[cfg(test)]
pub(crate) use msg::messages;
pub(crate) use msg::u16_of;
pub use msg::{
    Msg, NLA_F_NESTED, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST, attrs,
    be32_of, be64_of, str_of, u32_of,
};

use crate::error::{Errno, Error, Result};
use crate::netns;
use conn::request_and_exit;

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
    /// The namespace of a handle opened with [`Netlink::in_netns`].
    pub(crate) fn netns_file(&self) -> Option<&File> {
        self.netns.as_ref()
    }
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
        let conn = self.run_in_netns("open netfilter netlink socket", open)??;
        Ok(self.netfilter.get_or_init(|| conn))
    }

    /// Run `f` (`op`, for the error) with the thread in this handle's
    /// namespace: to open another socket there, or for what only a
    /// process inside it can do (a tun device). A handle of the thread's
    /// own namespace used inside [`netns::run`] is refused: `f` would act
    /// in the wrong namespace.
    pub(crate) fn run_in_netns<T>(&self, op: &str, f: impl FnOnce() -> T) -> Result<T> {
        match &self.netns {
            Some(ns) => netns::run(ns, f),
            None if netns::switched() => Err(Error::other(
                op,
                "connection of the thread's own namespace used inside another",
            )),
            None => Ok(f()),
        }
    }

    /// Send the rtnetlink request `msg` from a child process on a socket
    /// of its own in this handle's namespace, without waiting for it;
    /// `None` when no child could be made. The child exits with the
    /// errno of the answer (0: success).
    pub(crate) fn request_detached(&self, mut msg: Msg) -> Result<Option<nix::unistd::Pid>> {
        let conn = self.run_in_netns("open netlink socket", || Conn::open(NETLINK_ROUTE))??;
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn request_errors_carry_errno() {
        let nl = Netlink::host().unwrap();
        // RTM_GETLINK for an index that cannot exist.
        let mut hdr = [0u8; 16];
        hdr[4..8].copy_from_slice(&0x7fff_fff0i32.to_ne_bytes());
        let e = nl.request("find link", Msg::new(18, 0, &hdr)).unwrap_err();
        assert!(e.is(Errno::ENODEV), "{e}");
    }
}
