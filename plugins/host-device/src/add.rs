//! ADD: IPAM started (when configured), the device found in the host and
//! moved into the container with one request that also renames it to
//! `CNI_IFNAME` and keeps its host name in its alias (the kernel renames
//! it inside the container, so its host name never clashes there and the
//! host never sees a temporary name: reference #1002 without the udev
//! race of #1073), set up, then IPAM's addresses and routes. The device's
//! MTU and MAC are left as they are (its addresses do not survive the
//! move), as the reference does.
//!
//! A failed ADD moves the device back under its own name, clears the
//! alias and sets it up again if it was up (`cni_attach::add`), and
//! releases IPAM. A kill leaves the device either in the host untouched or
//! in the container as `CNI_IFNAME` with its alias, where DEL finds it.

use std::fs::File;

use cni_attach::add::{self, Frame, Undo};
use cni_attach::{iface, ifname};
use cni_net::{Link, Netlink, netns};
use skel::CmdArgs;
use skel::failpoint::hit;
use skel::types::{Interface, Result1};

use crate::config::Config;
use crate::error::Error;

pub fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let conf = Config::parse(&args.stdin)?;
    ifname::check(&args.ifname)?;
    let ns = args.netns.file().map_err(|e| {
        Error::from(e).context(format!("failed to open netns {:?}", args.netns_path))
    })?;
    let cont = Netlink::in_netns(ns)?;
    // Found before IPAM starts, as the reference reports a missing device
    // first.
    let dev = match conf.dpdk {
        true => None,
        false => Some(
            conf.find(&Netlink::host()?)
                .map_err(|e| e.context("failed to find host device"))?,
        ),
    };
    add::run(
        "host-device",
        args,
        &conf.ipam_type,
        &mut (),
        |frame, ()| {
            let original = dev.as_ref().map_or("", |d| d.name.as_str());
            let taken = || taken(&args.ifname, original);
            if conf.ipam_type.is_empty() {
                if dev.is_some() && cont.find_link(&args.ifname)?.is_some() {
                    return Err(taken());
                }
            } else {
                frame.start_ipam(&cont, taken)?;
                hit("host-device/ipam-started")?;
            }
            let link = match &dev {
                None => None,
                Some(dev) => Some(move_in(args, dev, ns, &cont, frame)?),
            };
            let mut result = Result1 {
                cni_version: skel::version::CURRENT.to_string(),
                interfaces: vec![Interface {
                    name: args.ifname.clone(),
                    mac: link.as_ref().map(Link::mac_string).unwrap_or_default(),
                    sandbox: args.netns_path.clone(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            if conf.ipam_type.is_empty() {
                return Ok(result);
            }
            let ipam = frame.ipam_result(&conf.cni_version)?;
            hit("host-device/ipam-done")?;
            result.ips = ipam.ips;
            result.routes = ipam.routes;
            for ip in &mut result.ips {
                ip.interface = Some(0);
            }
            // In DPDK mode there is no netdev: the addresses are only reported.
            if let Some(link) = &link {
                if result.ips.iter().any(|ip| !ip.address.is_ipv4()) {
                    iface::set_v6_sysctls(ns, &args.ifname)?;
                }
                iface::configure(&cont, link, &result, 0, true)?;
                hit("host-device/configured")?;
            }
            // The config's DNS, even empty, as the reference.
            result.dns = conf.dns.clone();
            Ok(result)
        },
    )
}

/// The error for a container that already has `CNI_IFNAME` (the kernel's
/// answer to the reference's move).
fn taken(ifname: &str, original: &str) -> Error {
    Error::internal(format!(
        "failed to move link failed to move {ifname:?} (host: {original:?}) to container NS: \
         file exists"
    ))
}

/// Move `dev` into the container as `CNI_IFNAME` with its host name as
/// alias, and set it up there; the link as the container sees it.
fn move_in(
    args: &CmdArgs,
    dev: &Link,
    ns: &File,
    cont: &Netlink,
    frame: &mut Frame,
) -> Result<Link, Error> {
    let host = Netlink::host()?;
    let ifname = &args.ifname;
    let original = dev.name.clone();
    let failed = |e: cni_net::Error| {
        Error::from(e).context(format!(
            "failed to move link failed to move {ifname:?} (host: {original:?}) to container NS"
        ))
    };
    if let Err(e) = host.move_link_with(dev, ns, Some(ifname), Some(&original), None) {
        // Moved but stopped before the end: not renamed (the name taken
        // meanwhile), or renamed without its alias. Back under its own
        // name.
        let stray = cont.links()?.into_iter().find(|l| {
            (l.name == original || l.name == *ifname) && l.mac == dev.mac && l.alias.is_none()
        });
        if let Some(l) = stray {
            cont.move_link(&l, &netns::current()?, Some(&original))?;
            if dev.up {
                host.set_up(&host.link_by_name(&original)?)?;
            }
        }
        return Err(failed(e));
    }
    frame.record(Undo::MoveBack {
        name: ifname.clone(),
        original: original.clone(),
        up: dev.up,
    });
    hit("host-device/moved")?;
    let link = cont.link_by_name(ifname).map_err(|e| {
        Error::from(e).context(format!("failed to find {ifname:?} in container NS"))
    })?;
    cont.set_up(&link)
        .map_err(|e| Error::from(e).context(format!("failed to set {ifname:?} up")))?;
    hit("host-device/up")?;
    Ok(link)
}
