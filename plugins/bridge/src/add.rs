//! ADD, in the reference's order (§5.2), in four phases:
//!
//! 1. `link`: IPAM started (it runs meanwhile), bridge, veth pair, port
//!    settings, container sysctls;
//! 2. `addresses`: IPAM's result, gateways, firewall rules (nftables
//!    over netlink at once; `iptables-restore` started, it runs
//!    meanwhile), container addresses and routes; for an L2 attachment
//!    `layer2`: firewall rules, container link up;
//! 3. `gateway`: gateway addresses on the bridge (or on its VLAN
//!    interface), forwarding;
//! 4. `finish`: `iptables-restore` awaited, host port up, the result.
//!
//! Unlike the reference, a failed ADD undoes what it did: the veth pair,
//! the IPAM addresses (`cni_attach::add`) and the firewall rules. Every side
//! effect is followed by a `skel::failpoint`, so a test can fail each step
//! in turn and check that nothing is left.

use std::fs::File;
use std::net::IpAddr;

use cni_attach::add::{self, Extra, Frame};
use cni_attach::{host_sysctl, iface, ifname, veth};
use cni_firewall::ipmasq::{self, Owner};
use cni_firewall::{Backend, Scope, System, select, spoofchk};
use cni_net::nftables::Transaction;
use cni_net::{IpNetwork, Link, Netlink};
use skel::CmdArgs;
use skel::failpoint::hit;
use skel::types::{Cidr, Interface, Result1, Route};

use crate::bridge;
use crate::config::Config;
use crate::container;
use crate::error::Error;

/// The bridge's own part of a failed ADD: its firewall rules. The frame
/// (`cni_attach::add`) undoes the veth pair and IPAM. What the attachment
/// shares with others stays: the bridge (also one this ADD created: a
/// concurrent ADD may already use it), the bridge's gateway addresses and
/// VLAN interface, and forwarding, as in the reference.
struct Firewall<'a> {
    args: &'a CmdArgs,
    conf: &'a Config,
    /// Masquerade rules were being installed, with this backend, for
    /// these addresses.
    masq: Option<(Backend, Vec<IpNetwork>)>,
    spoofchk: bool,
    /// `iptables-restore` runs of the masquerade rules.
    pending: Option<ipmasq::Pending>,
}

/// The attachment's links as phase 1 leaves them.
struct Links<'a> {
    /// The container's namespace, and connections in it and in ours.
    ns: &'a File,
    cont: Netlink,
    host: Netlink,
    bridge: Link,
    /// The host end of the veth pair.
    port: Link,
    /// The container end.
    container: Link,
}

pub fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let mut conf = Config::parse(&args.stdin, &args.args)?;
    conf.validate_for_add()?;
    ifname::check(&args.ifname)?;
    if !conf.is_layer3() && matches!(conf.cni_version.as_str(), "" | "0.1.0" | "0.2.0") {
        // A 0.1/0.2 result cannot express an attachment without addresses;
        // the reference finds out only after creating the veth.
        return Err(Error::internal("cannot convert: no valid IP addresses"));
    }
    let mut fw = Firewall {
        args,
        conf: &conf,
        masq: None,
        spoofchk: false,
        pending: None,
    };
    add::run("bridge", args, &conf.ipam_type, &mut fw, |frame, fw| {
        let links = link(args, &conf, frame)?;
        let mut result = new_result(args, &links);
        if conf.is_layer3() {
            let gateways = addresses(args, &conf, &links, &mut result, frame, fw)?;
            gateway(&conf, &links, &gateways, &mut result)?;
        } else {
            layer2(args, &conf, &links, fw)?;
        }
        finish(&conf, &links, result, fw)
    })
}

/// Phase 1: IPAM started, bridge, veth pair, port settings, container
/// sysctls.
fn link<'a>(args: &'a CmdArgs, conf: &Config, frame: &mut Frame) -> Result<Links<'a>, Error> {
    let ns = args.netns.file()?;
    let cont = Netlink::in_netns(ns)?;
    let host_name = ifname::random()?;
    if conf.is_layer3() {
        // Collected in phase 2, so the IPAM process starts and runs while
        // this one talks netlink.
        frame.start_ipam(&cont, || ifname::taken_by_veth(&args.ifname, &host_name))?;
        hit("bridge/ipam-started")?;
    }
    let host = Netlink::host()?;
    let bridge = bridge::ensure_bridge(&host, conf)?;
    hit("bridge/bridge-ready")?;
    let spec = veth::Spec {
        ns,
        ifname: &args.ifname,
        mac: conf.mac,
        mtu: conf.mtu,
        master: Some(&bridge),
    };
    let port = frame.create_veth(&host, &spec, host_name)?;
    hit("bridge/veth-created")?;
    bridge::configure_port(&host, &port, conf)?;
    hit("bridge/port-configured")?;
    let container = cont.link_by_name(&args.ifname)?;
    if conf.is_layer3() {
        container::set_sysctls(ns, &args.ifname, conf.enable_dad)?;
        hit("bridge/container-sysctls")?;
    }
    Ok(Links {
        ns,
        cont,
        host,
        bridge,
        port,
        container,
    })
}

/// The result so far: its interfaces, bridge, host veth, container veth
/// (the indexes the reference's results use).
fn new_result(args: &CmdArgs, links: &Links) -> Result1 {
    let iface = |l: &Link| Interface {
        name: l.name.clone(),
        mac: l.mac_string(),
        ..Default::default()
    };
    let mut container = iface(&links.container);
    container.sandbox = args.netns_path.clone();
    Result1 {
        cni_version: skel::version::CURRENT.to_string(),
        interfaces: vec![iface(&links.bridge), iface(&links.port), container],
        ..Default::default()
    }
}

/// Gateway addresses per family, from [`calc_gateways`].
struct Gateways {
    v4: Vec<IpNetwork>,
    v6: Vec<IpNetwork>,
}

/// Phase 2: IPAM's result, gateways, firewall rules, container
/// addresses and routes.
fn addresses(
    args: &CmdArgs,
    conf: &Config,
    links: &Links,
    result: &mut Result1,
    frame: &mut Frame,
    fw: &mut Firewall,
) -> Result<Gateways, Error> {
    let ipam = frame.ipam_result(&conf.cni_version)?;
    hit("bridge/ipam-done")?;
    result.ips = ipam.ips;
    result.routes = ipam.routes;
    result.dns = ipam.dns;
    let (v4, v6) = calc_gateways(result, conf);
    let masq_addrs: Vec<IpNetwork> = if conf.ip_masq {
        result.ips.iter().map(|ip| ip.address.0).collect()
    } else {
        Vec::new()
    };
    // iptables-restore is awaited in phase 4, so it runs while the
    // container is configured.
    start_firewall(args, conf, links, &masq_addrs, fw)?;
    hit("bridge/firewall-started")?;
    if result.ips.iter().any(|ip| !ip.address.is_ipv4()) {
        iface::set_v6_sysctls(links.ns, &args.ifname)?;
        hit("bridge/container-v6-sysctls")?;
    }
    iface::configure(&links.cont, &links.container, result, 2, conf.enable_dad)?;
    hit("bridge/container-configured")?;
    Ok(Gateways { v4, v6 })
}

/// Phase 2 of an L2 attachment: firewall rules, container link
/// up unless `disableContainerInterface`.
fn layer2(args: &CmdArgs, conf: &Config, links: &Links, fw: &mut Firewall) -> Result<(), Error> {
    start_firewall(args, conf, links, &[], fw)?;
    hit("bridge/firewall-started")?;
    if !conf.disable_container_interface {
        links
            .cont
            .set_up(&links.container)
            .map_err(|e| Error::from(e).context(format!("failed to set {:?} up", args.ifname)))?;
        hit("bridge/container-up")?;
    }
    Ok(())
}

/// Phase 3, with `isGateway`: the gateway addresses on the bridge, or on
/// `<bridge>.<vlan>` with a VLAN; forwarding for each gateway family.
fn gateway(
    conf: &Config,
    links: &Links,
    gws: &Gateways,
    result: &mut Result1,
) -> Result<(), Error> {
    if !conf.is_gateway {
        return Ok(());
    }
    let all: Vec<IpNetwork> = gws.v4.iter().chain(&gws.v6).copied().collect();
    let (host, br) = (&links.host, &links.bridge);
    if !all.is_empty() {
        if conf.vlan != 0 {
            let vl = bridge::ensure_vlan_interface(host, br, conf.vlan, conf.preserve_default_vlan)
                .map_err(|e| e.context("failed to create vlan interface"))?;
            hit("bridge/vlan-interface")?;
            result.interfaces.push(Interface {
                name: vl.name.clone(),
                mac: vl.mac_string(),
                ..Default::default()
            });
            bridge::ensure_gateway_addrs(host, &vl, &all, conf.force_address)
                .map_err(|e| e.context("failed to set vlan interface for bridge with addr"))?;
        } else if bridge::ensure_gateway_addrs(host, br, &all, conf.force_address)
            .map_err(|e| e.context("failed to set bridge addr"))?
        {
            bridge::pin_mac(host, br).map_err(|e| e.context("failed to set bridge addr"))?;
        }
        hit("bridge/gateway-addrs")?;
    }
    let forward = |ipv6| {
        host_sysctl::enable_forwarding(ipv6).map_err(|e| e.context("failed to enable forwarding"))
    };
    if !gws.v4.is_empty() {
        forward(false)?;
    }
    if !gws.v6.is_empty() {
        forward(true)?;
    }
    hit("bridge/forwarding")?;
    Ok(())
}

/// Phase 4: `iptables-restore` awaited, host port up, live MACs, DNS.
fn finish(
    conf: &Config,
    links: &Links,
    mut result: Result1,
    fw: &mut Firewall,
) -> Result<Result1, Error> {
    if let Some(pending) = fw.pending.take() {
        pending.wait()?;
    }
    hit("bridge/firewall-done")?;
    let (host, name) = (&links.host, &links.port.name);
    let port = if conf.disable_container_interface {
        host.link_by_name(name)?
    } else {
        bridge::wait_port_up(host, name)?
    };
    hit("bridge/port-up")?;
    // MACs can change after enslaving and addressing (plugins #805).
    result.interfaces[1].mac = port.mac_string();
    result.interfaces[0].mac = host.link_by_index(links.bridge.index)?.mac_string();
    if !conf.dns.is_empty() {
        result.dns = conf.dns.clone();
    }
    Ok(result)
}

/// Install the firewall rules: masquerade for `masq_addrs` with the
/// backend chosen here, once for the whole call, and the spoof check.
/// nftables work (masquerade and spoof check together) is one listing and
/// one transaction over netlink, done when this returns; iptables work is
/// started and left running in `fw`. Records what to undo.
fn start_firewall(
    args: &CmdArgs,
    conf: &Config,
    links: &Links,
    masq_addrs: &[IpNetwork],
    fw: &mut Firewall,
) -> Result<(), Error> {
    let owner = Owner {
        network: &conf.name,
        ifname: &args.ifname,
        container_id: &args.container_id,
    };
    let host = &links.host;
    let mut tx = Transaction::new();
    let mut what = Vec::new();
    if !masq_addrs.is_empty() {
        let backend = select::ipmasq(conf.ip_masq_backend, &System::new(host))
            .map_err(|e| e.context("set up ip masquerade"))?;
        fw.masq = Some((backend, masq_addrs.to_vec()));
        if backend == Backend::Nftables {
            ipmasq::nft::plan_setup(host, &mut tx, masq_addrs, &owner)
                .map_err(|e| e.context("set up ip masquerade"))?;
            what.push("set up ip masquerade");
        } else {
            fw.pending = Some(ipmasq::setup(host, backend, masq_addrs, &owner)?);
        }
    }
    if conf.macspoofchk {
        let mac = <[u8; 6]>::try_from(links.container.mac.as_slice()).map_err(|_| {
            Error::internal(format!(
                "failed to setup spoof-check: {} has no Ethernet address",
                args.ifname
            ))
        })?;
        let id = spoofchk::id(&args.container_id, &args.ifname);
        fw.spoofchk = true;
        spoofchk::plan_setup(&mut tx, &id, &links.port.name, mac);
        what.push("failed to setup spoof-check");
    }
    host.nft_apply(tx).map_err(|e| {
        cni_firewall::Error::from(e)
            .context(what.join(" and "))
            .into()
    })
}

impl Extra for Firewall<'_> {
    fn settle(&mut self) {
        if let Some(pending) = self.pending.take() {
            let _ = pending.wait();
        }
    }

    fn undo(&self, host: &Netlink) -> Vec<Error> {
        let (args, mut errors) = (self.args, Vec::new());
        let owner = Owner {
            network: &self.conf.name,
            ifname: &args.ifname,
            container_id: &args.container_id,
        };
        if let Some((backend, addrs)) = &self.masq
            && let Err(e) = ipmasq::teardown(host, Scope::Only(*backend), addrs, &owner)
        {
            errors.push(e.into());
        }
        if self.spoofchk
            && let Err(e) =
                spoofchk::teardown(host, &spoofchk::id(&args.container_id, &args.ifname))
        {
            errors.push(e.into());
        }
        errors
    }
}

/// The reference's `calcGateways`: every IP points at the container
/// interface (index 2); with `isGateway` a missing gateway becomes the
/// subnet's first address; with `isDefaultGateway` a default route via it
/// is added unless one with a gateway exists. Returns the gateway
/// addresses (with the subnet's prefix) per family.
pub fn calc_gateways(result: &mut Result1, conf: &Config) -> (Vec<IpNetwork>, Vec<IpNetwork>) {
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    let mut default_found = [false, false];
    for ip in &mut result.ips {
        ip.interface = Some(2);
        let is4 = ip.address.is_ipv4();
        if ip.gateway.is_none() && conf.is_gateway {
            ip.gateway = Some(next_ip(ip.address.network().ip()));
        }
        let fam = usize::from(!is4);
        if conf.is_default_gateway && !default_found[fam] {
            let default: Cidr = if is4 { "0.0.0.0/0" } else { "::/0" }
                .parse()
                .unwrap_or(ip.address);
            default_found[fam] = result
                .routes
                .iter()
                .any(|r| r.gw.is_some() && r.dst == default);
            if !default_found[fam] {
                result.routes.push(Route::new(default, ip.gateway));
                default_found[fam] = true;
            }
        }
        if conf.is_gateway
            && let Some(gw) = ip.gateway
            && let Ok(n) = IpNetwork::new(gw, ip.address.prefix())
        {
            if is4 { v4.push(n) } else { v6.push(n) }
        }
    }
    (v4, v6)
}

fn next_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(a) => IpAddr::V4(u32::from(a).wrapping_add(1).into()),
        IpAddr::V6(a) => IpAddr::V6(u128::from(a).wrapping_add(1).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(json: &str) -> Config {
        let mut c = Config::parse(json.as_bytes(), "").unwrap();
        c.validate_for_add().unwrap();
        c
    }

    fn result(ips: &[&str], routes: &[(&str, Option<&str>)]) -> Result1 {
        Result1 {
            ips: ips
                .iter()
                .map(|a| skel::types::IpConfig {
                    address: a.parse().unwrap(),
                    gateway: None,
                    interface: None,
                })
                .collect(),
            routes: routes
                .iter()
                .map(|(d, g)| Route::new(d.parse().unwrap(), g.map(|g| g.parse().unwrap())))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn gateways_default_to_first_address() {
        let c = conf(r#"{"name":"n","isGateway":true}"#);
        let mut r = result(&["10.240.0.5/24", "fd40::5/64"], &[]);
        let (v4, v6) = calc_gateways(&mut r, &c);
        assert_eq!(v4, vec!["10.240.0.1/24".parse::<IpNetwork>().unwrap()]);
        assert_eq!(v6, vec!["fd40::1/64".parse::<IpNetwork>().unwrap()]);
        assert_eq!(r.ips[0].interface, Some(2));
        assert_eq!(r.ips[1].gateway, Some("fd40::1".parse().unwrap()));
        assert!(r.routes.is_empty());
    }

    #[test]
    fn default_gateway_adds_routes_once() {
        let c = conf(r#"{"name":"n","isDefaultGateway":true}"#);
        let mut r = result(&["10.240.0.5/24", "10.240.1.5/24"], &[]);
        calc_gateways(&mut r, &c);
        assert_eq!(r.routes.len(), 1);
        assert_eq!(r.routes[0].gw, Some("10.240.0.1".parse().unwrap()));
        // A default route with a gateway from IPAM wins.
        let mut r = result(&["10.240.0.5/24"], &[("0.0.0.0/0", Some("10.240.0.254"))]);
        calc_gateways(&mut r, &c);
        assert_eq!(r.routes.len(), 1);
        // Without a gateway it does not count (the reference's pitfall).
        let mut r = result(&["10.240.0.5/24"], &[("0.0.0.0/0", None)]);
        calc_gateways(&mut r, &c);
        assert_eq!(r.routes.len(), 2);
    }

    #[test]
    fn no_gateway_without_is_gateway() {
        let c = conf(r#"{"name":"n"}"#);
        let mut r = result(&["10.240.0.5/24"], &[]);
        let (v4, v6) = calc_gateways(&mut r, &c);
        assert!(v4.is_empty() && v6.is_empty());
        assert_eq!(r.ips[0].gateway, None);
    }
}
