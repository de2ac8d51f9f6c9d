//! Containers cannot change the host's routes with router advertisements:
//! the plugin turns `accept_ra` off on the bridge it uses, whether it
//! created the bridge or found it, as the reference does.

mod common;

use std::fs::File;
use std::net::SocketAddrV6;
use std::os::fd::AsRawFd;

use common::*;
use nix::sys::socket::{
    AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn6, sendto, setsockopt,
    sockopt,
};
use serde_json::json;
use testsupport::TestNetns;

/// A router advertisement: router lifetime 1800 s (a default route), and
/// the on-link prefix fd40:31::/64.
fn router_advertisement() -> Vec<u8> {
    let mut p = vec![
        134, 0, 0, 0, // type, code, checksum (the kernel fills it in)
        64, 0, 0x07, 0x08, // hop limit, flags, router lifetime 1800
        0, 0, 0, 0, 0, 0, 0, 0, // reachable time, retransmission timer
        3, 4, 64, 0x80, // prefix information: 32 bytes, /64, on-link
        0, 1, 0x51, 0x80, 0, 0, 0x38, 0x40, // valid 86400, preferred 14400
        0, 0, 0, 0,
    ];
    p.extend_from_slice(&"fd40:31::".parse::<std::net::Ipv6Addr>().unwrap().octets());
    p
}

/// Send a router advertisement from `ifname` in `ns` to all nodes, from its
/// link-local address and with hop limit 255, as a router would.
fn send_router_advertisement(ns: &TestNetns, ifname: &str) {
    let file = File::open(ns.path()).unwrap();
    let index = cni_net::Netlink::in_netns(&file)
        .unwrap()
        .link_by_name(ifname)
        .unwrap()
        .index;
    cni_net::netns::run(&file, || {
        // The socket is created, and stays, in the container's namespace.
        let fd = nix::sys::socket::socket(
            AddressFamily::Inet6,
            SockType::Raw,
            SockFlag::empty(),
            SockProtocol::IcmpV6,
        )
        .unwrap();
        setsockopt(&fd, sockopt::Ipv6MulticastHops, &255).unwrap();
        let all_nodes = SocketAddrV6::new("ff02::1".parse().unwrap(), 0, 0, index);
        let sent = sendto(
            fd.as_raw_fd(),
            &router_advertisement(),
            &SockaddrIn6::from(all_nodes),
            MsgFlags::empty(),
        )
        .unwrap();
        assert_eq!(sent, router_advertisement().len());
    })
    .unwrap();
}

fn accept_ra(host: &Host) -> String {
    let key = format!("net.ipv6.conf.{}.accept_ra", host.bridge);
    host.sh(&["sysctl", "-n", &key]).trim().to_string()
}

/// Routes the host learnt from router advertisements: the default route
/// (`proto ra`) and the advertised on-link prefix.
fn learnt_routes(host: &Host) -> Vec<String> {
    host.sh(&["ip", "-6", "route"])
        .lines()
        .filter(|l| l.contains("proto ra") || l.starts_with("fd40:31::/64"))
        .map(str::to_string)
        .collect()
}

#[test]
fn existing_bridge_ignores_router_advertisements_from_containers() {
    let host = Host::new("ra");
    host.ns
        .exec(&["ip", "link", "add", &host.bridge, "type", "bridge"]);
    let key = format!("net.ipv6.conf.{}.accept_ra=1", host.bridge);
    host.ns.exec(&["sysctl", "-qw", &key]);
    assert_eq!(accept_ra(&host), "1");
    // L2, so that ADD leaves IPv6 forwarding off: with forwarding on the
    // kernel would ignore the advertisement whatever `accept_ra` says.
    let mut conf = host.conf("1.0.0", &[], json!({}));
    conf["ipam"] = json!({});
    let c = TestNetns::new("rac");
    // The container's link-local address is usable at once (no DAD), so
    // the advertisement has a valid source.
    c.exec(&["sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0"]);
    host.add(&conf, "c1", &c);
    assert_eq!(accept_ra(&host), "0");

    let before = host.ns.snmp6("Icmp6InRouterAdvertisements");
    send_router_advertisement(&c, "eth0");
    // Waited for by the kernel's count of received advertisements, not
    // by a pause that a busy machine may outlast: the routes would be
    // taken in the same softirq, right after the count.
    assert!(
        eventually(|| host.ns.snmp6("Icmp6InRouterAdvertisements") > before),
        "the host never received the router advertisement"
    );
    let learnt = learnt_routes(&host);
    assert!(
        learnt.is_empty(),
        "a container changed the host's routes: {learnt:?}"
    );

    // Control: the same advertisement is taken once `accept_ra` is back
    // on, so the absence above is the plugin's doing.
    host.ns.exec(&["sysctl", "-qw", &key]);
    send_router_advertisement(&c, "eth0");
    assert!(
        eventually(|| learnt_routes(&host).len() == 2),
        "the test's router advertisement was not taken: {:?}",
        learnt_routes(&host)
    );
}

#[test]
fn created_bridge_does_not_accept_router_advertisements() {
    let host = Host::new("rb");
    let conf = host.conf("1.0.0", &["10.240.31.0/24"], json!({}));
    let c = TestNetns::new("rbc");
    host.add(&conf, "c1", &c);
    assert_eq!(accept_ra(&host), "0");
}
