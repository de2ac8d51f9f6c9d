//! k3s's default network: flannel's `10-flannel.conflist` (flannel, then
//! portmap and bandwidth), with the bridge config flannel delegates to
//! written in place of flannel (bridge + host-local, hairpin, MTU 1450),
//! through our `cnitool` on our binaries alone: two containers, a host port
//! reached from outside, bandwidth's objects from the runtime's limits,
//! CHECK, DEL, nothing left.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::traffic::Server;
use testsupport::{ip_of, ping, unique_name};

/// The kind of each qdisc on `dev` in the host namespace.
fn qdiscs(chain: &Chain, dev: &str) -> Vec<String> {
    let out = chain
        .lab
        .host
        .sh(&["tc", "-j", "qdisc", "show", "dev", dev]);
    let list: Vec<Value> = serde_json::from_str(&out).unwrap_or_default();
    list.iter()
        .filter_map(|q| q["kind"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn k3s_default_network_end_to_end() {
    let bridge = unique_name("cnirsk3");
    let k3s = Chain::new(
        "pk3s",
        "10-flannel.conflist",
        &["bridge", "host-local", "portmap", "bandwidth"],
        |list| list["plugins"][0]["bridge"] = json!(bridge),
    );
    let caps = json!({
        "portMappings": [{"hostPort": 8082, "containerPort": 80, "protocol": "tcp"}],
        "bandwidth": {"ingressRate": 10_000_000, "ingressBurst": 1_000_000,
                      "egressRate": 10_000_000, "egressBurst": 1_000_000}
    });
    let (a, ra) = k3s.container(&caps);
    let (b, rb) = k3s.container(&json!({}));
    // bandwidth appended its IFB to a's result; b asked for no limits.
    let names = |r: &Value| -> Vec<String> {
        r["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .collect()
    };
    let ifb = names(&ra).into_iter().find(|n| n.starts_with("bwp"));
    let ifb = ifb.unwrap_or_else(|| panic!("no IFB in {ra}"));
    assert!(!names(&rb).iter().any(|n| n.starts_with("bwp")), "{rb}");
    let host_veth = names(&ra)[1].clone();
    assert_eq!(qdiscs(&k3s, &host_veth), ["tbf", "ingress"]);
    assert_eq!(qdiscs(&k3s, &ifb), ["tbf"]);
    let mtu = a.stdout(&["cat", "/sys/class/net/eth0/mtu"]);
    assert_eq!(mtu.trim(), "1450");

    assert!(ping(&a, &ip_of(&rb, false)) && ping(&b, &ip_of(&ra, false)));
    let _s = Server::start(&a, 80, "k3s");
    let got = tag("tcp", &k3s.lab.outside, sock(HOST4, 8082));
    assert_eq!(got.as_deref(), Some("k3s"));

    k3s.cnitool("check", &a, &caps);
    k3s.cnitool("check", &b, &json!({}));
    k3s.cnitool("del", &a, &caps);
    k3s.cnitool("del", &b, &json!({}));
    assert!(silent("tcp", &k3s.lab.outside, sock(HOST4, 8082)));
    assert_eq!(k3s.links_but(&[&bridge]), Vec::<String>::new());
    assert!(k3s.leases().is_empty(), "{:?}", k3s.leases());
    assert!(k3s.rules().is_empty(), "{:?}", k3s.rules());
    k3s.cnitool("del", &a, &caps);
}
