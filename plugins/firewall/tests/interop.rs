//! Interop with the reference: Debian's Go `firewall` (v1.1.1, iptables
//! backend) and ours on one host. Rules made by the Go plugin pass our
//! CHECK and are removed by our DEL; ours pass the Go CHECK and are
//! removed by the Go DEL; in both directions the result is the
//! reference's own `CNI-FORWARD` state.

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// Debian's Go plugin; scripts/test.sh installs it, and without it these
/// tests fail rather than passing unseen.
fn reference() -> &'static Path {
    let p = Path::new(REFERENCE_FIREWALL);
    assert!(
        p.is_file(),
        "{REFERENCE_FIREWALL} missing (apt-get install containernetworking-plugins)"
    );
    p
}

/// The `CNI-FORWARD` rules of both families.
fn forward_rules(lab: &Lab) -> Vec<String> {
    lab.iptables()
        .lines()
        .filter(|l| l.starts_with("-A CNI-FORWARD") || l.starts_with("-A FORWARD"))
        .map(str::to_string)
        .collect()
}

fn confs(lab: &Lab) -> (Value, Value) {
    let conf = lab.conf(&lab.a.name, json!({"backend": "iptables"}));
    let with = with_prev(
        &conf,
        &prev(&lab.a.bridge, &["10.240.80.2/24", "fd40:80::2/64"]),
    );
    (conf, with)
}

#[test]
fn ours_removes_the_go_plugins_rules() {
    let go = reference();
    let lab = Lab::new("fwi");
    let (_, with) = confs(&lab);
    lab.run(go, "ADD", &with, "c1", "/x").ok();
    let go_made = forward_rules(&lab);
    assert_eq!(go_made.len(), 8, "{go_made:#?}");
    lab.firewall("CHECK", &with, "c1", "/x").ok();
    // Our ADD over the Go plugin's rules adds nothing.
    lab.firewall("ADD", &with, "c1", "/x").ok();
    assert_eq!(forward_rules(&lab), go_made);
    lab.firewall("DEL", &with, "c1", "").ok();
    let left = forward_rules(&lab);
    assert_eq!(left.len(), 4, "only the jumps stay: {left:#?}");
    assert!(
        left.iter()
            .all(|l| !l.contains("10.240.80.2") && !l.contains("fd40:80::2"))
    );
}

#[test]
fn the_go_plugin_removes_ours() {
    let go = reference();
    let lab = Lab::new("fwi");
    let (_, with) = confs(&lab);
    // What the reference makes, to compare ours with.
    lab.run(go, "ADD", &with, "ref", "/x").ok();
    let reference_rules = forward_rules(&lab);
    lab.run(go, "DEL", &with, "ref", "").ok();
    let reference_after_del = forward_rules(&lab);
    for tool in ["iptables", "ip6tables"] {
        lab.host.ns.exec(&[tool, "-F"]);
        lab.host.ns.exec(&[tool, "-X"]);
    }

    lab.firewall("ADD", &with, "c1", "/x").ok();
    assert_eq!(
        forward_rules(&lab),
        reference_rules,
        "same rules, same order"
    );
    lab.run(go, "CHECK", &with, "c1", "/x").ok();
    lab.run(go, "DEL", &with, "c1", "").ok();
    assert_eq!(forward_rules(&lab), reference_after_del);
    // Our DEL afterwards: nothing left to remove, still a success.
    let conf = lab.conf(&lab.a.name, json!({"backend": "iptables"}));
    lab.firewall("DEL", &conf, "c1", "").ok();
    assert_eq!(forward_rules(&lab), reference_after_del);
}

/// Debian's v1.1.1 writes the isolation rules with its older comments:
/// ours recognises them (no second copy, CHECK passes), and both drop
/// traffic between the bridges alike.
#[test]
fn same_bridge_rules_of_the_go_plugin_are_recognised() {
    let go = reference();
    let lab = Lab::new("fwi");
    let conf = lab.conf(
        &lab.a.name,
        json!({"backend": "iptables", "ingressPolicy": "same-bridge"}),
    );
    let with = with_prev(
        &conf,
        &prev(&lab.a.bridge, &["10.240.80.2/24", "fd40:80::2/64"]),
    );
    lab.run(go, "ADD", &with, "c1", "/x").ok();
    let go_made = lab.iptables();
    assert!(
        go_made.contains("(ingressPolicy: same-bridge)\" -j RETURN"),
        "{go_made}"
    );
    lab.firewall("ADD", &with, "c1", "/x").ok();
    lab.firewall("CHECK", &with, "c1", "/x").ok();
    assert_eq!(lab.iptables(), go_made);
}
