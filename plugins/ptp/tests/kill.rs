//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`), dual-stack with masquerade on each iptables
//! backend: DEL (without prevResult after a killed ADD, as a runtime has
//! none) and GC leave no veth, container interface, lease or rule.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::{PluginHost, TestNetns};

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

fn kill(command: &str, backend: &str) {
    let h = host("kp");
    let c = TestNetns::new("kpc");
    let conf = masq(&h, backend);
    testsupport::kill::main_plugin(&h, command, &conf, CID, &c, &|| leftovers(&h, &c));
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc_iptables() {
    kill("ADD", "iptables");
}

#[test]
fn add_killed_anywhere_leaves_nothing_after_del_and_gc_nftables() {
    kill("ADD", "nftables");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc_iptables() {
    kill("DEL", "iptables");
}

#[test]
fn del_killed_anywhere_leaves_nothing_after_del_and_gc_nftables() {
    kill("DEL", "nftables");
}
