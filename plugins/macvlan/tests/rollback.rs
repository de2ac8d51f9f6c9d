//! A failed ADD leaves nothing behind, whatever step fails. The failpoints
//! (`skel::failpoint`) of a clean ADD are listed and compared with the
//! steps expected, then every step fails in turn: a clear error, nothing
//! but `lo` in the container, no lease; then a normal ADD and DEL of the
//! same attachment succeed and leave nothing.
//!
//! Failpoints exist in debug builds only.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::{Failpoints, PluginHost, TestNetns};

const STEPS: &[&str] = &[
    "onelink/ipam-started",
    "onelink/link-created",
    "onelink/ipam-done",
    "onelink/configured",
];

fn fail_each_step(conf: impl Fn(&PluginHost) -> Value, steps: &[&str]) {
    let h = host("fp");
    let conf = conf(&h);
    let points = Failpoints::new();
    let c = TestNetns::new("fpd");
    h.run(points.record(h.request("ADD", &conf, "clean", c.path(), "eth0")))
        .ok();
    h.del(&conf, "clean", c.path());
    assert_eq!(
        points.passed("onelink/"),
        steps,
        "failpoints of a clean ADD"
    );
    for (i, step) in steps.iter().enumerate() {
        let c = TestNetns::new("fpc");
        let cid = format!("fp{i}");
        let add = h.request("ADD", &conf, &cid, c.path(), "eth0");
        let r = h.run(add.fail_at(step));
        let e = r.err(999);
        assert_eq!(e["msg"], format!("injected failure at {step}"), "{e}");
        assert!(!r.stderr.contains("cleanup"), "{step}: {}", r.stderr);
        assert!(is_empty(&c), "{step}: {:?}", links(&c));
        assert!(h.leases().is_empty(), "{step}: {:?}", h.leases());
        h.add(&conf, &cid, &c);
        h.del(&conf, &cid, c.path());
        assert!(is_empty(&c), "{step}: {:?}", links(&c));
        assert!(h.leases().is_empty(), "{step}: {:?}", h.leases());
    }
}

#[test]
fn failed_add_at_each_step_leaves_nothing_dual_stack() {
    fail_each_step(
        |h| conf(h, "1.0.0", &["10.240.60.0/24", "fd40:60::/64"], json!({})),
        STEPS,
    );
}

#[test]
fn failed_add_at_each_step_leaves_nothing_without_ipam() {
    let l2 = |h: &PluginHost| {
        let mut c = conf(h, "1.0.0", &[], json!({}));
        c.as_object_mut().unwrap().remove("ipam");
        c
    };
    fail_each_step(l2, &["onelink/link-created", "onelink/configured"]);
}
