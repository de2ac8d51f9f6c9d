//! DEL's common part ([`del`]), shared by every main plugin: IPAM DEL
//! started first and run while the container interface is removed (deleted,
//! or for a host device moved back to the host), every failure collected
//! rather than the first returned, and the addresses the attachment held
//! (from `prevResult` and from the interface) for the plugin's own cleanup
//! that outlives the interface (masquerade rules).
//!
//! A lease released a few hundred microseconds before its interface is
//! gone can only be handed to another container's new interface, never
//! to this one's; the kernel needs 10–20 ms to delete a veth pair, which
//! IPAM's run overlaps.

use std::fs::File;

use cni_net::{IpNetwork, Link, Netlink, netns};
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
    /// Every failure so far: the interface's, then IPAM's.
    pub errors: Vec<Error>,
}

/// DEL's common part: IPAM DEL of `ipam_type` (none when `None`) started,
/// `CNI_IFNAME` removed from `CNI_NETNS` as `removal` says (when the
/// namespace is open: without it the interface went with its namespace),
/// then IPAM awaited. A missing interface is success.
pub fn del(args: &CmdArgs, ipam_type: Option<&str>, removal: Removal) -> Teardown {
    let ipam = ipam_type.map(|t| skel::invoke::start(t, "DEL", &args.path, &args.stdin));
    let mut t = Teardown {
        addrs: prev_addrs(&args.stdin),
        errors: Vec::new(),
    };
    if let Netns::Open { file, .. } = &args.netns {
        let removed = match removal {
            Removal::Delete => delete_link(file, &args.ifname),
            Removal::MoveBack => move_back(file, &args.ifname),
        };
        match removed {
            Ok(found) => t.addrs.extend(found),
            Err(e) => t.errors.push(e),
        }
    }
    if let Some(Err(e)) = ipam.map(|started| started.and_then(|running| running.wait())) {
        t.errors.push(e.into());
    }
    t
}

/// The global addresses of `link`.
fn global_addrs(nl: &Netlink, link: &Link) -> Result<Vec<IpNetwork>, Error> {
    Ok(nl
        .addrs(Some(link))?
        .into_iter()
        .filter(|a| a.scope == 0)
        .map(|a| a.addr)
        .collect())
}

/// Delete `ifname` in the namespace `ns`, returning its global addresses;
/// a missing link is success. Returns once the kernel has unregistered the
/// link (and a veth's peer); its final wait for the link's references, most
/// of a veth deletion, is left to a child process
/// ([`Netlink::delete_link_detached`]).
pub fn delete_link(ns: &File, ifname: &str) -> Result<Vec<IpNetwork>, Error> {
    let cont = Netlink::in_netns(ns)?;
    let Some(link) = cont.find_link(ifname)? else {
        return Ok(Vec::new());
    };
    let addrs = global_addrs(&cont, &link)?;
    match cont.delete_link_detached(&link) {
        Ok(()) => Ok(addrs),
        Err(e) if e.is_not_found() => Ok(addrs),
        Err(e) => Err(Error::from(e).context(format!("failed to delete {ifname:?}"))),
    }
}

/// Move the host device `ifname` of the namespace `ns` back to this
/// process's namespace under its alias (its name there before ADD), in one
/// request, and clear the alias; returns its global addresses. A missing
/// link is success (a repeated DEL; the reference fails).
pub fn move_back(ns: &File, ifname: &str) -> Result<Vec<IpNetwork>, Error> {
    let cont = Netlink::in_netns(ns)?;
    let Some(link) = cont.find_link(ifname)? else {
        return Ok(Vec::new());
    };
    let Some(original) = link.alias.clone() else {
        return Err(Error::internal(format!(
            "failed to find original ifname for {ifname:?} (alias is not set)"
        )));
    };
    let addrs = global_addrs(&cont, &link)?;
    cont.move_link(&link, &netns::current()?, Some(&original))
        .map_err(|e| {
            Error::from(e).context(format!("failed to move {ifname:?} back as {original:?}"))
        })?;
    let host = Netlink::host()?;
    let back = host.link_by_name(&original)?;
    host.set_alias(&back, "")
        .map_err(|e| Error::from(e).context(format!("failed to unset alias of {original:?}")))?;
    Ok(addrs)
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
