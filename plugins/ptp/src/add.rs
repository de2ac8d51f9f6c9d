//! ADD, in three phases:
//!
//! 1. `link`: IPAM started (it runs meanwhile), veth pair, router
//!    advertisements and DAD off on the host end, container end up;
//! 2. `address`: IPAM's result checked (a gateway for every address),
//!    forwarding, masquerade rules (`iptables-restore` runs meanwhile),
//!    the container's addresses and routes, the host end's gateway
//!    addresses and host routes ([`crate::p2p`]);
//! 3. `finish`: masquerade awaited, DNS, the result.
//!
//! Unlike the reference, a failed ADD undoes what it did: the veth pair,
//! the IPAM addresses (`cni_attach::add`) and the masquerade rules. Every side
//! effect is followed by a `skel::failpoint`, so a test can fail each step
//! in turn and check that nothing is left.

use std::fs::File;

use cni_attach::add::{self, Extra, Frame};
use cni_attach::{host_sysctl, iface, ifname, veth};
use cni_firewall::{Scope, ipmasq};
use cni_net::{Link, Netlink};
use skel::CmdArgs;
use skel::failpoint::hit;
use skel::types::{Interface, Result1};

use crate::config::Config;
use crate::error::Error;
use crate::masq;
use crate::p2p;

/// ptp's own part of a failed ADD: the masquerade rules. The frame
/// undoes the veth pair and IPAM; forwarding stays on, as in the
/// reference (other attachments may need it).
struct Masquerade<'a> {
    args: &'a CmdArgs,
    conf: &'a Config,
    /// Rules were being installed: where to remove them from (every
    /// backend until the chosen one is known).
    started: Option<Scope>,
    /// `iptables-restore` still running.
    pending: Option<ipmasq::Pending>,
}

impl Extra for Masquerade<'_> {
    fn settle(&mut self) {
        if let Some(m) = self.pending.take() {
            let _ = m.wait();
        }
    }

    fn undo(&self, host: &Netlink) -> Vec<Error> {
        let Some(scope) = self.started else {
            return Vec::new();
        };
        masq::teardown(self.args, self.conf, host, scope, (&[], None))
            .err()
            .into_iter()
            .collect()
    }
}

/// The attachment's links as phase 1 leaves them.
struct Links<'a> {
    ns: &'a File,
    /// Connections in the container's namespace and in ours.
    cont: Netlink,
    host: Netlink,
    /// The host end of the veth pair.
    port: Link,
    /// The container end.
    container: Link,
    /// Whether forwarding was on (IPv4, IPv6), read while IPAM ran.
    forwarding: [bool; 2],
}

pub fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let conf = Config::parse(&args.stdin)?;
    ifname::check(&args.ifname)?;
    let mut masq = Masquerade {
        args,
        conf: &conf,
        started: None,
        pending: None,
    };
    add::run("ptp", args, &conf.ipam_type, &mut masq, |frame, masq| {
        let links = link(args, &conf, frame)?;
        let result = address(args, &conf, &links, frame, masq)?;
        finish(&conf, result, masq)
    })
}

/// Phase 1: IPAM started, veth pair, the host end's sysctls, container end
/// up.
fn link<'a>(args: &'a CmdArgs, conf: &Config, frame: &mut Frame) -> Result<Links<'a>, Error> {
    let ns = args.netns.file().map_err(|e| {
        Error::from(e).context(format!("failed to open netns {:?}", args.netns_path))
    })?;
    let cont = Netlink::in_netns(ns)?;
    let host_name = ifname::random()?;
    // Collected in phase 2, so the IPAM process runs while this one talks
    // netlink.
    frame.start_ipam(&cont, || ifname::taken_by_veth(&args.ifname, &host_name))?;
    hit("ptp/ipam-started")?;
    let host = Netlink::host()?;
    let spec = veth::Spec {
        ns,
        ifname: &args.ifname,
        mac: None,
        mtu: conf.mtu,
        master: None,
    };
    let port = frame.create_veth(&host, &spec, host_name)?;
    hit("ptp/veth-created")?;
    host_sysctl::refuse_router_advertisements(&port.name);
    // The host end's link-local address appears when the container end
    // comes up. Without duplicate address detection it is usable at once;
    // with it, the host cannot send neighbour solicitations on the link
    // (it needs a non-tentative link-local source) and so cannot reach the
    // container over IPv6 for the first one to two seconds. The reference
    // hides that by waiting for DAD inside ADD.
    p2p::host_without_dad(&port.name);
    hit("ptp/host-veth-ready")?;
    let container = cont.link_by_name(&args.ifname)?;
    // Up now, while IPAM runs, rather than after the addresses as in the
    // reference: with no prefix routes and no DAD the order changes
    // nothing, and the kernel's work for it leaves ADD's critical path.
    cont.set_up(&container)
        .map_err(|e| Error::from(e).context(format!("failed to set {:?} UP", args.ifname)))?;
    hit("ptp/container-up")?;
    Ok(Links {
        ns,
        cont,
        host,
        port,
        container,
        forwarding: [false, true].map(host_sysctl::forwarding_on),
    })
}

/// Phase 2: IPAM's result, forwarding, masquerade started, the container
/// side, the host side.
fn address(
    args: &CmdArgs,
    conf: &Config,
    links: &Links,
    frame: &mut Frame,
    masq: &mut Masquerade,
) -> Result<Result1, Error> {
    let ipam = frame.ipam_result(&conf.cni_version)?;
    hit("ptp/ipam-done")?;
    let result = new_result(args, links, ipam)?;

    for ipv6 in [false, true] {
        let family = result.ips.iter().any(|ip| ip.address.is_ipv4() != ipv6);
        if family && !links.forwarding[usize::from(ipv6)] {
            host_sysctl::enable_forwarding(ipv6)
                .map_err(|e| e.context("Could not enable IP forwarding"))?;
        }
    }
    hit("ptp/forwarding")?;
    if conf.ip_masq {
        masq.started = Some(Scope::Every);
        let (backend, pending) = masq::setup(args, conf, &links.host, &result)?;
        masq.started = Some(Scope::Only(backend));
        masq.pending = Some(pending);
        hit("ptp/masquerade-started")?;
    }
    if result.ips.iter().any(|ip| !ip.address.is_ipv4()) {
        iface::set_v6_sysctls(links.ns, &args.ifname)?;
        hit("ptp/container-v6-sysctls")?;
    }
    p2p::container(&links.container, &result)?.run(&links.cont)?;
    hit("ptp/container-configured")?;
    p2p::host(&links.port, &result)?.run(&links.host)?;
    hit("ptp/host-configured")?;
    Ok(result)
}

/// The result: interfaces host end (0) and container end (1), as the
/// reference orders them; IPAM's addresses, all on the container end, each
/// with a gateway ([`p2p::gateway`]); IPAM's routes and DNS.
fn new_result(args: &CmdArgs, links: &Links, ipam: Result1) -> Result<Result1, Error> {
    let mut ips = ipam.ips;
    for ip in &mut ips {
        p2p::gateway(ip)?;
        ip.interface = Some(1);
    }
    let iface = |l: &Link, sandbox: &str| Interface {
        name: l.name.clone(),
        mac: l.mac_string(),
        sandbox: sandbox.to_string(),
        ..Default::default()
    };
    Ok(Result1 {
        cni_version: skel::version::CURRENT.to_string(),
        interfaces: vec![
            iface(&links.port, ""),
            iface(&links.container, &args.netns_path),
        ],
        ips,
        routes: ipam.routes,
        dns: ipam.dns,
    })
}

/// Phase 3: masquerade awaited, DNS from the config when it sets any.
fn finish(conf: &Config, mut result: Result1, masq: &mut Masquerade) -> Result<Result1, Error> {
    if let Some(m) = masq.pending.take() {
        m.wait()?;
    }
    hit("ptp/masquerade-done")?;
    if !conf.dns.is_empty() {
        result.dns = conf.dns.clone();
    }
    Ok(result)
}
