//! ADD/CHECK/DEL/GC/STATUS behaviour: CHECK catching removed state,
//! idempotent DEL, failed ADDs that leave nothing behind, concurrent ADDs
//! onto a new bridge, result shapes per version, L2 mode, the seed config.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::TestNetns;

#[test]
fn check_passes_then_fails_after_removals() {
    let host = Host::new("ck");
    let mut conf = host.conf("1.0.0", &["10.240.6.0/24"], json!({"isGateway": true}));
    conf["ipam"]["routes"] = json!([{"dst": "10.250.6.0/24"}]);

    let check = |c: &TestNetns, r: &Value, cid: &str| {
        host.call("CHECK", &with_prev(&conf, r), cid, c.path(), "eth0")
    };
    // Address removed.
    let c = TestNetns::new("ck1");
    let r = host.add(&conf, "c1", &c);
    check(&c, &r, "c1").ok();
    let addr = r["ips"][0]["address"].as_str().unwrap();
    c.exec(&["ip", "addr", "del", addr, "dev", "eth0"]);
    let e = check(&c, &r, "c1").err(999);
    assert!(
        e["msg"].as_str().unwrap().contains("Failed to match addr"),
        "{e}"
    );

    // Route removed.
    let c2 = TestNetns::new("ck2");
    let r2 = host.add(&conf, "c2", &c2);
    check(&c2, &r2, "c2").ok();
    c2.exec(&["ip", "route", "del", "10.250.6.0/24"]);
    let e = check(&c2, &r2, "c2").err(999);
    assert!(e["msg"].as_str().unwrap().contains("Expected Route"), "{e}");

    // Host veth removed (takes the container end with it).
    let c3 = TestNetns::new("ck3");
    let r3 = host.add(&conf, "c3", &c3);
    check(&c3, &r3, "c3").ok();
    let port = r3["interfaces"][1]["name"].as_str().unwrap();
    host.ns.exec(&["ip", "link", "del", port]);
    assert_eq!(check(&c3, &r3, "c3").code, 1);

    // Without prevResult.
    let e = host.call("CHECK", &conf, "c2", c2.path(), "eth0").err(999);
    assert_eq!(e["msg"], "Required prevResult missing");
}

#[test]
fn del_is_idempotent_and_readd_of_same_ifname_fails() {
    let host = Host::new("dl");
    let conf = host.conf("0.4.0", &["10.240.7.0/24"], json!({"isGateway": true}));
    let mut c = TestNetns::new("dl1");
    host.add(&conf, "c1", &c);
    let e = host.call("ADD", &conf, "c1", c.path(), "eth0").err(999);
    assert!(e["msg"].as_str().unwrap().contains("already exists"), "{e}");
    // The failed re-ADD did not take the first attachment down.
    assert!(has_link(&c, "eth0"));
    assert_eq!(host.leases().len(), 1);
    host.del(&conf, "c1", c.path());
    host.del(&conf, "c1", c.path());
    assert!(!has_link(&c, "eth0"));
    assert!(host.leases().is_empty());
    // DEL after the namespace is gone, and with no namespace at all.
    host.add(&conf, "c2", &c);
    let path = c.path().to_string();
    c.delete();
    host.del(&conf, "c2", &path);
    host.del(&conf, "c2", "");
    assert!(host.leases().is_empty());
    // The kernel destroys a deleted namespace's links asynchronously.
    assert!(eventually(|| ports(&host).is_empty()), "{:?}", ports(&host));
}

#[test]
fn failed_ipam_leaves_no_veth() {
    let host = Host::new("fi");
    let mut conf = host.conf("1.0.0", &["10.240.8.0/24"], json!({}));
    conf["ipam"]["ranges"] = json!([[{"subnet": "banana"}]]);
    let c = TestNetns::new("fi1");
    let r = host.call("ADD", &conf, "c1", c.path(), "eth0");
    assert_eq!(r.code, 1, "{r:?}");
    assert!(!has_link(&c, "eth0"));
    assert!(ports(&host).is_empty(), "{:?}", ports(&host));
}

#[test]
fn failed_route_leaves_no_veth_and_no_lease() {
    let host = Host::new("fr");
    let mut conf = host.conf("1.0.0", &["10.240.9.0/24"], json!({"ipMasq": true}));
    // The gateway is not on-link: adding the route fails after the
    // addresses were configured.
    conf["ipam"]["routes"] = json!([{"dst": "10.250.9.0/24", "gw": "10.249.9.9"}]);
    let c = TestNetns::new("fr1");
    let r = host.call("ADD", &conf, "c1", c.path(), "eth0");
    let e = r.err(999);
    assert!(
        e["msg"].as_str().unwrap().contains("failed to add route"),
        "{e}"
    );
    assert!(!has_link(&c, "eth0"));
    assert!(ports(&host).is_empty());
    assert!(host.leases().is_empty(), "{:?}", host.leases());
}

#[test]
fn concurrent_adds_onto_a_new_bridge_all_succeed() {
    let host = Host::new("cc");
    let conf = host.conf("1.0.0", &["10.240.10.0/24"], json!({"isGateway": true}));
    let nss: Vec<TestNetns> = (0..32).map(|_| TestNetns::new("cc")).collect();
    let results: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = nss
            .iter()
            .enumerate()
            .map(|(i, ns)| {
                let (host, conf) = (&host, &conf);
                s.spawn(move || host.add(conf, &format!("c{i}"), ns))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut addrs: Vec<String> = results.iter().map(|r| ip_of(r, false)).collect();
    addrs.sort();
    addrs.dedup();
    assert_eq!(addrs.len(), 32);
    assert_eq!(ports(&host).len(), 32);
    let br = host.sh(&["ip", "-4", "addr", "show", "dev", &host.bridge]);
    assert_eq!(br.matches("inet ").count(), 1, "{br}");
}

#[test]
fn results_take_the_shape_of_each_version() {
    let host = Host::new("rs");
    for (i, v) in ["0.2.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
        .iter()
        .enumerate()
    {
        let conf = host.conf(v, &["10.240.11.0/24"], json!({"isGateway": true}));
        let c = TestNetns::new("rs");
        let cid = format!("c{i}");
        let r = host.add(&conf, &cid, &c);
        assert_eq!(r["cniVersion"], *v);
        match *v {
            "0.2.0" => {
                assert!(r["ip4"]["ip"].as_str().unwrap().starts_with("10.240.11."));
                assert_eq!(r["ip4"]["gateway"], "10.240.11.1");
                assert!(r.get("interfaces").is_none());
            }
            _ => {
                let ifs = r["interfaces"].as_array().unwrap();
                assert_eq!(ifs.len(), 3);
                assert_eq!(ifs[0]["name"], host.bridge.as_str());
                assert!(ifs[1]["name"].as_str().unwrap().starts_with("veth"));
                assert_eq!(ifs[1]["name"].as_str().unwrap().len(), 12);
                assert_eq!(ifs[2]["name"], "eth0");
                assert_eq!(ifs[2]["sandbox"], c.path());
                // MACs are the live ones.
                let mac = c.stdout(&["cat", "/sys/class/net/eth0/address"]);
                assert_eq!(ifs[2]["mac"], mac.trim());
                let brmac = host.sh(&["cat", &format!("/sys/class/net/{}/address", host.bridge)]);
                assert_eq!(ifs[0]["mac"], brmac.trim());
                assert_eq!(r["ips"][0]["interface"], 2);
                assert_eq!(r["ips"][0]["gateway"], "10.240.11.1");
                if v.starts_with("0.") {
                    assert_eq!(r["ips"][0]["version"], "4");
                } else {
                    assert!(r["ips"][0].get("version").is_none());
                }
            }
        }
        host.del(&conf, &cid, c.path());
    }
    // L2 with 0.2.0 cannot be expressed; it fails and leaves nothing.
    let mut l2 = host.conf("0.2.0", &[], json!({}));
    l2["ipam"] = json!({});
    let c = TestNetns::new("rs");
    let e = host.call("ADD", &l2, "l2", c.path(), "eth0").err(999);
    assert_eq!(e["msg"], "cannot convert: no valid IP addresses");
    assert!(!has_link(&c, "eth0"));
}

#[test]
fn l2_attachment_has_no_addresses_and_passes_check_and_status() {
    let host = Host::new("l2");
    let mut conf = host.conf("1.1.0", &[], json!({}));
    conf["ipam"] = json!({});
    let c = TestNetns::new("l2c");
    let r = host.add(&conf, "c1", &c);
    assert!(r.get("ips").is_none());
    let link = c.stdout(&["ip", "-o", "link", "show", "eth0"]);
    assert!(link.contains(",UP"), "{link}");
    let global = c.stdout(&["ip", "-o", "addr", "show", "dev", "eth0", "scope", "global"]);
    assert!(global.trim().is_empty(), "{global}");
    // L2 CHECK works (the reference always fails it).
    host.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .ok();
    host.call("STATUS", &conf, "", "", "").ok();
    // disableContainerInterface leaves the container end down.
    let mut off = conf.clone();
    off["disableContainerInterface"] = json!(true);
    let c2 = TestNetns::new("l2d");
    host.add(&off, "c2", &c2);
    let link = c2.stdout(&["ip", "-o", "link", "show", "eth0"]);
    assert!(!link.contains(",UP"), "{link}");
    // ... and cannot be combined with IPAM.
    let bad = host.conf(
        "1.1.0",
        &["10.240.12.0/24"],
        json!({"disableContainerInterface": true}),
    );
    let c3 = TestNetns::new("l2e");
    let e = host.call("ADD", &bad, "c3", c3.path(), "eth0").err(7);
    assert_eq!(
        e["msg"],
        "cannot use IPAM when DisableContainerInterface flag is set"
    );
    assert!(!has_link(&c3, "eth0"));
}

#[test]
fn gc_removes_rules_of_stale_attachments() {
    let host = Host::new("gc");
    let conf = host.conf(
        "1.1.0",
        &["10.240.13.0/24"],
        json!({"isGateway": true, "ipMasq": true, "ipMasqBackend": "nftables", "macspoofchk": true}),
    );
    let (a, mut b) = (TestNetns::new("gca"), TestNetns::new("gcb"));
    host.add(&conf, "a", &a);
    host.add(&conf, "b", &b);
    b.delete();
    // GC removes spoof-check rules only once the host veth is gone.
    assert!(eventually(|| ports(&host).len() == 1), "{:?}", ports(&host));
    // Without cni.dev/valid-attachments nothing is known to be stale:
    // every rule and lease stays.
    host.call("GC", &conf, "", "", "").ok();
    let rules = host.sh(&["nft", "list", "ruleset"]);
    assert!(
        rules.contains("id: a") && rules.contains("id: b"),
        "{rules}"
    );
    assert!(rules.contains("cni-br-iface-b-eth0"), "{rules}");
    assert_eq!(host.leases().len(), 2, "{:?}", host.leases());
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "a", "ifname": "eth0"}]);
    host.call("GC", &gc, "", "", "").ok();
    let rules = host.sh(&["nft", "list", "ruleset"]);
    assert!(rules.contains("id: a"), "{rules}");
    assert!(!rules.contains("id: b"), "{rules}");
    assert!(rules.contains("cni-br-iface-a-eth0"), "{rules}");
    assert!(!rules.contains("cni-br-iface-b-eth0"), "{rules}");
    // IPAM GC was forwarded: b's lease is gone, a's stays.
    assert_eq!(host.leases().len(), 1, "{:?}", host.leases());
    host.del(&conf, "a", a.path());
    let rules = host.sh(&["nft", "list", "ruleset"]);
    assert!(
        !rules.contains("id: a") && !rules.contains("cni-br-iface-a"),
        "{rules}"
    );
}

#[test]
fn seed_config_gives_a_routed_masqueraded_container() {
    let host = Host::new("sd");
    let conf = json!({"cniVersion":"0.3.1","name":"bridge","type":"bridge",
        "bridge": host.bridge, "isGateway":true,"ipMasq":true,
        "ipam":{"type":"host-local","dataDir": host.data.to_str(),
            "ranges":[[{"subnet":"10.240.14.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]}});
    let c = TestNetns::new("sdc");
    let r = host.add(&conf, "seed", &c);
    assert_eq!(r["cniVersion"], "0.3.1");
    assert_eq!(r["ips"][0]["address"], "10.240.14.2/24");
    let routes = c.stdout(&["ip", "route"]);
    assert!(routes.contains("default via 10.240.14.1"), "{routes}");
    assert!(ping(&c, "10.240.14.1"));
    // No ipMasqBackend: iptables, which is usable here, as the reference
    // chooses.
    let nat = || host.sh(&["iptables-save", "-t", "nat"]);
    assert!(nat().contains("id: \\\"seed\\\""), "{}", nat());
    host.del(&conf, "seed", c.path());
    assert!(rules_of(&host, "seed").is_empty());
}

/// The nftables ADD leaves a healthy `postrouting` base chain alone (same
/// rule handles, so nothing was flushed) and rebuilds it when someone broke
/// it.
#[test]
fn nftables_base_chain_is_reused_and_repaired() {
    let host = Host::new("nb");
    let conf = host.conf(
        "1.0.0",
        &["10.240.10.0/24", "fd40:10::/64"],
        json!({"isGateway": true, "ipMasq": true, "ipMasqBackend": "nftables"}),
    );
    let chain = |name: &str| {
        host.sh(&[
            "nft",
            "-a",
            "list",
            "chain",
            "inet",
            "cni_plugins_masquerade",
            name,
        ])
    };
    let masq_rules = || chain("masq_checks").matches(" masquerade comment").count();
    let (c1, c2, c3) = (
        TestNetns::new("nb1"),
        TestNetns::new("nb2"),
        TestNetns::new("nb3"),
    );
    host.add(&conf, "c1", &c1);
    let base = chain("postrouting");
    assert!(base.contains("ip daddr 224.0.0.0/4 return"), "{base}");
    assert!(base.contains("ip6 daddr ff00::/8 return"), "{base}");
    assert!(base.contains("goto masq_checks"), "{base}");
    // One rule per address, as nft itself would print it.
    let m = chain("masq_checks");
    assert!(
        m.contains("ip6 daddr != fd40:10::/64 masquerade comment"),
        "{m}"
    );
    assert!(
        m.contains("ip daddr != 10.240.10.0/24 masquerade comment"),
        "{m}"
    );
    host.add(&conf, "c2", &c2);
    assert_eq!(chain("postrouting"), base, "healthy base chain untouched");
    assert_eq!(masq_rules(), 4);
    // Break the base chain: drop its goto.
    let handle = base
        .lines()
        .find(|l| l.contains("goto masq_checks"))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap()
        .to_string();
    host.sh(&[
        "nft",
        "delete",
        "rule",
        "inet",
        "cni_plugins_masquerade",
        "postrouting",
        "handle",
        &handle,
    ]);
    host.add(&conf, "c3", &c3);
    let repaired = chain("postrouting");
    assert!(repaired.contains("goto masq_checks"), "{repaired}");
    let rules = repaired
        .lines()
        .filter(|l| l.contains("# handle") && !l.contains("chain "))
        .count();
    assert_eq!(rules, 3, "{repaired}");
    assert_eq!(masq_rules(), 6);
    for (cid, c) in [("c1", &c1), ("c2", &c2), ("c3", &c3)] {
        host.del(&conf, cid, c.path());
    }
    assert_eq!(masq_rules(), 0, "{}", chain("masq_checks"));
}

/// A `CNI_NETNS` that is there but no namespace (a netns bind mount
/// unmounted, its file left behind): the container's links went with its
/// namespace, so DEL releases the lease and removes the masquerade rules
/// and succeeds (the reference, and we before, failed forever with
/// `unknown FS magic`, the reference after releasing the lease). ADD and
/// CHECK still refuse the path.
#[test]
fn del_with_a_netns_path_that_is_no_namespace_cleans_up() {
    let host = Host::new("dfile");
    let conf = host.conf("1.0.0", &["10.240.15.0/24"], json!({"ipMasq": true}));
    let c = TestNetns::new("dfile1");
    host.add(&conf, "c1", &c);
    assert!(!rules_of(&host, "c1").is_empty());
    let file = host.data.join("netns-file");
    std::fs::write(&file, "").unwrap();
    let path = file.to_str().unwrap();
    host.call("ADD", &conf, "c2", path, "eth0").err(8);
    host.call("DEL", &conf, "c1", path, "eth0").ok();
    assert!(host.leases().is_empty(), "{:?}", host.leases());
    assert!(
        rules_of(&host, "c1").is_empty(),
        "{:?}",
        rules_of(&host, "c1")
    );
}

/// ADD repeated for a live attachment (same container ID and ifname) in
/// another namespace (a restarted sandbox whose old one is still there):
/// host-local refuses the duplicate allocation, and the failed ADD leaves
/// the first attachment's lease alone (its undo ran IPAM DEL, which
/// released the address the first container still uses; the reference
/// runs IPAM DEL only after an IPAM ADD that succeeded).
#[test]
fn failed_ipam_add_does_not_release_the_live_attachments_lease() {
    let host = Host::new("dup");
    let conf = host.conf("1.0.0", &["10.240.16.0/24"], json!({}));
    let (a, b) = (TestNetns::new("dupa"), TestNetns::new("dupb"));
    let r = host.add(&conf, "c1", &a);
    let e = host.call("ADD", &conf, "c1", b.path(), "eth0").err(999);
    assert!(
        e["msg"].as_str().unwrap().contains("duplicate allocation"),
        "{e}"
    );
    assert_eq!(host.leases(), vec![ip_of(&r, false)]);
    assert!(!has_link(&b, "eth0"));
    assert_eq!(ports(&host).len(), 1);
}
