//! DEL's common part ([`del`]), shared by every main plugin: IPAM DEL
//! started first and run while the container interface is removed (deleted,
//! or for a host device moved back to the host), every failure collected
//! rather than the first returned, and the addresses the attachment held
//! (from `prevResult` and from the interface; without `prevResult`, also
//! those of the container's other links, see [`Teardown::others`]) for
//! the plugin's own cleanup that outlives the interface (masquerade
//! rules). Kill points after each step serve every main plugin's kill
//! tests.
//!
//! A lease released a few hundred microseconds before its interface is
//! gone can only be handed to another container's new interface, never
//! to this one's; the kernel needs 10–20 ms to delete a veth pair, which
//! IPAM's run overlaps.

use std::fs::File;

use cni_net::{IpNetwork, Link, Netlink, netns};
use skel::failpoint::pass;
use skel::{CmdArgs, Netns};

use crate::error::Error;

/// How DEL removes `CNI_IFNAME` from the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Delete it (a veth's host end goes with it).
    Delete,
    /// Move it back to the host under the name its alias keeps, and clear
    /// the alias (host-device); it is left down.
    MoveBack,
}

/// What [`del`] found and what failed, for the plugin to go on with.
#[derive(Debug, Default)]
pub struct Teardown {
    /// The addresses of `prevResult` and the global addresses the
    /// interface had.
    pub addrs: Vec<IpNetwork>,
    /// Without `prevResult`'s addresses (an ADD killed before it returned
    /// a result), the interface need not have held every address of the
    /// attachment (an ADD killed before its IPv6 address was set): then
    /// the global addresses of the container's other links, which tell
    /// what is not this attachment's (`cni_firewall::ipmasq::teardown_seen`);
    /// empty without the namespace. `None` when `prevResult` named them.
    pub others: Option<Vec<IpNetwork>>,
    /// Every failure so far: the interface's, then IPAM's.
    pub errors: Vec<Error>,
}

/// DEL's common part: IPAM DEL of `ipam_type` (none when `None`) started,
/// `CNI_IFNAME` removed from `CNI_NETNS` as `removal` says (when the
/// namespace is open: without it the interface went with its namespace),
/// then IPAM awaited. A missing interface is success. Kill points (tests,
/// `skel::failpoint::pass`) after each step: DEL after a kill anywhere
/// finishes the job.
pub fn del(args: &CmdArgs, ipam_type: Option<&str>, removal: Removal) -> Teardown {
    let ipam = ipam_type.map(|t| skel::invoke::start(t, "DEL", &args.path, &args.stdin));
    pass("teardown/del-ipam-started");
    let addrs = prev_addrs(&args.stdin);
    let unseen = addrs.is_empty();
    let mut t = Teardown {
        addrs,
        others: unseen.then(Vec::new),
        errors: Vec::new(),
    };
    if let Netns::Open { file, .. } = &args.netns {
        match remove(file, &args.ifname, removal, unseen) {
            Ok(seen) => {
                t.addrs.extend(seen.own);
                if let Some(others) = &mut t.others {
                    *others = seen.others;
                }
            }
            Err(e) => t.errors.push(e),
        }
    }
    pass("teardown/del-link-removed");
    if let Some(Err(e)) = ipam.map(|started| started.and_then(|running| running.wait())) {
        t.errors.push(e.into());
    }
    pass("teardown/del-ipam-done");
    t
}

/// The global addresses DEL saw before removing the interface.
#[derive(Debug, Default)]
struct Seen {
    /// The interface's.
    own: Vec<IpNetwork>,
    /// The namespace's other links', when asked for.
    others: Vec<IpNetwork>,
}

/// The global addresses of `link` (none when missing) and, with `others`,
/// of the namespace's other links: one dump either way.
fn seen(nl: &Netlink, link: Option<&Link>, others: bool) -> Result<Seen, Error> {
    let global = |addrs: Vec<cni_net::Addr>| -> Vec<IpNetwork> {
        addrs
            .into_iter()
            .filter(|a| a.scope == 0)
            .map(|a| a.addr)
            .collect()
    };
    let dump = match (link, others) {
        (_, true) => nl.addrs(None)?,
        (Some(link), false) => nl.addrs(Some(link))?,
        (None, false) => Vec::new(),
    };
    let (own, other) = dump
        .into_iter()
        .partition(|a| link.is_some_and(|l| a.index == l.index));
    Ok(Seen {
        own: global(own),
        others: global(other),
    })
}

/// [`delete_link`] or [`move_back`], as `removal` says, with the
/// addresses of the namespace's other links when `others`.
fn remove(ns: &File, ifname: &str, removal: Removal, others: bool) -> Result<Seen, Error> {
    let cont = Netlink::in_netns(ns)?;
    let link = cont.find_link(ifname)?;
    let seen = seen(&cont, link.as_ref(), others)?;
    let Some(link) = link else {
        return Ok(seen);
    };
    match removal {
        Removal::Delete => match cont.delete_link_detached(&link) {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(Error::from(e).context(format!("failed to delete {ifname:?}"))),
        },
        Removal::MoveBack => move_link_back(&cont, &link)?,
    }
    Ok(seen)
}

/// Delete `ifname` in the namespace `ns`, returning its global addresses;
/// a missing link is success. Returns once the kernel has unregistered the
/// link (and a veth's peer); its final wait for the link's references, most
/// of a veth deletion, is left to a child process
/// ([`Netlink::delete_link_detached`]).
pub fn delete_link(ns: &File, ifname: &str) -> Result<Vec<IpNetwork>, Error> {
    remove(ns, ifname, Removal::Delete, false).map(|s| s.own)
}

/// Move the host device `ifname` of the namespace `ns` back to this
/// process's namespace under its alias (its name there before ADD), in one
/// request, and clear the alias; returns its global addresses. A missing
/// link is success (a repeated DEL; the reference fails).
pub fn move_back(ns: &File, ifname: &str) -> Result<Vec<IpNetwork>, Error> {
    remove(ns, ifname, Removal::MoveBack, false).map(|s| s.own)
}

/// [`move_back`] of `link`, found through `cont`.
fn move_link_back(cont: &Netlink, link: &Link) -> Result<(), Error> {
    let ifname = &link.name;
    let Some(original) = link.alias.clone() else {
        return Err(Error::internal(format!(
            "failed to find original ifname for {ifname:?} (alias is not set)"
        )));
    };
    cont.move_link(link, &netns::current()?, Some(&original))
        .map_err(|e| {
            Error::from(e).context(format!("failed to move {ifname:?} back as {original:?}"))
        })?;
    let host = Netlink::host()?;
    let back = host.link_by_name(&original)?;
    host.set_alias(&back, "")
        .map_err(|e| Error::from(e).context(format!("failed to unset alias of {original:?}")))
}

/// Addresses of `prevResult`, when the runtime sent one (0.4.0+).
pub fn prev_addrs(stdin: &[u8]) -> Vec<IpNetwork> {
    let Ok(nc) = skel::conf::NetConf::parse(stdin) else {
        return Vec::new();
    };
    match nc.prev_result() {
        Ok(Some(r)) => r
            .into_v1()
            .map(|r| r.ips.into_iter().map(|ip| ip.address.0).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}
