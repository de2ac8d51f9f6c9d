//! ADD, in the reference's order (§5.2): bridge, veth pair, port settings,
//! IPAM, gateways, container addresses and routes, bridge gateway
//! addresses, forwarding, masquerade, spoof check, result.
//!
//! Unlike the reference, a failed ADD removes the veth it created, releases
//! the addresses IPAM handed out and removes the firewall rules it added.

use std::net::IpAddr;

use cni_net::{IpNetwork, Netlink};
use skel::CmdArgs;
use skel::types::{Cidr, Interface, Result1, Route};

use crate::bridge;
use crate::config::{self, Backend, Config, format_mac};
use crate::container;
use crate::error::Error;
use crate::masq::{self, Owner};
use crate::nft;
use crate::spoofchk;

/// What a failed ADD has to undo.
#[derive(Default)]
struct Undo {
    container_link: bool,
    ipam: bool,
    /// The IPAM ADD while it runs; a failed ADD waits for it before
    /// releasing the addresses, so the release follows the allocation.
    ipam_running: Option<skel::invoke::Running>,
    /// Firewall helper processes still running; waited for before the
    /// rules are removed.
    firewall: Option<Firewall>,
    masq: bool,
    spoofchk: bool,
}

pub fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let mut conf = Config::parse(&args.stdin, &args.args)?;
    conf.validate_for_add()?;
    config::check_ifname(&args.ifname)?;
    if !conf.is_layer3() && matches!(conf.cni_version.as_str(), "" | "0.1.0" | "0.2.0") {
        // A 0.1/0.2 result cannot express an attachment without addresses;
        // the reference finds out only after creating the veth.
        return Err(Error::internal("cannot convert: no valid IP addresses"));
    }
    let mut undo = Undo::default();
    let out = run(args, &conf, &mut undo);
    if let Err(e) = &out {
        let errors = rollback(args, &conf, &mut undo);
        for u in errors {
            eprintln!("bridge: cleanup after failed ADD ({e}): {u}");
        }
    }
    out
}

fn run(args: &CmdArgs, conf: &Config, undo: &mut Undo) -> Result<Result1, Error> {
    let ns = args.netns.file()?;
    let cont = Netlink::in_netns(ns)?;
    let host_name = bridge::random_veth_name()?;
    if conf.is_layer3() {
        // IPAM must not run for an attachment that already exists: the
        // rollback of this ADD would release that attachment's addresses.
        if cont.find_link(&args.ifname)?.is_some() {
            return Err(bridge::ifname_taken(&args.ifname, &host_name));
        }
        // Started now and collected after the link work below, so the
        // IPAM process starts and runs while this one talks netlink.
        undo.ipam = true;
        undo.ipam_running = Some(skel::invoke::start(
            &conf.ipam_type,
            "ADD",
            &args.path,
            &args.stdin,
        )?);
    }
    let host = Netlink::host()?;
    let br = bridge::ensure_bridge(&host, conf)?;

    let port = bridge::create_veth(&host, ns, &args.ifname, conf.mac, conf.mtu, &br, host_name)?;
    let host_name = port.name.clone();
    undo.container_link = true;
    bridge::configure_port(&host, &port, conf)?;
    let cont_link = cont.link_by_name(&args.ifname)?;
    if conf.is_layer3() {
        container::set_sysctls(ns, &args.ifname, conf.enable_dad)?;
    }

    let mut result = Result1 {
        cni_version: skel::version::CURRENT.to_string(),
        interfaces: vec![
            Interface {
                name: br.name.clone(),
                mac: br.mac_string(),
                ..Default::default()
            },
            Interface {
                name: host_name.clone(),
                mac: port.mac_string(),
                ..Default::default()
            },
            Interface {
                name: args.ifname.clone(),
                mac: cont_link.mac_string(),
                sandbox: args.netns_path.clone(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };

    let owner = Owner {
        network: &conf.name,
        ifname: &args.ifname,
        container_id: &args.container_id,
    };
    let spoof_id = spoofchk::id(&args.container_id, &args.ifname);
    // Spoof-check nft work of this ADD, applied together with masquerade.
    let mut nft_batch = Vec::new();
    if conf.macspoofchk {
        nft_batch.extend(spoofchk::setup_batch(
            &spoof_id,
            &host_name,
            &format_mac(&cont_link.mac),
        ));
    }

    let mut masq_addrs: Vec<Cidr> = Vec::new();
    if let Some(running) = undo.ipam_running.take() {
        let ipam =
            skel::invoke::wait_add(running, &conf.ipam_type, &conf.cni_version)?.into_v1()?;
        result.ips = ipam.ips;
        result.routes = ipam.routes;
        result.dns = ipam.dns;
        if result.ips.is_empty() {
            return Err(Error::internal("IPAM plugin returned missing IP config"));
        }
        let (gws4, gws6) = calc_gateways(&mut result, conf);
        if conf.ip_masq {
            masq_addrs = result.ips.iter().map(|ip| ip.address).collect();
        }
        // Firewall helpers start now and are awaited at the end, so their
        // processes run while the container is configured.
        start_firewall(
            conf,
            &masq_addrs,
            &owner,
            std::mem::take(&mut nft_batch),
            undo,
        )?;
        if result.ips.iter().any(|ip| !ip.address.is_ipv4()) {
            container::set_v6_sysctls(ns, &args.ifname)?;
        }
        container::configure(&cont, &cont_link, &result, conf.enable_dad)?;

        if conf.is_gateway {
            let all: Vec<IpNetwork> = gws4.iter().chain(gws6.iter()).copied().collect();
            if !all.is_empty() {
                if conf.vlan != 0 {
                    let vl = bridge::ensure_vlan_interface(
                        &host,
                        &br,
                        conf.vlan,
                        conf.preserve_default_vlan,
                    )
                    .map_err(|e| e.context("failed to create vlan interface"))?;
                    result.interfaces.push(Interface {
                        name: vl.name.clone(),
                        mac: vl.mac_string(),
                        ..Default::default()
                    });
                    bridge::ensure_gateway_addrs(&host, &vl, &all, conf.force_address).map_err(
                        |e| e.context("failed to set vlan interface for bridge with addr"),
                    )?;
                } else if bridge::ensure_gateway_addrs(&host, &br, &all, conf.force_address)
                    .map_err(|e| e.context("failed to set bridge addr"))?
                {
                    bridge::pin_mac(&host, &br)
                        .map_err(|e| e.context("failed to set bridge addr"))?;
                }
            }
            if !gws4.is_empty() {
                bridge::enable_forwarding(false)?;
            }
            if !gws6.is_empty() {
                bridge::enable_forwarding(true)?;
            }
        }
    } else {
        start_firewall(conf, &[], &owner, nft_batch, undo)?;
        if !conf.disable_container_interface {
            cont.set_up(&cont_link).map_err(|e| {
                Error::from(e).context(format!("failed to set {:?} up", args.ifname))
            })?;
        }
    }
    if let Some(fw) = undo.firewall.take() {
        fw.finish()?;
    }

    let port = if conf.disable_container_interface {
        host.link_by_name(&host_name)?
    } else {
        bridge::wait_port_up(&host, &host_name)?
    };
    // MACs can change after enslaving and addressing (plugins #805).
    result.interfaces[1].mac = port.mac_string();
    result.interfaces[0].mac = host.link_by_index(br.index)?.mac_string();
    if !conf.dns.is_empty() {
        result.dns = conf.dns.clone();
    }
    Ok(result)
}

/// Firewall work of an ADD running in the background.
enum Firewall {
    /// Masquerade (either backend) and the spoof-check batch, if any.
    Split(masq::Started, Option<nft::Running>),
    /// Masquerade and spoof check together in one nft batch.
    Joint(nft::Running),
}

/// Start the firewall work: one nft batch for masquerade and spoof check
/// together when both go through nftables. Records what to undo.
fn start_firewall(
    conf: &Config,
    masq_addrs: &[Cidr],
    owner: &Owner,
    spoof_batch: Vec<serde_json::Value>,
    undo: &mut Undo,
) -> Result<(), Error> {
    let backend = conf.ip_masq_backend;
    undo.masq = !masq_addrs.is_empty();
    undo.spoofchk = conf.macspoofchk;
    let masq_via_nft = !masq_addrs.is_empty() && backend != Some(Backend::Iptables);
    if masq_via_nft && !spoof_batch.is_empty() {
        let mut batch = masq::nft_setup_batch(masq_addrs, owner);
        batch.extend(spoof_batch);
        let run = nft::start_apply(&batch).map_err(|e| e.into_error("set up ip masquerade"))?;
        undo.firewall = Some(match run {
            Some(r) => Firewall::Joint(r),
            None => Firewall::Split(masq::Started::Nothing, None),
        });
        return Ok(());
    }
    let masq_backend = if masq_via_nft {
        backend
    } else {
        Some(Backend::Iptables)
    };
    let masq = masq::setup_start(masq_backend, masq_addrs, owner)?;
    match nft::start_apply(&spoof_batch) {
        Ok(spoof) => {
            undo.firewall = Some(Firewall::Split(masq, spoof));
            Ok(())
        }
        Err(e) => {
            // Let the masquerade helper finish before the rollback removes
            // its rules.
            let _ = masq::setup_finish(masq);
            Err(e.into_error("failed to setup spoof-check"))
        }
    }
}

impl Firewall {
    /// Wait for every helper; the first failure is returned.
    fn finish(self) -> Result<(), Error> {
        match self {
            Firewall::Joint(run) => run
                .wait()
                .map(drop)
                .map_err(|e| e.into_error("set up ip masquerade")),
            Firewall::Split(masq, spoof) => {
                let m = masq::setup_finish(masq);
                let s = spoof.map_or(Ok(()), |r| {
                    r.wait()
                        .map(drop)
                        .map_err(|e| e.into_error("failed to setup spoof-check"))
                });
                m.and(s)
            }
        }
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

/// Undo a failed ADD, best effort; returns what could not be undone.
fn rollback(args: &CmdArgs, conf: &Config, undo: &mut Undo) -> Vec<Error> {
    let mut errors = Vec::new();
    if let Some(running) = undo.ipam_running.take() {
        // Its outcome does not matter: DEL below releases whatever it took.
        let _ = running.wait();
    }
    if let Some(fw) = undo.firewall.take() {
        // Likewise: teardown below removes whatever the helpers installed.
        let _ = fw.finish();
    }
    if undo.container_link
        && let Ok(ns) = args.netns.file()
    {
        // Deleting the container end removes the host end with it.
        let r = Netlink::in_netns(ns).and_then(|c| match c.find_link(&args.ifname)? {
            Some(l) => c.delete_link(&l),
            None => Ok(()),
        });
        if let Err(e) = r {
            errors.push(e.into());
        }
    }
    if undo.ipam
        && let Err(e) = skel::invoke::delegate(&conf.ipam_type, "DEL", &args.path, &args.stdin)
    {
        errors.push(e);
    }
    let owner = Owner {
        network: &conf.name,
        ifname: &args.ifname,
        container_id: &args.container_id,
    };
    if undo.masq
        && let Err(e) = masq::teardown(conf.ip_masq_backend, &[], &owner)
    {
        errors.push(e);
    }
    if undo.spoofchk
        && let Err(e) = spoofchk::teardown(&spoofchk::id(&args.container_id, &args.ifname))
    {
        errors.push(e);
    }
    errors
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
