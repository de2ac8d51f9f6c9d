//! Root tests of what cni-attach gives every link-making plugin, on links
//! other than a veth pair: the ADD frame's undo of links made or moved in
//! either namespace, DEL's common part (delete, move back), the container
//! interface's configuration and CHECK on a macvlan, the default route's
//! interface. The plugin's own namespace is a throwaway one too
//! (`TestNetns::enter`).

use std::fs::File;

use cni_attach::add::{self, Side, Undo};
use cni_attach::teardown::{self, Back, Removal};
use cni_attach::{Error, check, iface, master};
use cni_net::{Kind, LinkSpec, MacvlanMode, Netlink, Peer};
use skel::types::{Cidr, Interface, IpConfig, Result1, Route};
use skel::{CmdArgs, Netns};
use testsupport::{TestNetns, unique_name};

fn args(cont: &TestNetns, ifname: &str) -> CmdArgs {
    CmdArgs {
        container_id: "c1".into(),
        netns_path: cont.path().into(),
        ifname: ifname.into(),
        stdin: br#"{"cniVersion":"1.0.0","name":"n"}"#.to_vec(),
        cni_version: "1.0.0".into(),
        netns: Netns::Open {
            path: cont.path().into(),
            file: File::open(cont.path()).unwrap(),
        },
        ..CmdArgs::default()
    }
}

/// A parent link in the current namespace: a veth end, up.
fn parent(nl: &Netlink) -> cni_net::Link {
    nl.create_link_get(&LinkSpec {
        up: true,
        peer: Some(Peer {
            name: &unique_name("cnirsq"),
            netns: None,
            mac: None,
            mtu: None,
        }),
        ..LinkSpec::new(&unique_name("cnirsp"), Kind::Veth)
    })
    .unwrap()
}

fn macvlan() -> Kind {
    Kind::Macvlan {
        mode: MacvlanMode::Bridge,
        bcqueuelen: None,
    }
}

/// A failed ADD removes the links it made in either namespace, under a
/// temporary or a final name, and moves a host device back under its
/// name, its alias cleared, up again.
#[test]
fn a_failed_add_undoes_links_of_every_kind_in_both_namespaces() {
    let (host_ns, cont_ns) = (TestNetns::new("aua"), TestNetns::new("aub"));
    let a = args(&cont_ns, "net1");
    let (device, made_here) = (unique_name("cnirsd"), unique_name("cnirsh"));
    let tmp = unique_name("cnirst");
    let out: Result<(), Error> = host_ns.enter(|| {
        let cont_file = File::open(cont_ns.path()).unwrap();
        let cont = Netlink::in_netns(&cont_file).unwrap();
        let host = Netlink::host().unwrap();
        let master = parent(&host);
        let dev = host
            .create_link_get(&LinkSpec {
                up: true,
                ..LinkSpec::new(&device, Kind::Ifb)
            })
            .unwrap();
        add::run("test", &a, "", &mut (), |frame, ()| {
            // A macvlan straight into the container under a temporary name,
            // then renamed: both names recorded.
            let spec = LinkSpec {
                parent: Some(master.index),
                netns: Some(&cont_file),
                ..LinkSpec::new(&tmp, macvlan())
            };
            frame.create_link(&host, Side::Container, &spec)?;
            let l = cont.link_by_name(&tmp)?;
            cont.rename_link(&l, "net1")?;
            frame.record(Undo::Delete {
                side: Side::Container,
                name: "net1".into(),
            });
            // A link of the host.
            frame.create_link(&host, Side::Host, &LinkSpec::new(&made_here, Kind::Ifb))?;
            // A macvlan in the container under a name the host has.
            let clash = LinkSpec {
                parent: Some(master.index),
                ..LinkSpec::new(&master.name, macvlan())
            };
            frame.create_link_in(&host, &cont, &clash)?;
            assert!(cont.find_link(&master.name)?.is_some());
            // A host device moved in under another name.
            host.set_alias(&dev, &device)?;
            host.move_link(&dev, &cont_file, Some("net2"))?;
            frame.record(Undo::MoveBack {
                name: "net2".into(),
                original: device.clone(),
                up: true,
            });
            Err(Error::internal("a later step failed"))
        })
    });
    assert_eq!(out.unwrap_err().msg, "a later step failed");
    let cont = Netlink::in_netns(&File::open(cont_ns.path()).unwrap()).unwrap();
    for gone in ["net1", tmp.as_str(), "net2"] {
        assert!(cont.find_link(gone).unwrap().is_none(), "{gone} left");
    }
    let left: Vec<String> = cont.links().unwrap().into_iter().map(|l| l.name).collect();
    assert_eq!(left, ["lo"]);
    let host = Netlink::in_netns(&File::open(host_ns.path()).unwrap()).unwrap();
    assert!(host.find_link(&made_here).unwrap().is_none());
    let back = host.link_by_name(&device).unwrap();
    assert_eq!((back.kind, back.up, back.alias), (Kind::Ifb, true, None));
}

/// DEL's common part: a deleted interface's addresses are reported, a host
/// device goes back under its alias, and a second DEL finds nothing and
/// succeeds.
#[test]
fn del_deletes_or_moves_back_and_is_idempotent() {
    let (host_ns, cont_ns) = (TestNetns::new("adx"), TestNetns::new("ady"));
    let device = unique_name("cnirsd");
    host_ns.enter(|| {
        let cont_file = File::open(cont_ns.path()).unwrap();
        let cont = Netlink::in_netns(&cont_file).unwrap();
        let host = Netlink::host().unwrap();
        cont.create_link(&LinkSpec::new("net1", Kind::Ifb)).unwrap();
        let l = cont.link_by_name("net1").unwrap();
        let addr = "10.240.7.2/24".parse().unwrap();
        cont.add_addr(&l, addr, true).unwrap();
        let t = teardown::del(&args(&cont_ns, "net1"), None, Removal::Delete);
        assert!(t.errors.is_empty(), "{:?}", t.errors);
        assert_eq!(t.addrs, vec![addr]);
        assert!(cont.find_link("net1").unwrap().is_none());

        let dev = host
            .create_link_get(&LinkSpec::new(&device, Kind::Ifb))
            .unwrap();
        host.set_alias(&dev, &device).unwrap();
        host.move_link(&dev, &cont_file, Some("net2")).unwrap();
        for _ in 0..2 {
            let t = teardown::del(
                &args(&cont_ns, "net2"),
                None,
                Removal::MoveBack(Back::default()),
            );
            assert!(t.errors.is_empty(), "{:?}", t.errors);
        }
        let back = host.link_by_name(&device).unwrap();
        assert_eq!(back.alias, None);
        // Without its alias, a device cannot be put back.
        let other = host
            .create_link_get(&LinkSpec::new(&unique_name("cnirso"), Kind::Ifb))
            .unwrap();
        host.move_link(&other, &cont_file, Some("net3")).unwrap();
        let t = teardown::del(
            &args(&cont_ns, "net3"),
            None,
            Removal::MoveBack(Back::default()),
        );
        assert_eq!(
            t.errors[0].msg,
            "failed to find original ifname for \"net3\" (alias is not set)"
        );
    });
}

/// `ipam.ConfigureIface`'s equivalent and CHECK work on a macvlan as on
/// a veth; `announce` sets the sysctls macvlan and ipvlan set.
#[test]
fn a_macvlan_is_configured_and_checked_like_a_veth() {
    let (host_ns, cont_ns) = (TestNetns::new("acm"), TestNetns::new("acn"));
    let cont_file = File::open(cont_ns.path()).unwrap();
    host_ns.enter(|| {
        let host = Netlink::host().unwrap();
        let master = parent(&host);
        host.create_link(&LinkSpec {
            parent: Some(master.index),
            netns: Some(&cont_file),
            ..LinkSpec::new("net1", macvlan())
        })
        .unwrap();
    });
    let cont = Netlink::in_netns(&cont_file).unwrap();
    let link = cont.link_by_name("net1").unwrap();
    let result = Result1 {
        interfaces: vec![Interface {
            name: "net1".into(),
            ..Default::default()
        }],
        ips: vec![IpConfig {
            address: "10.240.8.5/24".parse::<Cidr>().unwrap(),
            gateway: Some("10.240.8.1".parse().unwrap()),
            interface: Some(0),
        }],
        routes: vec![Route::new("10.240.9.0/24".parse().unwrap(), None)],
        ..Default::default()
    };
    iface::announce(&cont_file, "net1", true).unwrap();
    iface::configure(&cont, &link, &result, 0, false).unwrap();
    check::addresses_and_routes(&cont, &link, &result).unwrap();
    assert_eq!(
        cont_ns
            .stdout(&["sysctl", "-n", "net.ipv4.conf.net1.arp_notify"])
            .trim(),
        "1"
    );
    assert_eq!(
        cont_ns
            .stdout(&["sysctl", "-n", "net.ipv6.conf.net1.ndisc_notify"])
            .trim(),
        "1"
    );
    assert!(cont.link_by_name("net1").unwrap().up);
    let routes = cont_ns.stdout(&["ip", "route", "show", "10.240.9.0/24"]);
    assert!(routes.contains("via 10.240.8.1 dev net1"), "{routes}");
    // CHECK sees a missing route.
    let mut more = result.clone();
    more.routes
        .push(Route::new("10.240.10.0/24".parse().unwrap(), None));
    let e = check::addresses_and_routes(&cont, &link, &more).unwrap_err();
    assert!(e.msg.starts_with("Expected Route"), "{}", e.msg);
}

#[test]
fn the_default_route_interface_prefers_ipv4() {
    let ns = TestNetns::new("adr");
    let nl = Netlink::in_netns(&File::open(ns.path()).unwrap()).unwrap();
    let e = master::default_route_interface(&nl).unwrap_err();
    assert_eq!(e.msg, "no default route interface found");
    let (v4, v6) = (parent(&nl), parent(&nl));
    ns.exec(&[
        "ip",
        "-6",
        "addr",
        "add",
        "fd40:5::2/64",
        "dev",
        &v6.name,
        "nodad",
    ]);
    ns.exec(&[
        "ip",
        "-6",
        "route",
        "add",
        "default",
        "via",
        "fd40:5::1",
        "dev",
        &v6.name,
    ]);
    assert_eq!(master::default_route_interface(&nl).unwrap(), v6.name);
    ns.exec(&["ip", "addr", "add", "10.240.5.2/24", "dev", &v4.name]);
    ns.exec(&[
        "ip",
        "route",
        "add",
        "default",
        "via",
        "10.240.5.1",
        "dev",
        &v4.name,
    ]);
    assert_eq!(master::default_route_interface(&nl).unwrap(), v4.name);
}
