//! Every rtnetlink message our code sends, and every reply it parses,
//! decoded again by `netlink-packet-route` (a dev-dependency only): an
//! independent encoder and parser checking ours, in a throwaway namespace.

use std::fs::File;
use std::net::IpAddr;

use netlink_packet_core::{Emitable, NetlinkMessage, NetlinkPayload, NlaBuffer, Parseable};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoBridge, InfoBridgePort, InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo,
    LinkMessage, LinkProtoInfoBridge,
};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage};
use testsupport::{TestNetns, unique_name};

use crate::netlink::wire::{self, Dir};
use crate::{
    Addr, BridgePortOptions, IpNetwork, Link, LinkChanges, Netlink, PortVlan, RouteInfo, RouteSpec,
    VethPair,
};

/// The netlink messages of one datagram, headers included.
fn split(mut d: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while d.len() >= 16 {
        let len = u32::from_ne_bytes([d[0], d[1], d[2], d[3]]) as usize;
        if len < 16 || len > d.len() {
            break;
        }
        out.push(&d[..len]);
        d = &d[(len + 3) & !3..];
    }
    out
}

/// Every rtnetlink message of the log, decoded, with its body as our code
/// sees it. Decoding failures fail the test.
fn decode(log: &[(Dir, Vec<u8>)]) -> Vec<(Dir, RouteNetlinkMessage, Vec<u8>)> {
    let mut out = Vec::new();
    for (dir, datagram) in log {
        for m in split(datagram) {
            let kind = u16::from_ne_bytes([m[4], m[5]]);
            // Errors, acks and end-of-dump markers carry no rtnetlink body.
            if kind < 16 {
                continue;
            }
            let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(m).unwrap_or_else(|e| {
                panic!("{dir:?} message type {kind} does not decode: {e:?}\n{m:02x?}")
            });
            match msg.payload {
                NetlinkPayload::InnerMessage(inner) => out.push((*dir, inner, m[16..].to_vec())),
                other => panic!("{dir:?} message type {kind}: unexpected payload {other:?}"),
            }
        }
    }
    out
}

fn open(ns: &TestNetns) -> File {
    File::open(ns.path()).unwrap()
}

/// A bridge with VLAN filtering, a veth pair across namespaces enslaved to
/// it with port options and VLANs, addresses and routes: one of every
/// message kind the crate sends, and replies of every kind it parses.
fn exercise(host: &Netlink, peer_ns: &File) {
    // Kernels without CONFIG_BRIDGE_VLAN_FILTERING refuse this one; what
    // was sent is checked either way.
    let filtering = unique_name("cnirsxf");
    if host.create_bridge(&filtering, None, true).is_ok() {
        host.delete_link(&host.link_by_name(&filtering).unwrap())
            .unwrap();
    }
    let br_name = unique_name("cnirsxb");
    host.create_bridge(&br_name, Some(1400), false).unwrap();
    let br = host.link_by_name(&br_name).unwrap();
    host.set_up(&br).unwrap();
    let veth = unique_name("cnirsxv");
    let port = host
        .create_veth_pair_up(&VethPair {
            host_name: &veth,
            container_name: "eth0",
            container_ns: peer_ns,
            container_mac: Some([0x02, 0, 0, 0, 0, 0x42]),
            mtu: Some(1400),
            host_master: Some(br.index),
        })
        .unwrap();
    host.set_bridge_port(
        &port,
        &BridgePortOptions {
            hairpin: Some(true),
            isolated: Some(true),
        },
    )
    .unwrap();
    let vlan = PortVlan {
        vid: 42,
        pvid: true,
        untagged: true,
    };
    // Without VLAN filtering the kernel may refuse VLANs; sent all the same.
    if host.bridge_vlan_add(&port, &vlan).is_ok() {
        assert!(host.bridge_vlans(&port).unwrap().contains(&vlan));
    }
    let _ = host.bridge_vlan_del(&port, 42);
    host.set_promisc(&br, true).unwrap();
    host.set_mac(&br, &[0x02, 0x42, 0, 0, 0, 1]).unwrap();
    host.set_mtu(&br, 1300).unwrap();
    host.set_allmulti(&br, true).unwrap();
    host.set_allmulti(&br, false).unwrap();
    host.set_txqlen(&br, 321).unwrap();
    assert_eq!(host.link_by_index(br.index).unwrap().txqlen, 321);
    let changes = LinkChanges {
        mac: Some(vec![0x02, 0x42, 0, 0, 0, 2]),
        mtu: Some(1280),
        promisc: Some(false),
        allmulti: Some(true),
        txqlen: Some(654),
    };
    host.change_link(&br, &changes).unwrap();
    let changed = host.link_by_index(br.index).unwrap();
    assert_eq!(
        (
            changed.mac_string().as_str(),
            changed.mtu,
            changed.promisc,
            changed.allmulti,
            changed.txqlen
        ),
        ("02:42:00:00:00:02", 1280, false, true, 654)
    );
    let br = host.link_by_index(br.index).unwrap();
    for a in ["10.240.9.1/24", "fd40:9::1/64"] {
        host.add_addr(&br, a.parse().unwrap(), true).unwrap();
    }
    host.addrs(Some(&br)).unwrap();
    host.addrs_of_family(None, true).unwrap();
    let mut r = RouteSpec::new("10.240.10.0/24".parse().unwrap());
    r.gw = Some("10.240.9.2".parse().unwrap());
    r.oif = Some(br.index);
    r.priority = Some(7);
    host.add_route(&r).unwrap();
    host.routes(false, Some(br.index), None).unwrap();
    host.routes(true, None, None).unwrap();
    host.delete_route(&r).unwrap();
    host.links().unwrap();
    host.set_master(&port, None).unwrap();
    host.delete_link(&port).unwrap();
    host.set_down(&br).unwrap();
    host.delete_addr(&br, "10.240.9.1/24".parse().unwrap())
        .unwrap();
}

#[test]
fn every_message_and_reply_decodes_independently() {
    let (a, b) = (TestNetns::new("xca"), TestNetns::new("xcb"));
    let host = Netlink::in_netns(&open(&a)).unwrap();
    let peer = open(&b);
    wire::start();
    exercise(&host, &peer);
    let decoded = decode(&wire::take());

    let sent: Vec<_> = decoded.iter().filter(|(d, ..)| *d == Dir::Sent).collect();
    assert!(sent.len() > 20, "{} messages sent", sent.len());
    let mut port_options = Vec::new();
    for (_, m, _) in &sent {
        let opts = bridge_port_options(m);
        // Every attribute we send is one the independent parser knows,
        // with the size it expects (bridge-port options aside, decoded
        // again by bridge_port_options).
        let text = format!("{m:?}");
        assert_eq!(
            text.matches("Other(").count(),
            opts.len(),
            "unknown attribute in {text}"
        );
        port_options.extend(opts);
    }
    assert!(port_options.contains(&InfoBridgePort::HairpinMode(true)));
    assert!(port_options.contains(&InfoBridgePort::Isolated(true)));
    check_bridge_and_veth(&sent);
    // The combined change: every attribute and both flags in one message.
    assert!(
        sent.iter()
            .any(|(_, m, _)| matches!(m, RouteNetlinkMessage::SetLink(l)
        if l.attributes.contains(&LinkAttribute::TxQueueLen(654))
            && l.attributes.contains(&LinkAttribute::Mtu(1280))
            && l.attributes.contains(&LinkAttribute::Address(vec![0x02, 0x42, 0, 0, 0, 2]))
            && l.header.change_mask.contains(LinkFlags::Allmulti | LinkFlags::Promisc)
            && l.header.flags.contains(LinkFlags::Allmulti)
            && !l.header.flags.contains(LinkFlags::Promisc)))
    );

    let mut checked = [0usize; 3];
    for (_, m, body) in decoded.iter().filter(|(d, ..)| *d == Dir::Received) {
        match m {
            RouteNetlinkMessage::NewLink(l) => {
                same_link(&Link::from_body(body).unwrap(), l);
                checked[0] += 1;
            }
            RouteNetlinkMessage::NewAddress(a) => {
                same_addr(&Addr::from_body(body).unwrap(), a);
                checked[1] += 1;
            }
            RouteNetlinkMessage::NewRoute(r) => {
                if let Some(ours) = RouteInfo::from_body(body) {
                    same_route(&ours, r);
                    checked[2] += 1;
                }
            }
            _ => {}
        }
    }
    assert!(
        checked.iter().all(|n| *n > 0),
        "replies compared: {checked:?}"
    );
}

fn link_infos(m: &LinkMessage) -> Vec<&LinkInfo> {
    m.attributes
        .iter()
        .filter_map(|a| match a {
            LinkAttribute::LinkInfo(i) => Some(i.iter()),
            _ => None,
        })
        .flatten()
        .collect()
}

fn check_bridge_and_veth(sent: &[&(Dir, RouteNetlinkMessage, Vec<u8>)]) {
    let new_links: Vec<&LinkMessage> = sent
        .iter()
        .filter_map(|(_, m, _)| match m {
            RouteNetlinkMessage::NewLink(l) => Some(l),
            _ => None,
        })
        .collect();
    let bridges: Vec<_> = new_links
        .iter()
        .filter(|l| link_infos(l).contains(&&LinkInfo::Kind(InfoKind::Bridge)))
        .collect();
    assert!(bridges.iter().any(|b| {
        link_infos(b).contains(&&LinkInfo::Data(InfoData::Bridge(vec![
            InfoBridge::VlanFiltering(true),
        ])))
    }));
    assert!(
        bridges
            .iter()
            .any(|b| b.attributes.contains(&LinkAttribute::Mtu(1400)))
    );
    let veth = new_links
        .iter()
        .find(|l| link_infos(l).contains(&&LinkInfo::Kind(InfoKind::Veth)))
        .expect("a veth creation");
    assert!(veth.header.flags.contains(LinkFlags::Up));
    let peer = link_infos(veth)
        .into_iter()
        .find_map(|i| match i {
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(p))) => Some(p),
            _ => None,
        })
        .expect("veth peer");
    assert!(
        peer.attributes
            .contains(&LinkAttribute::IfName("eth0".into()))
    );
    assert!(
        peer.attributes
            .contains(&LinkAttribute::Address(vec![2, 0, 0, 0, 0, 0x42]))
    );
    assert!(
        peer.attributes
            .iter()
            .any(|a| matches!(a, LinkAttribute::NetNsFd(fd) if *fd > 2))
    );
    let text = format!("{sent:?}");
    for want in ["vid: 42", "Pvid", "Untagged"] {
        assert!(text.contains(want), "no {want} in what was sent");
    }
}

/// The `IFLA_PROTINFO` options of an `AF_BRIDGE` link message. The
/// parser reads that nest with the old STP-state view, so its entries are
/// decoded again as bridge-port attributes (the kernel's view when the
/// nest is flagged nested).
fn bridge_port_options(m: &RouteNetlinkMessage) -> Vec<InfoBridgePort> {
    let RouteNetlinkMessage::SetLink(l) = m else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for a in &l.attributes {
        let LinkAttribute::ProtoInfoBridge(entries) = a else {
            continue;
        };
        for e in entries {
            let LinkProtoInfoBridge::Other(nla) = e else {
                panic!("unexpected bridge protinfo {e:?}");
            };
            let mut bytes = vec![0; nla.buffer_len()];
            nla.emit(&mut bytes);
            let opt = InfoBridgePort::parse(&NlaBuffer::new(&bytes[..]))
                .unwrap_or_else(|e| panic!("bridge port option {nla:?}: {e:?}"));
            assert!(!matches!(opt, InfoBridgePort::Other(_)), "{opt:?}");
            out.push(opt);
        }
    }
    out
}

fn same_link(ours: &Link, l: &LinkMessage) {
    assert_eq!(ours.index, l.header.index);
    assert_eq!(ours.up, l.header.flags.contains(LinkFlags::Up));
    assert_eq!(ours.promisc, l.header.flags.contains(LinkFlags::Promisc));
    assert_eq!(ours.allmulti, l.header.flags.contains(LinkFlags::Allmulti));
    let (mut min_mtu, mut max_mtu) = (None, None);
    let mut kind = String::new();
    for a in &l.attributes {
        match a {
            LinkAttribute::IfName(n) => assert_eq!(&ours.name, n),
            LinkAttribute::Mtu(m) => assert_eq!(ours.mtu, *m),
            LinkAttribute::Address(mac) => assert_eq!(&ours.mac, mac),
            LinkAttribute::Controller(c) => assert_eq!(ours.master, Some(*c).filter(|c| *c != 0)),
            LinkAttribute::Link(p) => assert_eq!(ours.link, Some(*p).filter(|p| *p != 0)),
            LinkAttribute::LinkNetNsId(id) => assert_eq!(ours.link_netnsid, Some(*id)),
            LinkAttribute::Promiscuity(p) => assert_eq!(ours.promiscuity, *p),
            LinkAttribute::TxQueueLen(q) => assert_eq!(ours.txqlen, *q),
            LinkAttribute::MinMtu(m) => min_mtu = Some(*m),
            LinkAttribute::MaxMtu(m) => max_mtu = Some(*m),
            LinkAttribute::OperState(s) => {
                assert_eq!(format!("{:?}", ours.oper_state), format!("{s:?}"))
            }
            LinkAttribute::LinkInfo(infos) => {
                for i in infos {
                    if let LinkInfo::Kind(k) = i {
                        kind = k.to_string();
                    }
                }
            }
            _ => {}
        }
    }
    assert_eq!(ours.kind, kind, "kind of {}", ours.name);
    assert_eq!((ours.min_mtu, ours.max_mtu), (min_mtu, max_mtu));
}

fn same_addr(ours: &Addr, a: &AddressMessage) {
    assert_eq!(ours.index, a.header.index);
    assert_eq!(ours.addr.prefix(), a.header.prefix_len);
    assert_eq!(ours.scope, u8::from(a.header.scope));
    let mut local = None;
    let mut address = None;
    for attr in &a.attributes {
        match attr {
            AddressAttribute::Local(ip) => local = Some(*ip),
            AddressAttribute::Address(ip) => address = Some(*ip),
            AddressAttribute::Flags(f) => assert_eq!(ours.flags.0, f.bits()),
            _ => {}
        }
    }
    assert_eq!(Some(ours.addr.ip()), local.or(address));
}

fn route_ip(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

fn same_route(ours: &RouteInfo, r: &RouteMessage) {
    assert_eq!(ours.dst.prefix(), r.header.destination_prefix_length);
    assert_eq!(ours.scope, u8::from(r.header.scope));
    assert_eq!(ours.kind, u8::from(r.header.kind));
    assert_eq!(ours.protocol, u8::from(r.header.protocol));
    let mut table = u32::from(r.header.table);
    let (mut dst, mut gw, mut oif, mut prio) = (None, None, None, None);
    for a in &r.attributes {
        match a {
            RouteAttribute::Destination(d) => dst = route_ip(d),
            RouteAttribute::Gateway(g) => gw = route_ip(g),
            RouteAttribute::Oif(o) => oif = Some(*o),
            RouteAttribute::Priority(p) => prio = Some(*p),
            RouteAttribute::Table(t) => table = *t,
            _ => {}
        }
    }
    assert_eq!(ours.table, table);
    assert_eq!((ours.gw, ours.oif, ours.priority), (gw, oif, prio));
    if let Some(d) = dst {
        assert_eq!(ours.dst, IpNetwork::new(d, ours.dst.prefix()).unwrap());
    }
}
