//! A node switching suites with live containers: an attachment made by the
//! reference ptp (Debian's Go v1.1.1) is checked and deleted by ours, and
//! the reverse, with the same host-local lease files.

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

fn assert_gone(h: &PluginHost, c: &TestNetns, cid: &str) {
    assert!(eventually(|| veths(h).is_empty()), "{:?}", veths(h));
    assert!(is_empty(c), "{:?}", links(c));
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
