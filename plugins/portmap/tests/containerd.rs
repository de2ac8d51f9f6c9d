//! containerd's default network (`10-containerd-net.conflist`: bridge with
//! masquerade, then portmap; subnets, names and state directories adapted)
//! through our `cnitool` on our binaries alone: ADD with the port mappings
//! containerd sends (Go-cased keys), a host port reached from outside,
//! CHECK, DEL, nothing left.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::traffic::Server;
use testsupport::{cni_path_with, plugin_bin, unique_name};

#[test]
fn containerd_default_network_end_to_end() {
    let lab = Lab::new("pcd");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/10-containerd-net.conflist"
    ))
    .unwrap();
    let mut list: Value = serde_json::from_str(&text).unwrap();
    let name = unique_name("cnirsctd");
    let bridge = unique_name("cnirscd");
    let ipam = TempDir::new("pcdipam");
    list["name"] = json!(name);
    list["plugins"][0]["bridge"] = json!(bridge);
    list["plugins"][0]["ipam"]["dataDir"] = json!(ipam.to_str());
    list["plugins"][1]["dataDir"] = json!(lab.records.to_str());
    let conf_dir = TempDir::new("pcdconf");
    std::fs::write(
        conf_dir.join("10-containerd-net.conflist"),
        list.to_string(),
    )
    .unwrap();
    let cache = TempDir::new("pcdcache");
    let path = cni_path_with(&["bridge", "host-local", "portmap"]);
    let c = TestNetns::new("pcdc");
    c.exec(&["ip", "link", "set", "lo", "up"]);
    let caps = json!({"portMappings": [
        {"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""},
        {"HostPort": 8080, "ContainerPort": 80, "Protocol": "udp", "HostIP": ""}
    ]});
    let cnitool = |cmd: &str| {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", lab.host.ns.name()])
            .arg(plugin_bin("cnitool"))
            .args(["--cache-dir", cache.to_str(), cmd, &name, c.path()])
            .env("NETCONFPATH", conf_dir.path())
            .env("CNI_PATH", path.path())
            .env("CAP_ARGS", caps.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "cnitool {cmd}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let result: Value = serde_json::from_str(&cnitool("add")).unwrap();
    assert_eq!(result["ips"].as_array().unwrap().len(), 2, "{result}");
    let _s = Server::start(&c, 80, "ctd");
    for proto in ["tcp", "udp"] {
        assert_eq!(
            tag(proto, &lab.outside, sock(HOST4, 8080)).as_deref(),
            Some("ctd"),
            "{proto}"
        );
    }
    cnitool("check");
    cnitool("del");
    assert_eq!(tag("tcp", &lab.outside, sock(HOST4, 8080)), None);
    let nat = lab.host.sh(&["iptables-save", "-t", "nat"])
        + &lab.host.sh(&["ip6tables-save", "-t", "nat"]);
    for gone in ["CNI-DN-", "dnat name", "id: \\\""] {
        assert!(
            !nat.lines().any(|l| l.starts_with("-A") && l.contains(gone)),
            "{gone}:\n{nat}"
        );
    }
    assert!(!testsupport::has_link(&lab.host.ns, "eth0"));
    cnitool("del");
}
