//! A node switching suites with live containers: an attachment made by the
//! reference ptp (Debian's Go v1.1.1, iptables masquerade) is checked and
//! deleted by ours, and the reverse, with the same host-local lease files
//! and masquerade rules.

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};
use testsupport::{PluginHost, PluginRun, TestNetns};

/// Run the reference ptp in `h`'s namespace.
fn go(h: &PluginHost, cmd: &str, conf: &Value, cid: &str, c: &TestNetns) -> PluginRun {
    let reference = Path::new(REFERENCE).join("ptp");
    h.request(cmd, conf, cid, c.path(), "eth0")
        .run_in(h.ns.name(), &reference)
}

fn dual_stack(h: &PluginHost, extra: Value) -> Value {
    // v1.1.1 knows CNI versions up to 1.0.0.
    conf(h, "1.0.0", &["10.240.43.0/24", "fd40:43::/64"], extra)
}

/// Nothing of `cid` left on the host, nor in `c` unless it is gone.
fn assert_gone(h: &PluginHost, c: &TestNetns, cid: &str) {
    assert!(eventually(|| veths(h).is_empty()), "{:?}", veths(h));
    if !c.name().is_empty() {
        assert!(is_empty(c), "{:?}", links(c));
    }
    assert!(h.leases().is_empty(), "{:?}", h.leases());
    assert!(rules_of(h, cid).is_empty(), "{:#?}", rules_of(h, cid));
}

#[test]
fn reference_attachment_checked_and_deleted_by_ours() {
    let h = host("gr");
    let conf = dual_stack(&h, json!({}));
    let c = TestNetns::new("grc");
    let r = go(&h, "ADD", &conf, "c1", &c).ok();
    // The reference's gateway address on the host end does duplicate
    // address detection first.
    assert!(ping(&c, "10.240.43.1"));
    assert!(eventually(|| ping(&c, "fd40:43::1")));
    h.call("CHECK", &with_prev(&conf, &r), "c1", c.path(), "eth0")
        .ok();
    h.del(&conf, "c1", c.path());
    assert_gone(&h, &c, "c1");
}

#[test]
fn our_attachment_checked_and_deleted_by_the_reference() {
    let h = host("rg");
    let conf = dual_stack(&h, json!({}));
    let c = TestNetns::new("rgc");
    let r = h.add(&conf, "c1", &c);
    go(&h, "CHECK", &with_prev(&conf, &r), "c1", &c).ok();
    go(&h, "DEL", &conf, "c1", &c).ok();
    assert_gone(&h, &c, "c1");
}

/// The reference's masquerade chain goes with our DEL, also once the
/// namespace is gone (the reference itself leaks it then).
#[test]
fn reference_masquerade_removed_by_ours() {
    let h = host("gm");
    let conf = dual_stack(&h, json!({"ipMasq": true}));
    let c = TestNetns::new("gmc");
    go(&h, "ADD", &conf, "c1", &c).ok();
    let chain = cni_firewall::ipmasq::iptables_chain(&h.net, "c1");
    let nat = |save: &str| h.sh(&[save, "-t", "nat"]);
    assert!(nat("iptables-save").contains(&chain) && nat("ip6tables-save").contains(&chain));
    let mut c = c;
    let path = c.path().to_string();
    c.delete();
    h.del(&conf, "c1", &path);
    assert_gone(&h, &c, "c1");

    let c2 = TestNetns::new("gmd");
    go(&h, "ADD", &conf, "c2", &c2).ok();
    h.del(&conf, "c2", c2.path());
    assert_gone(&h, &c2, "c2");
}

#[test]
fn our_iptables_masquerade_removed_by_the_reference() {
    let h = host("mg");
    let conf = dual_stack(&h, json!({"ipMasq": true, "ipMasqBackend": "iptables"}));
    let c = TestNetns::new("mgc");
    let r = h.add(&conf, "c1", &c);
    assert!(!rules_of(&h, "c1").is_empty());
    go(&h, "CHECK", &with_prev(&conf, &r), "c1", &c).ok();
    go(&h, "DEL", &conf, "c1", &c).ok();
    assert_gone(&h, &c, "c1");
}
