//! Traffic through the bridge: container to container and gateway (IPv4,
//! dual stack), masquerade to an "outside" namespace with both backends,
//! MAC spoof check, port settings. VLANs: `kernel_features.rs`.

mod common;

use common::*;
use serde_json::json;
use testsupport::TestNetns;

#[test]
fn containers_ping_each_other_and_the_gateway_dual_stack() {
    let host = Host::new("pg");
    let conf = host.conf(
        "1.0.0",
        &["10.240.1.0/24", "fd40:1::/64"],
        json!({"isGateway": true}),
    );
    let c1 = TestNetns::new("pg1");
    let c2 = TestNetns::new("pg2");
    let r1 = host.add(&conf, "c1", &c1);
    let r2 = host.add(&conf, "c2", &c2);
    // Right after ADD the IPv6 address is usable, not tentative.
    let tentative = c1.stdout(&["ip", "-6", "addr", "show", "dev", "eth0", "tentative"]);
    assert!(tentative.trim().is_empty(), "tentative: {tentative}");
    for v6 in [false, true] {
        assert!(ping(&c1, &ip_of(&r2, v6)), "c1 -> c2 (v6={v6})");
        assert!(ping(&c2, &ip_of(&r1, v6)), "c2 -> c1 (v6={v6})");
    }
    assert!(ping(&c1, "10.240.1.1"));
    assert!(ping(&c1, "fd40:1::1"));
    // Gateway addresses on the bridge, forwarding on in the host namespace.
    let br = host.sh(&["ip", "addr", "show", "dev", &host.bridge]);
    assert!(
        br.contains("10.240.1.1/24") && br.contains("fd40:1::1/64"),
        "{br}"
    );
    assert_eq!(
        host.sh(&["cat", "/proc/sys/net/ipv4/ip_forward"]).trim(),
        "1"
    );
    host.del(&conf, "c1", c1.path());
    host.del(&conf, "c2", c2.path());
    assert!(ports(&host).is_empty());
    assert!(host.leases().is_empty());
}

fn containers_reach_outside_only_through_masquerade(backend: &str) {
    let host = Host::new("mq");
    let out = host.outside();
    let mut conf = host.conf(
        "1.0.0",
        &["10.240.2.0/24"],
        json!({"isGateway": true, "ipMasq": true, "ipMasqBackend": backend}),
    );
    conf["ipam"]["routes"] = json!([{"dst": "0.0.0.0/0"}]);
    let c = TestNetns::new("mqc");
    let r = host.add(&conf, "c1", &c);
    // The outside namespace counts echo requests by source address.
    out.exec(&["nft", "add table inet cnirsseen"]);
    out.exec(&[
        "nft",
        "add chain inet cnirsseen in { type filter hook input priority 0 ; }",
    ]);
    out.exec(&[
        "nft",
        "add rule inet cnirsseen in ip saddr 10.250.0.1 icmp type echo-request counter",
    ]);
    out.exec(&[
        "nft",
        "add rule inet cnirsseen in ip saddr 10.240.2.0/24 icmp type echo-request counter",
    ]);
    assert!(
        ping(&c, "10.250.0.2"),
        "container reaches outside through masquerade"
    );
    let seen = out.stdout(&["nft", "list", "chain", "inet", "cnirsseen", "in"]);
    assert!(
        seen.contains("ip saddr 10.250.0.1 icmp type echo-request counter packets 1"),
        "{seen}"
    );
    assert!(
        seen.contains("ip saddr 10.240.2.0/24 icmp type echo-request counter packets 0"),
        "{seen}"
    );
    let rules = || match backend {
        "nftables" => host.sh(&["nft", "list", "ruleset"]),
        _ => host.sh(&["iptables-save", "-t", "nat"]),
    };
    let marker = match backend {
        "nftables" => format!("net: {}, if: eth0, id: c1", host.net),
        _ => "id: \\\"c1\\\"".to_string(),
    };
    assert!(rules().contains(&marker), "rules after ADD: {}", rules());
    // CHECK sees the rules.
    let prev = with_prev(&conf, &r);
    host.call("CHECK", &prev, "c1", c.path(), "eth0").ok();
    // DEL without a netns still removes them (prevResult given for nft,
    // not needed for iptables).
    let del_conf = if backend == "nftables" {
        prev.clone()
    } else {
        conf.clone()
    };
    host.call("DEL", &del_conf, "c1", "", "eth0").ok();
    assert!(!rules().contains(&marker), "rules after DEL: {}", rules());
    assert!(!rules().contains("CNI-"), "{}", rules());
    assert!(host.leases().is_empty());
    // CHECK now notices the missing rule (and the address is gone too).
    assert!(host.call("CHECK", &prev, "c1", c.path(), "eth0").code != 0);
}

#[test]
fn masquerade_nftables_lets_containers_reach_outside() {
    containers_reach_outside_only_through_masquerade("nftables");
}

#[test]
fn masquerade_iptables_lets_containers_reach_outside() {
    containers_reach_outside_only_through_masquerade("iptables");
}

/// On a kernel without `CONFIG_BRIDGE_VLAN_FILTERING` (this CI machine's) a
/// VLAN ADD fails cleanly. VLANs themselves are tested on a kernel that has
/// them: `tests/kernel_features.rs`, run in a VM by `scripts/vm-test.sh`.
#[test]
fn vlan_without_kernel_support_fails_cleanly() {
    let host = Host::new("vl");
    let probe = host.ns.exec_output(&[
        "ip",
        "link",
        "add",
        "cnirsvlprobe",
        "type",
        "bridge",
        "vlan_filtering",
        "1",
    ]);
    if probe.status.success() {
        eprintln!("this kernel has bridge VLAN filtering: see tests/kernel_features.rs");
        return;
    }
    let a = TestNetns::new("vla");
    let conf = host.conf("1.0.0", &["10.240.3.0/24"], json!({"vlan": 100}));
    let e = host.call("ADD", &conf, "a", a.path(), "eth0").err(999);
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .contains("operation not supported"),
        "{e}"
    );
    assert!(!has_link(&a, "eth0"));
    assert!(host.leases().is_empty(), "{:?}", host.leases());
}

#[test]
fn mtu_hairpin_isolation_and_promisc_reach_the_links() {
    let host = Host::new("pt");
    let conf = host.conf(
        "1.0.0",
        &["10.240.4.0/24"],
        json!({"mtu": 1400, "hairpinMode": true, "portIsolation": true}),
    );
    let c = TestNetns::new("ptc");
    let r = host.add(&conf, "c1", &c);
    let port = r["interfaces"][1]["name"].as_str().unwrap().to_string();
    assert!(
        host.sh(&["ip", "link", "show", &host.bridge])
            .contains("mtu 1400")
    );
    assert!(host.sh(&["ip", "link", "show", &port]).contains("mtu 1400"));
    assert!(
        c.stdout(&["ip", "link", "show", "eth0"])
            .contains("mtu 1400")
    );
    let d = host.sh(&["ip", "-d", "link", "show", &port]);
    assert!(d.contains("hairpin on"), "{d}");
    assert!(d.contains("isolated on"), "{d}");

    let promisc_host = Host::new("pp");
    let conf = promisc_host.conf("1.0.0", &["10.240.4.0/24"], json!({"promiscMode": true}));
    let c2 = TestNetns::new("ppc");
    let r = promisc_host.add(&conf, "c2", &c2);
    let br = promisc_host.sh(&["ip", "link", "show", &promisc_host.bridge]);
    assert!(br.contains("PROMISC"), "{br}");
    let port = r["interfaces"][1]["name"].as_str().unwrap().to_string();
    let d = promisc_host.sh(&["ip", "-d", "link", "show", &port]);
    assert!(d.contains("hairpin off"), "{d}");
    // CHECK compares the promisc state.
    promisc_host
        .call("CHECK", &with_prev(&conf, &r), "c2", c2.path(), "eth0")
        .ok();
}

#[test]
fn macspoofchk_drops_forged_source_macs() {
    let host = Host::new("sp");
    let conf = host.conf("1.0.0", &["10.240.5.0/24"], json!({"macspoofchk": true}));
    let (a, b) = (TestNetns::new("spa"), TestNetns::new("spb"));
    let ra = host.add(&conf, "a", &a);
    let rb = host.add(&conf, "b", &b);
    let ruleset = host.sh(&["nft", "list", "table", "bridge", "nat"]);
    assert!(ruleset.contains("cni-br-iface-a-eth0"), "{ruleset}");
    assert!(ping(&a, &ip_of(&rb, false)), "genuine MAC passes");
    host.call("CHECK", &with_prev(&conf, &ra), "a", a.path(), "eth0")
        .ok();
    // Forge: change the container's MAC behind the plugin's back.
    a.exec(&["ip", "link", "set", "eth0", "address", "02:66:66:66:66:66"]);
    b.exec(&["ip", "neigh", "flush", "all"]);
    assert!(
        ping_unanswered(&a, &ip_of(&rb, false)),
        "forged MAC is dropped"
    );
    host.del(&conf, "a", a.path());
    let ruleset = host.sh(&["nft", "list", "table", "bridge", "nat"]);
    assert!(!ruleset.contains("cni-br-iface-a-eth0"), "{ruleset}");
    assert!(ruleset.contains("cni-br-iface-b-eth0"), "{ruleset}");
    host.del(&conf, "b", b.path());
}
