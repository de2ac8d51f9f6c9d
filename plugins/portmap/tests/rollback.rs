//! A failed ADD leaves nothing behind, whatever step fails, with each
//! backend: the failpoints of a clean dual-stack ADD are listed and
//! compared with the steps expected, then every step fails in turn: the
//! injected error, no rule of the container, no record, `route_localnet`
//! back to 0; then a normal ADD and DEL succeed and leave nothing.
//!
//! A failed repeated ADD puts the earlier ADD's record back.
//!
//! Failpoints exist in debug builds only.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::Failpoints;

const STEPS: &[&str] = &[
    "portmap/recorded",
    "portmap/rules-v4",
    "portmap/route-localnet",
    "portmap/rules-v6",
];

fn fail_each_step(backend: &str) {
    let lab = Lab::new(&format!("pf{}", &backend[..1]));
    let (a, ra) = lab.container("ca");
    let conf = with_prev(
        &lab.conf(None, both(8080, None), json!({"backend": backend})),
        &ra,
    );
    let points = Failpoints::new();
    let clean = lab.host.request("ADD", &conf, "clean", a.path(), "eth0");
    points.record(clean).run_in(lab.host.ns.name(), bin()).ok();
    assert_eq!(
        points.passed("portmap/"),
        STEPS,
        "failpoints of a clean ADD"
    );
    lab.portmap("DEL", &conf, "clean", a.path()).ok();
    lab.host.ns.exec(&[
        "sysctl",
        "-q",
        &format!("net.ipv4.conf.{}.route_localnet=0", lab.bridge),
    ]);
    for step in STEPS {
        let r = lab
            .host
            .request("ADD", &conf, "ca", a.path(), "eth0")
            .fail_at(step)
            .run_in(lab.host.ns.name(), bin());
        let e = r.err(999);
        assert_eq!(e["msg"], format!("injected failure at {step}"), "{e}");
        assert!(
            lab.rules_of(None, "ca").is_empty(),
            "{step}: {:#?}",
            lab.rules_of(None, "ca")
        );
        assert_eq!(lab.records(), 0, "{step}");
        assert_eq!(lab.route_localnet(), "0", "{step}");
        lab.portmap("ADD", &conf, "ca", a.path()).ok();
        assert!(!lab.rules_of(None, "ca").is_empty(), "{step}");
        assert_eq!(lab.route_localnet(), "1", "{step}");
        lab.portmap("DEL", &conf, "ca", a.path()).ok();
        assert!(lab.rules_of(None, "ca").is_empty(), "{step}");
        lab.host.ns.exec(&[
            "sysctl",
            "-q",
            &format!("net.ipv4.conf.{}.route_localnet=0", lab.bridge),
        ]);
    }
}

#[test]
fn failed_add_at_each_step_leaves_nothing_iptables() {
    fail_each_step("iptables");
}

#[test]
fn failed_add_at_each_step_leaves_nothing_nftables() {
    fail_each_step("nftables");
}

/// A repeated ADD that fails keeps the earlier ADD's record (it removed
/// it: DEL without mappings and GC then had nothing to go by), whatever
/// step fails; DEL without mappings then removes every rule.
fn failed_repeat_keeps_the_record(backend: &str) {
    let lab = Lab::new(&format!("pr{}", &backend[..1]));
    let (a, ra) = lab.container("ca");
    let conf = with_prev(
        &lab.conf(None, both(8080, None), json!({"backend": backend})),
        &ra,
    );
    let bare = lab.conf(None, json!([]), json!({"backend": backend}));
    for step in STEPS {
        lab.portmap("ADD", &conf, "ca", a.path()).ok();
        let r = lab
            .host
            .request("ADD", &conf, "ca", a.path(), "eth0")
            .fail_at(step)
            .run_in(lab.host.ns.name(), bin());
        assert_eq!(r.err(999)["msg"], format!("injected failure at {step}"));
        assert_eq!(lab.records(), 1, "{step}");
        lab.portmap("DEL", &bare, "ca", "").ok();
        assert!(
            lab.rules_of(None, "ca").is_empty(),
            "{step}: {:#?}",
            lab.rules_of(None, "ca")
        );
        assert_eq!(lab.records(), 0, "{step}");
    }
}

#[test]
fn failed_repeat_add_keeps_the_record_iptables() {
    failed_repeat_keeps_the_record("iptables");
}

#[test]
fn failed_repeat_add_keeps_the_record_nftables() {
    failed_repeat_keeps_the_record("nftables");
}
