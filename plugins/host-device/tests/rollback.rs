//! A failed ADD leaves the device home, whatever step fails: the
//! failpoints (`skel::failpoint`) of a clean ADD are listed and compared
//! with the steps expected, then every step fails in turn: a clear error,
//! the device back in the host under its own name and MAC, up as it was,
//! without alias; nothing in the container; no lease. Then a normal ADD
//! and DEL of the same attachment succeed.
//!
//! Failpoints exist in debug builds only.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::{Failpoints, TestNetns};

const STEPS: &[&str] = &[
    "host-device/ipam-started",
    "host-device/moved",
    "host-device/up",
    "host-device/ipam-done",
    "host-device/configured",
];

#[test]
fn failed_add_at_each_step_leaves_the_device_home() {
    let h = host("hf");
    let d = Device::new(&h);
    let conf = conf(
        &h,
        "1.0.0",
        &d,
        &["10.240.67.0/24", "fd40:67::/64"],
        json!({}),
    );
    let points = Failpoints::new();
    let c = TestNetns::new("hfd");
    h.run(points.record(h.request("ADD", &conf, "clean", c.path(), "eth0")))
        .ok();
    h.del(&conf, "clean", c.path());
    assert_eq!(
        points.passed("host-device/"),
        STEPS,
        "failpoints of a clean ADD"
    );
    for (i, step) in STEPS.iter().enumerate() {
        h.ns.exec(&["ip", "link", "set", &d.name, "up"]);
        let c = TestNetns::new("hfc");
        let cid = format!("fp{i}");
        let add = h.request("ADD", &conf, &cid, c.path(), "eth0");
        let r = h.run(add.fail_at(step));
        let e = r.err(999);
        assert_eq!(e["msg"], format!("injected failure at {step}"), "{e}");
        assert!(!r.stderr.contains("cleanup"), "{step}: {}", r.stderr);
        assert_home(&h, &d, true, step);
        assert!(is_empty(&c), "{step}: {:?}", links(&c));
        assert!(h.leases().is_empty(), "{step}: {:?}", h.leases());
        let ok = h.add(&conf, &cid, &c);
        assert_eq!(h.leases().len(), ok["ips"].as_array().unwrap().len());
        h.del(&with_prev(&conf, &ok), &cid, c.path());
        assert_home(&h, &d, false, step);
        assert!(is_empty(&c));
        assert!(h.leases().is_empty());
    }
}
