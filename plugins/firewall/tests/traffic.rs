//! For each backend and `ingressPolicy`, real traffic between containers
//! of two bridge networks, through a host whose forwarding is
//! restrictive (iptables: `FORWARD` policy DROP, as Docker sets it;
//! nftables: our `forward` chain made `policy drop` by the admin before
//! the first ADD): allowed or refused as the policy says. Then DEL, with
//! neither netns nor prevResult, removes every rule of the containers
//! and their traffic is refused again.

mod common;

use std::net::SocketAddr;

use common::*;
use serde_json::json;
use testsupport::traffic::{Server, tcp_ask, tcp_ask_once};

fn restrictive(lab: &Lab, backend: &str) {
    match backend {
        "iptables" => {
            for tool in ["iptables", "ip6tables"] {
                lab.host.ns.exec(&[tool, "-P", "FORWARD", "DROP"]);
            }
        }
        _ => lab.host.ns.nft_f(
            "table inet cni_plugins_firewall {\n chain forward {\n  type filter hook forward priority 0; policy drop;\n }\n}\n",
        ),
    }
}

fn matrix(backend: &str, policy: &str) {
    let lab = Lab::new("fwt");
    restrictive(&lab, backend);
    let (a1, ra1) = lab.container(&lab.a, "a1");
    let (a2, ra2) = lab.container(&lab.a, "a2");
    let (b1, rb1) = lab.container(&lab.b, "b1");
    let b1_ip = ip_of(&rb1, false);
    // Without the firewall plugin, the host drops forwarded traffic.
    assert!(
        ping_unanswered(&a1, &b1_ip),
        "{backend}: forwarding is not restrictive"
    );

    let extra = json!({"backend": backend, "ingressPolicy": policy});
    let attached = [
        ("a1", &lab.a, &ra1, &a1),
        ("a2", &lab.a, &ra2, &a2),
        ("b1", &lab.b, &rb1, &b1),
    ];
    for (cid, net, r, ns) in attached {
        let conf = with_prev(&lab.conf(&net.name, extra.clone()), r);
        let out = lab.firewall("ADD", &conf, cid, ns.path()).ok();
        assert_eq!(&out, r, "ADD passes prevResult through");
        lab.firewall("CHECK", &conf, cid, ns.path()).ok();
    }
    let (cross, same) = match policy {
        "open" => (true, true),
        "same-bridge" => (false, true),
        _ => (false, false),
    };
    let v6 = |r| ip_of(r, true);
    let v4 = |r| ip_of(r, false);
    // IPv6 first: addresses may still be tentative for a moment.
    assert_eq!(
        probe(&a1, &v6(&rb1), cross),
        cross,
        "{backend} {policy}: a1 -> b1 (IPv6)"
    );
    assert_eq!(
        probe(&a2, &v6(&ra1), same),
        same,
        "{backend} {policy}: a2 -> a1 (IPv6)"
    );
    assert_eq!(
        probe(&a1, &b1_ip, cross),
        cross,
        "{backend} {policy}: a1 -> b1"
    );
    assert_eq!(
        probe(&b1, &v4(&ra1), cross),
        cross,
        "{backend} {policy}: b1 -> a1"
    );
    assert_eq!(
        probe(&a1, &v4(&ra2), same),
        same,
        "{backend} {policy}: a1 -> a2"
    );

    // Outward connections and their replies pass; new inbound ones are
    // the admin's to allow (CNI-ADMIN / admin), whatever the policy.
    let _out = Server::start(&lab.outside, 8080, "outside");
    let to_out: SocketAddr = "10.250.0.2:8080".parse().unwrap();
    assert!(
        tcp_ask(&a1, to_out).is_some(),
        "{backend} {policy}: a1 -> outside"
    );
    let _srv = Server::start(&a1, 8080, "a1");
    let to_a1 = SocketAddr::new(ip_of(&ra1, false).parse().unwrap(), 8080);
    assert!(
        tcp_ask_once(&lab.outside, to_a1).is_none(),
        "{backend} {policy}: outside -> a1"
    );

    for (cid, net, r, _) in attached {
        let conf = lab.conf(
            &net.name,
            json!({"backend": backend, "ingressPolicy": policy}),
        );
        lab.firewall("DEL", &conf, cid, "").ok();
        assert_eq!(lab.rules_of(&ip_of(r, false), cid), Vec::<String>::new());
        assert_eq!(lab.rules_of(&ip_of(r, true), cid), Vec::<String>::new());
    }
    assert_eq!(lab.records(), 0);
    assert!(
        tcp_ask_once(&a1, to_out).is_none(),
        "{backend} {policy}: a1 -> outside after DEL"
    );
}

/// Whether `from` reaches `to` by ping: when `expected`, asked until
/// answered (IPv6 duplicate address detection, neighbour resolution, a
/// busy machine); otherwise whether any of a few pings is answered.
fn probe(from: &TestNetns, to: &str, expected: bool) -> bool {
    if expected {
        ping(from, to)
    } else {
        !ping_unanswered(from, to)
    }
}

#[test]
fn iptables_open() {
    matrix("iptables", "open");
}

#[test]
fn iptables_same_bridge() {
    matrix("iptables", "same-bridge");
}

#[test]
fn iptables_isolated() {
    matrix("iptables", "isolated");
}

#[test]
fn nftables_open() {
    matrix("nftables", "open");
}

#[test]
fn nftables_same_bridge() {
    matrix("nftables", "same-bridge");
}

#[test]
fn nftables_isolated() {
    matrix("nftables", "isolated");
}
