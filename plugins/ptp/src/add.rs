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
//! the IPAM addresses and the masquerade rules (see `Undo`). Every side
//! effect is followed by a `skel::failpoint`, so a test can fail each step
//! in turn and check that nothing is left.

use std::fs::File;

use cni_attach::{host_sysctl, iface, veth};
use cni_net::{Link, Netlink};
use skel::CmdArgs;
use skel::failpoint::hit;
use skel::types::{Interface, Result1};

use crate::config::Config;
use crate::error::Error;
use crate::masq;
use crate::p2p;

/// What a failed ADD removes. Forwarding stays on, as in the reference:
/// other attachments may need it.
#[derive(Default)]
struct Undo {
    /// The host end of the veth pair, by its (random, our own) name:
    /// deleting it removes the container end and the host routes too.
    veth: Option<String>,
    /// IPAM ADD was started: IPAM DEL releases whatever it took.
    ipam: bool,
    masq: bool,
}

/// Helper processes running while ADD goes on. A failed ADD waits for them
/// before it undoes anything, so the undo follows their work.
#[derive(Default)]
struct Pending {
    ipam: Option<skel::invoke::Running>,
    masq: Option<masq::Pending>,
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
}

pub fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let conf = Config::parse(&args.stdin)?;
    veth::check_ifname(&args.ifname)?;
    let mut undo = Undo::default();
    let mut pending = Pending::default();
    let out = run(args, &conf, &mut undo, &mut pending);
    if let Err(e) = &out {
        pending.settle();
        for u in rollback(args, &conf, &undo) {
            eprintln!("ptp: cleanup after failed ADD ({e}): {u}");
        }
    }
    out
}

fn run(
    args: &CmdArgs,
    conf: &Config,
    undo: &mut Undo,
    pending: &mut Pending,
) -> Result<Result1, Error> {
    let links = link(args, conf, undo, pending)?;
    let result = address(args, conf, &links, undo, pending)?;
    finish(conf, result, pending)
}

/// Phase 1: IPAM started, veth pair, the host end's sysctl.
fn link<'a>(
    args: &'a CmdArgs,
    conf: &Config,
    undo: &mut Undo,
    pending: &mut Pending,
) -> Result<Links<'a>, Error> {
    let ns = args.netns.file().map_err(|e| {
        Error::from(e).context(format!("failed to open netns {:?}", args.netns_path))
    })?;
    let cont = Netlink::in_netns(ns)?;
    let host_name = veth::random_name()?;
    // IPAM must not run for an attachment that already exists: the
    // rollback of this ADD would release that attachment's addresses.
    if cont.find_link(&args.ifname)?.is_some() {
        return Err(veth::ifname_taken(&args.ifname, &host_name));
    }
    // Collected in phase 2, so the IPAM process runs while this one talks
    // netlink.
    let running = skel::invoke::start(&conf.ipam_type, "ADD", &args.path, &args.stdin)?;
    pending.ipam = Some(running);
    undo.ipam = true;
    hit("ptp/ipam-started")?;
    let host = Netlink::host()?;
    let spec = veth::Spec {
        ns,
        ifname: &args.ifname,
        mac: None,
        mtu: conf.mtu,
        master: None,
    };
    let port = veth::create(&host, &spec, host_name)?;
    undo.veth = Some(port.name.clone());
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
    })
}

/// Phase 2: IPAM's result, forwarding, masquerade started, the container
/// side, the host side.
fn address(
    args: &CmdArgs,
    conf: &Config,
    links: &Links,
    undo: &mut Undo,
    pending: &mut Pending,
) -> Result<Result1, Error> {
    let running = pending
        .ipam
        .take()
        .ok_or_else(|| Error::internal("IPAM plugin was not started"))?;
    let ipam = skel::invoke::wait_add(running, &conf.ipam_type, &conf.cni_version)?.into_v1()?;
    hit("ptp/ipam-done")?;
    let result = new_result(args, links, ipam)?;

    for ipv6 in [false, true] {
        if result.ips.iter().any(|ip| ip.address.is_ipv4() != ipv6) {
            host_sysctl::enable_forwarding(ipv6)
                .map_err(|e| e.context("Could not enable IP forwarding"))?;
        }
    }
    hit("ptp/forwarding")?;
    if conf.ip_masq {
        undo.masq = true;
        pending.masq = Some(masq::setup(args, conf, &links.host, &result)?);
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
    if ipam.ips.is_empty() {
        return Err(Error::internal("IPAM plugin returned missing IP config"));
    }
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
fn finish(conf: &Config, mut result: Result1, pending: &mut Pending) -> Result<Result1, Error> {
    if let Some(m) = pending.masq.take() {
        m.wait()?;
    }
    hit("ptp/masquerade-done")?;
    if !conf.dns.is_empty() {
        result.dns = conf.dns.clone();
    }
    Ok(result)
}

impl Pending {
    /// Wait for every helper. Their outcome does not matter: the rollback
    /// removes whatever they did.
    fn settle(&mut self) {
        if let Some(running) = self.ipam.take() {
            let _ = running.wait();
        }
        if let Some(m) = self.masq.take() {
            let _ = m.wait();
        }
    }
}

/// Undo a failed ADD, best effort; returns what could not be undone.
fn rollback(args: &CmdArgs, conf: &Config, undo: &Undo) -> Vec<Error> {
    let mut errors = Vec::new();
    let host = match Netlink::host() {
        Ok(h) => h,
        Err(e) => return vec![e.into()],
    };
    if let Some(name) = &undo.veth
        && let Err(e) = veth::remove(&host, name)
    {
        errors.push(e);
    }
    if undo.ipam
        && let Err(e) = skel::invoke::delegate(&conf.ipam_type, "DEL", &args.path, &args.stdin)
    {
        errors.push(e.into());
    }
    if undo.masq
        && let Err(e) = masq::teardown(args, conf, &host, &[])
    {
        errors.push(e);
    }
    errors
}
