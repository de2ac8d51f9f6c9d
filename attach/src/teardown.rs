//! DEL's view of an attachment: the container interface removed with the
//! addresses it had (the reference's `ip.DelLinkByNameAddr`), and the
//! addresses `prevResult` names, for cleanup that outlives the interface.

use cni_net::{IpNetwork, Netlink};

use crate::error::Error;

/// Delete `ifname` in the namespace `ns`, returning its global addresses;
/// a missing link is success. Returns once the kernel has unregistered the
/// link (and a veth's peer); its final wait for the link's references, most
/// of a veth deletion, is left to a child process
/// ([`Netlink::delete_link_detached`]).
pub fn delete_link(ns: &std::fs::File, ifname: &str) -> Result<Vec<IpNetwork>, Error> {
    delete_link_among(ns, ifname, false).map(|(addrs, _)| addrs)
}

/// [`delete_link`], also returning the global addresses of the
/// namespace's other links when `others` (the container's other
/// attachments, whose firewall rules must stay), from the same dump.
pub fn delete_link_among(
    ns: &std::fs::File,
    ifname: &str,
    others: bool,
) -> Result<(Vec<IpNetwork>, Vec<IpNetwork>), Error> {
    let cont = Netlink::in_netns(ns)?;
    let Some(link) = cont.find_link(ifname)? else {
        let all = match others {
            true => global(cont.addrs(None)?),
            false => Vec::new(),
        };
        return Ok((Vec::new(), all));
    };
    let (own, other): (Vec<_>, Vec<_>) = cont
        .addrs((!others).then_some(&link))?
        .into_iter()
        .partition(|a| a.index == link.index);
    let seen = (global(own), global(other));
    match cont.delete_link_detached(&link) {
        Ok(()) => Ok(seen),
        Err(e) if e.is_not_found() => Ok(seen),
        Err(e) => Err(Error::from(e).context(format!("failed to delete {ifname:?}"))),
    }
}

/// The global (universe scope) addresses of `addrs`.
fn global(addrs: Vec<cni_net::Addr>) -> Vec<IpNetwork> {
    addrs
        .into_iter()
        .filter(|a| a.scope == 0)
        .map(|a| a.addr)
        .collect()
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
