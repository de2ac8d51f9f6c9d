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
    let cont = Netlink::in_netns(ns)?;
    let Some(link) = cont.find_link(ifname)? else {
        return Ok(Vec::new());
    };
    let addrs = cont
        .addrs(Some(&link))?
        .into_iter()
        .filter(|a| a.scope == 0)
        .map(|a| a.addr)
        .collect();
    match cont.delete_link_detached(&link) {
        Ok(()) => Ok(addrs),
        Err(e) if e.is_not_found() => Ok(addrs),
        Err(e) => Err(Error::from(e).context(format!("failed to delete {ifname:?}"))),
    }
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
