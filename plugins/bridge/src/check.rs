//! CHECK (§5.5): the interfaces, addresses and routes of `prevResult` are
//! still in place, plus (beyond the reference) the masquerade and spoof
//! check rules. L2 attachments are checked without calling IPAM.

use cni_firewall::ipmasq::{self, Owner};
use cni_firewall::{Scope, spoofchk};
use cni_net::{Link, Netlink};
use skel::CmdArgs;
use skel::types::Interface;

use crate::config::Config;
use crate::error::Error;

pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let ns = args.netns.file()?;
    if conf.is_layer3() {
        skel::invoke::delegate(&conf.ipam_type, "CHECK", &args.path, &args.stdin)?;
    }
    let nc = skel::conf::NetConf::parse(&args.stdin)?;
    let prev = nc
        .prev_result()?
        .ok_or_else(|| Error::internal("Required prevResult missing"))?
        .into_v1()?;

    let empty = Interface::default();
    let br_if = prev
        .interfaces
        .iter()
        .find(|i| i.name == conf.bridge)
        .unwrap_or(&empty);
    let cont_if = prev
        .interfaces
        .iter()
        .find(|i| i.name == args.ifname && i.sandbox == args.netns_path)
        .unwrap_or(&empty);

    let host = Netlink::host()?;
    let br = check_bridge(&host, br_if, &conf)?;
    if args.netns_path != cont_if.sandbox {
        return Err(Error::internal(format!(
            "Sandbox in prevResult {} doesn't match configured netns: {}",
            cont_if.sandbox, args.netns_path
        )));
    }
    let cont = Netlink::in_netns(ns)?;
    let cont_link = check_container(&cont, cont_if)?;
    let mut veth_found = false;
    for intf in &prev.interfaces {
        if intf.name == br_if.name || intf.name == cont_if.name {
            continue;
        }
        if check_host_veth(&host, intf, &br, &cont_link)? {
            veth_found = true;
            break;
        }
    }
    if !veth_found {
        return Err(Error::internal(format!(
            "CNI veth created for bridge {} was not found",
            conf.bridge
        )));
    }
    cni_attach::check::addresses_and_routes(&cont, &cont_link, &prev)?;

    if conf.is_layer3() && conf.ip_masq {
        let addrs: Vec<_> = prev.ips.iter().map(|ip| ip.address.0).collect();
        let owner = Owner {
            network: &conf.name,
            ifname: &args.ifname,
            container_id: &args.container_id,
        };
        ipmasq::check(&host, Scope::of(conf.ip_masq_backend), &addrs, &owner)?;
    }
    if conf.macspoofchk {
        spoofchk::check(&host, &spoofchk::id(&args.container_id, &args.ifname))?;
    }
    Ok(())
}

fn find(nl: &Netlink, intf: &Interface) -> Result<Link, Error> {
    if intf.name.is_empty() {
        return Err(Error::internal("Interface name missing "));
    }
    nl.find_link(&intf.name)?
        .ok_or_else(|| Error::internal(format!("Interface name {} not found", intf.name)))
}

fn check_bridge(host: &Netlink, intf: &Interface, conf: &Config) -> Result<Link, Error> {
    if intf.name.is_empty() {
        return Err(Error::internal(format!(
            "CNI created bridge {} in host namespace was not found",
            conf.bridge
        )));
    }
    let l = find(host, intf)?;
    if !intf.sandbox.is_empty() {
        return Err(Error::internal(format!(
            "Interface {} should not be in sandbox",
            intf.name
        )));
    }
    if l.kind != "bridge" {
        return Err(Error::internal(format!(
            "Interface {} does not have link type of bridge",
            intf.name
        )));
    }
    if !intf.mac.is_empty() && !intf.mac.eq_ignore_ascii_case(&l.mac_string()) {
        return Err(Error::internal(format!(
            "Bridge interface {} Mac doesn't match: {}",
            intf.name, intf.mac
        )));
    }
    if l.promisc != conf.promisc_mode {
        return Err(Error::internal(format!(
            "Bridge interface {} configured Promisc Mode {} doesn't match current state: {} ",
            intf.name, conf.promisc_mode, l.promisc
        )));
    }
    Ok(l)
}

fn check_container(cont: &Netlink, intf: &Interface) -> Result<Link, Error> {
    if intf.name.is_empty() {
        return Err(Error::internal("Interface name missing "));
    }
    let l = cont.find_link(&intf.name)?.ok_or_else(|| {
        Error::internal(format!(
            "CNI created interface in container {} not found",
            intf.name
        ))
    })?;
    if intf.sandbox.is_empty() {
        return Err(Error::internal(format!(
            "Interface {} is expected to be in a sandbox",
            intf.name
        )));
    }
    if l.kind != "veth" {
        return Err(Error::internal(format!(
            "Error: Container interface {} not of type veth",
            l.name
        )));
    }
    if !intf.mac.is_empty() && !intf.mac.eq_ignore_ascii_case(&l.mac_string()) {
        return Err(Error::internal(format!(
            "Interface {} Mac {} doesn't match container Mac: {}",
            intf.name,
            intf.mac,
            l.mac_string()
        )));
    }
    Ok(l)
}

/// Whether `intf` is the host end of the container's veth, on the bridge.
fn check_host_veth(
    host: &Netlink,
    intf: &Interface,
    br: &Link,
    cont: &Link,
) -> Result<bool, Error> {
    if !intf.sandbox.is_empty() {
        return Ok(false);
    }
    let Some(l) = host.find_link(&intf.name)? else {
        return Ok(false);
    };
    if l.kind != "veth"
        || Some(l.index) != cont.link
        || l.link != Some(cont.index)
        || l.master != Some(br.index)
    {
        return Ok(false);
    }
    if !intf.mac.is_empty() && !intf.mac.eq_ignore_ascii_case(&l.mac_string()) {
        return Err(Error::internal(format!(
            "Interface {} Mac doesn't match: {} not found",
            intf.name, intf.mac
        )));
    }
    Ok(true)
}
