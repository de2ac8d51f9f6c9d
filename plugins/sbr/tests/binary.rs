//! The plugin on a pod with two networks: ADD moves `net1`'s routes into
//! one table per address and adds the rules, keeps `eth0`'s and main's
//! other routes, passes `prevResult` through; CHECK verifies; DEL removes
//! the rules and tables and is idempotent, also without the namespace.
//! `table` adds rules only; `addSourceHints` keeps the subnet routes in
//! main with a source hint.

mod common;

use common::*;
use serde_json::json;

const NET1_V4_TABLE: &[&str] = &[
    "10.240.62.0/24 dev net1 scope link src 10.240.62.2",
    "default via 10.240.62.1 dev net1",
    "default via 10.240.62.1 dev net1 metric 200",
];

const NET1_V6_TABLE: &[&str] = &[
    "default via fe80::62:1 dev net1 metric 200",
    "fd40:62::/64 dev net1 metric 256",
    "fe80::/64 dev net1 metric 256",
];

#[test]
fn add_check_del() {
    let pod = Pod::new("sbra");
    let eth0_before = (pod.table(false, "main"), pod.table(true, "main"));
    let r = pod.run("ADD", 1).ok();
    assert_eq!(r, pod.prev(1), "prevResult passed through");
    assert_eq!(
        pod.rule_tables(),
        [
            ("10.240.62.2".to_string(), "100".to_string()),
            ("fd40:62::2".to_string(), "101".to_string())
        ]
    );
    assert_eq!(pod.table(false, "100"), NET1_V4_TABLE);
    // The IPv6 routes, the default via a link-local router included, go
    // to the IPv6 table only (the reference: into both, and the default
    // route nowhere).
    assert_eq!(pod.table(true, "101"), NET1_V6_TABLE);
    assert!(
        pod.table(true, "100").is_empty(),
        "{:?}",
        pod.table(true, "100")
    );
    assert!(pod.table(false, "101").is_empty());
    // main keeps eth0's routes, and has none via net1 left.
    let main4 = pod.table(false, "main");
    let main6 = pod.table(true, "main");
    assert!(
        main4.iter().chain(&main6).all(|r| !r.contains("net1")),
        "{main4:?} {main6:?}"
    );
    let only_eth0 = |v: &Vec<String>| {
        v.iter()
            .filter(|r| !r.contains("net1"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        (main4, main6),
        (only_eth0(&eth0_before.0), only_eth0(&eth0_before.1))
    );
    pod.run("CHECK", 1).ok();

    pod.run("DEL", 1).ok();
    assert!(pod.rule_tables().is_empty(), "{:?}", pod.rules());
    assert!(pod.table(false, "100").is_empty() && pod.table(true, "101").is_empty());
    let e = pod.run("CHECK", 1).err(999);
    assert_eq!(e["msg"], "no rule from 10.240.62.2 to a table of net1");
    pod.run("DEL", 1).ok();
}

#[test]
fn del_without_the_namespace_or_the_interface_succeeds() {
    let pod = Pod::new("sbrd");
    let conf = pod.conf(1, json!({}));
    pod.call("DEL", 1, &conf).netns("").run(ours()).ok();
    let gone = format!("/run/netns/{}gone", pod.ns.name());
    pod.call("DEL", 1, &conf).netns(&gone).run(ours()).ok();
    // The reference creates a file there.
    assert!(!std::path::Path::new(&gone).exists());
    pod.run("ADD", 1).ok();
    pod.ns.exec(&["ip", "link", "del", "net1"]);
    pod.run("DEL", 1).ok();
}

#[test]
fn a_fixed_table_gets_rules_only() {
    let pod = Pod::new("sbrt");
    let before = pod.all_tables();
    let conf = pod.conf(1, json!({"table": 1000}));
    pod.call("ADD", 1, &conf).run(ours()).ok();
    assert_eq!(
        pod.rule_tables(),
        [
            ("10.240.62.2".to_string(), "1000".to_string()),
            ("fd40:62::2".to_string(), "1000".to_string())
        ]
    );
    assert_eq!(pod.all_tables(), before);
    pod.call("CHECK", 1, &conf).run(ours()).ok();
    pod.call("DEL", 1, &conf).run(ours()).ok();
    assert!(pod.rule_tables().is_empty());
}

#[test]
fn gateways_and_source_hints() {
    let pod = Pod::new("sbrh");
    let conf = pod.conf(
        1,
        json!({"gateways": ["10.240.62.1", "fe80::62:1"], "addSourceHints": true}),
    );
    pod.call("ADD", 1, &conf).run(ours()).ok();
    // The subnet route stays in main, with the address as source hint;
    // the default routes via net1 left it.
    let main4 = pod.table(false, "main");
    assert!(
        main4.contains(&"10.240.62.0/24 dev net1 scope link src 10.240.62.2".to_string()),
        "{main4:?}"
    );
    assert!(
        !main4
            .iter()
            .any(|r| r.starts_with("default") && r.contains("net1")),
        "{main4:?}"
    );
    assert!(
        pod.table(true, "101")
            .contains(&"default via fe80::62:1 dev net1 metric 1024".to_string())
            || pod
                .table(true, "101")
                .contains(&"default via fe80::62:1 dev net1 metric 200".to_string()),
        "{:?}",
        pod.table(true, "101")
    );
    pod.call("CHECK", 1, &conf).run(ours()).ok();
    pod.call("DEL", 1, &conf).run(ours()).ok();
    assert!(pod.rule_tables().is_empty());
}

/// Bad input fails before any change with the reference's message.
#[test]
fn bad_input_gets_the_references_messages() {
    let pod = Pod::new("sbrb");
    let before = pod.state();
    let mut no_prev = pod.conf(1, json!({}));
    no_prev.as_object_mut().unwrap().remove("prevResult");
    let mut no_ips = pod.conf(1, json!({}));
    no_ips["prevResult"]["ips"] = json!([]);
    let gw3 = pod.conf(
        1,
        json!({"gateways": ["10.240.62.1", "10.240.62.3", "fd40::1"]}),
    );
    for conf in [&no_prev, &no_ips] {
        let ours = pod.call("ADD", 1, conf).run(ours()).err(999);
        let theirs = pod.call("ADD", 1, conf).run(go()).err(999);
        assert_eq!(ours["msg"], theirs["msg"]);
    }
    let e = pod.call("ADD", 1, &gw3).run(ours()).err(999);
    assert_eq!(
        e["msg"],
        "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)"
    );
    let missing = pod
        .call("ADD", 1, &pod.conf(1, json!({})))
        .ifname("net9")
        .run(ours())
        .err(999);
    assert_eq!(
        missing["msg"],
        "Cannot find network interface net9: Link not found"
    );
    let theirs = pod
        .call("ADD", 1, &pod.conf(1, json!({})))
        .ifname("net9")
        .run(go())
        .err(999);
    assert_eq!(missing["msg"], theirs["msg"]);
    // The reference's failed ADD leaves its rule behind; we compare ours.
    let _ = pod.run_go("DEL", 1);
    assert_eq!(pod.state().0.len(), before.0.len());
}
