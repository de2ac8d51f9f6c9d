//! ADD, CHECK, DEL of macvlan attachments: the result, the link's
//! settings, CHECK noticing what changed, DEL idempotent (also without a
//! namespace), bad input refused in the reference's words with nothing
//! changed, Multus-style secondary attachments.

mod common;

use common::*;
use serde_json::json;
use testsupport::TestNetns;

#[test]
fn add_check_del_with_host_local() {
    let h = host("lc");
    let conf = conf(&h, "1.0.0", &["10.240.51.0/24"], json!({}));
    let c = TestNetns::new("lcc");
    let r = h.add(&conf, "c1", &c);
    let mac = link_json(&c, "eth0")["address"].clone();
    assert_eq!(
        r,
        json!({
            "cniVersion": "1.0.0",
            "interfaces": [{"name": "eth0", "mac": mac, "sandbox": c.path()}],
            "ips": [{"interface": 0, "address": "10.240.51.2/24", "gateway": "10.240.51.1"}],
        })
    );
    let l = link_json(&c, "eth0");
    assert_eq!(l["linkinfo"]["info_kind"], "macvlan");
    assert_eq!(l["linkinfo"]["info_data"]["mode"], "bridge");
    assert_eq!(
        (l["mtu"].clone(), l["operstate"].clone()),
        (json!(1500), json!("UP"))
    );
    let arp = c.stdout(&["sysctl", "-n", "net.ipv4.conf.eth0.arp_notify"]);
    assert_eq!(arp.trim(), "1");
    let prev = with_prev(&conf, &r);
    h.call("CHECK", &prev, "c1", c.path(), "eth0").ok();
    let e = h.call("CHECK", &conf, "c1", c.path(), "eth0").err(999);
    assert_eq!(e["msg"], "required prevResult missing");
    let mut private = conf.clone();
    private["mode"] = json!("private");
    let wrong_mode = with_prev(&private, &r);
    let e = h
        .call("CHECK", &wrong_mode, "c1", c.path(), "eth0")
        .err(999);
    assert_eq!(
        e["msg"],
        "container macvlan mode bridge does not match expected value: private"
    );
    c.exec(&["ip", "addr", "flush", "dev", "eth0"]);
    let e = h.call("CHECK", &prev, "c1", c.path(), "eth0").err(999);
    assert_eq!(
        e["msg"],
        "Failed to match addr 10.240.51.2/24 on interface eth0"
    );

    h.call("DEL", &prev, "c1", c.path(), "eth0").ok();
    assert!(is_empty(&c), "{:?}", links(&c));
    assert!(h.leases().is_empty());
    h.call("DEL", &prev, "c1", c.path(), "eth0").ok();
    h.call("DEL", &prev, "c1", "", "eth0").ok();
    let e = h.call("CHECK", &prev, "c1", c.path(), "eth0").err(999);
    assert!(e["msg"].as_str().unwrap().contains("c1"), "{e}");
}

#[test]
fn without_ipam_an_l2_link_up_and_a_result_without_addresses() {
    let h = host("l2");
    let mut conf = conf(&h, "1.1.0", &[], json!({}));
    conf.as_object_mut().unwrap().remove("ipam");
    let c = TestNetns::new("l2c");
    let r = h.add(&conf, "c1", &c);
    assert_eq!(r["interfaces"][0]["name"], "eth0");
    assert_eq!(r.get("ips"), None, "{r}");
    assert_eq!(link_json(&c, "eth0")["operstate"], "UP");
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .ok();
    h.del(&conf, "c1", c.path());
    assert!(is_empty(&c));
    h.del(&conf, "c1", c.path());
    h.del(&conf, "c1", "");
}

#[test]
fn mode_mtu_mac_and_bcqueuelen_are_set() {
    let h = host("st");
    let keys = json!({"mode": "private", "mtu": 1400, "bcqueuelen": 100,
        "mac": "02:00:00:00:00:01", "runtimeConfig": {"mac": "02:00:00:00:00:02"}});
    let conf = conf(&h, "1.0.0", &["10.240.52.0/24"], keys);
    let c = TestNetns::new("stc");
    let r = h.add(&conf, "c1", &c);
    assert_eq!(r["interfaces"][0]["mac"], "02:00:00:00:00:02");
    let l = link_json(&c, "eth0");
    assert_eq!(l["address"], "02:00:00:00:00:02");
    assert_eq!(l["mtu"], 1400);
    assert_eq!(l["linkinfo"]["info_data"]["mode"], "private");
    assert_eq!(l["linkinfo"]["info_data"]["bcqueuelen"], 100);
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .ok();
    h.del(&conf, "c1", c.path());

    // CNI_ARGS `MAC` over the config's.
    let conf = conf_without_runtime(&conf);
    let add = h.request("ADD", &conf, "c2", c.path(), "eth0");
    let r = h
        .run(add.args("IgnoreUnknown=1;MAC=02:00:00:00:00:03"))
        .ok();
    assert_eq!(r["interfaces"][0]["mac"], "02:00:00:00:00:03");
    h.del(&conf, "c2", c.path());
}

fn conf_without_runtime(conf: &serde_json::Value) -> serde_json::Value {
    let mut c = conf.clone();
    c.as_object_mut().unwrap().remove("runtimeConfig");
    c
}

#[test]
fn master_defaults_to_the_default_routes_interface() {
    let h = host("dm");
    h.ns.exec(&["ip", "addr", "add", "10.240.53.254/24", "dev", MASTER]);
    h.ns.exec(&["ip", "route", "add", "default", "via", "10.240.53.1"]);
    let mut conf = conf(&h, "1.0.0", &["10.240.53.0/24"], json!({}));
    conf.as_object_mut().unwrap().remove("master");
    let c = TestNetns::new("dmc");
    let r = h.add(&conf, "c1", &c);
    let l = link_json(&c, "eth0");
    let master_index = link_json(&h.ns, MASTER)["ifindex"].clone();
    assert_eq!(l["link_index"], master_index, "{l}");
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .ok();
    h.del(&conf, "c1", c.path());
    h.ns.exec(&["ip", "route", "del", "default"]);
    let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(999);
    assert_eq!(e["msg"], "no default route interface found");
    assert!(is_empty(&c));
}

#[test]
fn link_in_container_takes_the_master_there() {
    let h = host("lic");
    let c = TestNetns::new("licc");
    c.exec(&[
        "ip", "link", "add", "cmaster", "type", "veth", "peer", "name", "cpeer",
    ]);
    c.exec(&["ip", "link", "set", "cmaster", "up"]);
    let keys = json!({"master": "cmaster", "linkInContainer": true});
    let conf = conf(&h, "1.0.0", &["10.240.54.0/24"], keys);
    let r = h.add(&conf, "c1", &c);
    let l = link_json(&c, "eth0");
    assert_eq!(l["link"], "cmaster", "{l}");
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .ok();
    h.del(&conf, "c1", c.path());
    assert!(!has_link(&c, "eth0"));
}

#[test]
fn bad_input_gets_the_references_words_and_changes_nothing() {
    let h = host("bad");
    let c = TestNetns::new("badc");
    let subnets = ["10.240.55.0/24"];
    let cases = [
        (
            json!({"mode": "source"}),
            7,
            r#"unknown macvlan mode: "source""#,
        ),
        (
            json!({"mac": "zz"}),
            7,
            "invalid args zz for MAC addr: address zz: invalid MAC address",
        ),
        (
            json!({"mtu": 9000}),
            7,
            "invalid MTU 9000, must be [0, master MTU(1500)]",
        ),
        (
            json!({"mtu": -1}),
            7,
            "invalid MTU -1, must be [0, master MTU(1500)]",
        ),
        (json!({"master": "nosuch0"}), 999, "Link not found"),
        (json!({"ipam": {"type": "nosuch"}}), 999, ""),
    ];
    for (keys, code, msg) in cases {
        let conf = conf(&h, "1.0.0", &subnets, keys.clone());
        let e = h.call("ADD", &conf, "c1", c.path(), "eth0").err(code);
        if !msg.is_empty() {
            assert_eq!(e["msg"], msg, "{keys}");
        }
        assert!(is_empty(&c), "{keys}: {:?}", links(&c));
        assert!(h.leases().is_empty(), "{keys}");
    }
    // CNI_IFNAME taken: the existing attachment keeps its link and lease.
    let conf = conf(&h, "1.0.0", &subnets, json!({}));
    h.add(&conf, "c1", &c);
    let e = h.call("ADD", &conf, "c2", c.path(), "eth0").err(999);
    assert_eq!(
        e["msg"],
        r#"failed to rename macvlan to "eth0": file exists"#
    );
    assert_eq!(h.leases().len(), 1);
    assert!(has_link(&c, "eth0"));
    h.del(&conf, "c1", c.path());
}

/// Multus: a pod's secondary networks `net1` and `net2` on one master,
/// one with host-local, one with static IPAM.
#[test]
fn two_secondary_attachments_of_one_pod_on_one_master() {
    let h = host("mu");
    let c = TestNetns::new("muc");
    c.exec(&[
        "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p",
    ]);
    let dynamic = conf(&h, "1.0.0", &["10.240.56.0/24"], json!({}));
    let fixed = conf(
        &h,
        "1.0.0",
        &[],
        json!({"ipam": {"type": "static", "addresses": [{"address": "10.240.57.5/24"}]}}),
    );
    let r1 = h.call("ADD", &dynamic, "pod", c.path(), "net1").ok();
    let r2 = h.call("ADD", &fixed, "pod", c.path(), "net2").ok();
    assert_eq!(r1["interfaces"][0]["name"], "net1");
    assert_eq!(r2["interfaces"][0]["name"], "net2");
    assert_eq!(r2["ips"][0]["address"], "10.240.57.5/24");
    let addrs = c.stdout(&["ip", "-o", "addr", "show"]);
    assert!(addrs.contains("net1    inet 10.240.56.2/24"), "{addrs}");
    assert!(addrs.contains("net2    inet 10.240.57.5/24"), "{addrs}");
    h.call("CHECK", &with_prev(&dynamic, &r1), "pod", c.path(), "net1")
        .ok();
    h.call("CHECK", &with_prev(&fixed, &r2), "pod", c.path(), "net2")
        .ok();
    h.call("DEL", &dynamic, "pod", c.path(), "net1").ok();
    assert!(has_link(&c, "net2") && !has_link(&c, "net1"));
    h.call("DEL", &fixed, "pod", c.path(), "net2").ok();
    assert!(!has_link(&c, "net2"));
    assert!(h.leases().is_empty());
}
