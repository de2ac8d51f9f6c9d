//! Root tests of the link layer's one way to create, move, rename and read
//! back a link, for every kind this kernel has (veth, bridge, ifb,
//! macvlan, tun/tap); each read back with iproute2 as well. The kinds it
//! lacks (ipvlan, vlan, dummy, vrf) are in `kernel_features.rs`.

mod common;

use std::fs::File;

use cni_net::{Kind, LinkSpec, MacvlanMode, Netlink, Peer, Tun};
use serde_json::Value;
use testsupport::{TestNetns, unique_name};

fn open(ns: &TestNetns) -> File {
    File::open(ns.path()).unwrap()
}

/// `ip -d -j link show NAME` in `ns`.
fn details(ns: &TestNetns, name: &str) -> Value {
    let out = ns.stdout(&["ip", "-d", "-j", "link", "show", "dev", name]);
    serde_json::from_str::<Value>(&out).unwrap()[0].clone()
}

/// A parent for macvlans: a veth end in `nl`'s namespace, up.
fn parent(nl: &Netlink, ns: &File) -> cni_net::Link {
    let name = unique_name("cnirsp");
    nl.create_link_get(&LinkSpec {
        up: true,
        peer: Some(Peer {
            name: &unique_name("cnirsq"),
            netns: Some(ns),
            mac: None,
            mtu: None,
        }),
        ..LinkSpec::new(&name, Kind::Veth)
    })
    .unwrap()
}

#[test]
fn every_macvlan_mode_is_created_and_read_back() {
    let host_ns = TestNetns::new("kma");
    let host = Netlink::in_netns(&open(&host_ns)).unwrap();
    let master = parent(&host, &open(&host_ns));
    for (mode, bcqueuelen) in [
        (MacvlanMode::Bridge, None),
        (MacvlanMode::Private, Some(100)),
        (MacvlanMode::Vepa, None),
        (MacvlanMode::Passthru, None),
    ] {
        let name = unique_name("cnirsmv");
        let kind = Kind::Macvlan { mode, bcqueuelen };
        let l = host
            .create_link_get(&LinkSpec {
                parent: Some(master.index),
                mtu: Some(1400),
                mac: Some([0x02, 0x11, 0, 0, 0, 1]),
                txqlen: Some(0),
                up: true,
                ..LinkSpec::new(&name, kind)
            })
            .unwrap();
        let Kind::Macvlan {
            mode: got,
            bcqueuelen: q,
        } = l.kind
        else {
            panic!("{:?}", l.kind);
        };
        assert_eq!(got, mode);
        assert_eq!(q, Some(bcqueuelen.unwrap_or(1000)), "kernel default 1000");
        assert_eq!(
            (l.link, l.mtu, l.txqlen, l.up),
            (Some(master.index), 1400, 0, true)
        );
        // passthru takes its parent's address.
        let mac = match mode {
            MacvlanMode::Passthru => master.mac_string(),
            _ => "02:11:00:00:00:01".to_string(),
        };
        assert_eq!(l.mac_string(), mac, "{mode:?}");
        let d = details(&host_ns, &name);
        assert_eq!(d["linkinfo"]["info_kind"], "macvlan");
        assert_eq!(d["linkinfo"]["info_data"]["mode"], mode.name());
        host.delete_link(&l).unwrap();
    }
}

/// Created with `IFLA_NET_NS_FD`, a link is made in the target namespace,
/// its parent found in the sender's. (Whether the sender's namespace may
/// have the name depends on the kernel: see the next test.)
#[test]
fn a_link_is_created_directly_in_another_namespace() {
    let (host_ns, cont_ns) = (TestNetns::new("kna"), TestNetns::new("knb"));
    let host = Netlink::in_netns(&open(&host_ns)).unwrap();
    let cont = Netlink::in_netns(&open(&cont_ns)).unwrap();
    let master = parent(&host, &open(&host_ns));
    let kind = Kind::Macvlan {
        mode: MacvlanMode::Bridge,
        bcqueuelen: None,
    };
    let name = unique_name("cnirsmv");
    let spec = LinkSpec {
        parent: Some(master.index),
        netns: Some(&open(&cont_ns)),
        ..LinkSpec::new(&name, kind)
    };
    host.create_link(&spec).unwrap();
    assert!(host.find_link(&name).unwrap().is_none());
    let l = cont.link_by_name(&name).unwrap();
    assert!(matches!(
        l.kind,
        Kind::Macvlan {
            mode: MacvlanMode::Bridge,
            ..
        }
    ));
    assert_eq!(l.link, Some(master.index));
    assert!(
        l.link_netnsid.is_some(),
        "the parent is in another namespace"
    );
    // Now taken in the container as well.
    let e = host.create_link(&spec).unwrap_err();
    assert!(e.is_exists(), "{e}");
    // A result needs a lookup where the link is: refused before anything.
    assert!(host.create_link_get(&spec).is_err());
}

#[test]
fn a_tap_is_made_in_the_connections_namespace_with_its_settings() {
    let ns = TestNetns::new("kta");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let br = unique_name("cnirsbr");
    let br = nl
        .create_link_get(&common::bridge(&br, None, false))
        .unwrap();
    let name = unique_name("cnirstap");
    let tun = Tun {
        tap: true,
        multi_queue: true,
        vnet_hdr: true,
        owner: Some(1234),
        group: Some(5678),
        ..Tun::default()
    };
    let spec = LinkSpec {
        mtu: Some(1400),
        mac: Some([0x02, 0x22, 0, 0, 0, 2]),
        master: Some(br.index),
        up: true,
        ..LinkSpec::new(&name, Kind::Tun(tun))
    };
    let l = nl.create_link_get(&spec).unwrap();
    assert_eq!(l.kind, Kind::Tun(tun));
    assert_eq!((l.mtu, l.master, l.up), (1400, Some(br.index), true));
    assert_eq!(l.mac_string(), "02:22:00:00:00:02");
    let d = details(&ns, &name);
    let info = &d["linkinfo"]["info_data"];
    assert_eq!(
        (&info["type"], &info["pi"], &info["vnet_hdr"]),
        (&Value::from("tap"), &Value::from(false), &Value::from(true))
    );
    assert_eq!(
        (&info["multi_queue"], &info["persist"]),
        (&Value::from(true), &Value::from(true))
    );
    assert_eq!(
        (&info["user"], &info["group"]),
        (&Value::from(1234), &Value::from(5678))
    );
    // The name is taken: refused, not attached to.
    let e = nl.create_link(&spec).unwrap_err();
    assert!(e.is_exists(), "{e}");
    let e = nl
        .create_link(&LinkSpec::new(&br.name, Kind::Tun(Tun::default())))
        .unwrap_err();
    assert!(e.is_exists(), "{e}");
    // A tun, with its packet information header.
    let plain = unique_name("cnirstun");
    let pi = Tun {
        pi: true,
        ..Tun::default()
    };
    let t = nl
        .create_link_get(&LinkSpec::new(&plain, Kind::Tun(pi)))
        .unwrap();
    assert_eq!((t.kind, t.up), (Kind::Tun(pi), false));
    assert_eq!(details(&ns, &plain)["linkinfo"]["info_data"]["type"], "tun");
}

/// A tap whose settings the kernel refuses is not left behind.
#[test]
fn a_tap_that_cannot_be_finished_is_removed() {
    let ns = TestNetns::new("ktb");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let name = unique_name("cnirstap");
    let spec = LinkSpec {
        master: Some(0x7fff_fff0),
        ..LinkSpec::new(&name, Kind::Tun(Tun::default()))
    };
    nl.create_link(&spec).unwrap_err();
    assert!(nl.find_link(&name).unwrap().is_none());
    // Not into another namespace: it is made where the connection is.
    let other = TestNetns::new("ktc");
    let spec = LinkSpec {
        netns: Some(&open(&other)),
        ..LinkSpec::new(&name, Kind::Tun(Tun::default()))
    };
    nl.create_link(&spec).unwrap_err();
    assert!(nl.find_link(&name).unwrap().is_none());
}

/// Moving renames in the same request: a link whose name is taken in the
/// target goes there under the new name at once (no temporary name); one
/// whose new name is taken there moves under its own and the rename fails.
#[test]
fn a_link_moves_to_another_namespace_renamed() {
    let (a, b) = (TestNetns::new("kmo"), TestNetns::new("kmp"));
    let (fa, fb) = (open(&a), open(&b));
    let na = Netlink::in_netns(&fa).unwrap();
    let nb = Netlink::in_netns(&fb).unwrap();
    let taken = unique_name("cnirst");
    nb.create_link(&common::ifb(&taken, 0)).unwrap();
    let dev = na.create_link_get(&common::ifb(&taken, 1400)).unwrap();
    na.set_alias(&dev, "original").unwrap();
    na.set_up(&dev).unwrap();
    let new = unique_name("cnirsn");
    na.move_link(&dev, &fb, Some(&new)).unwrap();
    assert!(na.find_link(&taken).unwrap().is_none());
    let moved = nb.link_by_name(&new).unwrap();
    assert_eq!((moved.mtu, moved.up), (1400, false), "moved links go down");
    assert_eq!(moved.alias.as_deref(), Some("original"));
    // Back home under its alias, the alias cleared.
    na.move_link(&dev, &fb, None).unwrap_err();
    nb.move_link(&moved, &fa, Some("cnirs%d")).unwrap_err();
    nb.move_link(&moved, &fa, Some(&taken)).unwrap();
    let home = na.link_by_name(&taken).unwrap();
    na.set_alias(&home, "").unwrap();
    assert_eq!(na.link_by_index(home.index).unwrap().alias, None);
    // The new name is taken in the target, the link's own name is not.
    let other = unique_name("cnirso");
    na.rename_link(&home, &other).unwrap();
    let home = na.link_by_name(&other).unwrap();
    let e = na.move_link(&home, &fb, Some(&taken)).unwrap_err();
    assert!(e.is_exists(), "{e}");
    assert!(nb.find_link(&other).unwrap().is_some());
    assert!(na.find_link(&other).unwrap().is_none());
}

#[test]
fn renaming_checks_the_name_and_the_kernel_answers_clashes() {
    let ns = TestNetns::new("krn");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let (a, b) = (unique_name("cnirsa"), unique_name("cnirsb"));
    let la = nl.create_link_get(&common::ifb(&a, 0)).unwrap();
    nl.create_link(&common::ifb(&b, 0)).unwrap();
    assert!(nl.rename_link(&la, &b).unwrap_err().is_exists());
    let e = nl.rename_link(&la, "eth%d").unwrap_err();
    assert_eq!(e.code(), None, "refused before the kernel: {e}");
    let c = unique_name("cnirsc");
    nl.rename_link(&la, &c).unwrap();
    assert_eq!(nl.link_by_index(la.index).unwrap().name, c);
}

#[test]
fn a_bridge_reads_back_its_kind() {
    let ns = TestNetns::new("kbr");
    let nl = Netlink::in_netns(&open(&ns)).unwrap();
    let name = unique_name("cnirsbr");
    let br = nl
        .create_link_get(&LinkSpec {
            txqlen: Some(77),
            ..common::bridge(&name, Some(1300), false)
        })
        .unwrap();
    assert_eq!(
        br.kind,
        Kind::Bridge {
            vlan_filtering: false
        }
    );
    assert_eq!((br.mtu, br.txqlen), (1300, 77));
    assert_eq!(details(&ns, &name)["linkinfo"]["info_kind"], "bridge");
    let lo = nl.link_by_name("lo").unwrap();
    assert_eq!((lo.kind, lo.alias), (Kind::Device, None));
}

/// A link made for another namespace under a name the sender's namespace
/// has: directly on kernels that check the target only (this one),
/// else under a temporary name renamed there; either way nothing else is
/// left in either namespace, and a name the target has is refused.
#[test]
fn a_link_is_made_in_another_namespace_whatever_the_sender_has() {
    let (host_ns, cont_ns) = (TestNetns::new("kca"), TestNetns::new("kcb"));
    let host = Netlink::in_netns(&open(&host_ns)).unwrap();
    let cont = Netlink::in_netns(&open(&cont_ns)).unwrap();
    let master = parent(&host, &open(&host_ns));
    // bcqueuelen as the kernel reads it back, to compare.
    let kind = Kind::Macvlan {
        mode: MacvlanMode::Private,
        bcqueuelen: Some(1000),
    };
    let before = host.links().unwrap().len();
    for (name, renamed) in [(master.name.as_str(), false), ("lo", true)] {
        // The master's name, and lo's: both taken in the host; lo in the
        // container too, so "lo" must go through a free name first.
        let spec = LinkSpec {
            parent: Some(master.index),
            mtu: Some(1400),
            up: true,
            ..LinkSpec::new(name, kind.clone())
        };
        let got = if renamed {
            host.create_link_renamed(&cont, &spec).unwrap_err()
        } else {
            let l = host.create_link_in(&cont, &spec).unwrap();
            assert_eq!((&l.name, l.mtu, l.up), (&master.name, 1400, true));
            assert_eq!(l.link, Some(master.index));
            host.create_link_in(&cont, &spec).unwrap_err()
        };
        assert!(got.is_exists(), "{got}");
    }
    let other = unique_name("cnirsr");
    let spec = LinkSpec {
        parent: Some(master.index),
        up: true,
        ..LinkSpec::new(&other, kind.clone())
    };
    let l = host.create_link_renamed(&cont, &spec).unwrap();
    assert_eq!((&l.name, &l.kind, l.up), (&other, &kind, true));
    let names: Vec<String> = cont.links().unwrap().into_iter().map(|l| l.name).collect();
    assert_eq!(names.len(), 3, "lo and the two macvlans only: {names:?}");
    assert_eq!(host.links().unwrap().len(), before);
    // Only a handle opened in a namespace is a target (refused before
    // anything is sent).
    let own = Netlink::host().unwrap();
    let e = host.create_link_in(&own, &spec).unwrap_err();
    assert_eq!(e.code(), None, "{e}");
}
