//! DEL and GC: the IFB device is the one thing ADD leaves outside the veth
//! (the qdiscs and the filter on the host end go with it).

use std::collections::HashSet;

use cni_net::{Link, Netlink};
use skel::CmdArgs;
use skel::conf::NetConf;

use crate::shape::failed;
use crate::{Error, ifb};

/// Remove the attachment's IFB device. Needs neither the namespace nor
/// `prevResult`, and unlike the reference not even valid limits: only the
/// network name and the container ID name the device. Idempotent.
pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let name = network_name(&args.stdin)?;
    let host = Netlink::host().map_err(failed("open netlink"))?;
    let dev = ifb::name(&name, &args.container_id);
    match host.find_link(&dev).map_err(failed("find ifb device"))? {
        Some(link) if link.kind == "ifb" => remove(&host, &link),
        // Not ours to delete (and nothing the reference would have made).
        Some(link) => {
            eprintln!(
                "bandwidth: leaving {dev}: a {:?} device, not an ifb",
                link.kind
            );
            Ok(())
        }
        None => Ok(()),
    }
}

/// Remove the IFB devices of this network whose attachment is not in
/// `cni.dev/valid-attachments`. Only devices that provably belong to this
/// network (see [`ifb`]) are touched, so networks sharing the host never
/// remove each other's. Without the list, nothing is removed.
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let network = network_name(&args.stdin)?;
    let Some(valid) = skel::conf::valid_attachments(&args.stdin)? else {
        eprintln!(
            "bandwidth: GC of network {network} without cni.dev/valid-attachments: removing nothing"
        );
        return Ok(());
    };
    let keep: HashSet<String> = valid
        .iter()
        .map(|(cid, _)| ifb::name(&network, cid))
        .collect();
    let host = Netlink::host().map_err(failed("open netlink"))?;
    let links = host.links().map_err(failed("list links"))?;
    let mut errors = Vec::new();
    for link in links.iter().filter(|l| stale(l, &network, &keep)) {
        if let Err(e) = remove(&host, link) {
            errors.push(e);
        }
    }
    skel::error::join(errors)
}

/// An IFB device of `network` whose attachment is gone.
fn stale(link: &Link, network: &str, keep: &HashSet<String>) -> bool {
    link.kind == "ifb"
        && ifb::is_ifb_name(&link.name)
        && !keep.contains(&link.name)
        && link
            .alias
            .as_deref()
            .and_then(|a| ifb::of_network(&link.name, a, network))
            .is_some()
}

fn remove(host: &Netlink, link: &Link) -> Result<(), Error> {
    match host.delete_link(link) {
        Err(e) if !e.is_not_found() => Err(failed("delete ifb device")(e)),
        _ => Ok(()),
    }
}

/// The network name, all DEL and GC need (skel checked it is a string).
fn network_name(stdin: &[u8]) -> Result<String, Error> {
    NetConf::parse(stdin).map(|c| c.name)
}
