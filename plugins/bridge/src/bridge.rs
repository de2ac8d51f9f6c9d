//! Host side: the bridge device, the veth ports attached to it, gateway
//! addresses on the bridge (or on `<bridge>.<vlan>`) and forwarding.

use std::fs::File;
use std::io::Read;

use cni_net::bridge_port::PortVlan;
use cni_net::{BridgePortOptions, IpNetwork, Link, Netlink, VethPair, sysctl};

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
    // We own the bridge's routes, also on a bridge that already existed:
    // otherwise a container's router advertisements change the host's
    // routes. Best effort, like the reference (IPv6 may be disabled).
    let _ = sysctl::set(&format!("net/ipv6/conf/{name}/accept_ra"), "0");
    Ok(br)
}

/// Create the bridge. Concurrent ADDs may race to create it; losing the
/// race (`EEXIST`) is success, and the caller checks that the winner made
/// a bridge.
fn create_bridge(host: &Netlink, conf: &Config) -> Result<Link, Error> {
    let mtu = (conf.mtu > 0).then_some(conf.mtu);
    let created = match host.create_bridge(&conf.bridge, mtu, conf.vlan_filtering()) {
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

/// `veth` + 8 random hex digits.
pub fn random_veth_name() -> Result<String, Error> {
    let mut b = [0u8; 4];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::internal(format!("read /dev/urandom: {}", skel::io_text(&e))))?;
    Ok(format!(
        "veth{:02x}{:02x}{:02x}{:02x}",
        b[0], b[1], b[2], b[3]
    ))
}

/// The error for an `ifname` that already exists in the container.
pub fn ifname_taken(ifname: &str, host_name: &str) -> Error {
    Error::internal(format!(
        "container veth name ({ifname:?}) peer provided ({host_name:?}) already exists"
    ))
}

/// Create the veth pair in one message: `ifname` (with `mac`) inside
/// `ns`, a random `veth…` host end (`first_name` on the first try) already
/// enslaved to `bridge` and up. Returns the host end as the kernel reports
/// it after creation (its index and MAC).
pub fn create_veth(
    host: &Netlink,
    ns: &File,
    ifname: &str,
    mac: Option<[u8; 6]>,
    mtu: u32,
    bridge: &Link,
    first_name: String,
) -> Result<Link, Error> {
    let mut name = first_name;
    for _ in 0..10 {
        let pair = VethPair {
            host_name: &name,
            container_name: ifname,
            container_ns: ns,
            container_mac: mac,
            mtu: (mtu > 0).then_some(mtu),
            host_master: Some(bridge.index),
        };
        match host.create_veth_pair_up(&pair) {
            Ok(port) => return Ok(port),
            Err(e) if e.is_exists() => {
                // Either our random name collided (retry) or the container
                // already has `ifname`.
                if host.find_link(&name)?.is_some() {
                    name = random_veth_name()?;
                    continue;
                }
                return Err(ifname_taken(ifname, &name));
            }
            Err(e) => {
                // The pair exists if only the lookup sent with the create
                // failed; the random host name is ours, so remove it (the
                // kernel takes the container end with it).
                if let Ok(Some(l)) = host.find_link(&name) {
                    let _ = host.delete_link(&l);
                }
                return Err(e.into());
            }
        }
    }
    Err(Error::internal(
        "failed to find a free name for the host veth after 10 tries",
    ))
}

/// Port settings on the freshly created host veth (created up): no
/// router advertisements, hairpin/isolation, VLANs.
pub fn configure_port(host: &Netlink, port: &Link, conf: &Config) -> Result<(), Error> {
    let _ = sysctl::set(&format!("net/ipv6/conf/{}/accept_ra", port.name), "0");
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
    let port = match create_veth(host, &own, &name, None, br.mtu, br, random_veth_name()?) {
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

/// `ip_forward` / `ipv6 all.forwarding` to 1, written only when needed.
pub fn enable_forwarding(ipv6: bool) -> Result<(), Error> {
    let key = if ipv6 {
        "net/ipv6/conf/all/forwarding"
    } else {
        "net/ipv4/ip_forward"
    };
    if sysctl::get(key).map(|v| v == "1").unwrap_or(false) {
        return Ok(());
    }
    sysctl::set(key, "1").map_err(|e| Error::from(e).context("failed to enable forwarding"))
}
