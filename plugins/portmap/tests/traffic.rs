//! Real traffic through host ports, with each backend: TCP and UDP reach
//! the container from outside, from the host (its own address and
//! 127.0.0.1), from the container itself (hairpin) and from a second
//! container; `hostIP` limits a mapping to that address; IPv6 works; DEL
//! ends it all; a restarted container's UDP host port is not blackholed.

mod common;

use common::*;
use serde_json::json;
use testsupport::traffic::{Server, udp_ask};

fn reaches_from_everywhere(backend: &str) {
    let lab = Lab::new(&format!("pm{}", &backend[..1]));
    let (a, ra) = lab.container("ca");
    let (b, _) = lab.container("cb");
    let _server = Server::start(&a, 80, "a");
    let conf = lab.conf(None, both(8080, None), json!({"backend": backend}));
    lab.portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    assert_eq!(lab.route_localnet(), "1");
    let host = &lab.host.ns;
    for proto in ["tcp", "udp"] {
        let from_outside = ask(proto, &lab.outside, sock(HOST4, 8080));
        let a_ip = ra["ips"][0]["address"]
            .as_str()
            .unwrap()
            .split('/')
            .next()
            .unwrap();
        let outside = from_outside.unwrap_or_else(|| panic!("{proto} from outside"));
        assert_eq!(outside.tag, "a");
        // Not masqueraded: the container sees the client.
        assert_eq!(outside.peer.to_string(), "10.250.0.2", "{a_ip}");
        assert_eq!(
            tag(proto, host, sock(HOST4, 8080)).as_deref(),
            Some("a"),
            "{proto} host"
        );
        assert_eq!(
            tag(proto, host, sock(GW4, 8080)).as_deref(),
            Some("a"),
            "{proto} gw"
        );
        assert_eq!(
            tag(proto, host, sock("127.0.0.1", 8080)).as_deref(),
            Some("a"),
            "{proto} lo"
        );
        let hairpin =
            ask(proto, &a, sock(HOST4, 8080)).unwrap_or_else(|| panic!("{proto} hairpin"));
        assert_eq!(hairpin.tag, "a");
        assert_eq!(
            tag(proto, &b, sock(HOST4, 8080)).as_deref(),
            Some("a"),
            "{proto} from b"
        );
        assert_eq!(
            tag(proto, host, sock(GW6, 8080)).as_deref(),
            Some("a"),
            "{proto} v6 host"
        );
        assert_eq!(
            tag(proto, &b, sock(GW6, 8080)).as_deref(),
            Some("a"),
            "{proto} v6 from b"
        );
        assert_eq!(
            tag(proto, &a, sock(GW6, 8080)).as_deref(),
            Some("a"),
            "{proto} v6 hairpin"
        );
    }
    lab.portmap("CHECK", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    lab.portmap("DEL", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    assert!(
        lab.rules_of(None, "ca").is_empty(),
        "{:#?}",
        lab.rules_of(None, "ca")
    );
    assert!(silent("tcp", &lab.outside, sock(HOST4, 8080)));
    assert!(silent("tcp", host, sock("127.0.0.1", 8080)));
    lab.portmap("DEL", &conf, "ca", a.path()).ok();
    let e = lab
        .portmap("CHECK", &with_prev(&conf, &ra), "ca", a.path())
        .err(999);
    assert!(
        e["msg"].as_str().unwrap().contains("not found")
            || e["msg"].as_str().unwrap().contains("missing"),
        "{e}"
    );
}

#[test]
fn reaches_from_everywhere_iptables() {
    reaches_from_everywhere("iptables");
}

#[test]
fn reaches_from_everywhere_nftables() {
    reaches_from_everywhere("nftables");
}

fn host_ip_limits(backend: &str) {
    let lab = Lab::new(&format!("ph{}", &backend[..1]));
    let (a, ra) = lab.container("ca");
    let _server = Server::start(&a, 80, "a");
    let mut maps = both(8080, Some(HOST4));
    maps.as_array_mut()
        .unwrap()
        .extend(both(8081, Some(GW6)).as_array().unwrap().clone());
    let conf = lab.conf(None, maps, json!({"backend": backend}));
    lab.portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    let host = &lab.host.ns;
    for proto in ["tcp", "udp"] {
        assert_eq!(
            tag(proto, &lab.outside, sock(HOST4, 8080)).as_deref(),
            Some("a")
        );
        assert!(
            silent(proto, host, sock(GW4, 8080)),
            "{proto} on another address"
        );
        assert_eq!(
            tag(proto, host, sock(GW6, 8081)).as_deref(),
            Some("a"),
            "{proto} v6"
        );
        assert!(
            silent(proto, host, sock(HOST4, 8081)),
            "{proto} v4 of a v6 mapping"
        );
    }
    lab.portmap("CHECK", &with_prev(&conf, &ra), "ca", a.path())
        .ok();
    lab.portmap("DEL", &conf, "ca", "").ok();
    assert!(lab.rules_of(None, "ca").is_empty());
}

#[test]
fn host_ip_limits_iptables() {
    host_ip_limits("iptables");
}

#[test]
fn host_ip_limits_nftables() {
    host_ip_limits("nftables");
}

/// #1190: after DEL, a client that keeps its UDP source port reaches a
/// server on the host itself, then the next container on that port.
fn udp_port_moves(backend: &str) {
    let lab = Lab::new(&format!("pu{}", &backend[..1]));
    let maps = json!([{"hostPort": 9000, "containerPort": 80, "protocol": "udp"}]);
    let conf = lab.conf(None, maps, json!({"backend": backend}));
    let to = sock(HOST4, 9000);
    let (a, ra) = lab.container("ca");
    {
        let _sa = Server::start(&a, 80, "a");
        lab.portmap("ADD", &with_prev(&conf, &ra), "ca", a.path())
            .ok();
        assert_eq!(
            udp_ask(&lab.outside, 40123, to).map(|x| x.tag).as_deref(),
            Some("a")
        );
        lab.portmap("DEL", &with_prev(&conf, &ra), "ca", a.path())
            .ok();
    }
    {
        let _on_host = Server::start(&lab.host.ns, 9000, "host");
        assert_eq!(
            udp_ask(&lab.outside, 40123, to).map(|x| x.tag).as_deref(),
            Some("host")
        );
    }
    let (b, rb) = lab.container("cb");
    let _sb = Server::start(&b, 80, "b");
    lab.portmap("ADD", &with_prev(&conf, &rb), "cb", b.path())
        .ok();
    assert_eq!(
        udp_ask(&lab.outside, 40123, to).map(|x| x.tag).as_deref(),
        Some("b")
    );
    lab.portmap("DEL", &with_prev(&conf, &rb), "cb", b.path())
        .ok();
}

#[test]
fn udp_port_moves_iptables() {
    udp_port_moves("iptables");
}

#[test]
fn udp_port_moves_nftables() {
    udp_port_moves("nftables");
}
