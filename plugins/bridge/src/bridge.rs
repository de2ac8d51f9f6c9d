//! Host side: the bridge device, the veth ports attached to it, gateway
//! addresses on the bridge (or on `<bridge>.<vlan>`) and forwarding.

use cni_attach::{ifname, veth};
use cni_net::bridge_port::PortVlan;
use cni_net::{BridgePortOptions, IpNetwork, Kind, Link, LinkSpec, Netlink};

use crate::config::Config;
use crate::error::Error;

/// The bridge named in the config, created if missing, up, with router
/// advertisements off.
pub fn ensure_bridge(host: &Netlink, conf: &Config) -> Result<Link, Error> {
    let name = &conf.bridge;
    let fail = |e: Error| e.context(format!("failed to create bridge {name:?}"));
    let br = match host.find_link(name)? {
        Some(l) => l,
        None => create_bridge(host, conf).map_err(fail)?,
    };
    if br.kind != "bridge" {
        return Err(fail(Error::internal(format!(
            "{name:?} already exists but is not a bridge"
        ))));
    }
    if conf.vlan_filtering() {
        ensure_vlan_filtering(host, &br)?;
    }
    if conf.promisc_mode && !br.promisc {
        host.set_promisc(&br, true).map_err(|e| {
            fail(Error::from(e).context(format!("could not set promiscuous mode on {name:?}")))
        })?;
    }
    if !br.up {
        host.set_up(&br).map_err(|e| fail(e.into()))?;
    }
    // Also on a bridge that already existed.
    cni_attach::host_sysctl::refuse_router_advertisements(name);
    Ok(br)
}

/// Create the bridge. Concurrent ADDs may race to create it; losing the
/// race (`EEXIST`) is success, and the caller checks that the winner made
/// a bridge.
fn create_bridge(host: &Netlink, conf: &Config) -> Result<Link, Error> {
    let spec = LinkSpec {
        mtu: (conf.mtu > 0).then_some(conf.mtu),
        ..LinkSpec::new(
            &conf.bridge,
            Kind::Bridge {
                vlan_filtering: conf.vlan_filtering(),
            },
        )
    };
    let created = match host.create_link(&spec) {
        Ok(()) => true,
        Err(e) if e.is_exists() => false,
        Err(e) => return Err(e.into()),
    };
    if created {
        skel::failpoint::hit("bridge/bridge-created")?;
    }
    let br = host.link_by_name(&conf.bridge)?;
    if created && br.kind == "bridge" {
        // Pin the MAC at once, also for L2 bridges: unpinned, a bridge
        // takes its lowest port MAC and changes it as containers come and
        // go (cni #285, plugins #805).
        pin_mac(host, &br)?;
    }
    Ok(br)
}

/// VLAN settings need a filtering bridge; one made by someone else may
/// lack it, and port VLANs on it would isolate nothing (the reference
/// goes ahead silently). Filtering is turned on for an empty bridge, where
/// it changes nothing for anyone; a bridge with ports is refused, since
/// filtering would drop tagged frames those ports may carry.
fn ensure_vlan_filtering(host: &Netlink, br: &Link) -> Result<(), Error> {
    if host.bridge_vlan_filtering(br)? {
        return Ok(());
    }
    let ports: Vec<String> = host
        .links()?
        .into_iter()
        .filter(|l| l.master == Some(br.index))
        .map(|l| l.name)
        .collect();
    if ports.is_empty() {
        return host.set_bridge_vlan_filtering(br, true).map_err(|e| {
            Error::from(e).context(format!("failed to turn on vlan filtering of {:?}", br.name))
        });
    }
    Err(Error::internal(format!(
        "bridge {name:?} has VLAN filtering off and ports ({ports}), so vlan and vlanTrunk would \
         isolate nothing: turn it on (ip link set {name} type bridge vlan_filtering 1) or use \
         another bridge",
        name = br.name,
        ports = ports.join(", ")
    )))
}

/// Port settings on the freshly created host veth (created up): no
/// router advertisements, hairpin/isolation, VLANs.
pub fn configure_port(host: &Netlink, port: &Link, conf: &Config) -> Result<(), Error> {
    cni_attach::host_sysctl::refuse_router_advertisements(&port.name);
    if conf.hairpin_mode || conf.port_isolation {
        let opts = BridgePortOptions {
            hairpin: conf.hairpin_mode.then_some(true),
            isolated: conf.port_isolation.then_some(true),
        };
        host.set_bridge_port(port, &opts).map_err(|e| {
            Error::from(e).context(format!("failed to set up bridge port {}", port.name))
        })?;
    }
    set_port_vlans(
        host,
        port,
        conf.vlan,
        conf.vlan_trunk.as_deref(),
        conf.preserve_default_vlan,
    )
}

/// The port's VLANs, as the reference (v1.8+) sets them: unless
/// `preserve_default`, whatever the port had is removed; the native VLAN
/// (`vlan`, or 1 on a trunk without one) is the PVID and leaves untagged;
/// trunk VLANs are tagged. A trunk entry equal to the native VLAN is
/// skipped: the reference re-adds it tagged, which drops the PVID.
fn set_port_vlans(
    host: &Netlink,
    port: &Link,
    vlan: u16,
    trunk: Option<&[u16]>,
    preserve_default: bool,
) -> Result<(), Error> {
    if vlan == 0 && trunk.is_none() {
        return Ok(());
    }
    let fail = |what: &'static str| {
        move |e: cni_net::Error| {
            Error::from(e).context(format!("{what} on interface {:?}", port.name))
        }
    };
    if !preserve_default {
        let remove = fail("failed to remove default vlan");
        for v in host.bridge_vlans(port).map_err(remove)? {
            host.bridge_vlan_del(port, v.vid).map_err(remove)?;
        }
    }
    let (native, what) = if vlan != 0 {
        (vlan, "failed to setup vlan tag")
    } else {
        (1, "failed to setup default native vlan tag")
    };
    let access = PortVlan {
        vid: native,
        pvid: true,
        untagged: true,
    };
    host.bridge_vlan_add(port, &access).map_err(fail(what))?;
    for vid in trunk.unwrap_or_default().iter().filter(|v| **v != native) {
        let tagged = PortVlan {
            vid: *vid,
            pvid: false,
            untagged: false,
        };
        host.bridge_vlan_add(port, &tagged)
            .map_err(fail("failed to setup vlan tag"))?;
    }
    Ok(())
}

/// Wait for the host veth to become operationally up (the reference waits
/// up to 2.55 s; we poll in shorter steps). Returns the fresh link.
pub fn wait_port_up(host: &Netlink, name: &str) -> Result<Link, Error> {
    const SLEEPS_MS: [u64; 10] = [0, 2, 5, 10, 25, 50, 100, 300, 1000, 1000];
    let mut last = None;
    for ms in SLEEPS_MS {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let l = host.link_by_name(name)?;
        if l.oper_state == cni_net::OperState::Up {
            return Ok(l);
        }
        last = Some(l.oper_state);
    }
    Err(Error::internal(format!(
        "bridge port in error state: {}",
        format!("{:?}", last.unwrap_or(cni_net::OperState::Unknown)).to_lowercase()
    )))
}

/// Put the gateway addresses on `link` (the bridge or its VLAN interface)
/// and pin the bridge MAC. An existing different IPv4 address (or an
/// overlapping IPv6 one) is an error unless `force` replaces it.
pub fn ensure_gateway_addrs(
    host: &Netlink,
    link: &Link,
    gateways: &[IpNetwork],
    force: bool,
) -> Result<bool, Error> {
    // Only the gateways' families, each dumped on its own: a per-family
    // dump does not wait for the RTNL lock (see `addrs_of_family`).
    let mut existing = Vec::new();
    for ipv6 in [false, true] {
        if gateways.iter().any(|g| g.is_ipv6() == ipv6) {
            existing.extend(host.addrs_of_family(Some(link), ipv6)?);
        }
    }
    let mut added = false;
    for gw in gateways {
        let same_family: Vec<_> = existing
            .iter()
            .filter(|a| a.addr.is_ipv4() == gw.is_ipv4() && a.scope == 0)
            .collect();
        if same_family.iter().any(|a| a.addr == *gw) {
            continue;
        }
        for a in same_family {
            let conflicts = gw.is_ipv4() || a.addr.contains(gw.ip()) || gw.contains(a.addr.ip());
            if !conflicts {
                continue;
            }
            if !force {
                return Err(Error::internal(format!(
                    "{:?} already has an IP address different from {gw}",
                    link.name
                )));
            }
            host.delete_addr(link, a.addr).map_err(|e| {
                Error::from(e).context(format!("could not remove IP address from {:?}", link.name))
            })?;
        }
        match host.add_addr(link, *gw, true) {
            Ok(()) => added = true,
            Err(e) if e.is_exists() => {}
            Err(e) => {
                return Err(
                    Error::from(e).context(format!("could not add IP address to {:?}", link.name))
                );
            }
        }
    }
    Ok(added)
}

/// Pin the bridge's MAC to its current value: a Linux bridge otherwise
/// takes the lowest MAC of its ports and changes it as ports come and go.
pub fn pin_mac(host: &Netlink, br: &Link) -> Result<(), Error> {
    host.set_mac(br, &br.mac)
        .map_err(|e| Error::from(e).context("could not set bridge's mac"))
}

/// `<bridge>.<vlan>`: a veth whose other end is a bridge port on `vlan`,
/// carrying the gateway address for that VLAN. Created once.
pub fn ensure_vlan_interface(
    host: &Netlink,
    br: &Link,
    vlan: u16,
    preserve_default: bool,
) -> Result<Link, Error> {
    let name = format!("{}.{vlan}", br.name);
    if let Some(l) = host.find_link(&name)? {
        return Ok(l);
    }
    let own = cni_net::netns::current()?;
    let spec = veth::Spec {
        ns: &own,
        ifname: &name,
        mac: None,
        mtu: br.mtu,
        master: Some(br),
    };
    let port = match veth::create(host, &spec, ifname::random()?) {
        Ok(p) => p,
        // A concurrent ADD made it first.
        Err(_) if host.find_link(&name)?.is_some() => {
            return host.link_by_name(&name).map_err(Into::into);
        }
        Err(e) => return Err(e.context(format!("failed to create vlan gateway {name:?}"))),
    };
    // A half-configured gateway interface would be reused by every later
    // ADD, so remove it when configuring it fails.
    let configure = || -> Result<Link, Error> {
        skel::failpoint::hit("bridge/vlan-veth-created")?;
        set_port_vlans(host, &port, vlan, None, preserve_default)?;
        let l = host.link_by_name(&name)?;
        host.set_up(&l)?;
        Ok(l)
    };
    let configured = configure();
    if configured.is_err() {
        let _ = host.delete_link(&port);
    }
    configured
}
