//! A failed ADD leaves nothing behind, whatever step fails, with each
//! backend: the failpoints of a clean dual-stack `isolated` ADD are
//! listed and compared with the steps expected, then every step fails in
//! turn, on a host with no firewall objects yet and on one where a
//! neighbour's ADD made the shared chains: the injected error, and the
//! host's iptables and nftables rules exactly as before (shared chains
//! the failed ADD created removed too), no record.
//!
//! Failpoints exist in debug builds only.
#![cfg(debug_assertions)]

mod common;

use common::*;
use serde_json::json;
use testsupport::Failpoints;

fn steps(backend: &str) -> Vec<String> {
    let mut s = vec!["firewall/recorded"];
    match backend {
        "iptables" => s.extend(["firewall/iptables-v4", "firewall/iptables-v6"]),
        _ => s.push("firewall/nftables"),
    }
    let mut s: Vec<String> = s.into_iter().map(String::from).collect();
    // The families run in parallel: their points in any order.
    s.sort();
    s
}

fn fail_each_step(backend: &str) {
    let lab = Lab::new("fwr");
    let conf = lab.conf(
        &lab.a.name,
        json!({"backend": backend, "ingressPolicy": "isolated"}),
    );
    let mine = with_prev(
        &conf,
        &prev(&lab.a.bridge, &["10.240.80.2/24", "fd40:80::2/64"]),
    );
    let neighbour = with_prev(
        &conf,
        &prev(&lab.a.bridge, &["10.240.80.3/24", "fd40:80::3/64"]),
    );

    let points = Failpoints::new();
    let clean = lab.host.request("ADD", &mine, "clean", "/x", "eth0");
    let run = points.record(clean).run_in(lab.host.ns.name(), bin());
    run.ok();
    let mut passed = points.passed("firewall/");
    passed.sort();
    assert_eq!(passed, steps(backend), "failpoints of a clean ADD");
    lab.firewall("DEL", &conf, "clean", "").ok();

    for with_neighbour in [false, true] {
        for step in steps(backend) {
            reset(&lab);
            if with_neighbour {
                lab.firewall("ADD", &neighbour, "n1", "/x").ok();
            }
            let before = (lab.iptables(), lab.nft());
            let r = lab
                .host
                .request("ADD", &mine, "c1", "/x", "eth0")
                .fail_at(&step)
                .run_in(lab.host.ns.name(), bin());
            let e = r.err(999);
            assert_eq!(e["msg"], format!("injected failure at {step}"), "{e}");
            assert_eq!(
                (lab.iptables(), lab.nft()),
                before,
                "{step}, neighbour {with_neighbour}"
            );
            assert_eq!(lab.records(), with_neighbour as usize, "{step}");
            lab.firewall("ADD", &mine, "c1", "/x").ok();
            lab.firewall("CHECK", &mine, "c1", "/x").ok();
            lab.firewall("DEL", &conf, "c1", "").ok();
            lab.firewall("DEL", &conf, "n1", "").ok();
            assert!(lab.rules_of("10.240.80.2", "c1").is_empty(), "{step}");
        }
    }
}

/// No firewall objects on the host but iptables' built-in `FORWARD`.
fn reset(lab: &Lab) {
    for tool in ["iptables", "ip6tables"] {
        lab.host.ns.exec(&[tool, "-F"]);
        lab.host.ns.exec(&[tool, "-X"]);
        // iptables-nft makes built-in chains when first used: make
        // FORWARD now, so its appearing later is not a difference.
        lab.host.ns.exec(&[tool, "-P", "FORWARD", "ACCEPT"]);
    }
    let _ = lab
        .host
        .ns
        .exec_output(&["nft", "delete", "table", "inet", "cni_plugins_firewall"]);
}

#[test]
fn failed_add_at_each_step_leaves_nothing_iptables() {
    fail_each_step("iptables");
}

#[test]
fn failed_add_at_each_step_leaves_nothing_nftables() {
    fail_each_step("nftables");
}

/// A repeated ADD of a live attachment (a runtime retrying) that fails
/// puts the first ADD's record back: the rules that ADD made are still
/// there, and a DEL without `prevResult` must find them.
#[test]
fn a_failed_repeat_add_keeps_the_first_adds_record() {
    let lab = Lab::new("fwr");
    for backend in ["iptables", "nftables"] {
        let conf = lab.conf(&lab.a.name, json!({"backend": backend}));
        let mine = with_prev(&conf, &prev(&lab.a.bridge, &["10.240.87.2/24"]));
        lab.firewall("ADD", &mine, "c1", "/x").ok();
        let step = match backend {
            "iptables" => "firewall/iptables-v4",
            _ => "firewall/nftables",
        };
        let r = lab
            .host
            .request("ADD", &mine, "c1", "/x", "eth0")
            .fail_at(step)
            .run_in(lab.host.ns.name(), bin());
        assert_eq!(r.err(999)["msg"], format!("injected failure at {step}"));
        assert_eq!(lab.records(), 1, "{backend}");
        lab.firewall("DEL", &conf, "c1", "").ok();
        assert!(lab.rules_of("10.240.87.2", "c1").is_empty(), "{backend}");
        assert_eq!(lab.records(), 0);
    }
}
