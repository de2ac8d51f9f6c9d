//! A failed ADD leaves nothing behind, whatever step fails. The failpoints
//! (`skel::failpoint`) of a clean ADD are listed and compared with the
//! steps expected (a failpoint removed or added is noticed), then every
//! step fails in turn: a clear error, no veth on the host, nothing but
//! `lo` in the container, no lease, no masquerade rule; then a normal ADD
//! and DEL of the same attachment succeed and leave nothing. Forwarding
//! stays on by design (other attachments may need it).
//!
//! Failpoints exist in debug builds only.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::{Failpoints, PluginHost, TestNetns};

/// Steps of a dual-stack ADD without masquerade.
const DUAL_STACK: &[&str] = &[
    "ptp/ipam-started",
    "ptp/veth-created",
    "ptp/host-veth-ready",
    "ptp/container-up",
    "ptp/ipam-done",
    "ptp/forwarding",
    "ptp/container-v6-sysctls",
    "ptp/container-configured",
    "ptp/host-configured",
    "ptp/masquerade-done",
];

fn dual_stack(h: &PluginHost, extra: Value) -> Value {
    conf(h, "1.0.0", &["10.240.42.0/24", "fd40:42::/64"], extra)
}

/// Nothing of container `cid` in `h` or `c`.
fn assert_gone(h: &PluginHost, c: &TestNetns, cid: &str, step: &str) {
    assert!(veths(h).is_empty(), "{step}: {:?}", veths(h));
    assert!(is_empty(c), "{step}: {:?}", links(c));
    assert!(h.leases().is_empty(), "{step}: {:?}", h.leases());
    let rules = rules_of(h, cid);
    assert!(rules.is_empty(), "{step}: {rules:#?}");
}

fn fail_each_step(conf: impl Fn(&PluginHost) -> Value, steps: &[&str]) {
    let h = host("fp");
    let conf = conf(&h);
    let points = Failpoints::new();
    let c = TestNetns::new("fpd");
    h.run(points.record(h.request("ADD", &conf, "clean", c.path(), "eth0")))
        .ok();
    h.del(&conf, "clean", c.path());
    assert_eq!(points.passed("ptp/"), steps, "failpoints of a clean ADD");
    for (i, step) in steps.iter().enumerate() {
        let c = TestNetns::new("fpc");
        let cid = format!("fp{i}");
        let add = h.request("ADD", &conf, &cid, c.path(), "eth0");
        let r = h.run(add.fail_at(step));
        let e = r.err(999);
        assert_eq!(e["msg"], format!("injected failure at {step}"), "{e}");
        assert!(!r.stderr.contains("cleanup"), "{step}: {}", r.stderr);
        assert_gone(&h, &c, &cid, step);
        let ok = h.add(&conf, &cid, &c);
        assert_eq!(veths(&h).len(), 1, "{step}");
        // The probe sees rules when there are some.
        let masq = conf["ipMasq"] == json!(true);
        assert_eq!(!rules_of(&h, &cid).is_empty(), masq, "{step}");
        assert_eq!(h.leases().len(), ok["ips"].as_array().unwrap().len());
        h.del(&conf, &cid, c.path());
        assert_gone(&h, &c, &cid, step);
    }
}

/// [`DUAL_STACK`] with masquerade: its rules are installed right after
/// forwarding.
fn masquerade_steps() -> Vec<&'static str> {
    let mut steps = DUAL_STACK.to_vec();
    let at = steps.iter().position(|s| *s == "ptp/forwarding").unwrap() + 1;
    steps.insert(at, "ptp/masquerade-started");
    steps
}

#[test]
fn failed_add_at_each_step_leaves_nothing_dual_stack() {
    fail_each_step(|h| dual_stack(h, json!({})), DUAL_STACK);
}

#[test]
fn failed_add_at_each_step_leaves_nothing_masquerade_nftables() {
    let masq = json!({"ipMasq": true, "ipMasqBackend": "nftables"});
    fail_each_step(|h| dual_stack(h, masq.clone()), &masquerade_steps());
}

/// `iptables-restore` runs while the container is configured.
#[test]
fn failed_add_at_each_step_leaves_nothing_masquerade_iptables() {
    let masq = json!({"ipMasq": true, "ipMasqBackend": "iptables"});
    fail_each_step(|h| dual_stack(h, masq.clone()), &masquerade_steps());
}
