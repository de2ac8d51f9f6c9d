//! Bridge VLAN netlink calls on a kernel with `CONFIG_BRIDGE_VLAN_FILTERING`
//! (this CI machine's kernel has none, so `links.rs` can only check that
//! we fail where iproute2 fails). Ignored with a `kernel-features` reason;
//! `scripts/vm-test.sh` runs them in a VM with Debian's stock kernel,
//! every result cross-checked with iproute2.

use std::fs::File;

use cni_net::{Link, Netlink, PortVlan, VethPair};
use serde_json::Value;
use testsupport::{TestNetns, unique_name};

fn netlink(ns: &TestNetns) -> Netlink {
    Netlink::in_netns(&File::open(ns.path()).unwrap()).unwrap()
}

/// `vlan_filtering` as `ip -d link show` reports it.
fn iproute2_filtering(ns: &TestNetns, br: &str) -> bool {
    let out = ns.stdout(&["ip", "-d", "-j", "link", "show", "dev", br]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v[0]["linkinfo"]["info_data"]["vlan_filtering"] == 1
}

/// A port's VLANs as `bridge -j vlan show` reports them.
fn iproute2_vlans(ns: &TestNetns, dev: &str) -> Vec<PortVlan> {
    let out = ns.stdout(&["bridge", "-j", "vlan", "show", "dev", dev]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let mut out = Vec::new();
    for e in v[0]["vlans"].as_array().into_iter().flatten() {
        let flags = e["flags"].as_array().cloned().unwrap_or_default();
        let start = e["vlan"].as_u64().unwrap() as u16;
        let end = e["vlanEnd"].as_u64().map_or(start, |v| v as u16);
        for vid in start..=end {
            out.push(PortVlan {
                vid,
                pvid: flags.contains(&Value::from("PVID")),
                untagged: flags.contains(&Value::from("Egress Untagged")),
            });
        }
    }
    out
}

fn sorted(mut v: Vec<PortVlan>) -> Vec<PortVlan> {
    v.sort_by_key(|p| p.vid);
    v
}

#[test]
#[ignore = "kernel-features: bridge VLAN filtering (scripts/vm-test.sh)"]
fn vlan_filtering_reads_back_and_toggles() {
    let ns = TestNetns::new("kfa");
    let nl = netlink(&ns);
    let name = unique_name("cnirsbr");
    nl.create_bridge(&name, None, false).unwrap();
    let br = nl.link_by_name(&name).unwrap();
    assert!(!nl.bridge_vlan_filtering(&br).unwrap());
    assert!(!iproute2_filtering(&ns, &name));
    nl.set_bridge_vlan_filtering(&br, true).unwrap();
    assert!(nl.bridge_vlan_filtering(&br).unwrap());
    assert!(iproute2_filtering(&ns, &name));
    nl.set_bridge_vlan_filtering(&br, false).unwrap();
    assert!(!nl.bridge_vlan_filtering(&br).unwrap());
    assert!(!iproute2_filtering(&ns, &name));

    let name = unique_name("cnirsbr");
    nl.create_bridge(&name, Some(1400), true).unwrap();
    let br = nl.link_by_name(&name).unwrap();
    assert!(nl.bridge_vlan_filtering(&br).unwrap());
    assert!(iproute2_filtering(&ns, &name));
    // Not a bridge: no filtering to report, and none to set.
    let lo = nl.link_by_name("lo").unwrap();
    assert!(!nl.bridge_vlan_filtering(&lo).unwrap());
    assert!(nl.set_bridge_vlan_filtering(&lo, true).is_err());
}

/// A port on a filtering bridge: default VLAN 1, then access and tagged
/// VLANs added and removed, each state read back by us and by iproute2.
#[test]
#[ignore = "kernel-features: bridge VLAN filtering (scripts/vm-test.sh)"]
fn port_vlan_table_matches_iproute2() {
    let (host_ns, cont_ns) = (TestNetns::new("kfb"), TestNetns::new("kfc"));
    let nl = netlink(&host_ns);
    let br_name = unique_name("cnirsbr");
    nl.create_bridge(&br_name, None, true).unwrap();
    let br = nl.link_by_name(&br_name).unwrap();
    let name = unique_name("veth");
    let cont = File::open(cont_ns.path()).unwrap();
    nl.create_veth_pair(&VethPair {
        host_name: &name,
        container_name: "eth0",
        container_ns: &cont,
        container_mac: None,
        mtu: None,
        host_master: Some(br.index),
    })
    .unwrap();
    let port: Link = nl.link_by_name(&name).unwrap();
    let both = |want: &[(u16, bool, bool)]| {
        let want: Vec<PortVlan> = want
            .iter()
            .map(|&(vid, pvid, untagged)| PortVlan {
                vid,
                pvid,
                untagged,
            })
            .collect();
        assert_eq!(sorted(nl.bridge_vlans(&port).unwrap()), want, "ours");
        assert_eq!(sorted(iproute2_vlans(&host_ns, &name)), want, "iproute2");
    };
    both(&[(1, true, true)]);
    let vlan = |vid, pvid, untagged| PortVlan {
        vid,
        pvid,
        untagged,
    };
    nl.bridge_vlan_add(&port, &vlan(10, true, true)).unwrap();
    both(&[(1, false, true), (10, true, true)]);
    nl.bridge_vlan_add(&port, &vlan(4094, false, false))
        .unwrap();
    nl.bridge_vlan_del(&port, 1).unwrap();
    both(&[(10, true, true), (4094, false, false)]);
    // Adding an existing VLAN again replaces its flags.
    nl.bridge_vlan_add(&port, &vlan(10, false, false)).unwrap();
    both(&[(10, false, false), (4094, false, false)]);
    for vid in [10, 4094] {
        nl.bridge_vlan_del(&port, vid).unwrap();
    }
    both(&[]);
    // Removing a VLAN the port does not have: whatever iproute2 gets from
    // this kernel, we get too.
    let theirs = host_ns
        .exec_output(&["bridge", "vlan", "del", "dev", &name, "vid", "10", "master"])
        .status
        .success();
    assert_eq!(nl.bridge_vlan_del(&port, 10).is_ok(), theirs);
    both(&[]);
}
