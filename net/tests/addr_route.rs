//! Root tests: addresses (with DAD flags) and routes inside a namespace.

mod common;

use std::fs::File;
use std::net::IpAddr;

use cni_net::route::TABLE_MAIN;
use cni_net::{AddrFlags, IpNetwork, Link, Netlink, RouteSpec};
use testsupport::{TestNetns, unique_name};

fn open(ns: &TestNetns) -> File {
    File::open(ns.path()).unwrap()
}

fn net(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

/// A veth pair between two fresh namespaces, both ends up; returns the
/// connection and link of side A.
fn pair(a: &TestNetns, b: &TestNetns) -> (Netlink, Link) {
    let nl = Netlink::in_netns(&open(a)).unwrap();
    let fb = open(b);
    let name = unique_name("veth");
    nl.create_link(
        &common::VethPair {
            host_name: &name,
            container_name: "eth0",
            container_ns: &fb,
            container_mac: None,
            mtu: None,
            host_master: None,
        }
        .spec(),
    )
    .unwrap();
    let nb = Netlink::in_netns(&fb).unwrap();
    nb.set_up(&nb.link_by_name("eth0").unwrap()).unwrap();
    let l = nl.link_by_name(&name).unwrap();
    nl.set_up(&l).unwrap();
    (nl, l)
}

#[test]
fn addresses_add_list_delete() {
    let (a, b) = (TestNetns::new("ada"), TestNetns::new("adb"));
    let (nl, l) = pair(&a, &b);

    nl.add_addr(&l, net("10.240.7.2/24"), false).unwrap();
    let e = nl.add_addr(&l, net("10.240.7.2/24"), false).unwrap_err();
    assert!(e.is_exists(), "{e}");
    nl.add_addr(&l, net("fd40:7::2/64"), true).unwrap();
    nl.add_addr(&l, net("fd40:8::2/64"), false).unwrap();

    let addrs = nl.addrs(Some(&l)).unwrap();
    let find = |s: &str| addrs.iter().find(|x| x.addr == net(s)).cloned();
    let v4 = find("10.240.7.2/24").expect("v4 listed");
    assert_eq!(v4.index, l.index);
    assert!(!v4.is_tentative());
    let nodad = find("fd40:7::2/64").expect("nodad v6 listed");
    assert!(!nodad.is_tentative() && !nodad.is_dadfailed());
    let dad = find("fd40:8::2/64").expect("v6 listed");
    assert!(dad.is_tentative(), "fresh v6 address with DAD: {dad:?}");
    let ip = a.stdout(&["ip", "-o", "addr", "show", "dev", l.name.as_str()]);
    assert!(ip.contains("10.240.7.2/24 brd 10.240.7.255"), "{ip}");

    // Per-family listings hold only that family, with every address this
    // test added (the kernel may add a link-local address meanwhile).
    for (ipv6, ours) in [
        (false, &["10.240.7.2/24"][..]),
        (true, &["fd40:7::2/64", "fd40:8::2/64"][..]),
    ] {
        let one = nl.addrs_of_family(Some(&l), ipv6).unwrap();
        assert!(one.iter().all(|x| x.addr.is_ipv6() == ipv6), "{one:?}");
        assert!(one.iter().all(|x| x.index == l.index), "{one:?}");
        for want in ours {
            assert!(one.iter().any(|x| x.addr == net(want)), "{want}: {one:?}");
        }
    }

    assert_eq!(
        nl.settle_addrs(&l, testsupport::deadline()).unwrap(),
        cni_net::addr::Settled::Done
    );
    let settled = nl.addrs(Some(&l)).unwrap();
    assert!(settled.iter().all(|x| !x.is_tentative()), "{settled:?}");

    nl.delete_addr(&l, net("10.240.7.2/24")).unwrap();
    assert!(
        nl.delete_addr(&l, net("10.240.7.2/24"))
            .unwrap_err()
            .is_not_found()
    );
    assert!(
        nl.addrs(Some(&l))
            .unwrap()
            .iter()
            .all(|x| !x.addr.is_ipv4())
    );
}

#[test]
fn routes_add_list_delete() {
    let (a, b) = (TestNetns::new("rta"), TestNetns::new("rtb"));
    let (nl, l) = pair(&a, &b);
    nl.add_addr(&l, net("10.240.9.2/24"), false).unwrap();

    let gw: IpAddr = "10.240.9.1".parse().unwrap();
    let mut r = RouteSpec::new(net("10.240.64.0/20"));
    r.gw = Some(gw);
    r.oif = Some(l.index);
    r.priority = Some(50);
    nl.add_route(&r).unwrap();
    let e = nl.add_route(&r).unwrap_err();
    assert!(e.is_exists(), "{e}");

    let mut default = RouteSpec::new(net("0.0.0.0/0"));
    default.gw = Some(gw);
    nl.add_route(&default).unwrap();

    let routes = nl.routes(false, Some(l.index), Some(TABLE_MAIN)).unwrap();
    let got = routes
        .iter()
        .find(|x| x.dst == net("10.240.64.0/20"))
        .expect("route listed");
    assert_eq!(
        (got.gw, got.priority, got.oif),
        (Some(gw), Some(50), Some(l.index))
    );
    assert!(
        routes
            .iter()
            .any(|x| x.dst.prefix() == 0 && x.gw == Some(gw))
    );
    let shown = a.stdout(&["ip", "route", "show"]);
    assert!(shown.contains("default via 10.240.9.1"), "{shown}");
    assert!(shown.contains("10.240.64.0/20 via 10.240.9.1"), "{shown}");

    let mut table = RouteSpec::new(net("10.240.80.0/24"));
    table.oif = Some(l.index);
    table.table = Some(1000);
    table.scope = Some(cni_net::route::SCOPE_LINK);
    nl.add_route(&table).unwrap();
    let in_table = nl.routes(false, None, Some(1000)).unwrap();
    assert_eq!(in_table.len(), 1);
    assert_eq!(in_table[0].scope, cni_net::route::SCOPE_LINK);

    nl.delete_route(&r).unwrap();
    nl.delete_route(&table).unwrap();
    assert!(nl.delete_route(&r).unwrap_err().is_not_found());
    let left = nl.routes(false, Some(l.index), None).unwrap();
    assert!(left.iter().all(|x| x.dst != r.dst && x.table != 1000));
}

#[test]
fn ipv6_route() {
    let (a, b) = (TestNetns::new("r6a"), TestNetns::new("r6b"));
    let (nl, l) = pair(&a, &b);
    nl.add_addr(&l, net("fd40:9::2/64"), true).unwrap();
    let mut r = RouteSpec::new(net("fd40:99::/48"));
    r.gw = Some("fd40:9::1".parse().unwrap());
    nl.add_route(&r).unwrap();
    let routes = nl.routes(true, Some(l.index), None).unwrap();
    assert!(routes.iter().any(|x| x.dst == r.dst && x.gw == r.gw));
    nl.delete_route(&r).unwrap();
}

/// `NOPREFIXROUTE` keeps the kernel from adding the subnet route of an
/// address (both families); a route's preferred source is set and listed.
#[test]
fn address_without_prefix_route_and_route_source() {
    let (a, b) = (TestNetns::new("npa"), TestNetns::new("npb"));
    let (nl, l) = pair(&a, &b);
    let flags = AddrFlags::NODAD | AddrFlags::NOPREFIXROUTE;
    let mut batch = cni_net::Batch::new();
    batch
        .add_addr_with(&l, net("10.240.13.2/24"), flags)
        .add_addr_with(&l, net("fd40:13::2/64"), flags);
    nl.run_batch(batch).unwrap();
    for (ipv6, subnet) in [(false, "10.240.13.0/24"), (true, "fd40:13::/64")] {
        let routes = nl.routes(ipv6, Some(l.index), Some(TABLE_MAIN)).unwrap();
        assert!(routes.iter().all(|r| r.dst != net(subnet)), "{routes:?}");
    }
    let listed = nl.addrs(Some(&l)).unwrap();
    for a in ["10.240.13.2/24", "fd40:13::2/64"] {
        let got = listed.iter().find(|x| x.addr == net(a)).expect(a);
        assert!(got.flags.contains(AddrFlags::NOPREFIXROUTE), "{got:?}");
    }

    for (gw, src, dst) in [
        ("10.240.13.1", "10.240.13.2", "10.240.13.1/32"),
        ("fd40:13::1", "fd40:13::2", "fd40:13::1/128"),
    ] {
        let mut host = RouteSpec::new(net(dst));
        host.oif = Some(l.index);
        host.scope = Some(cni_net::route::SCOPE_LINK);
        host.src = Some(src.parse().unwrap());
        nl.add_route(&host).unwrap();
        let routes = nl.routes(gw.contains(':'), Some(l.index), None).unwrap();
        let got = routes.iter().find(|r| r.dst == net(dst)).expect(dst);
        assert_eq!(got.src, host.src, "{got:?}");
    }
    let shown = a.stdout(&["ip", "route", "show", "dev", l.name.as_str()]);
    assert!(
        shown.contains("10.240.13.1 scope link src 10.240.13.2"),
        "{shown}"
    );
}

/// `create_veth_pair_up` returns the host end up, as the kernel reports it,
/// and a batch applies addresses, link state and routes in one go, naming
/// the request that failed.
#[test]
fn veth_created_up_and_batch_applies_in_order() {
    let (a, b) = (TestNetns::new("bta"), TestNetns::new("btb"));
    let nl = Netlink::in_netns(&open(&a)).unwrap();
    let fb = open(&b);
    let name = unique_name("veth");
    let host = nl
        .create_link_get(
            &common::VethPair {
                host_name: &name,
                container_name: "eth0",
                container_ns: &fb,
                container_mac: None,
                mtu: None,
                host_master: None,
            }
            .spec_up(),
        )
        .unwrap();
    assert_eq!(host, nl.link_by_name(&name).unwrap());
    assert!(host.up);
    assert_eq!(host.mac.len(), 6);

    let nb = Netlink::in_netns(&fb).unwrap();
    let c = nb.link_by_name("eth0").unwrap();
    assert!(!c.up);
    let mut batch = cni_net::Batch::new();
    batch
        .add_addr(&c, net("10.240.11.2/24"), false)
        .set_up(&c)
        .add_route(&RouteSpec {
            gw: Some("10.240.11.1".parse().unwrap()),
            oif: Some(c.index),
            ..RouteSpec::new(net("10.240.12.0/24"))
        });
    nb.run_batch(batch).unwrap();
    assert!(nb.link_by_name("eth0").unwrap().up);
    let routes = nb.routes(false, Some(c.index), Some(TABLE_MAIN)).unwrap();
    assert!(
        routes.iter().any(|r| r.dst == net("10.240.12.0/24")),
        "{routes:?}"
    );

    // The same address again fails; the position names the request.
    let mut again = cni_net::Batch::new();
    again.set_up(&c).add_addr(&c, net("10.240.11.2/24"), false);
    let (i, e) = nb.run_batch(again).unwrap_err();
    assert_eq!(i, 1);
    assert!(e.is_exists(), "{e}");
    assert_eq!(
        e.to_string(),
        "add address 10.240.11.2/24 to eth0: file exists"
    );
}
