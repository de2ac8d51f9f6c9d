//! ADD and DEL killed (SIGKILL) at every point and at spread moments
//! (`testsupport::kill`), with masquerade on each iptables backend and
//! the spoof check: DEL (without prevResult after a killed ADD, as a
//! runtime has none) and GC leave no veth, container interface, lease or
//! firewall rule. The bridge itself stays, as after any DEL.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::TestNetns;

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

fn kill(command: &str, backend: &str) {
    let host = Host::new("kb");
    let c = TestNetns::new("kbc");
    let conf = conf(&host, backend);
    testsupport::kill::main_plugin(&host, command, &conf, CID, &c, &|| leftovers(&host, &c));
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
