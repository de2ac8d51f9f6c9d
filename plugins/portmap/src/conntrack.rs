//! UDP conntrack entries of mapped host ports, removed through
//! `cni-net`'s ctnetlink (no `conntrack` binary).
//!
//! - ADD, after the rules of a family are in place, removes every UDP
//!   entry of that family whose original destination port is a mapped
//!   host port, as the reference does: such an entry was made before the
//!   DNAT rule existed (or for a container that is gone) and would keep
//!   the flow away from the new container.
//! - DEL (and GC) remove the UDP entries DNAT'ed to the removed rules'
//!   targets: original destination port = host port, reply source = the
//!   container's address and port. The reference removes nothing at DEL
//!   (#1190: a client that keeps its source port stays blackholed until
//!   it pauses for the UDP timeout). The targets are read from the rules
//!   being removed, so this works without `prevResult` or mappings, and
//!   unrelated flows to the same port survive.
//!
//! Failures are reported on stderr only, as the reference's ADD does: the
//! rules are right either way.

use std::net::IpAddr;

use cni_net::Netlink;
use cni_net::conntrack::UDP;

/// A UDP DNAT rule's host port and target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub host_port: u16,
    pub addr: IpAddr,
    pub port: u16,
}

/// ADD: the family's UDP entries to any of `ports`.
pub fn flush_ports(nl: &Netlink, v6: bool, ports: &[u16], ip: IpAddr) {
    if ports.is_empty() {
        return;
    }
    let r = nl.conntrack_delete_where(v6, |e| e.orig.proto == UDP && ports.contains(&e.orig.dport));
    if let Err(e) = r {
        eprintln!("portmap: failed to delete stale UDP conntrack entries for {ip}: {e}");
    }
}

/// DEL, GC: the UDP entries DNAT'ed to `targets`.
pub fn flush_targets(nl: &Netlink, targets: &[Target]) {
    for v6 in [false, true] {
        let of_family: Vec<&Target> = targets.iter().filter(|t| t.addr.is_ipv6() == v6).collect();
        if of_family.is_empty() {
            continue;
        }
        let r = nl.conntrack_delete_where(v6, |e| {
            e.orig.proto == UDP
                && of_family.iter().any(|t| {
                    e.orig.dport == t.host_port && e.reply.src == t.addr && e.reply.sport == t.port
                })
        });
        if let Err(e) = r {
            eprintln!("portmap: failed to delete UDP conntrack entries of removed mappings: {e}");
        }
    }
}
