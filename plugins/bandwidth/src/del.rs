//! DEL and GC. The IFB device is what ADD leaves outside the veth; DEL
//! also clears the host end of the veth when the container is still there
//! (without its namespace the veth is gone already).

use std::collections::HashSet;

use cni_net::tc::Tbf;
use cni_net::tc::tbf::psched_tick;
use cni_net::{Link, Netlink};
use skel::conf::NetConf;
use skel::{CmdArgs, Netns};

use crate::config::Config;
use crate::shape::{failed, redirected_from, unshape};
use crate::{Error, ifb, veth};

/// Remove the attachment's IFB device, and our qdiscs from the host end of
/// the veth if it is still there (found through the namespace, else
/// through `prevResult`). Needs neither the namespace nor `prevResult`,
/// and unlike the reference not even valid limits: the network name and
/// the container ID name the device. Idempotent.
pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let network = NetConf::parse(&args.stdin)?.name;
    let host = Netlink::host().map_err(failed("open netlink"))?;
    let name = ifb::name(&network, &args.container_id);
    let dev = match host.find_link(&name).map_err(failed("find ifb device"))? {
        Some(link) if link.kind == "ifb" => Some(link),
        // Not ours to delete (and nothing the reference would have made).
        Some(link) => {
            eprintln!(
                "bandwidth: leaving {name}: a {:?} device, not an ifb",
                link.kind.name()
            );
            None
        }
        None => None,
    };
    let mut errors = Vec::new();
    // Without the namespace (or the container interface), `prevResult`
    // names the host end: a container that lives on keeps redirecting to
    // the IFB, which would otherwise pass for another attachment's.
    let veth = match &args.netns {
        Netns::Open { file, .. } => veth::peer(file, &args.ifname, &host).ok(),
        _ => None,
    }
    .or_else(|| veth::from_prev_result(&args.stdin, &host, dev.as_ref()));
    // The IFB our veth redirects to is ours; otherwise (no veth found, or
    // a refused ADD) it may serve another attachment (below).
    let mut ours = false;
    if let Some(veth) = &veth {
        let (failed, redirected) = unshape(&host, veth, dev.as_ref(), ingress_tbf(&args.stdin));
        errors.extend(failed);
        ours = redirected;
    }
    // Kill point (tests): DEL after a kill anywhere finishes the job.
    skel::failpoint::pass("bandwidth/del-unshaped");
    if let Some(dev) = &dev {
        // Another attachment of the container to this network (another
        // ifname) hashes to the same IFB, and may use it.
        let other = match ours {
            true => None,
            false => redirected_from(&host, dev, veth.as_ref()).ok().flatten(),
        };
        match other {
            Some(other) => eprintln!(
                "bandwidth: leaving {}: traffic from {} is redirected to it",
                dev.name, other.name
            ),
            None => errors.extend(remove(&host, dev).err()),
        }
    }
    cni_attach::error::join(errors)
}

/// The tbf ADD put on the host end, if the config is valid and limits
/// traffic into the container.
fn ingress_tbf(stdin: &[u8]) -> Option<Tbf> {
    let (rate, burst) = Config::parse(stdin).ok()?.limits?.ingress()?;
    Some(Tbf::reference(rate, burst, psched_tick().ok()?))
}

/// Remove the IFB devices of this network whose attachment is not in
/// `cni.dev/valid-attachments`. Only devices that provably belong to this
/// network (see [`ifb`]) are touched, so networks sharing the host never
/// remove each other's. Without the list, nothing is removed.
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let network = NetConf::parse(&args.stdin)?.name;
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
    let errors = links
        .iter()
        .filter(|l| stale(l, &network, &keep))
        .filter_map(|l| remove(&host, l).err())
        .collect();
    cni_attach::error::join(errors)
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

/// Delete the device; we return once it is gone (its name free for the
/// next ADD) and leave the kernel's final wait for its references, most of
/// a link deletion (bench.sh: 21 ms against the reference's 16), to a
/// child ([`Netlink::delete_link_detached`]).
fn remove(host: &Netlink, link: &Link) -> Result<(), Error> {
    match host.delete_link_detached(link) {
        Err(e) if !e.is_not_found() => Err(failed("delete ifb device")(e)),
        _ => Ok(()),
    }
}
