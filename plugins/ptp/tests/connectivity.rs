//! Traffic through ptp attachments: container to container and to the host
//! over IPv4 and IPv6, the reference's point-to-point layout read back from
//! the kernel, the MTU of both ends.

mod common;

use common::*;
use serde_json::json;
use testsupport::TestNetns;

#[test]
fn containers_reach_each_other_and_the_host_dual_stack() {
    let h = host("pg");
    let conf = conf(
        &h,
        "1.0.0",
        &["10.240.30.0/24", "fd40:30::/64"],
        json!({"mtu": 1400}),
    );
    // An address of the host that is not a gateway.
    h.ns.exec(&["ip", "addr", "add", "10.240.31.1/32", "dev", "lo"]);
    h.ns.exec(&["ip", "link", "set", "lo", "up"]);
    let (c1, c2) = (TestNetns::new("pg1"), TestNetns::new("pg2"));
    let r1 = h.add(&conf, "c1", &c1);
    let r2 = h.add(&conf, "c2", &c2);
    for v6 in [false, true] {
        assert!(ping(&c1, &ip_of(&r2, v6)), "c1 -> c2 (v6={v6})");
        assert!(ping(&c2, &ip_of(&r1, v6)), "c2 -> c1 (v6={v6})");
    }
    for c in [&c1, &c2] {
        assert!(ping(c, "10.240.30.1"), "gateway");
        assert!(ping(c, "fd40:30::1"), "gateway v6");
        assert!(ping(c, "10.240.31.1"), "host");
    }
    // Forwarding on in the host namespace.
    for key in ["net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"] {
        assert_eq!(h.sh(&["cat", &format!("/proc/sys/{key}")]).trim(), "1");
    }
    // The MTU of both ends.
    let port = r1["interfaces"][0]["name"].as_str().unwrap();
    assert!(ip_lines(&h.ns, &["-o", "link", "show", port])[0].contains(" mtu 1400 "));
    assert!(ip_lines(&c1, &["-o", "link", "show", "eth0"])[0].contains(" mtu 1400 "));

    h.del(&conf, "c1", c1.path());
    h.del(&conf, "c2", c2.path());
    assert!(veths(&h).is_empty(), "{:?}", veths(&h));
    assert!(is_empty(&c1) && is_empty(&c2));
    assert!(h.leases().is_empty(), "{:?}", h.leases());
}

/// The kernel state after ADD is the reference's (§15.3): the container
/// routes everything, even its own subnet, via the gateway on the host end;
/// the host end carries the gateway and a host route to the container.
#[test]
fn point_to_point_layout_is_the_reference() {
    let h = host("pl");
    let conf = conf(&h, "1.0.0", &["10.240.32.0/24", "fd40:32::/64"], json!({}));
    let c = TestNetns::new("plc");
    let r = h.add(&conf, "c1", &c);
    let port = r["interfaces"][0]["name"].as_str().unwrap().to_string();
    assert!(
        port.len() == 12 && port.starts_with("veth"),
        "host end {port}"
    );
    assert_eq!(r["interfaces"][1]["name"], "eth0");
    assert_eq!(r["interfaces"][1]["sandbox"], c.path());
    assert_eq!(r["ips"][0]["interface"], 1);
    assert_eq!(r["ips"][1]["interface"], 1);
    let (a4, a6) = (ip_of(&r, false), ip_of(&r, true));

    let routes4 = ip_lines(&c, &["-4", "route", "show"]);
    assert_eq!(
        routes4,
        vec![
            "default via 10.240.32.1 dev eth0".to_string(),
            format!("10.240.32.0/24 via 10.240.32.1 dev eth0 src {a4}"),
            format!("10.240.32.1 dev eth0 scope link src {a4}"),
        ]
    );
    let routes6 = ip_lines(&c, &["-6", "route", "show"]);
    for want in [
        format!("fd40:32::1 dev eth0 src {a6} metric 1024 pref medium"),
        format!("fd40:32::/64 via fd40:32::1 dev eth0 src {a6} metric 1024 pref medium"),
        "default via fd40:32::1 dev eth0 metric 1024 pref medium".to_string(),
    ] {
        assert!(routes6.contains(&want), "{want} not in {routes6:#?}");
    }
    // Nothing on-link but the gateway: no kernel subnet route.
    assert!(
        routes6.iter().all(|l| !l.starts_with("fd40:32::/64 dev")),
        "{routes6:#?}"
    );
    let addrs = ip_lines(&c, &["-o", "addr", "show", "dev", "eth0"]);
    assert!(addrs.iter().any(|l| l.contains(&format!("inet {a4}/24"))));
    assert!(addrs.iter().any(|l| l.contains(&format!("inet6 {a6}/64"))));

    let host_addrs = ip_lines(&h.ns, &["-o", "addr", "show", "dev", &port]);
    assert!(host_addrs.iter().any(|l| l.contains("inet 10.240.32.1/32")));
    assert!(
        host_addrs
            .iter()
            .any(|l| l.contains("inet6 fd40:32::1/128"))
    );
    let host4 = ip_lines(&h.ns, &["-4", "route", "show", "dev", &port]);
    assert_eq!(host4, vec![format!("{a4} scope host")]);
    let host6 = ip_lines(&h.ns, &["-6", "route", "show", "dev", &port]);
    assert!(
        host6
            .iter()
            .any(|l| l.starts_with(&format!("{a6} metric 1024")))
    );
    // Router advertisements off on the host end.
    let ra = format!("/proc/sys/net/ipv6/conf/{port}/accept_ra");
    assert_eq!(h.sh(&["cat", &ra]).trim(), "0");
    h.del(&conf, "c1", c.path());
}

/// An IPv6-only network: no IPv4 forwarding is needed, and none is set.
#[test]
fn ipv6_only() {
    let h = host("p6");
    // A new namespace copies the machine's IPv4 settings: start from off.
    h.sh(&["sysctl", "-qw", "net.ipv4.ip_forward=0"]);
    let conf = conf(&h, "1.0.0", &["fd40:33::/64"], json!({}));
    let (c1, c2) = (TestNetns::new("p61"), TestNetns::new("p62"));
    let r1 = h.add(&conf, "c1", &c1);
    let r2 = h.add(&conf, "c2", &c2);
    assert!(ping(&c1, &ip_of(&r2, true)));
    assert!(ping(&c2, &ip_of(&r1, true)));
    assert_eq!(h.sh(&["cat", "/proc/sys/net/ipv4/ip_forward"]).trim(), "0");
    h.del(&conf, "c1", c1.path());
    h.del(&conf, "c2", c2.path());
}
