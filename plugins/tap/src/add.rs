//! ADD: IPAM started (when configured), the tap made inside the container
//! directly under `CNI_IFNAME` (no temporary name: it is created in the
//! container, where only that name matters), with its MTU, MAC and up in
//! the same step whatever `owner` and `group` say; a port of `bridge`
//! when set; then IPAM's addresses and routes, with `arp_notify` as the
//! reference. A failed ADD deletes the tap and releases IPAM
//! (`cni_attach::add`).

use cni_attach::add::{self, Frame, Side, Undo};
use cni_attach::{iface, ifname};
use cni_net::{Kind, Link, LinkChanges, LinkSpec, Netlink, Tun};
use skel::CmdArgs;
use skel::failpoint::hit;
use skel::types::{Interface, Result1};

use crate::config::Config;
use crate::error::Error;
use crate::selinux;

pub fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    ifname::check(&args.ifname)?;
    let ns = args.netns.file().map_err(|e| {
        Error::from(e).context(format!("failed to open netns {:?}", args.netns_path))
    })?;
    let cont = Netlink::in_netns(ns)?;
    add::run("tap", args, &conf.ipam_type, &mut (), |frame, ()| {
        if !conf.ipam_type.is_empty() {
            frame.start_ipam(&cont, || taken(&args.ifname))?;
            hit("tap/ipam-started")?;
        }
        let link = tap(args, &conf, ns, &cont, frame)?;
        let mut result = Result1 {
            cni_version: skel::version::CURRENT.to_string(),
            interfaces: vec![Interface {
                name: link.name.clone(),
                mac: link.mac_string(),
                sandbox: args.netns_path.clone(),
                ..Default::default()
            }],
            dns: conf.dns.clone(),
            ..Default::default()
        };
        if conf.ipam_type.is_empty() {
            return Ok(result);
        }
        let ipam = frame.ipam_result(&conf.cni_version)?;
        hit("tap/ipam-done")?;
        result.ips = ipam.ips;
        result.routes = ipam.routes;
        for ip in &mut result.ips {
            ip.interface = Some(0);
        }
        iface::announce(ns, &args.ifname, false)?;
        if result.ips.iter().any(|ip| !ip.address.is_ipv4()) {
            iface::set_v6_sysctls(ns, &args.ifname)?;
        }
        // Without duplicate address detection: a tap has no carrier until
        // its VM opens it, and DAD would not end before then.
        iface::configure(&cont, &link, &result, 0, false)?;
        hit("tap/configured")?;
        Ok(result)
    })
}

fn taken(ifname: &str) -> Error {
    Error::internal(format!(
        "failed to create tap {ifname}: the container already has a link of that name"
    ))
}

/// The tap, up, a port of its bridge when one is set; as the container
/// sees it.
fn tap(
    args: &CmdArgs,
    conf: &Config,
    ns: &std::fs::File,
    cont: &Netlink,
    frame: &mut Frame,
) -> Result<Link, Error> {
    let ifname = args.ifname.as_str();
    let bridge =
        match conf.bridge.as_str() {
            "" => None,
            b => Some(cont.find_link(b)?.ok_or_else(|| {
                Error::internal(format!("failed to get bridge {b}: Link not found"))
            })?),
        };
    let created = |e: Error| e.context(format!("failed to create tap {ifname}"));
    if selinux::applies(conf) {
        selinux::create_labeled(ns, ifname, conf).map_err(created)?;
        frame.record(Undo::Delete {
            side: Side::Container,
            name: ifname.to_string(),
        });
        let l = cont.link_by_name(ifname)?;
        let changes = LinkChanges {
            mac: conf.mac.map(|m| m.to_vec()),
            mtu: (conf.mtu > 0).then_some(conf.mtu),
            ..Default::default()
        };
        if !changes.is_empty() {
            cont.change_link(&l, &changes)?;
        }
        cont.set_up(&l)?;
    } else {
        let kind = Kind::Tun(Tun {
            tap: true,
            pi: false,
            // As the reference's two ways of making it: `ip tuntap`
            // without, netlink (owner and group both set) with.
            vnet_hdr: conf.owner.is_some() && conf.group.is_some(),
            multi_queue: conf.multi_queue,
            owner: conf.owner,
            group: conf.group,
        });
        let spec = LinkSpec {
            mtu: (conf.mtu > 0).then_some(conf.mtu),
            mac: conf.mac,
            up: true,
            ..LinkSpec::new(ifname, kind)
        };
        frame
            .create_link(cont, Side::Container, &spec)
            .map_err(created)?;
    }
    hit("tap/created")?;
    let link = cont
        .link_by_name(ifname)
        .map_err(|e| Error::from(e).context(format!("failed to refetch tap {ifname:?}")))?;
    if let Some(br) = &bridge {
        cont.set_master(&link, Some(br)).map_err(|e| {
            Error::from(e).context(format!(
                "failed to set tap {ifname} as a port of bridge {}",
                br.name
            ))
        })?;
        hit("tap/bridged")?;
    }
    Ok(link)
}
