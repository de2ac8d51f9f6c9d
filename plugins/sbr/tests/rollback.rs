//! A failed ADD changes nothing, whatever step fails: the failpoints of a
//! clean ADD (rules, default route, routes copied, routes deleted from
//! main; and with `addSourceHints`, the hints) are listed, then each is
//! failed in turn on a fresh pod, and the rules and every table must be
//! as before; a normal ADD, CHECK and DEL then work.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::Failpoints;

fn fail_each_step(keys: Value, expected: &[&str]) {
    let pod = Pod::new("sbrf");
    let points = Failpoints::new();
    points
        .record(pod.call("ADD", 1, &pod.conf(1, keys.clone())))
        .run(ours())
        .ok();
    let mut steps = points.passed("sbr/");
    steps.dedup();
    assert_eq!(steps, expected, "failpoints of a clean ADD");

    for step in expected.iter().filter(|s| **s != "sbr/locked") {
        let pod = Pod::new("sbrf");
        let conf = pod.conf(1, keys.clone());
        let before = pod.state();
        let r = pod.call("ADD", 1, &conf).fail_at(step).run(ours());
        assert_eq!(r.err(999)["msg"], format!("injected failure at {step}"));
        assert!(!r.stderr.contains("cleanup"), "{step}: {}", r.stderr);
        assert_eq!(pod.state(), before, "{step}");
        pod.call("ADD", 1, &conf).run(ours()).ok();
        pod.call("CHECK", 1, &conf).run(ours()).ok();
        pod.call("DEL", 1, &conf).run(ours()).ok();
        assert!(pod.rule_tables().is_empty(), "{step}");
    }
}

#[test]
fn failed_add_at_each_step_changes_nothing() {
    fail_each_step(
        json!({}),
        &[
            "sbr/locked",
            "sbr/rule",
            "sbr/route-copied",
            "sbr/default-route",
            "sbr/rule",
            "sbr/route-copied",
            "sbr/route-deleted",
        ],
    );
}

#[test]
fn failed_add_with_source_hints_or_a_table_changes_nothing() {
    fail_each_step(
        json!({"addSourceHints": true}),
        &[
            "sbr/locked",
            "sbr/rule",
            "sbr/route-copied",
            "sbr/default-route",
            "sbr/rule",
            "sbr/route-copied",
            "sbr/source-hint",
            "sbr/route-deleted",
        ],
    );
    fail_each_step(json!({"table": 1000}), &["sbr/locked", "sbr/rule"]);
}
