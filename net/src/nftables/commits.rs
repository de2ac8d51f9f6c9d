//! Watching another process's nf_tables commits, so that a caller can stop
//! waiting for a tool (`iptables-restore` on nf_tables) once the kernel has
//! committed its work, rather than when the tool exits.
//!
//! Why: a tool that deleted rules closes its netfilter socket on exit, and
//! the kernel makes that close first finish nf_tables' deferred cleanup of
//! committed deletions (a `synchronize_rcu`, some 9 ms), after the rules
//! are already gone. See [`Netlink`]'s `Drop` for the same wait on our own
//! sockets.
//!
//! How: at every successful commit nf_tables multicasts, to the group
//! `NFNLGRP_NFTABLES` of the namespace, an `NFT_MSG_NEWGEN` message whose
//! netlink header carries the committing socket's port id (for a socket
//! the kernel bound itself, the process's pid in its pid namespace) and
//! whose attributes carry the new generation, the process's pid in the
//! initial pid namespace and its `comm`. A commit is the tool's when both
//! the port id and the `comm` are the child's: a process that merely
//! reuses the pid, or a wrapper that forks the real tool, does not match,
//! and the caller then waits for the exit as it would have.
//!
//! Commits that change nothing (an empty transaction) send no message, and
//! a failed commit sends none either.

use std::os::fd::{AsFd, BorrowedFd};

use netlink_sys::protocols::NETLINK_NETFILTER;

use super::msg_type;
use crate::error::Result;
use crate::netlink::{Conn, attrs};

#[cfg(doc)]
use crate::Netlink;

/// `NFNLGRP_NFTABLES`.
const GROUP: u32 = 7;
/// `NFT_MSG_NEWGEN`.
const NEWGEN: u16 = 15;
/// `NFTA_GEN_PROC_NAME`.
const GEN_PROC_NAME: u16 = 3;
/// `TASK_COMM_LEN`, with the NUL.
const COMM_LEN: usize = 16;

/// A subscription to the nf_tables commits of the namespace the calling
/// thread is in when it is opened. Open it before starting the tool, so
/// no commit of the tool can come before it.
///
/// Its socket is released by a child process when dropped: the socket is
/// bound, so closing it ourselves would wait for the same cleanup.
#[derive(Debug)]
pub struct CommitWatch {
    conn: Option<Conn>,
}

impl CommitWatch {
    /// Subscribe in the calling thread's current namespace. Fails without
    /// nfnetlink (or nf_tables' group).
    pub fn open() -> Result<CommitWatch> {
        let conn = Conn::subscribe(NETLINK_NETFILTER, GROUP)?;
        Ok(CommitWatch { conn: Some(conn) })
    }

    /// How many commits of process `pid` running `program` (a path or a
    /// name) were queued since the last call (a bounded read: under a flood
    /// of others' commits the rest is counted by the next call, the socket
    /// still readable); never waits. An error (the
    /// queue overflowed and lost messages, say) means commits can no
    /// longer be counted.
    pub fn commits_of(&self, pid: u32, program: &str) -> Result<usize> {
        let Some(conn) = &self.conn else {
            return Ok(0);
        };
        let comm = comm(program);
        let mut n = 0;
        conn.drain("read nf_tables commits", |m| {
            n += usize::from(is_commit_of(m.kind, m.port, m.body, pid, comm));
        })?;
        Ok(n)
    }
}

impl AsFd for CommitWatch {
    /// Readable when a notification is queued (or the queue overflowed).
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.conn {
            Some(c) => c.as_fd(),
            None => unreachable!("the socket is only taken by drop"),
        }
    }
}

impl Drop for CommitWatch {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.release();
        }
    }
}

/// The `comm` the kernel gives a process that executed `program`: the
/// last part of the path, cut to 15 bytes.
pub fn comm(program: &str) -> &[u8] {
    let base = program.rsplit('/').next().unwrap_or(program).as_bytes();
    &base[..base.len().min(COMM_LEN - 1)]
}

/// Whether a message (type `kind`, header port id `port`, `body` after the
/// netlink header) is an `NFT_MSG_NEWGEN` of a commit by the socket bound
/// to `pid` in a process whose `comm` is `comm`.
pub fn is_commit_of(kind: u16, port: u32, body: &[u8], pid: u32, comm: &[u8]) -> bool {
    if kind != msg_type(NEWGEN) || port != pid {
        return false;
    }
    // struct nfgenmsg, then the attributes.
    let Some(rest) = body.get(4..) else {
        return false;
    };
    attrs(rest)
        .find(|(k, _)| *k == GEN_PROC_NAME)
        .is_some_and(|(_, name)| name.split(|b| *b == 0).next() == Some(comm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::Msg;

    /// A NEWGEN as the kernel sends it, as (type, port id, body).
    fn newgen(port: u32, name: &[u8]) -> (u16, u32, Vec<u8>) {
        let mut m = Msg::with_flags(msg_type(NEWGEN), 0, &[0, 0, 0, 7]);
        let mut n = name.to_vec();
        n.push(0);
        m.be32(1, 42).be32(2, port + 1000).attr(GEN_PROC_NAME, &n);
        (m.kind(), port, m.body().to_vec())
    }

    #[test]
    fn commits_match_on_port_and_comm() {
        let comm = comm("/usr/sbin/iptables-restore");
        assert_eq!(comm, b"iptables-restor");
        assert_eq!(super::comm("ip6tables-restore"), b"ip6tables-resto");
        assert_eq!(super::comm("sh"), b"sh");
        let is = |(k, p, b): (u16, u32, Vec<u8>)| is_commit_of(k, p, &b, 77, comm);
        assert!(is(newgen(77, b"iptables-restor")));
        // Another process, another program (a wrapper), another family.
        assert!(!is(newgen(78, b"iptables-restor")));
        assert!(!is(newgen(77, b"sh")));
        assert!(!is(newgen(77, b"ip6tables-resto")));
        assert!(!is(newgen(77, b"iptables-restore")));
        // Other messages of the same process: a new rule, a conntrack one.
        let (_, p, b) = newgen(77, b"iptables-restor");
        assert!(!is_commit_of(msg_type(6), p, &b, 77, comm));
        assert!(!is_commit_of((1 << 8) | NEWGEN, p, &b, 77, comm));
        // Cut short: no name, half an attribute, no nfgenmsg.
        let (k, p, b) = newgen(77, b"iptables-restor");
        for len in [0, 3, 4, 14, b.len() - 4] {
            assert!(!is_commit_of(k, p, &b[..len], 77, comm), "{len}");
        }
        let mut m = Msg::with_flags(k, 0, &[0; 4]);
        m.be32(1, 42);
        assert!(!is_commit_of(k, 77, m.body(), 77, comm));
    }

    /// `rounds` commits adding a table and as many deleting it, in the
    /// namespace `ns`: other processes' commits, as a watch sees them.
    fn churn(ns: &std::fs::File, rounds: usize) {
        use super::super::{Family, Table};
        let nl = crate::Netlink::in_netns(ns).unwrap();
        let t = Table::new(Family::Inet, "cnirs_churn");
        for _ in 0..rounds {
            nl.nft_transaction(|tx| {
                tx.add_table(t, None);
            })
            .unwrap();
            nl.nft_transaction(|tx| {
                tx.delete_table(t);
            })
            .unwrap();
        }
    }

    /// One call reads a bounded number of datagrams: a flood of other
    /// processes' commits leaves the socket readable for the next call
    /// instead of keeping this one going, and later calls empty it.
    #[test]
    fn a_flood_is_read_a_bounded_part_at_a_time() {
        use crate::netns;
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use nix::sys::socket::{setsockopt, sockopt::RcvBufForce};
        let ns = testsupport::TestNetns::new("nlf");
        let file = std::fs::File::open(ns.path()).unwrap();
        let watch = netns::run(&file, CommitWatch::open).unwrap().unwrap();
        setsockopt(&watch.as_fd(), RcvBufForce, &(8 << 20)).unwrap();
        churn(&file, 200);
        let readable = || {
            let mut fds = [PollFd::new(watch.as_fd(), PollFlags::POLLIN)];
            poll(&mut fds, PollTimeout::ZERO).unwrap() > 0
        };
        assert_eq!(watch.commits_of(1, "x").unwrap(), 0);
        assert!(readable(), "one call read the whole flood");
        let mut calls = 1;
        while readable() {
            assert_eq!(watch.commits_of(1, "x").unwrap(), 0);
            calls += 1;
            assert!(calls < 100, "the queue never emptied");
        }
    }

    /// Notifications lost to a full queue make counting fail, rather than
    /// miss a commit and wait for ever.
    #[test]
    fn an_overflowed_queue_is_an_error() {
        use crate::netns;
        use nix::sys::socket::{setsockopt, sockopt::RcvBuf};
        let ns = testsupport::TestNetns::new("nlw");
        let file = std::fs::File::open(ns.path()).unwrap();
        let watch = netns::run(&file, CommitWatch::open).unwrap().unwrap();
        assert_eq!(watch.commits_of(1, "x").unwrap(), 0);
        // The smallest queue the kernel allows: a few messages.
        setsockopt(&watch.as_fd(), RcvBuf, &0).unwrap();
        churn(&file, 20);
        let e = watch.commits_of(1, "x").unwrap_err();
        assert!(e.is(crate::Errno::ENOBUFS), "{e}");
    }
}
