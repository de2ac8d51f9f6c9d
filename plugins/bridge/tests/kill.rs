//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`), with masquerade on each iptables backend and
//! the spoof check: DEL (without prevResult after a killed ADD, as a
//! runtime has none) and GC leave no veth, container interface, lease or
//! firewall rule. The bridge itself stays, as after any DEL.
#![cfg(debug_assertions)]

mod common;

use std::cell::RefCell;

use common::*;
use serde_json::{Value, json};
use testsupport::TestNetns;
use testsupport::kill::{Scenario, kill_everywhere};

const CID: &str = "kill1";

fn conf(host: &Host, backend: &str) -> Value {
    let keys = json!({"isGateway": true, "ipMasq": true, "ipMasqBackend": backend,
                      "macspoofchk": true});
    host.conf("1.1.0", &["10.240.21.0/24", "fd40:21::/64"], keys)
}

fn leftovers(host: &Host, c: &TestNetns) -> Vec<String> {
    let mut left: Vec<String> = links(c)
        .into_iter()
        .filter(|(n, _)| n != "lo")
        .map(|(n, _)| format!("container link {n}"))
        .collect();
    let ports = links(&host.ns)
        .into_iter()
        .filter(|(_, p)| p.starts_with("if"));
    left.extend(ports.map(|(n, _)| format!("host veth {n}")));
    left.extend(host.leases().into_iter().map(|l| format!("lease {l}")));
    left.extend(rules_of(host, CID).into_iter().map(|r| format!("rule {r}")));
    left
}

/// DEL of the attachment (with `prev` when a runtime would have it), then
/// GC with no valid attachment; both must succeed.
fn cleanup(host: &Host, conf: &Value, c: &TestNetns, prev: Option<&Value>) {
    let del = prev.map_or_else(|| conf.clone(), |p| with_prev(conf, p));
    host.call("DEL", &del, CID, c.path(), "eth0").ok();
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([]);
    host.call("GC", &gc, "", "", "").ok();
}

fn kill_add(backend: &str) {
    let host = Host::new("kba");
    let c = TestNetns::new("kbac");
    let conf = conf(&host, backend);
    let name = format!("bridge ADD, {backend}");
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| host.run(k(host.request("ADD", &conf, CID, c.path(), "eth0"))),
            before: &|| {},
            cleanup: &|| cleanup(&host, &conf, &c, None),
            leftovers: &|| leftovers(&host, &c),
        },
        4,
    );
}

fn kill_del(backend: &str) {
    let host = Host::new("kbd");
    let c = TestNetns::new("kbdc");
    let conf = conf(&host, backend);
    let prev = RefCell::new(Value::Null);
    let name = format!("bridge DEL, {backend}");
    kill_everywhere(
        &Scenario {
            name: &name,
            run: &|k| {
                let del = with_prev(&conf, &prev.borrow());
                host.run(k(host.request("DEL", &del, CID, c.path(), "eth0")))
            },
            before: &|| *prev.borrow_mut() = host.add(&conf, CID, &c),
            cleanup: &|| cleanup(&host, &conf, &c, Some(&prev.borrow())),
            leftovers: &|| leftovers(&host, &c),
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

/// The state an ADD killed between its rules and its IPv6 address leaves
/// (made by hand here: the addresses now go to the kernel in one datagram,
/// which no kill splits): DEL without prevResult still removes the rules
/// of the IPv6 address it cannot see, and spares those of the container's
/// other attachment to the network (same chain), which goes with the last.
#[test]
fn del_without_prev_result_removes_the_rules_of_addresses_it_cannot_see() {
    let host = Host::new("kbv");
    let c = TestNetns::new("kbvc");
    let conf = conf(&host, "iptables");
    let r0 = host.add(&conf, CID, &c);
    let r1 = host.call("ADD", &conf, CID, c.path(), "eth1").ok();
    let (v6, other) = (ip_of(&r0, true), ip_of(&r1, true));
    c.exec(&[
        "ip", "-6", "addr", "flush", "dev", "eth0", "scope", "global",
    ]);
    let jumps = |ip: &str| {
        rules_of(&host, CID)
            .into_iter()
            .filter(|r| r.contains(&format!("-s {ip}/128")))
            .count()
    };
    assert_eq!((jumps(&v6), jumps(&other)), (1, 1));
    host.call("DEL", &conf, CID, c.path(), "eth0").ok();
    assert_eq!(
        (jumps(&v6), jumps(&other)),
        (0, 1),
        "{:#?}",
        rules_of(&host, CID)
    );
    assert!(!rules_of(&host, CID).is_empty());
    host.call("DEL", &conf, CID, c.path(), "eth1").ok();
    assert_eq!(rules_of(&host, CID), Vec::<String>::new());
    assert!(host.leases().is_empty(), "{:?}", host.leases());
}
