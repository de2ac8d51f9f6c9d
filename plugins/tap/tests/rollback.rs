//! A failed ADD leaves nothing, whatever step fails: the failpoints of a
//! clean ADD (dual-stack IPAM, a port of the container's bridge) are
//! compared with the steps expected, then every step fails in turn: a
//! clear error, no tap (the bridge stays), no lease; then a normal ADD and
//! DEL succeed.
//!
//! Failpoints exist in debug builds only.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::{Failpoints, TestNetns};

const STEPS: &[&str] = &[
    "tap/ipam-started",
    "tap/created",
    "tap/bridged",
    "tap/ipam-done",
    "tap/configured",
];

/// The container with its bridge `br0`.
fn container() -> TestNetns {
    let c = TestNetns::new("tfc");
    c.exec(&["ip", "link", "add", "br0", "type", "bridge"]);
    c
}

fn only_the_bridge(c: &TestNetns) -> bool {
    links(c)
        .iter()
        .all(|(name, _)| name == "lo" || name == "br0")
}

#[test]
fn failed_add_at_each_step_leaves_nothing() {
    let h = host("tf");
    let conf = conf(
        &h,
        &["10.240.73.0/24", "fd40:73::/64"],
        json!({"bridge": "br0"}),
    );
    let points = Failpoints::new();
    let c = container();
    h.run(points.record(h.request("ADD", &conf, "clean", c.path(), "tap0")))
        .ok();
    h.call("DEL", &conf, "clean", c.path(), "tap0").ok();
    assert_eq!(points.passed("tap/"), STEPS, "failpoints of a clean ADD");
    for (i, step) in STEPS.iter().enumerate() {
        let c = container();
        let cid = format!("fp{i}");
        let r = h.run(
            h.request("ADD", &conf, &cid, c.path(), "tap0")
                .fail_at(step),
        );
        let e = r.err(999);
        assert_eq!(e["msg"], format!("injected failure at {step}"), "{e}");
        assert!(!r.stderr.contains("cleanup"), "{step}: {}", r.stderr);
        assert!(only_the_bridge(&c), "{step}: {:?}", links(&c));
        assert!(h.leases().is_empty(), "{step}: {:?}", h.leases());
        h.call("ADD", &conf, &cid, c.path(), "tap0").ok();
        assert_eq!(h.leases().len(), 2);
        h.call("DEL", &conf, &cid, c.path(), "tap0").ok();
        assert!(only_the_bridge(&c), "{step}");
        assert!(h.leases().is_empty());
    }
}
