//! vlan where the kernel has 8021q (the VM tier, `scripts/vm-test.sh`):
//! ADD, CHECK, DEL; every step failed in turn and ADD killed anywhere
//! leaving nothing; frames leave the master tagged (only the segment's
//! own VLAN device of that ID answers).

use std::path::Path;

use serde_json::json;
use testsupport::onelink::{MASTER, conf, fail_each_step, host, is_empty, link_json, segment};
use testsupport::{TestNetns, ping, ping_unanswered, with_prev};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_vlan"))
}

#[test]
#[ignore = "kernel-features: 8021q"]
fn add_check_del() {
    testsupport::require_root();
    let h = host("vll", bin());
    let keys = json!({"vlanId": 100, "mtu": 1400});
    let conf = conf(&h, "vlan", "1.0.0", &["10.240.73.0/24"], keys);
    let c = TestNetns::new("vllc");
    let r = h.add(&conf, "c1", &c);
    assert_eq!(r["interfaces"][0]["name"], "eth0");
    assert_eq!(r["ips"][0]["address"], "10.240.73.2/24");
    let l = link_json(&c, "eth0");
    assert_eq!(l["linkinfo"]["info_kind"], "vlan");
    assert_eq!(l["linkinfo"]["info_data"]["id"], 100);
    assert_eq!(l["mtu"], 1400);
    assert_eq!(l["link_index"], link_json(&h.ns, MASTER)["ifindex"]);
    let prev = with_prev(&conf, &r);
    h.call("CHECK", &prev, "c1", c.path(), "eth0").ok();
    let mut other = prev.clone();
    other["vlanId"] = json!(101);
    let e = h.call("CHECK", &other, "c1", c.path(), "eth0").err(999);
    assert_eq!(
        e["msg"],
        "Error: Tuning link eth0 configured promisc is 101, current value is 100"
    );
    h.call("DEL", &prev, "c1", c.path(), "eth0").ok();
    assert!(is_empty(&c) && h.leases().is_empty());
    h.call("DEL", &prev, "c1", c.path(), "eth0").ok();
    h.call("DEL", &prev, "c1", "", "eth0").ok();
}

#[test]
#[ignore = "kernel-features: 8021q"]
fn failed_add_at_each_step_leaves_nothing() {
    testsupport::require_root();
    let h = host("vlfp", bin());
    let conf = conf(
        &h,
        "vlan",
        "1.0.0",
        &["10.240.74.0/24"],
        json!({"vlanId": 7}),
    );
    fail_each_step(&h, &conf, testsupport::onelink::IPAM_STEPS);
}

#[test]
#[ignore = "kernel-features: 8021q"]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc() {
    testsupport::require_root();
    let h = host("vlkp", bin());
    let conf = conf(
        &h,
        "vlan",
        "1.1.0",
        &["10.240.75.0/24"],
        json!({"vlanId": 8}),
    );
    testsupport::onelink::kill(&h, "ADD", &conf);
}

/// The segment has VLAN 200 only (`peer0.200`, 10.240.76.1; nothing on
/// `peer0` itself): a container on VLAN 200 reaches it, one on VLAN 201
/// (the same subnet) does not.
#[test]
#[ignore = "kernel-features: 8021q"]
fn frames_leave_the_master_tagged() {
    testsupport::require_root();
    let h = host("vltr", bin());
    let lan = segment(&h, "");
    let tagged = ["ip", "link", "add", "link", "peer0", "name", "peer0.200"];
    lan.exec(&[&tagged[..], &["type", "vlan", "id", "200"]].concat());
    lan.exec(&["ip", "addr", "add", "10.240.76.1/24", "dev", "peer0.200"]);
    lan.exec(&["ip", "link", "set", "peer0.200", "up"]);
    let attach = |id: u16, addr: &str, c: &TestNetns| {
        let keys = json!({"vlanId": id, "ipam": {"type": "static",
            "addresses": [{"address": addr}]}});
        let conf = conf(&h, "vlan", "1.0.0", &[], keys);
        h.add(&conf, "c1", c);
        conf
    };
    let (c200, c201) = (TestNetns::new("vltra"), TestNetns::new("vltrb"));
    let conf200 = attach(200, "10.240.76.5/24", &c200);
    let conf201 = attach(201, "10.240.76.6/24", &c201);
    assert!(ping(&c200, "10.240.76.1"), "VLAN 200 peer unreachable");
    assert!(ping(&lan, "10.240.76.5"), "VLAN 200 container unreachable");
    assert!(
        ping_unanswered(&c201, "10.240.76.1"),
        "VLAN 201 reached VLAN 200"
    );
    h.del(&conf200, "c1", c200.path());
    h.del(&conf201, "c1", c201.path());
}

#[test]
#[ignore = "kernel-features: 8021q"]
fn two_secondary_attachments_of_one_pod_on_one_master() {
    testsupport::require_root();
    let h = host("vlmu", bin());
    let (subnet, fixed) = ("10.240.83.0/24", "10.240.84.5/24");
    let keys = json!({"vlanId": 300});
    testsupport::onelink::two_secondary_attachments(
        &h,
        "vlan",
        keys,
        json!({"vlanId": 301}),
        subnet,
        fixed,
    );
}
