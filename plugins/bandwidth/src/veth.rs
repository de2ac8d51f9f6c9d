//! The host end of the container's veth: the peer index of `CNI_IFNAME`
//! read inside the container, resolved in the host namespace, and found
//! among `prevResult`'s host-side interfaces (the reference's checks and
//! messages).

use std::fs::File;

use cni_net::{Link, Netlink};
use skel::types::Interface;

use crate::Error;

pub fn host_end(
    interfaces: &[Interface],
    ifname: &str,
    netns: &File,
    host: &Netlink,
) -> Result<Link, Error> {
    if interfaces.is_empty() {
        return Err(Error::internal("no interfaces provided"));
    }
    let no_peer = |why: String| {
        Error::internal(format!(
            "container interface {ifname} has no veth peer: {why}"
        ))
    };
    let inside = Netlink::in_netns(netns).map_err(|e| no_peer(e.to_string()))?;
    let peer = match inside.veth_peer_index(ifname) {
        Ok(Some(i)) => i,
        Ok(None) => {
            return Err(no_peer(format!(
                "interface {ifname:?} was not a veth interface"
            )));
        }
        Err(e) => return Err(no_peer(format!("could not look up {ifname:?}: {e}"))),
    };
    let link = host
        .link_by_index(peer)
        .map_err(|_| Error::internal(format!("veth peer with index {peer} is not in host ns")))?;
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
