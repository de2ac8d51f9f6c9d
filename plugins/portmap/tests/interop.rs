//! A node switching suites with live containers, and the reference's
//! objects as oracles:
//!
//! - iptables: rules made by Debian's Go portmap v1.1.1 are checked and
//!   removed by ours, ours by it; after either ADD, `iptables-save -t
//!   nat` is line for line what the other's ADD gives (shared rules made
//!   by one are recognised by the other, never duplicated).
//! - nftables: our objects list (`nft -j`) exactly as `nft -f` makes them
//!   from the reference's text (`testdata/portmap-v4.nft`, the layout of
//!   v1.9.0+), and a knftables-style deletion by comment (what a Go
//!   v1.6+ DEL does) removes our rules.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::traffic::Server;

fn go(lab: &Lab, cmd: &str, conf: &Value, cid: &str, netns: &str) -> PluginRun {
    lab.portmap_bin(&reference("portmap"), cmd, conf, cid, netns)
}

/// The reference document's mappings (§11.4), dual stack.
fn mappings() -> Value {
    json!([
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 8443, "containerPort": 443, "protocol": "tcp", "hostIP": "127.0.0.1"},
        {"hostPort": 5353, "containerPort": 53, "protocol": "udp"},
        {"hostPort": 9090, "containerPort": 90, "protocol": "tcp", "hostIP": "::"}
    ])
}

/// `iptables-save -t nat` of both families, without comments and
/// counters.
fn nat(lab: &Lab) -> Vec<String> {
    let mut out = Vec::new();
    for save in ["iptables-save", "ip6tables-save"] {
        for l in lab.host.sh(&[save, "-t", "nat"]).lines() {
            if l.starts_with('#') {
                continue;
            }
            out.push(match l.split_once(" [") {
                Some((chain, _)) if l.starts_with(':') => chain.to_string(),
                _ => l.to_string(),
            });
        }
    }
    out
}

#[test]
fn reference_rules_checked_and_removed_by_ours_and_the_reverse() {
    let lab = Lab::new("pi");
    let (a, ra) = lab.container("ca");
    let _s = Server::start(&a, 80, "a");
    let conf = with_prev(&lab.conf(None, mappings(), json!({})), &ra);
    let empty = nat(&lab);
    go(&lab, "ADD", &conf, "ca", a.path()).ok();
    let theirs = nat(&lab);
    assert_eq!(
        tag("tcp", &lab.outside, sock(HOST4, 8080)).as_deref(),
        Some("a")
    );
    // Ours reads the Go plugin's rules as its own.
    lab.portmap("CHECK", &conf, "ca", a.path()).ok();
    lab.portmap("DEL", &lab.conf(None, json!([]), json!({})), "ca", "")
        .ok();
    // Without a record and without mappings nothing was looked at.
    assert_eq!(nat(&lab), theirs);
    lab.portmap("DEL", &conf, "ca", "").ok();
    assert!(
        lab.rules_of(None, "ca").is_empty(),
        "{:#?}",
        lab.rules_of(None, "ca")
    );
    assert!(silent("tcp", &lab.outside, sock(HOST4, 8080)));
    // Our ADD with the Go plugin's shared chains in place: the same table.
    lab.portmap("ADD", &conf, "ca", a.path()).ok();
    assert_eq!(nat(&lab), theirs);
    go(&lab, "DEL", &conf, "ca", a.path()).ok();
    assert!(
        lab.rules_of(None, "ca").is_empty(),
        "{:#?}",
        lab.rules_of(None, "ca")
    );
    assert_ne!(nat(&lab), empty);
}

#[test]
fn our_rules_are_the_references_from_an_empty_table() {
    let lab = Lab::new("po");
    let (a, ra) = lab.container("ca");
    let conf = with_prev(
        &lab.conf(
            None,
            mappings(),
            json!({"conditionsV4": ["!", "-s", "192.0.2.0/24"]}),
        ),
        &ra,
    );
    lab.portmap("ADD", &conf, "ca", a.path()).ok();
    let ours = nat(&lab);
    // The reference's ADD over ours changes nothing (its -C finds every
    // rule), and its CHECK passes.
    go(&lab, "ADD", &conf, "ca", a.path()).ok();
    assert_eq!(nat(&lab), ours);
    lab.portmap("DEL", &conf, "ca", "").ok();
    let shared = nat(&lab);
    go(&lab, "ADD", &conf, "ca", a.path()).ok();
    assert_eq!(nat(&lab), ours);
    go(&lab, "DEL", &conf, "ca", a.path()).ok();
    assert_eq!(nat(&lab), shared);
}

/// Host port 8080 of `lab` reaches container `a`'s port 80 (the first
/// mapping's); then DEL of `conf` leaves no rule of the container.
fn first_mapping_serves_then_del_removes_all(lab: &Lab, a: &TestNetns, conf: &Value) {
    let _s = Server::start(a, 80, "a");
    assert_eq!(
        tag("tcp", &lab.outside, sock(HOST4, 8080)).as_deref(),
        Some("a")
    );
    lab.portmap("DEL", conf, "ca", a.path()).ok();
    assert!(lab.rules_of(None, "ca").is_empty());
}

/// Repeated mappings, as runtimes send them: the reference adds each rule
/// only when `iptables -C` does not find it in the chain yet, so a
/// repeated entry adds nothing to the attachment's chain, and an entry
/// that differs only in its container port (or `hostIP` `0.0.0.0`, or the
/// protocol's case) adds only the rules that differ; the entry rules list
/// every entry's port. `iptables-save` after our ADD is what it is after
/// the reference's; our CHECK passes, the reference's says of ours what
/// it says of its own.
#[test]
fn repeated_mappings_leave_the_references_rules() {
    let lab = Lab::new("pd");
    let (a, ra) = lab.container("ca");
    let maps = json!([
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 8080, "containerPort": 81, "protocol": "tcp"},
        {"hostPort": 8080, "containerPort": 80, "protocol": "TCP"},
        {"hostPort": 5353, "containerPort": 53, "protocol": "udp"},
        {"hostPort": 5353, "containerPort": 53, "protocol": "udp", "hostIP": "0.0.0.0"},
        {"hostPort": 8443, "containerPort": 443, "protocol": "tcp", "hostIP": "127.0.0.1"},
        {"hostPort": 8443, "containerPort": 443, "protocol": "tcp", "hostIP": "127.0.0.1"}
    ]);
    let conf = with_prev(&lab.conf(None, maps, json!({})), &ra);
    go(&lab, "ADD", &conf, "ca", a.path()).ok();
    let theirs = nat(&lab);
    let dn = portmap::iptables::dn_chain(&lab.host.net, "ca");
    let in_chain = theirs
        .iter()
        .filter(|l| l.starts_with(&format!("-A {dn} ")))
        .count();
    // IPv4: 8080 to 80 and to 81 (2 mark rules, 2 DNAT), 5353 and 8443
    // (3 each); IPv6: 8080 (1 mark rule, 2 DNAT), 5353 (2).
    assert_eq!(in_chain, 15, "{theirs:#?}");
    // v1.1.1's CHECK fails on its own IPv6 rules here (it compares them
    // with the IPv4 ones); on ours it says the same.
    let their_check = go(&lab, "CHECK", &conf, "ca", a.path());
    go(&lab, "DEL", &conf, "ca", a.path()).ok();
    lab.portmap("ADD", &conf, "ca", a.path()).ok();
    assert_eq!(nat(&lab), theirs);
    lab.portmap("CHECK", &conf, "ca", a.path()).ok();
    let our_check = go(&lab, "CHECK", &conf, "ca", a.path());
    assert_eq!(
        (our_check.code, our_check.stdout),
        (their_check.code, their_check.stdout)
    );
    first_mapping_serves_then_del_removes_all(&lab, &a, &conf);
}

/// With nftables the reference de-duplicates nothing: knftables adds one
/// rule per entry, and its CHECK counts the container's rules in
/// `hostports` against the entries of the family (`missing hostport
/// rules` when fewer). Ours adds the same rules, so the Go plugin's CHECK
/// passes on our attachment; the repeated rule never matches (the first
/// one does).
#[test]
fn repeated_mappings_with_nftables_count_as_the_references_check_counts() {
    let lab = Lab::new("pe");
    let (a, ra) = lab.container("ca");
    let maps = json!([
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 5353, "containerPort": 53, "protocol": "udp", "hostIP": "0.0.0.0"}
    ]);
    let conf = with_prev(&lab.conf(None, maps, json!({"backend": "nftables"})), &ra);
    lab.portmap("ADD", &conf, "ca", a.path()).ok();
    lab.portmap("CHECK", &conf, "ca", a.path()).ok();
    let count = |family: &str| {
        let v = lab.host.ns.nft_json(family, "cni_hostport");
        v["nftables"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["rule"]["chain"] == "hostports" && i["rule"]["comment"] == "ca")
            .count()
    };
    assert_eq!((count("ip"), count("ip6")), (3, 2));
    first_mapping_serves_then_del_removes_all(&lab, &a, &conf);
}

/// What knftables does for a Go plugin v1.6+ DEL: list each chain with
/// `nft --json`, delete every rule whose comment is the container ID.
fn knftables_delete(lab: &Lab, family: &str, cid: &str) -> usize {
    let mut tx = String::new();
    for chain in ["hostports", "hostip_hostports", "masquerading"] {
        let out = lab.host.ns.exec_output(&[
            "nft",
            "--json",
            "list",
            "chain",
            family,
            "cni_hostport",
            chain,
        ]);
        let Ok(v) = serde_json::from_slice::<Value>(&out.stdout) else {
            continue;
        };
        for item in v["nftables"].as_array().into_iter().flatten() {
            if let Some(rule) = item.get("rule")
                && rule["comment"] == cid
            {
                tx.push_str(&format!(
                    "delete rule {family} cni_hostport {chain} handle {}\n",
                    rule["handle"]
                ));
            }
        }
    }
    let n = tx.lines().count();
    if n > 0 {
        lab.host.ns.nft_f(&tx);
    }
    n
}

#[test]
fn our_nftables_objects_are_the_references_and_go_deletes_them() {
    let lab = Lab::new("pn");
    let (a, ra) = lab.container("c1");
    let ip = ra["ips"][0]["address"]
        .as_str()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let maps = json!([
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 8443, "containerPort": 443, "protocol": "tcp", "hostIP": "127.0.0.1"}
    ]);
    let conf = with_prev(
        &lab.conf(
            None,
            maps,
            json!({"backend": "nftables", "conditionsV4": ["iifname", "!=", "\"lo\""]}),
        ),
        &ra,
    );
    lab.portmap("ADD", &conf, "c1", a.path()).ok();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/portmap-v4.nft"
    ))
    .unwrap()
    .replace("10.44.0.3", &ip);
    let oracle = TestNetns::new("pno");
    oracle.nft_f(&text);
    assert_eq!(
        lab.host.ns.nft_json("ip", "cni_hostport"),
        oracle.nft_json("ip", "cni_hostport")
    );
    assert_eq!(knftables_delete(&lab, "ip", "c1"), 4);
    assert_eq!(knftables_delete(&lab, "ip6", "c1"), 2);
    lab.portmap("CHECK", &conf, "c1", a.path()).err(999);
    lab.portmap("DEL", &conf, "c1", a.path()).ok();
}
