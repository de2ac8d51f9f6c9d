//! Bridge features that need kernel support this CI machine's kernel lacks
//! (bridge VLAN filtering, 8021q): VLAN isolation, trunks and their native
//! VLAN, the `<bridge>.<vlan>` gateway, VLANs on an existing bridge, bad
//! VLAN settings, and waiting for IPv6 DAD.
//!
//! Every test is ignored with a `kernel-features` reason, so an ordinary
//! `cargo test` reports it as skipped; `scripts/vm-test.sh` runs them with
//! `--ignored` inside a VM booted with Debian's stock kernel. Each proves
//! its behaviour twice: the kernel's port VLAN table read back with
//! `bridge -j vlan show`, and traffic that arrives or does not.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::{TestNetns, unique_name};

/// One row of a port's VLAN table: (vid, pvid, untagged).
type PortVlan = (u64, bool, bool);

/// The VLAN table of `dev`, sorted by VLAN id, ranges expanded.
fn port_vlans(host: &Host, dev: &str) -> Vec<PortVlan> {
    let out = host.sh(&["bridge", "-j", "vlan", "show", "dev", dev]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut rows = Vec::new();
    for entry in v[0]["vlans"].as_array().into_iter().flatten() {
        let flags: Vec<&str> = entry["flags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let start = entry["vlan"].as_u64().unwrap();
        let end = entry["vlanEnd"].as_u64().unwrap_or(start);
        for vid in start..=end {
            rows.push((
                vid,
                flags.contains(&"PVID"),
                flags.contains(&"Egress Untagged"),
            ));
        }
    }
    rows.sort();
    rows
}

fn host_port(result: &Value) -> String {
    result["interfaces"][1]["name"]
        .as_str()
        .unwrap()
        .to_string()
}

fn vlan_filtering(host: &Host) -> bool {
    host.sh(&["ip", "-d", "link", "show", &host.bridge])
        .contains("vlan_filtering 1")
}

/// A tagged sub-interface `eth0.<vid>` in `c` with `addr`, up; returns
/// the address without its prefix.
fn tagged_iface(c: &TestNetns, vid: u16, addr: &str) -> String {
    let (id, name) = (vid.to_string(), format!("eth0.{vid}"));
    c.exec(&[
        "ip", "link", "add", "link", "eth0", "name", &name, "type", "vlan", "id", &id,
    ]);
    c.exec(&["ip", "addr", "add", addr, "dev", &name]);
    c.exec(&["ip", "link", "set", &name, "up"]);
    addr.split('/').next().unwrap_or_default().to_string()
}

#[test]
#[ignore = "kernel-features: bridge VLAN filtering (scripts/vm-test.sh)"]
fn vlan_access_ports_isolate() {
    let host = Host::new("va");
    let on = |vlan: u16| host.conf("1.0.0", &["10.241.1.0/24"], json!({"vlan": vlan}));
    let (a, b, x) = (
        TestNetns::new("vaa"),
        TestNetns::new("vab"),
        TestNetns::new("vax"),
    );
    let ra = host.add(&on(100), "a", &a);
    let rb = host.add(&on(100), "b", &b);
    let rx = host.add(&on(200), "x", &x);
    assert!(vlan_filtering(&host), "a new bridge filters by VLAN");
    assert!(ping(&a, &ip_of(&rb, false)), "same vlan talks");
    assert!(ping(&b, &ip_of(&ra, false)), "same vlan talks");
    assert!(
        ping_unanswered(&a, &ip_of(&rx, false)),
        "other vlan is isolated"
    );
    assert!(
        ping_unanswered(&x, &ip_of(&rb, false)),
        "other vlan is isolated"
    );
    // An access port carries only its VLAN: PVID, untagged.
    assert_eq!(port_vlans(&host, &host_port(&ra)), [(100, true, true)]);
    assert_eq!(port_vlans(&host, &host_port(&rx)), [(200, true, true)]);
    // preserveDefaultVlan keeps the default VLAN 1 beside it (no longer PVID).
    let p = TestNetns::new("vap");
    let mut keep = on(100);
    keep["preserveDefaultVlan"] = json!(true);
    let rp = host.add(&keep, "p", &p);
    assert_eq!(
        port_vlans(&host, &host_port(&rp)),
        [(1, false, true), (100, true, true)]
    );
    assert!(ping(&p, &ip_of(&ra, false)), "PVID 100 reaches vlan 100");
    for (cid, c, conf) in [("a", &a, on(100)), ("b", &b, on(100)), ("x", &x, on(200))] {
        host.del(&conf, cid, c.path());
    }
    host.del(&keep, "p", p.path());
    assert!(ports(&host).is_empty(), "{:?}", ports(&host));
    assert!(host.leases().is_empty(), "{:?}", host.leases());
}

/// A trunk port: VLANs 300-302 and 310 tagged, native VLAN 1 untagged.
/// The trunk container talks on each VLAN through an 8021q sub-interface.
#[test]
#[ignore = "kernel-features: bridge VLAN filtering, 8021q (scripts/vm-test.sh)"]
fn vlan_trunk_carries_tagged_vlans_and_native_vlan_1() {
    let host = Host::new("vt");
    let access = |vlan: u16, subnet: &str| {
        let extra = if vlan == 0 {
            json!({})
        } else {
            json!({ "vlan": vlan })
        };
        host.conf("1.0.0", &[subnet], extra)
    };
    let trunk_conf = host.conf(
        "1.0.0",
        &["10.241.2.0/24"],
        json!({"vlanTrunk": [{"minID": 300, "maxID": 302}, {"id": 310}]}),
    );
    let t = TestNetns::new("vtt");
    let rt = host.add(&trunk_conf, "t", &t);
    assert_eq!(
        port_vlans(&host, &host_port(&rt)),
        [
            (1, true, true),
            (300, false, false),
            (301, false, false),
            (302, false, false),
            (310, false, false)
        ]
    );
    // Native VLAN 1, untagged: a container without a VLAN.
    let n1 = TestNetns::new("vtn");
    let rn1 = host.add(&access(0, "10.241.2.0/24"), "n1", &n1);
    assert!(ping(&t, &ip_of(&rn1, false)), "native vlan 1 untagged");
    // Tagged VLANs 300 and 310 reach access ports of those VLANs.
    for (vid, subnet, me) in [
        (300, "10.241.3.0/24", "10.241.3.200/24"),
        (310, "10.241.4.0/24", "10.241.4.200/24"),
    ] {
        let c = TestNetns::new("vtc");
        let r = host.add(&access(vid, subnet), &format!("c{vid}"), &c);
        let mine = tagged_iface(&t, vid, me);
        assert!(ping(&t, &ip_of(&r, false)), "tagged vlan {vid}");
        assert!(ping(&c, &mine), "access vlan {vid} back to the trunk");
    }
    // VLAN 303 is not on the trunk.
    let c = TestNetns::new("vtc");
    let r = host.add(&access(303, "10.241.5.0/24"), "c303", &c);
    tagged_iface(&t, 303, "10.241.5.200/24");
    assert!(
        ping_unanswered(&t, &ip_of(&r, false)),
        "vlan 303 is not trunked"
    );
}

/// `vlan` with `vlanTrunk` (reference v1.8+): `vlan` is the native VLAN.
#[test]
#[ignore = "kernel-features: bridge VLAN filtering, 8021q (scripts/vm-test.sh)"]
fn vlan_with_trunk_is_the_native_vlan() {
    let host = Host::new("vn");
    let both = host.conf(
        "1.0.0",
        &["10.241.6.0/24"],
        json!({"vlan": 50, "vlanTrunk": [{"id": 300}, {"minID": 50, "maxID": 51}]}),
    );
    let t = TestNetns::new("vnt");
    let rt = host.add(&both, "t", &t);
    // VLAN 1 is gone; 50 stays native although the trunk lists it too.
    assert_eq!(
        port_vlans(&host, &host_port(&rt)),
        [(50, true, true), (51, false, false), (300, false, false)]
    );
    let on50 = host.conf("1.0.0", &["10.241.6.0/24"], json!({"vlan": 50}));
    let a = TestNetns::new("vna");
    let ra = host.add(&on50, "a", &a);
    let untagged = host.conf("1.0.0", &["10.241.6.0/24"], json!({}));
    let n1 = TestNetns::new("vn1");
    let rn1 = host.add(&untagged, "n1", &n1);
    assert!(
        ping(&t, &ip_of(&ra, false)),
        "untagged frames are on vlan 50"
    );
    assert!(
        ping_unanswered(&t, &ip_of(&rn1, false)),
        "vlan 1 is not on the port"
    );
    let on300 = host.conf("1.0.0", &["10.241.7.0/24"], json!({"vlan": 300}));
    let c = TestNetns::new("vnc");
    let rc = host.add(&on300, "c", &c);
    tagged_iface(&t, 300, "10.241.7.200/24");
    assert!(ping(&t, &ip_of(&rc, false)), "tagged vlan 300");
    // preserveDefaultVlan keeps VLAN 1 (untagged, no longer the PVID).
    let mut keep = both.clone();
    keep["preserveDefaultVlan"] = json!(true);
    let p = TestNetns::new("vnp");
    let rp = host.add(&keep, "p", &p);
    assert_eq!(
        port_vlans(&host, &host_port(&rp)),
        [
            (1, false, true),
            (50, true, true),
            (51, false, false),
            (300, false, false)
        ]
    );
}

/// `isGateway` with `vlan`: the gateway addresses go on `<bridge>.<vlan>`,
/// a veth whose bridge end is an access port of that VLAN; one per VLAN.
#[test]
#[ignore = "kernel-features: bridge VLAN filtering (scripts/vm-test.sh)"]
fn gateway_lives_on_the_vlan_interface() {
    let mut host = Host::new("vg");
    // `<bridge>.<vlan>` must fit in 15 bytes.
    host.bridge = unique_name("cnirs");
    let conf = |vlan: u16, n: u8| {
        host.conf(
            "1.0.0",
            &[&format!("10.241.{n}.0/24"), &format!("fd40:241:{n}::/64")],
            json!({"vlan": vlan, "isGateway": true}),
        )
    };
    let (a, b, x) = (
        TestNetns::new("vga"),
        TestNetns::new("vgb"),
        TestNetns::new("vgx"),
    );
    let ra = host.add(&conf(10, 8), "a", &a);
    let rb = host.add(&conf(10, 8), "b", &b);
    let rx = host.add(&conf(20, 9), "x", &x);
    let gw10 = format!("{}.10", host.bridge);
    let gw20 = format!("{}.20", host.bridge);
    for r in [&ra, &rb] {
        assert_eq!(r["interfaces"][3]["name"], gw10.as_str(), "{r}");
    }
    assert_eq!(rx["interfaces"][3]["name"], gw20.as_str());
    let addrs = host.sh(&["ip", "addr", "show", "dev", &gw10]);
    assert!(
        addrs.contains("10.241.8.1/24") && addrs.contains("fd40:241:8::1/64"),
        "{addrs}"
    );
    assert_eq!(addrs.matches("inet 10.").count(), 1, "one gateway: {addrs}");
    let br = host.sh(&["ip", "addr", "show", "dev", &host.bridge]);
    assert!(!br.contains("inet 10.") && !br.contains("fd40"), "{br}");
    // The gateway's bridge end is an access port of its VLAN.
    let link: Value =
        serde_json::from_str(&host.sh(&["ip", "-j", "link", "show", "dev", &gw10])).unwrap();
    let peer_name = link[0]["link"].as_str().unwrap_or_else(|| panic!("{link}"));
    assert_eq!(port_vlans(&host, peer_name), [(10, true, true)]);
    assert!(ping(&a, "10.241.8.1"), "a reaches its gateway");
    assert!(ping(&b, "fd40:241:8::1"), "b reaches its gateway");
    assert!(ping(&x, "10.241.9.1"), "x reaches its gateway");
    // Given an address in VLAN 20's subnet, a still cannot reach VLAN 20's
    // gateway: the host's replies leave on VLAN 20.
    a.exec(&["ip", "addr", "add", "10.241.9.77/24", "dev", "eth0"]);
    assert!(
        ping_unanswered(&a, "10.241.9.1"),
        "vlan 20 gateway is isolated"
    );
}

/// Invalid VLAN settings fail with the reference's messages before
/// anything is created; a VLAN gateway that cannot be created fails the
/// ADD and leaves neither the container interface nor a lease.
#[test]
#[ignore = "kernel-features: bridge VLAN filtering (scripts/vm-test.sh)"]
fn bad_vlan_settings_leave_nothing_behind() {
    let host = Host::new("vb");
    let cases = [
        (
            json!({"vlan": 4095}),
            7,
            "invalid VLAN ID 4095 (must be between 0 and 4094)",
        ),
        (
            json!({"vlan": -1}),
            7,
            "invalid VLAN ID -1 (must be between 0 and 4094)",
        ),
        (
            json!({"vlanTrunk": [{"minID": 0, "maxID": 3}]}),
            7,
            "incorrect trunk minID parameter",
        ),
        (
            json!({"vlanTrunk": [{"minID": 1, "maxID": 4095}]}),
            7,
            "incorrect trunk maxID parameter",
        ),
        (
            json!({"vlanTrunk": [{"minID": 9, "maxID": 3}]}),
            7,
            "minID is greater than maxID in trunk parameter",
        ),
        (
            json!({"vlanTrunk": [{"maxID": 3}]}),
            7,
            "minID and maxID should be configured simultaneously, minID is missing",
        ),
        (
            json!({"vlanTrunk": [{"id": 4095}]}),
            7,
            "incorrect trunk id parameter",
        ),
        (
            json!({"vlan": "100"}),
            6,
            "failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.vlan of type int",
        ),
    ];
    let c = TestNetns::new("vbc");
    for (extra, code, msg) in cases {
        let conf = host.conf("1.0.0", &["10.241.10.0/24"], extra.clone());
        let e = host.call("ADD", &conf, "c", c.path(), "eth0").err(code);
        assert_eq!(e["msg"], msg, "{extra}");
        assert!(!has_link(&c, "eth0"), "{extra}");
        assert!(!has_link(&host.ns, &host.bridge), "{extra}: bridge created");
        assert!(host.leases().is_empty(), "{extra}: {:?}", host.leases());
    }
    // A 15-byte bridge name leaves no room for `<bridge>.100`.
    let mut long = Host::new("vl");
    long.bridge = format!("{:x<15}", unique_name("cnirsbr"));
    let conf = long.conf(
        "1.0.0",
        &["10.241.11.0/24"],
        json!({"vlan": 100, "isGateway": true}),
    );
    // Refused from the config, before anything exists (the reference
    // creates the bridge and the veth, then fails on the VLAN interface).
    let e = long.call("ADD", &conf, "c", c.path(), "eth0").err(7);
    assert_eq!(
        e["msg"],
        format!(
            "bridge name {:?} is too long for its vlan gateway interface {:?}",
            long.bridge,
            format!("{}.100", long.bridge)
        )
    );
    assert!(!has_link(&c, "eth0"));
    assert!(!has_link(&long.ns, &long.bridge), "bridge created");
    assert!(long.leases().is_empty(), "{:?}", long.leases());
    assert!(ports(&long).is_empty(), "{:?}", ports(&long));
    long.del(&conf, "c", c.path());
}

/// `vlan` on a bridge made without VLAN filtering: an empty one gets
/// filtering turned on; one with ports is refused, since filtering would
/// change how its ports' traffic flows, and the failed ADD leaves nothing.
#[test]
#[ignore = "kernel-features: bridge VLAN filtering (scripts/vm-test.sh)"]
fn vlan_on_a_bridge_without_filtering() {
    // Empty: filtering is turned on, and the VLANs isolate.
    let host = Host::new("vf");
    host.sh(&["ip", "link", "add", &host.bridge, "type", "bridge"]);
    assert!(!vlan_filtering(&host));
    let (a, x) = (TestNetns::new("vfa"), TestNetns::new("vfx"));
    let on = |vlan: u16| host.conf("1.0.0", &["10.241.12.0/24"], json!({"vlan": vlan}));
    let ra = host.add(&on(100), "a", &a);
    assert!(vlan_filtering(&host));
    let rx = host.add(&on(200), "x", &x);
    assert!(
        ping_unanswered(&x, &ip_of(&ra, false)),
        "other vlan is isolated"
    );
    assert!(
        ping_unanswered(&a, &ip_of(&rx, false)),
        "other vlan is isolated"
    );

    // With a port: refused, nothing changed.
    let host = Host::new("vp");
    host.sh(&["ip", "link", "add", &host.bridge, "type", "bridge"]);
    let plain = host.conf("1.0.0", &["10.241.13.0/24"], json!({}));
    let (n, m, v) = (
        TestNetns::new("vpn"),
        TestNetns::new("vpm"),
        TestNetns::new("vpv"),
    );
    let rn = host.add(&plain, "n", &n);
    let mut vlan = plain.clone();
    vlan["vlan"] = json!(100);
    let e = host.call("ADD", &vlan, "v", v.path(), "eth0").err(999);
    let port = host_port(&rn);
    assert_eq!(
        e["msg"],
        format!(
            "bridge {:?} has VLAN filtering off and ports ({port}), so vlan and vlanTrunk \
             would isolate nothing: turn it on (ip link set {} type bridge vlan_filtering 1) \
             or use another bridge",
            host.bridge, host.bridge
        )
    );
    assert!(!has_link(&v, "eth0"));
    assert_eq!(host.leases().len(), 1, "{:?}", host.leases());
    assert_eq!(ports(&host), [port]);
    assert!(!vlan_filtering(&host));
    let rm = host.add(&plain, "m", &m);
    assert!(ping(&m, &ip_of(&rn, false)), "the bridge works as before");
    assert!(ping(&n, &ip_of(&rm, false)));
}

/// `enabledad`: ADD returns only once the IPv6 address passed duplicate
/// address detection; without it, the address is added `nodad` and there
/// is nothing to wait for. Read from the kernel, never from a clock (a
/// busy machine stretches every duration): right after ADD, the address
/// with DAD is neither `tentative` nor `nodad`, and the container's kernel
/// has sent its two DAD probes (neighbour solicitations, two a second
/// apart: `dad_transmits=2`); the address without DAD is `nodad`, was
/// never tentative, and no probe was sent for it. The containers have no
/// link-local address (`addr_gen_mode=1`), whose own DAD would send
/// probes too, and nothing else solicits a neighbour before the count is
/// read.
#[test]
#[ignore = "kernel-features: IPv6 DAD as a stock kernel does it (scripts/vm-test.sh)"]
fn enabledad_waits_for_dad_and_nodad_does_not() {
    let host = Host::new("vd");
    let container = |tag: &str| {
        let c = TestNetns::new(tag);
        c.exec(&["sysctl", "-qw", "net.ipv6.conf.default.dad_transmits=2"]);
        c.exec(&["sysctl", "-qw", "net.ipv6.conf.default.addr_gen_mode=1"]);
        c
    };
    let conf = |dad: bool| {
        host.conf(
            "1.0.0",
            &["10.241.14.0/24", "fd40:241:14::/64"],
            json!({"isGateway": true, "enabledad": dad}),
        )
    };
    let global =
        |c: &TestNetns| c.stdout(&["ip", "-6", "addr", "show", "dev", "eth0", "scope", "global"]);
    let (with, without) = (container("vdw"), container("vdo"));
    let rw = host.add(&conf(true), "w", &with);
    let a = global(&with);
    assert!(a.contains(&ip_of(&rw, true)), "{a}");
    assert!(
        !a.contains("tentative"),
        "ADD returned before DAD ended: {a}"
    );
    assert!(!a.contains("nodad"), "{a}");
    assert!(with.snmp6("Icmp6OutNeighborSolicits") >= 2, "DAD probes");

    let ro = host.add(&conf(false), "o", &without);
    let a = global(&without);
    assert!(a.contains(&ip_of(&ro, true)) && a.contains("nodad"), "{a}");
    assert!(!a.contains("tentative"), "{a}");
    assert_eq!(without.snmp6("Icmp6OutNeighborSolicits"), 0, "DAD probes");
    assert!(ping(&without, &ip_of(&rw, true)), "both usable");
}
