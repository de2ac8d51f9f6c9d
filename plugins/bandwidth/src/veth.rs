//! The host end of the container's veth: the peer of `CNI_IFNAME`, found
//! in the host namespace by `cni-net` and, for ADD and CHECK, among
//! `prevResult`'s host-side interfaces (the reference's checks and
//! messages); for DEL without the namespace, `prevResult`'s host-side veth.

use std::fs::File;

use cni_net::{Link, Netlink, VethPeer};
use skel::conf::NetConf;
use skel::types::Interface;

use crate::Error;

/// The peer of `ifname` inside `netns`, in the host namespace `host`.
pub fn peer(netns: &File, ifname: &str, host: &Netlink) -> Result<Link, Error> {
    let no_peer = |why: String| {
        Error::internal(format!(
            "container interface {ifname} has no veth peer: {why}"
        ))
    };
    let inside = Netlink::in_netns(netns).map_err(|e| no_peer(e.to_string()))?;
    match host.veth_peer(&inside, ifname) {
        Ok(VethPeer::Found(link)) => Ok(link),
        Ok(VethPeer::NotVeth) => Err(no_peer(format!(
            "interface {ifname:?} was not a veth interface"
        ))),
        Ok(VethPeer::Elsewhere(i)) => Err(Error::internal(format!(
            "veth peer with index {i} is not in host ns"
        ))),
        Err(e) => Err(no_peer(format!("could not look up {ifname:?}: {e}"))),
    }
}

/// The host end as `prevResult` names it, for DEL without the namespace
/// (an empty `CNI_NETNS`, or the container interface gone): the veths
/// among its host-side interfaces, the one redirecting to `ifb` first
/// (a bridge's result also names the bridge). Best effort: `None` without
/// a readable `prevResult` or such a veth on the host.
pub fn from_prev_result(stdin: &[u8], host: &Netlink, ifb: Option<&Link>) -> Option<Link> {
    let prev = NetConf::parse(stdin)
        .ok()?
        .prev_result()
        .ok()??
        .into_v1()
        .ok()?;
    let veths: Vec<Link> = prev
        .interfaces
        .iter()
        .filter(|i| i.sandbox.is_empty())
        .filter_map(|i| host.find_link(&i.name).ok().flatten())
        .filter(|l| l.kind == "veth")
        .collect();
    let redirecting = ifb.and_then(|ifb| {
        veths
            .iter()
            .position(|v| crate::shape::redirects(host, v, ifb))
    });
    veths.into_iter().nth(redirecting.unwrap_or(0))
}

/// [`peer`], which must also be a host-side interface of `prevResult`.
pub fn host_end(
    interfaces: &[Interface],
    ifname: &str,
    netns: &File,
    host: &Netlink,
) -> Result<Link, Error> {
    if interfaces.is_empty() {
        return Err(Error::internal("no interfaces provided"));
    }
    let link = peer(netns, ifname, host)?;
    if interfaces
        .iter()
        .any(|i| i.sandbox.is_empty() && i.name == link.name)
    {
        Ok(link)
    } else {
        Err(Error::internal(
            "no veth peer of container interface found in host ns",
        ))
    }
}
