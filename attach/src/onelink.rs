//! The plugins that make one link in the container and nothing on the host
//! (macvlan, ipvlan, vlan, dummy): each is its config and a [`Kind`]; the
//! rest is here, in the reference's order and words.
//!
//! - [`master`]: the parent link, named or the default route's interface,
//!   in the host or (`linkInContainer`) in the container, and its MTU
//!   bound ([`check_mtu`]);
//! - [`add`]: IPAM started (it runs meanwhile), the link created on the
//!   parent straight into the container under `CNI_IFNAME`
//!   ([`Netlink::create_link_in`]: a temporary name only where the kernel
//!   needs one), IPAM's result (or `prevResult`'s addresses, chained
//!   ipvlan; or none, an L2 macvlan), `arp_notify`/`ndisc_notify`,
//!   addresses and routes ([`iface::configure`]), the result. A failed
//!   ADD undoes everything ([`crate::add`]; the reference leaves the link
//!   behind after an IPAM failure);
//! - [`del`]: [`teardown::del`], IPAM DEL only when there is an IPAM;
//! - [`check`]: IPAM CHECK, the `prevResult` interface in the container,
//!   its kind, its parent, its MAC, what the plugin checks of its kind
//!   (mode, VLAN ID), addresses and routes; each plugin's wording
//!   ([`Words`]).

use std::fs::File;

use cni_net::error::errno_text;
use cni_net::{Kind, Link, LinkSpec, Netlink};
use skel::CmdArgs;
use skel::failpoint::hit;
use skel::types::{Dns, Interface, Result1};

use crate::add::{self, Frame, Side, Undo};
use crate::error::{Error, join};
use crate::teardown::{self, Removal};
use crate::{check as checks, iface, ifname, master as default_master};

/// Connections in the host's namespace and in the container's.
pub struct Links<'a> {
    pub ns: &'a File,
    pub host: Netlink,
    pub cont: Netlink,
}

impl<'a> Links<'a> {
    /// `CNI_NETNS` (opened and vetted by skel) and both connections.
    pub fn open(args: &'a CmdArgs) -> Result<Links<'a>, Error> {
        let ns = args.netns.file().map_err(|e| {
            Error::from(e).context(format!("failed to open netns {:?}", args.netns_path))
        })?;
        Ok(Links {
            ns,
            host: Netlink::host()?,
            cont: Netlink::in_netns(ns)?,
        })
    }

    /// The namespace of a parent: the container's with `linkInContainer`.
    pub fn parent_side(&self, in_container: bool) -> &Netlink {
        if in_container { &self.cont } else { &self.host }
    }
}

/// Go netlink's `LinkByName` failure for a missing link, which the
/// reference passes on bare or in context.
fn link_not_found(e: cni_net::Error) -> Error {
    if e.is_not_found() {
        Error::internal("Link not found")
    } else {
        e.into()
    }
}

/// The parent link `name` (the default route's interface of its
/// namespace when `None`), in the host or, `in_container`, in the
/// container. A missing one is the reference's bare `Link not found`.
pub fn master(links: &Links, name: Option<&str>, in_container: bool) -> Result<Link, Error> {
    let nl = links.parent_side(in_container);
    let name = match name {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => default_master::default_route_interface(nl)?,
    };
    nl.link_by_name(&name).map_err(link_not_found)
}

/// `mtu` (the config's, `0` for the kernel default) within the parent's
/// (macvlan, vlan), in the reference's words.
pub fn check_mtu(master: &Link, mtu: i64) -> Result<(), Error> {
    if mtu < 0 || mtu > i64::from(master.mtu) {
        return Err(Error::config(format!(
            "invalid MTU {mtu}, must be [0, master MTU({})]",
            master.mtu
        )));
    }
    Ok(())
}

/// Where the container interface's addresses come from.
#[derive(Debug, Clone)]
pub enum Addressing {
    /// None: an L2 attachment (macvlan without `ipam`), only set up.
    None,
    /// IPAM ADD of this plugin type.
    Ipam(String),
    /// `prevResult`'s addresses and routes (ipvlan chained without `ipam`).
    Prev(Result1),
}

/// What one plugin's ADD makes.
pub struct Attachment<'a> {
    /// `macvlan`: in messages (`failed to create macvlan: …`).
    pub plugin: &'static str,
    pub kind: Kind,
    /// The parent, from [`master`]; `None` for dummy.
    pub master: Option<&'a Link>,
    /// The parent is in the container (`linkInContainer`).
    pub in_container: bool,
    /// 0: the kernel's default (the parent's).
    pub mtu: u32,
    pub mac: Option<[u8; 6]>,
    pub addressing: Addressing,
    /// `arp_notify` (and with `true`, `ndisc_notify`) on the interface
    /// when it gets addresses: macvlan, ipvlan.
    pub announce: Option<bool>,
    /// The result's DNS: the config's (`Some`, macvlan, ipvlan, vlan: IPAM's
    /// is dropped, as the reference) or IPAM's (`None`, dummy).
    pub dns: Option<Dns>,
    /// The config's version, IPAM's result is read in.
    pub cni_version: &'a str,
}

impl Attachment<'_> {
    /// The reference's error for a `CNI_IFNAME` the container has: its
    /// rename step's, or for dummy (created under its name) the creation's.
    fn taken(&self, ifname: &str) -> Error {
        Error::internal(match self.kind {
            Kind::Dummy => "failed to create dummy: file exists".to_string(),
            _ => format!(
                "failed to rename {} to {ifname:?}: file exists",
                self.plugin
            ),
        })
    }
}

/// ADD of `a` in `links`' container.
pub fn add(args: &CmdArgs, links: &Links, a: &Attachment) -> Result<Result1, Error> {
    ifname::check(&args.ifname)?;
    let ipam_type = match &a.addressing {
        Addressing::Ipam(t) => t.as_str(),
        _ => "",
    };
    add::run(a.plugin, args, ipam_type, &mut (), |frame, _| {
        if let Addressing::Ipam(_) = a.addressing {
            frame.start_ipam(&links.cont, || a.taken(&args.ifname))?;
            hit("onelink/ipam-started")?;
        } else if links.cont.find_link(&args.ifname)?.is_some() {
            return Err(a.taken(&args.ifname));
        }
        let link = create(args, links, a, frame)?;
        hit("onelink/link-created")?;
        let mut result = Result1 {
            cni_version: skel::version::CURRENT.to_string(),
            interfaces: vec![Interface {
                name: link.name.clone(),
                mac: link.mac_string(),
                sandbox: args.netns_path.clone(),
                ..Default::default()
            }],
            ..Default::default()
        };
        match &a.addressing {
            Addressing::None => {}
            Addressing::Ipam(_) => {
                let ipam = frame.ipam_result(a.cni_version)?;
                hit("onelink/ipam-done")?;
                (result.ips, result.routes, result.dns) = (ipam.ips, ipam.routes, ipam.dns);
            }
            Addressing::Prev(prev) => {
                (result.ips, result.routes) = (prev.ips.clone(), prev.routes.clone());
            }
        }
        for ip in &mut result.ips {
            ip.interface = Some(0);
        }
        configure(args, links, a, &link, &result)?;
        hit("onelink/configured")?;
        if let Some(dns) = &a.dns {
            result.dns = dns.clone();
        }
        Ok(result)
    })
}

/// The link, on its parent, in the container under `CNI_IFNAME`, down;
/// recorded for the undo.
fn create(args: &CmdArgs, links: &Links, a: &Attachment, frame: &mut Frame) -> Result<Link, Error> {
    let spec = LinkSpec {
        mtu: (a.mtu > 0).then_some(a.mtu),
        mac: a.mac,
        parent: a.master.map(|m| m.index),
        ..LinkSpec::new(&args.ifname, a.kind.clone())
    };
    let made = if a.in_container {
        links.cont.create_link_get(&spec)
    } else {
        links.host.create_link_in(&links.cont, &spec)
    };
    let link = made.map_err(|e| {
        if e.is_exists() {
            return a.taken(&args.ifname);
        }
        // The kernel's reason alone, as Go's netlink reports it.
        let reason = e.code().map_or_else(|| e.to_string(), errno_text);
        Error::internal(format!("failed to create {}: {reason}", a.plugin))
    })?;
    frame.record(Undo::Delete {
        side: Side::Container,
        name: link.name.clone(),
    });
    Ok(link)
}

/// Addresses and routes of `result` on `link`, with the announcements;
/// without addresses, only up (the reference's L2 macvlan).
fn configure(
    args: &CmdArgs,
    links: &Links,
    a: &Attachment,
    link: &Link,
    result: &Result1,
) -> Result<(), Error> {
    if result.ips.is_empty() {
        return links
            .cont
            .set_up(link)
            .map_err(|e| Error::from(e).context(format!("failed to set {:?} UP", args.ifname)));
    }
    if let Some(ndisc) = a.announce {
        iface::announce(links.ns, &args.ifname, ndisc)?;
    }
    if result.ips.iter().any(|ip| !ip.address.is_ipv4()) {
        iface::set_v6_sysctls(links.ns, &args.ifname)?;
    }
    // With duplicate address detection, as the reference: the link shares
    // a segment with others.
    iface::configure(&links.cont, link, result, 0, true)
}

/// `ipam.type` of `stdin`, for DEL, STATUS and GC, which read nothing
/// else (DEL of a config whose other keys no longer pass succeeds).
pub fn ipam_type(stdin: &[u8]) -> Result<String, Error> {
    Ok(skel::conf::NetConf::parse(stdin)?.ipam.plugin_type)
}

/// DEL: IPAM DEL (when there is an IPAM) alongside the deletion of
/// `CNI_IFNAME`; a missing interface or namespace is success. It reads
/// only `ipam.type` of the config: no master is looked up (the reference's
/// DEL fails without a default route, or after a plugin appended an
/// interface to the cached `prevResult`).
pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let ipam_type = ipam_type(&args.stdin)?;
    let ipam = Some(ipam_type.as_str()).filter(|t| !t.is_empty());
    join(teardown::del(args, ipam, Removal::Delete).errors)
}

/// STATUS: IPAM's, when there is an IPAM.
pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let ipam_type = ipam_type(&args.stdin)?;
    if !ipam_type.is_empty() {
        skel::invoke::delegate(&ipam_type, "STATUS", &args.path, &args.stdin)?;
    }
    Ok(())
}

/// GC: IPAM's, when there is an IPAM (the link goes with its namespace).
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let ipam_type = ipam_type(&args.stdin)?;
    if !ipam_type.is_empty() {
        skel::invoke::delegate(&ipam_type, "GC", &args.path, &args.stdin)?;
    }
    Ok(())
}

/// The wording of one plugin's CHECK messages (the reference's plugins
/// differ in capitals and prefixes).
#[derive(Debug, Clone, Copy)]
pub struct Words {
    pub prev_missing: &'static str,
    /// `sandbox in prevResult …`
    pub sandbox: &'static str,
    /// `… Interface name in prevResult: %s not found`
    pub not_found: &'static str,
    /// `… interface %s not of type <kind>`
    pub not_of_type: &'static str,
    /// `… %s Mac %s doesn't match container Mac: %s`
    pub mac: &'static str,
}

/// macvlan's (v1.9.1 lowercased its messages).
pub const LOWER: Words = Words {
    prev_missing: "required prevResult missing",
    sandbox: "sandbox",
    not_found: "container",
    not_of_type: "error: Container",
    mac: "interface",
};

/// ipvlan's and dummy's (dummy prefixes its `prevResult` message).
pub const UPPER: Words = Words {
    prev_missing: "Required prevResult missing",
    sandbox: "Sandbox",
    not_found: "Container",
    not_of_type: "Error: Container",
    mac: "Interface",
};

/// What CHECK expects of one plugin's attachment.
pub struct Expect<'a> {
    pub ipam_type: &'a str,
    pub words: Words,
    /// `macvlan`: the kind the interface must be.
    pub kind: &'static str,
    /// The parent and whether it is in the container; `None` for dummy.
    pub master: Option<(&'a str, bool)>,
    /// The plugin's own checks of the interface (mode, VLAN ID, up).
    pub verify: &'a dyn Fn(&Link) -> Result<(), Error>,
}

/// CHECK of `e` against `prevResult`.
pub fn check(args: &CmdArgs, e: &Expect) -> Result<(), Error> {
    let links = Links::open(args)?;
    if !e.ipam_type.is_empty() {
        skel::invoke::delegate(e.ipam_type, "CHECK", &args.path, &args.stdin)?;
    }
    let prev = crate::check::prev_result(args, e.words.prev_missing)?;
    let intf = crate::check::prev_interface(&prev, args, e.words.sandbox)?;
    let master = match e.master {
        Some((name, in_container)) => Some(
            links
                .parent_side(in_container)
                .link_by_name(name)
                .map_err(link_not_found)
                .map_err(|err| err.context(format!("failed to lookup master {name:?}")))?,
        ),
        None => None,
    };
    let link = interface(&links.cont, intf, e, master.as_ref())?;
    checks::addresses_and_routes(&links.cont, &link, &prev)
}

/// The container interface of `intf`: there, of the kind, on the master,
/// with `intf`'s MAC, as the plugin wants it.
fn interface(
    cont: &Netlink,
    intf: &Interface,
    e: &Expect,
    master: Option<&Link>,
) -> Result<Link, Error> {
    let w = e.words;
    let name = &intf.name;
    let link = cont.find_link(name)?.ok_or_else(|| {
        Error::internal(format!(
            "{} Interface name in prevResult: {name} not found",
            w.not_found
        ))
    })?;
    if link.kind.name() != e.kind {
        return Err(Error::internal(format!(
            "{} interface {name} not of type {}",
            w.not_of_type, e.kind
        )));
    }
    if let Some(m) = master
        && link.link != Some(m.index)
    {
        return Err(Error::internal(format!(
            "container {} {name} is not on master {}",
            e.kind, m.name
        )));
    }
    (e.verify)(&link)?;
    let mac = link.mac_string();
    if !intf.mac.is_empty() && intf.mac != mac {
        return Err(Error::internal(format!(
            "{} {name} Mac {} doesn't match container Mac: {mac}",
            w.mac, intf.mac
        )));
    }
    Ok(link)
}
