//! Root tests: bridges, veth pairs across namespaces, link settings.
//! The "host" side of each pair is a throwaway namespace too, so the real
//! host is never touched.

mod common;

use std::fs::File;

use cni_net::{BridgePortOptions, Netlink, OperState};
use testsupport::{TestNetns, unique_name};

fn open(ns: &TestNetns) -> File {
    File::open(ns.path()).unwrap()
}

#[test]
fn bridge_create_is_exclusive_and_configurable() {
    let ns = TestNetns::new("lka");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let name = unique_name("cnirsbr");
    nl.create_link(&common::bridge(&name, Some(1400), false))
        .unwrap();
    let e = nl
        .create_link(&common::bridge(&name, None, true))
        .unwrap_err();
    assert!(e.is_exists(), "{e}");
    assert_eq!(e.to_string(), format!("create bridge {name}: file exists"));

    let br = nl.link_by_name(&name).unwrap();
    assert_eq!(br.kind, "bridge");
    assert_eq!(br.mtu, 1400);
    assert!(!br.up);

    nl.set_up(&br).unwrap();
    nl.set_promisc(&br, true).unwrap();
    let br = nl.link_by_name(&name).unwrap();
    assert!(br.up && br.promisc);
    nl.set_mac(&br, &[0x02, 0x42, 0, 0, 0, 1]).unwrap();
    nl.set_mtu(&br, 1300).unwrap();
    let br2 = nl.link_by_index(br.index).unwrap();
    assert_eq!(br2.mac_string(), "02:42:00:00:00:01");
    assert_eq!(br2.mtu, 1300);

    nl.delete_link(&br2).unwrap();
    assert!(nl.find_link(&name).unwrap().is_none());
    assert!(nl.delete_link(&br2).unwrap_err().is_not_found());
}

/// vlan_filtering needs CONFIG_BRIDGE_VLAN_FILTERING; whatever iproute2
/// gets from this kernel, we must get too.
#[test]
fn bridge_vlan_filtering_matches_iproute2() {
    let ns = TestNetns::new("lkv");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let supported = ns.bridge_vlan_filtering();
    let name = unique_name("cnirsbr");
    match nl.create_link(&common::bridge(&name, None, true)) {
        Ok(()) => {
            assert!(supported, "iproute2 failed where we succeeded");
            let details = ns.stdout(&["ip", "-d", "link", "show", &name]);
            assert!(details.contains("vlan_filtering 1"), "{details}");
        }
        Err(e) => {
            assert!(!supported, "{e}");
            assert_eq!(
                e.to_string(),
                format!("create bridge {name}: operation not supported")
            );
        }
    }
}

#[test]
fn veth_pair_spans_two_namespaces() {
    let host_ns = TestNetns::new("lkb");
    let cont_ns = TestNetns::new("lkc");
    let host = Netlink::in_netns(&open(&host_ns)).unwrap();
    let cont = Netlink::in_netns(&open(&cont_ns)).unwrap();
    let br_name = unique_name("cnirsbr");
    host.create_link(&common::bridge(&br_name, None, false))
        .unwrap();
    let br = host.link_by_name(&br_name).unwrap();
    let host_name = unique_name("veth");
    let cont_file = open(&cont_ns);
    let pair = common::VethPair {
        host_name: &host_name,
        container_name: "eth0",
        container_ns: &cont_file,
        container_mac: Some([0x0a, 0x58, 0x0a, 0xf0, 0, 2]),
        mtu: Some(1450),
        host_master: Some(br.index),
    };
    host.create_link(&pair.spec()).unwrap();

    let h = host.link_by_name(&host_name).unwrap();
    let c = cont.link_by_name("eth0").unwrap();
    assert!(host.find_link("eth0").unwrap().is_none());
    assert!(cont.find_link(&host_name).unwrap().is_none());
    assert_eq!((h.kind.name(), c.kind.name()), ("veth", "veth"));
    assert_eq!((h.mtu, c.mtu), (1450, 1450));
    assert_eq!(c.mac_string(), "0a:58:0a:f0:00:02");
    assert_eq!(h.master, Some(br.index));
    assert_eq!(h.link, Some(c.index));
    assert_eq!(c.link, Some(h.index));
    assert!(h.link_netnsid.is_some());

    // Same names again: the container name is taken.
    let e = host.create_link(&pair.spec()).unwrap_err();
    assert!(e.is_exists());
    assert_eq!(
        e.to_string(),
        format!("create veth pair eth0/{host_name}: file exists")
    );

    host.set_up(&h).unwrap();
    cont.set_up(&c).unwrap();
    let c = cont.link_by_name("eth0").unwrap();
    assert!(c.up);
    assert_eq!(c.oper_state, OperState::Up);

    host.set_bridge_port(
        &h,
        &BridgePortOptions {
            hairpin: Some(true),
            isolated: Some(true),
        },
    )
    .unwrap();
    let details = host_ns.stdout(&["ip", "-d", "link", "show", &host_name]);
    assert!(details.contains("hairpin on"), "{details}");
    assert!(details.contains("isolated on"), "{details}");

    host.set_master(&h, None).unwrap();
    assert_eq!(host.link_by_name(&host_name).unwrap().master, None);

    // Deleting the container end removes its peer too.
    cont.delete_link(&c).unwrap();
    assert!(host.find_link(&host_name).unwrap().is_none());
}

/// A `%` name is a template to the kernel (`br%d` would become `br0`):
/// refused before any message is sent, for bridges and both veth ends,
/// whichever creation call is used.
#[test]
fn template_names_never_reach_the_kernel() {
    let host_ns = TestNetns::new("lkt");
    let cont_ns = TestNetns::new("lku");
    let host = Netlink::in_netns(&open(&host_ns)).unwrap();
    let cont = Netlink::in_netns(&open(&cont_ns)).unwrap();
    let names =
        |nl: &Netlink| -> Vec<String> { nl.links().unwrap().into_iter().map(|l| l.name).collect() };

    let e = host
        .create_link(&common::bridge("cnirs%d", None, false))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "create link \"cnirs%d\": interface name contains %, which the kernel reads as a name template"
    );
    let cont_file = open(&cont_ns);
    let good = unique_name("veth");
    for (host_name, container_name) in [(good.as_str(), "%d"), ("veth%d", "eth0")] {
        let pair = common::VethPair {
            host_name,
            container_name,
            container_ns: &cont_file,
            container_mac: None,
            mtu: None,
            host_master: None,
        };
        let e = host.create_link(&pair.spec()).unwrap_err();
        assert!(e.to_string().contains("name template"), "{e}");
        let e = host.create_link_get(&pair.spec_up()).unwrap_err();
        assert!(e.to_string().contains("name template"), "{e}");
    }
    let e = host
        .create_link(&common::bridge("cnirs/x", None, false))
        .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("contains / or : or whitespace characters")
    );
    assert_eq!(names(&host), vec!["lo"]);
    assert_eq!(names(&cont), vec!["lo"]);
}

/// Port VLANs need CONFIG_BRIDGE_VLAN_FILTERING too; mirror `bridge vlan`.
#[test]
fn bridge_port_vlans_match_iproute2() {
    let host_ns = TestNetns::new("lkw");
    let cont_ns = TestNetns::new("lkx");
    let nl = Netlink::in_netns(&open(&host_ns)).unwrap();
    let br_name = unique_name("cnirsbr");
    nl.create_link(&common::bridge(&br_name, None, false))
        .unwrap();
    let br = nl.link_by_name(&br_name).unwrap();
    let host_name = unique_name("veth");
    let cf = open(&cont_ns);
    nl.create_link(
        &common::VethPair {
            host_name: &host_name,
            container_name: "eth0",
            container_ns: &cf,
            container_mac: None,
            mtu: None,
            host_master: Some(br.index),
        }
        .spec(),
    )
    .unwrap();
    let port = nl.link_by_name(&host_name).unwrap();
    let supported = host_ns
        .exec_output(&[
            "bridge", "vlan", "add", "dev", &host_name, "vid", "7", "master",
        ])
        .status
        .success();
    let vlan = cni_net::PortVlan {
        vid: 10,
        pvid: true,
        untagged: true,
    };
    match nl.bridge_vlan_add(&port, &vlan) {
        Ok(()) => {
            assert!(supported, "iproute2 failed where we succeeded");
            let vlans = nl.bridge_vlans(&port).unwrap();
            assert!(vlans.contains(&vlan), "{vlans:?}");
            nl.bridge_vlan_del(&port, 10).unwrap();
            assert!(!nl.bridge_vlans(&port).unwrap().iter().any(|v| v.vid == 10));
        }
        Err(e) => {
            assert!(!supported, "{e}");
            assert_eq!(
                e.to_string(),
                format!("add vlan 10 to bridge port {host_name}: operation not supported")
            );
        }
    }
}

/// The attributes tuning changes, each read back with iproute2.
#[test]
fn allmulticast_and_txqueuelen_are_set_as_iproute2_reads_them() {
    let ns = TestNetns::new("lkt");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let name = unique_name("cnirsbr");
    nl.create_link(&common::bridge(&name, None, false)).unwrap();
    let br = nl.link_by_name(&name).unwrap();
    assert!(!br.allmulti);
    assert!(br.min_mtu.is_some() && br.max_mtu.is_some(), "{br:?}");

    nl.set_allmulti(&br, true).unwrap();
    nl.set_txqlen(&br, 4321).unwrap();
    let shown = ns.stdout(&["ip", "link", "show", &name]);
    assert!(
        shown.contains("ALLMULTI") && shown.contains("qlen 4321"),
        "{shown}"
    );
    let br = nl.link_by_index(br.index).unwrap();
    assert!(br.allmulti && br.txqlen == 4321);

    nl.set_allmulti(&br, false).unwrap();
    nl.set_txqlen(&br, 0).unwrap();
    let shown = ns.stdout(&["ip", "link", "show", &name]);
    assert!(!shown.contains("ALLMULTI"), "{shown}");
    assert_eq!(nl.link_by_index(br.index).unwrap().txqlen, 0);
    nl.delete_link(&br).unwrap();
}

/// A detached deletion returns once the pair is unregistered: both ends,
/// the host end's address and routes are gone at once, and the child that
/// made the deletion ends with success. A link the kernel refuses to
/// delete (`lo`) gives the child's error.
#[test]
fn detached_deletion_returns_with_the_link_gone() {
    // The mechanism, whatever this machine's PID 1 would make of orphans.
    assert!(skel::orphans::assume(true));
    let (a, b) = (TestNetns::new("dda"), TestNetns::new("ddb"));
    let host = Netlink::in_netns(&open(&a)).unwrap();
    let cont = Netlink::in_netns(&open(&b)).unwrap();
    let name = unique_name("veth");
    let port = host
        .create_link_get(
            &common::VethPair {
                host_name: &name,
                container_name: "eth0",
                container_ns: &open(&b),
                container_mac: None,
                mtu: None,
                host_master: None,
            }
            .spec_up(),
        )
        .unwrap();
    a.exec(&["ip", "addr", "add", "10.240.14.1/32", "dev", &name]);
    a.exec(&[
        "ip",
        "route",
        "add",
        "10.240.14.2/32",
        "dev",
        &name,
        "scope",
        "host",
    ]);
    let eth0 = cont.link_by_name("eth0").unwrap();

    cont.delete_link_detached(&eth0).unwrap();
    assert!(cont.find_link("eth0").unwrap().is_none());
    assert!(host.find_link(&name).unwrap().is_none());
    assert!(host.link_by_index(port.index).unwrap_err().is_not_found());
    let routes = a.stdout(&["ip", "route", "show", "table", "all"]);
    assert!(!routes.contains("10.240.14."), "{routes}");

    let lo = cont.link_by_name("lo").unwrap();
    let e = cont.delete_link_detached(&lo).unwrap_err();
    assert_eq!(e.code(), Some(cni_net::Errno::EOPNOTSUPP), "{e}");
    assert_eq!(e.to_string(), "delete link lo: operation not supported");
    assert!(cont.find_link("lo").unwrap().is_some());
}
