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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    /// Delete it (a veth's host end goes with it).
    Delete,
    /// Move it back to the host under the name its alias keeps, and clear
    /// the alias (host-device); it is left down. See [`Back`].
    MoveBack(Back),
}

/// What DEL knows of a host device besides its alias, so that it goes
/// back also when the container renamed it or cleared its alias
/// (reference #773), and when its namespace is gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Back {
    /// Its name in the host, when the config names it (`device`).
    pub name: Option<String>,
    /// Its MAC when ADD moved it in (`prevResult`, or the config's
    /// `hwaddr`): restored when the container changed it.
    pub mac: Option<Vec<u8>>,
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
    match (&args.netns, &removal) {
        (Netns::Open { file, .. }, _) => match remove(file, &args.ifname, &removal, unseen) {
            Ok(seen) => {
                t.addrs.extend(seen.own);
                if let Some(others) = &mut t.others {
                    *others = seen.others;
                }
            }
            Err(e) => t.errors.push(e),
        },
        (_, Removal::MoveBack(back)) => {
            if let Err(e) = Netlink::host()
                .map_err(Error::from)
                .and_then(|h| reclaim(&h, back))
            {
                t.errors.push(e);
            }
        }
        _ => {}
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
fn remove(ns: &File, ifname: &str, removal: &Removal, others: bool) -> Result<Seen, Error> {
    let cont = Netlink::in_netns(ns)?;
    let mut link = cont.find_link(ifname)?;
    if let (None, Removal::MoveBack(back)) = (&link, removal) {
        link = renamed(&cont, back)?;
    }
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
        Removal::MoveBack(back) => move_link_back(ns, &cont, &link, back)?,
    }
    Ok(seen)
}

/// Delete `ifname` in the namespace `ns`, returning its global addresses;
/// a missing link is success. Returns once the kernel has unregistered the
/// link (and a veth's peer); its final wait for the link's references, most
/// of a veth deletion, is left to a child process
/// ([`Netlink::delete_link_detached`]).
pub fn delete_link(ns: &File, ifname: &str) -> Result<Vec<IpNetwork>, Error> {
    remove(ns, ifname, &Removal::Delete, false).map(|s| s.own)
}

/// Move the host device `ifname` of the namespace `ns` back to this
/// process's namespace under its alias (its name there before ADD), in one
/// request, and clear the alias; returns its global addresses. A missing
/// link is success (a repeated DEL; the reference fails).
pub fn move_back(ns: &File, ifname: &str, back: &Back) -> Result<Vec<IpNetwork>, Error> {
    let removal = Removal::MoveBack(back.clone());
    remove(ns, ifname, &removal, false).map(|s| s.own)
}

/// A host device the container renamed (no longer `CNI_IFNAME`): the
/// link whose alias is the device's host name, or that has the device's
/// MAC and an alias (which only a moved-in device has here).
fn renamed(cont: &Netlink, back: &Back) -> Result<Option<Link>, Error> {
    if back.name.is_none() && back.mac.is_none() {
        return Ok(None);
    }
    Ok(cont.links()?.into_iter().find(|l| is_device(l, back)))
}

/// Whether `l` is the host device `back` describes, moved away from its
/// name (its alias, set when it was moved, is the name to go back to).
fn is_device(l: &Link, back: &Back) -> bool {
    let Some(alias) = &l.alias else {
        return false;
    };
    alias != &l.name
        && (back.name.as_ref() == Some(alias) || back.mac.as_ref().is_some_and(|m| *m == l.mac))
}

/// [`move_back`] of `link`, found through `cont` (the namespace `ns`): one
/// request moves it, renames it and clears its alias; then its MAC is
/// restored.
/// Refused without moving anything when the host has a link of its name;
/// moved but not renamed (the name taken meanwhile), it goes back into the
/// container, so a device is never left in the host under another name.
fn move_link_back(ns: &File, cont: &Netlink, link: &Link, back: &Back) -> Result<(), Error> {
    let ifname = &link.name;
    let Some(original) = link.alias.clone().or_else(|| back.name.clone()) else {
        return Err(Error::internal(format!(
            "failed to find original ifname for {ifname:?} (alias is not set)"
        )));
    };
    let failed = |e: Error| e.context(format!("failed to move {ifname:?} back as {original:?}"));
    let host = Netlink::host()?;
    if host.find_link(&original)?.is_some() {
        return Err(failed(Error::internal("the host has a link of that name")));
    }
    let moved = cont.move_link_with(link, &netns::current()?, Some(&original), Some(""), None);
    pass("teardown/del-moved-back");
    if let Err(e) = moved {
        if let Some(stray) = host
            .find_link(ifname)?
            .filter(|l| l.alias.as_ref() == Some(&original))
        {
            host.move_link(&stray, ns, Some(ifname))?;
        }
        return Err(failed(e.into()));
    }
    // The MAC in a request of its own: a device that refuses the change
    // (a VF whose MAC its PF set) would otherwise refuse the move too.
    match back.mac.as_deref().filter(|m| *m != link.mac.as_slice()) {
        Some(mac) => host
            .set_mac(&host.link_by_name(&original)?, mac)
            .map_err(|e| {
                Error::from(e).context(format!("failed to restore the MAC of {original:?}"))
            }),
        None => Ok(()),
    }
}

/// DEL without the container's namespace: a physical device whose
/// namespace was deleted is back in the initial namespace (a virtual one
/// is gone with it), under its container name and with its alias; it
/// gets its own name back. Nothing when no link fits.
pub fn reclaim(host: &Netlink, back: &Back) -> Result<(), Error> {
    if back.name.is_none() && back.mac.is_none() {
        return Ok(());
    }
    for l in host.links()?.into_iter().filter(|l| is_device(l, back)) {
        let Some(original) = l.alias.as_deref() else {
            continue;
        };
        if host.find_link(original)?.is_some() {
            continue;
        }
        host.rename_link(&l, original)?;
        let l = host.link_by_name(original)?;
        host.set_alias(&l, "")?;
    }
    Ok(())
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
