//! dummy where the kernel has it (the VM tier, `scripts/vm-test.sh`):
//! ADD (also named as a link of the host, which v1.2–v1.8 of the
//! reference refused), CHECK, DEL; every step failed in turn and ADD
//! killed anywhere leaving nothing.

use std::path::Path;

use serde_json::json;
use testsupport::onelink::{conf, fail_each_step, host, is_empty, link_json};
use testsupport::{TestNetns, with_prev};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_dummy"))
}

#[test]
#[ignore = "kernel-features: dummy"]
fn add_check_del_with_a_name_the_host_has() {
    testsupport::require_root();
    let h = host("dml", bin());
    let ipam = json!({"type": "static", "addresses": [{"address": "10.240.78.2/24"}],
        "routes": [{"dst": "10.240.0.0/12"}], "dns": {"nameservers": ["10.240.78.53"]}});
    let conf = conf(
        &h,
        "dummy",
        "1.0.0",
        &[],
        json!({"master": null, "ipam": ipam}),
    );
    let c = TestNetns::new("dmlc");
    // The host's own link of that name.
    let r = h.call("ADD", &conf, "c1", c.path(), "master0").ok();
    assert_eq!(r["interfaces"][0]["name"], "master0");
    assert_eq!(r["ips"][0]["address"], "10.240.78.2/24");
    assert_eq!(r["ips"][0]["interface"], 0);
    assert_eq!(r["routes"][0]["dst"], "10.240.0.0/12");
    assert_eq!(r["dns"]["nameservers"][0], "10.240.78.53");
    let l = link_json(&c, "master0");
    assert_eq!(l["linkinfo"]["info_kind"], "dummy");
    let prev = with_prev(&conf, &r);
    h.call("CHECK", &prev, "c1", c.path(), "master0").ok();
    c.exec(&["ip", "link", "set", "master0", "down"]);
    let e = h.call("CHECK", &prev, "c1", c.path(), "master0").err(999);
    assert_eq!(e["msg"], "Interface master0 is down");
    h.call("DEL", &prev, "c1", c.path(), "master0").ok();
    assert!(is_empty(&c) && h.leases().is_empty());
    h.call("DEL", &prev, "c1", c.path(), "master0").ok();
    h.call("DEL", &prev, "c1", "", "master0").ok();
}

#[test]
#[ignore = "kernel-features: dummy"]
fn failed_add_at_each_step_leaves_nothing() {
    testsupport::require_root();
    let h = host("dmfp", bin());
    let conf = conf(
        &h,
        "dummy",
        "1.0.0",
        &["10.240.79.0/24"],
        json!({"master": null}),
    );
    fail_each_step(&h, &conf, testsupport::onelink::IPAM_STEPS);
}

#[test]
#[ignore = "kernel-features: dummy"]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc() {
    testsupport::require_root();
    let h = host("dmkp", bin());
    let conf = conf(
        &h,
        "dummy",
        "1.1.0",
        &["10.240.80.0/24"],
        json!({"master": null}),
    );
    testsupport::onelink::kill(&h, "ADD", &conf);
}

#[test]
#[ignore = "kernel-features: dummy"]
fn two_secondary_attachments_of_one_pod() {
    testsupport::require_root();
    let h = host("dmmu", bin());
    let (subnet, fixed) = ("10.240.85.0/24", "10.240.86.5/24");
    let keys = json!({"master": null});
    testsupport::onelink::two_secondary_attachments(&h, "dummy", keys, json!({}), subnet, fixed);
}
