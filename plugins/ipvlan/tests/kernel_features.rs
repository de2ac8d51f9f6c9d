//! ipvlan where the kernel has it (the VM tier, `scripts/vm-test.sh`):
//! ADD, CHECK, DEL; every step failed in turn and ADD killed anywhere
//! leaving nothing; chained over `prevResult`'s interface; l2 and l3
//! traffic between two containers on one master.

use std::path::Path;

use serde_json::json;
use testsupport::onelink::{MASTER, conf, fail_each_step, host, is_empty, link_json, segment};
use testsupport::{TestNetns, ip_of, ping, with_prev};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ipvlan"))
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn add_check_del() {
    testsupport::require_root();
    let h = host("ipl", bin());
    let conf = conf(
        &h,
        "ipvlan",
        "1.0.0",
        &["10.240.66.0/24"],
        json!({"mode": "l3"}),
    );
    let c = TestNetns::new("iplc");
    let r = h.add(&conf, "c1", &c);
    assert_eq!(r["interfaces"][0]["name"], "eth0");
    assert_eq!(r["interfaces"][0]["sandbox"], c.path());
    assert_eq!(r["ips"][0]["interface"], 0);
    assert_eq!(r["ips"][0]["address"], "10.240.66.2/24");
    let l = link_json(&c, "eth0");
    assert_eq!(l["linkinfo"]["info_kind"], "ipvlan");
    assert_eq!(l["linkinfo"]["info_data"]["mode"], "l3");
    let prev = with_prev(&conf, &r);
    h.call("CHECK", &prev, "c1", c.path(), "eth0").ok();
    let mut l2 = prev.clone();
    l2["mode"] = json!("l2");
    let e = h.call("CHECK", &l2, "c1", c.path(), "eth0").err(999);
    assert_eq!(
        e["msg"],
        "Container IPVlan mode l3 does not match expected value: l2"
    );
    h.call("DEL", &prev, "c1", c.path(), "eth0").ok();
    assert!(is_empty(&c) && h.leases().is_empty());
    h.call("DEL", &prev, "c1", c.path(), "eth0").ok();
    h.call("DEL", &prev, "c1", "", "eth0").ok();
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn chained_over_prev_results_interface_with_its_addresses() {
    testsupport::require_root();
    let h = host("ipch", bin());
    let prev = json!({"cniVersion": "1.0.0", "interfaces": [{"name": MASTER}],
        "ips": [{"address": "10.240.67.5/24", "gateway": "10.240.67.1"}]});
    let mut conf = conf(&h, "ipvlan", "1.0.0", &[], json!({"master": null}));
    conf.as_object_mut().unwrap().remove("ipam");
    let conf = with_prev(&conf, &prev);
    let c = TestNetns::new("ipchc");
    let r = h.add(&conf, "c1", &c);
    assert_eq!(r["interfaces"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["interfaces"][0]["name"], "eth0");
    assert_eq!(r["ips"][0]["address"], "10.240.67.5/24");
    assert_eq!(r["ips"][0]["interface"], 0);
    let master = link_json(&h.ns, MASTER)["ifindex"].clone();
    assert_eq!(link_json(&c, "eth0")["link_index"], master);
    h.del(&conf, "c1", c.path());
    assert!(is_empty(&c));
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn failed_add_at_each_step_leaves_nothing() {
    testsupport::require_root();
    let h = host("ipfp", bin());
    let conf = conf(&h, "ipvlan", "1.0.0", &["10.240.68.0/24"], json!({}));
    fail_each_step(&h, &conf, testsupport::onelink::IPAM_STEPS);
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc() {
    testsupport::require_root();
    let h = host("ipkp", bin());
    let conf = conf(&h, "ipvlan", "1.1.0", &["10.240.69.0/24"], json!({}));
    testsupport::onelink::kill(&h, "ADD", &conf);
}

fn traffic(mode: &str, subnet: &str, lan_addr: &str) {
    testsupport::require_root();
    let h = host("iptr", bin());
    let lan = segment(&h, lan_addr);
    let conf = conf(&h, "ipvlan", "1.0.0", &[subnet], json!({"mode": mode}));
    let (a, b) = (TestNetns::new("ipta"), TestNetns::new("iptb"));
    let ra = h.add(&conf, "a", &a);
    let rb = h.add(&conf, "b", &b);
    assert!(ping(&a, &ip_of(&rb, false)), "{mode}: a to b");
    assert!(ping(&b, &ip_of(&ra, false)), "{mode}: b to a");
    if mode == "l2" {
        let lan_ip = lan_addr.split('/').next().unwrap();
        assert!(ping(&a, lan_ip), "l2: a to the segment");
        assert!(ping(&lan, &ip_of(&rb, false)), "l2: the segment to b");
    }
    h.del(&conf, "a", a.path());
    h.del(&conf, "b", b.path());
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn l2_containers_reach_each_other_and_the_segment() {
    traffic("l2", "10.240.70.0/24", "10.240.70.250/24");
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn l3_containers_reach_each_other() {
    traffic("l3", "10.240.71.0/24", "");
}

#[test]
#[ignore = "kernel-features: ipvlan"]
fn two_secondary_attachments_of_one_pod_on_one_master() {
    testsupport::require_root();
    let h = host("ipmu", bin());
    let (subnet, fixed) = ("10.240.81.0/24", "10.240.82.5/24");
    testsupport::onelink::two_secondary_attachments(
        &h,
        "ipvlan",
        json!({}),
        json!({}),
        subnet,
        fixed,
    );
}
