//! CHECK: what the reference checks (IPAM CHECK, the container interface
//! of `prevResult`, its addresses and routes), and beyond it the host end:
//! the container's peer, carrying each gateway and a route to each
//! container address; and the masquerade rules.

use cni_attach::check;
use cni_net::{IpNetwork, Link, Netlink};
use skel::CmdArgs;
use skel::types::{Interface, Result1};

use crate::config::Config;
use crate::error::Error;
use crate::masq;

pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let ns = args.netns.file().map_err(|e| {
        Error::from(e).context(format!("failed to open netns {:?}", args.netns_path))
    })?;
    skel::invoke::delegate(&conf.ipam_type, "CHECK", &args.path, &args.stdin)?;
    let prev = check::prev_result(args, "ptp: Required prevResult missing")?;
    let cont_if = check::prev_interface(&prev, args, "Sandbox")?;
    let cont = Netlink::in_netns(ns)?;
    let link = container_link(&cont, cont_if)?;
    check::addresses_and_routes(&cont, &link, &prev)?;
    host_end(&Netlink::host()?, &link, &prev)?;
    if conf.ip_masq {
        masq::check(args, &conf, &prev)?;
    }
    Ok(())
}

/// The container interface: there, a veth, with the MAC of `prevResult`.
fn container_link(cont: &Netlink, intf: &Interface) -> Result<Link, Error> {
    let link = cont.find_link(&intf.name)?.ok_or_else(|| {
        Error::internal(format!(
            "ptp: Container Interface name in prevResult: {} not found",
            intf.name
        ))
    })?;
    if link.kind != "veth" {
        return Err(Error::internal(format!(
            "Error: Container interface {} not of type veth/p2p",
            link.name
        )));
    }
    let mac = link.mac_string();
    if !intf.mac.is_empty() && intf.mac != mac {
        return Err(Error::internal(format!(
            "ptp: Interface {} Mac {} doesn't match container Mac: {mac}",
            intf.name, intf.mac
        )));
    }
    Ok(link)
}

/// The host end of `cont_link` among the host interfaces of `prev`, with
/// every gateway of `prev` and a host route to every address.
fn host_end(host: &Netlink, cont_link: &Link, prev: &Result1) -> Result<(), Error> {
    let mut port = None;
    for intf in prev.interfaces.iter().filter(|i| i.sandbox.is_empty()) {
        if let Some(l) = host.find_link(&intf.name)?
            && l.kind == "veth"
            && l.link == Some(cont_link.index)
            && cont_link.link == Some(l.index)
        {
            port = Some(l);
            break;
        }
    }
    let port = port.ok_or_else(|| {
        Error::internal(format!(
            "ptp: host end of container interface {} not found",
            cont_link.name
        ))
    })?;
    let addrs = host.addrs(Some(&port))?;
    let mut routes = host.routes(false, Some(port.index), None)?;
    routes.extend(host.routes(true, Some(port.index), None)?);
    for ip in &prev.ips {
        let Some(gw) = ip.gateway else { continue };
        if !addrs.iter().any(|a| a.addr == IpNetwork::from(gw)) {
            return Err(Error::internal(format!(
                "ptp: host interface {} lacks the gateway address {gw}",
                port.name
            )));
        }
        let addr = ip.address.ip();
        if !routes.iter().any(|r| r.dst == IpNetwork::from(addr)) {
            return Err(Error::internal(format!(
                "ptp: no route on the host to {addr} through {}",
                port.name
            )));
        }
    }
    Ok(())
}
