//! containerd's default network (`10-containerd-net.conflist`: bridge with
//! masquerade, then portmap; subnets, names and state directories adapted)
//! through our `cnitool` on our binaries alone: ADD with the port mappings
//! containerd sends (Go-cased keys), a host port reached from outside,
//! CHECK, DEL, nothing left.

mod common;

use common::*;
use serde_json::json;
use testsupport::traffic::Server;
use testsupport::unique_name;

#[test]
fn containerd_default_network_end_to_end() {
    let bridge = unique_name("cnirscd");
    let ctd = Chain::new(
        "pcd",
        "10-containerd-net.conflist",
        &["bridge", "host-local", "portmap"],
        |list| list["plugins"][0]["bridge"] = json!(bridge),
    );
    let caps = json!({"portMappings": [
        {"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""},
        {"HostPort": 8080, "ContainerPort": 80, "Protocol": "udp", "HostIP": ""}
    ]});
    let (c, result) = ctd.container(&caps);
    assert_eq!(result["ips"].as_array().unwrap().len(), 2, "{result}");
    let _s = Server::start(&c, 80, "ctd");
    for proto in ["tcp", "udp"] {
        assert_eq!(
            tag(proto, &ctd.lab.outside, sock(HOST4, 8080)).as_deref(),
            Some("ctd"),
            "{proto}"
        );
    }
    ctd.cnitool("check", &c, &caps);
    assert!(!ctd.rules().is_empty(), "no portmap rules after ADD");
    ctd.cnitool("del", &c, &caps);
    assert!(silent("tcp", &ctd.lab.outside, sock(HOST4, 8080)));
    assert!(ctd.rules().is_empty(), "{:?}", ctd.rules());
    let nat = ctd.lab.host.sh(&["iptables-save", "-t", "nat"])
        + &ctd.lab.host.sh(&["ip6tables-save", "-t", "nat"]);
    for gone in ["CNI-DN-", "dnat name", "id: \\\""] {
        assert!(
            !nat.lines().any(|l| l.starts_with("-A") && l.contains(gone)),
            "{gone}:\n{nat}"
        );
    }
    assert_eq!(ctd.links_but(&[&bridge]), Vec::<String>::new());
    assert!(ctd.leases().is_empty(), "{:?}", ctd.leases());
    ctd.cnitool("del", &c, &caps);
}
