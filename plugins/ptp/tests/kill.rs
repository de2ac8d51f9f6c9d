//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`), dual-stack with masquerade on each iptables
//! backend: DEL (without prevResult after a killed ADD, as a runtime has
//! none) and GC leave no veth, container interface, lease or rule.
#![cfg(debug_assertions)]

mod common;

use std::cell::RefCell;

use common::*;
use serde_json::{Value, json};
use testsupport::kill::{Scenario, kill_everywhere};
use testsupport::{PluginHost, TestNetns, with_prev};

const CID: &str = "kill1";

fn masq(h: &PluginHost, backend: &str) -> Value {
    let keys = json!({"ipMasq": true, "ipMasqBackend": backend});
    conf(h, "1.1.0", &["10.240.43.0/24", "fd40:43::/64"], keys)
}

fn leftovers(h: &PluginHost, c: &TestNetns) -> Vec<String> {
    let mut left: Vec<String> = veths(h)
        .into_iter()
        .map(|v| format!("host veth {v:?}"))
        .collect();
    if !is_empty(c) {
        left.push(format!("container links {:?}", links(c)));
    }
    left.extend(h.leases().into_iter().map(|l| format!("lease {l}")));
    left.extend(rules_of(h, CID).into_iter().map(|r| format!("rule {r}")));
    left
}

fn cleanup(h: &PluginHost, conf: &Value, c: &TestNetns, prev: Option<&Value>) {
    let del = prev.map_or_else(|| conf.clone(), |p| with_prev(conf, p));
    h.call("DEL", &del, CID, c.path(), "eth0").ok();
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([]);
    h.call("GC", &gc, "", "", "").ok();
}

fn kill_add(backend: &str) {
    let h = host("kpa");
    let c = TestNetns::new("kpac");
    let conf = masq(&h, backend);
    let name = format!("ptp ADD, {backend}");
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| h.run(k(h.request("ADD", &conf, CID, c.path(), "eth0"))),
            before: &|| {},
            cleanup: &|| cleanup(&h, &conf, &c, None),
            leftovers: &|| leftovers(&h, &c),
        },
        4,
    );
}

fn kill_del(backend: &str) {
    let h = host("kpd");
    let c = TestNetns::new("kpdc");
    let conf = masq(&h, backend);
    let prev = RefCell::new(Value::Null);
    let name = format!("ptp DEL, {backend}");
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| {
                let del = with_prev(&conf, &prev.borrow());
                h.run(k(h.request("DEL", &del, CID, c.path(), "eth0")))
            },
            before: &|| *prev.borrow_mut() = h.add(&conf, CID, &c),
            cleanup: &|| cleanup(&h, &conf, &c, Some(&prev.borrow())),
            leftovers: &|| leftovers(&h, &c),
        },
        4,
    );
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc_iptables() {
    kill_add("iptables");
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc_nftables() {
    kill_add("nftables");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc_iptables() {
    kill_del("iptables");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc_nftables() {
    kill_del("nftables");
}
