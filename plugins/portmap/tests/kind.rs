//! kind's default network (`10-kindnet.conflist`, which kindnetd writes on
//! every node: ptp with host-local, dual-stack, then portmap; subnets and
//! state directories adapted) through our `cnitool` on our binaries alone:
//! two containers that reach each other and the host, a host port reached
//! from outside and from the other container, CHECK, DEL, nothing left.

mod common;

use common::*;
use serde_json::{Value, json};
use testsupport::traffic::Server;
use testsupport::{cni_path_with, ip_of, links, ping, plugin_bin, unique_name};

struct Kind {
    lab: Lab,
    name: String,
    conf_dir: TempDir,
    cache: TempDir,
    path: TempDir,
    ipam: TempDir,
}

impl Kind {
    fn new() -> Kind {
        let lab = Lab::new("pkind");
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/10-kindnet.conflist"
        ))
        .unwrap();
        let mut list: Value = serde_json::from_str(&text).unwrap();
        let name = unique_name("cnirskind");
        let ipam = TempDir::new("pkindipam");
        list["name"] = json!(name);
        list["plugins"][0]["ipam"]["dataDir"] = json!(ipam.to_str());
        list["plugins"][1]["dataDir"] = json!(lab.records.to_str());
        let conf_dir = TempDir::new("pkindconf");
        std::fs::write(conf_dir.join("10-kindnet.conflist"), list.to_string()).unwrap();
        Kind {
            lab,
            name,
            conf_dir,
            cache: TempDir::new("pkindcache"),
            path: cni_path_with(&["ptp", "host-local", "portmap"]),
            ipam,
        }
    }

    /// `cnitool cmd` for the container in `c`, with the port mappings
    /// kubelet sends through containerd; stdout.
    fn cnitool(&self, cmd: &str, c: &TestNetns, mappings: &Value) -> String {
        let (ok, stdout) = self.try_cnitool(cmd, c, mappings);
        assert!(ok, "cnitool {cmd}: {stdout}");
        stdout
    }

    /// Whether `cnitool cmd` succeeded; stdout and stderr.
    fn try_cnitool(&self, cmd: &str, c: &TestNetns, mappings: &Value) -> (bool, String) {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", self.lab.host.ns.name()])
            .arg(plugin_bin("cnitool"))
            .args([
                "--cache-dir",
                self.cache.to_str(),
                cmd,
                &self.name,
                c.path(),
            ])
            .env("NETCONFPATH", self.conf_dir.path())
            .env("CNI_PATH", self.path.path())
            .env("CAP_ARGS", json!({ "portMappings": mappings }).to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return (false, stdout + &String::from_utf8_lossy(&out.stderr));
        }
        (true, stdout)
    }

    fn container(&self, mappings: &Value) -> (TestNetns, Value) {
        let c = TestNetns::new("pkc");
        c.exec(&["ip", "link", "set", "lo", "up"]);
        let result: Value = serde_json::from_str(&self.cnitool("add", &c, mappings)).unwrap();
        (c, result)
    }

    /// The network's portmap rules in the host namespace, either backend.
    fn rules(&self) -> Vec<String> {
        let net = format!("name: \\\"{}\\\"", self.name);
        let mut rules = self
            .lab
            .host
            .rules(std::slice::from_ref(&self.name), &[net]);
        rules.retain(|r| r.starts_with("-A") || !r.starts_with('-'));
        rules
    }

    /// Host links that are not the lab's own (loopback, the outside veth).
    fn container_links(&self) -> Vec<String> {
        links(&self.lab.host.ns)
            .into_iter()
            .map(|(name, _)| name)
            .filter(|n| n != "lo" && !n.starts_with("cnirso"))
            .collect()
    }
}

#[test]
fn kind_default_network_end_to_end() {
    let kind = Kind::new();
    let web = json!([
        {"hostPort": 8081, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 8081, "containerPort": 80, "protocol": "udp"}
    ]);
    let (a, ra) = kind.container(&web);
    let (b, rb) = kind.container(&json!([]));
    // cniVersion 0.3.1 results, one address per family each.
    assert_eq!(ra["cniVersion"], "0.3.1", "{ra}");
    assert_eq!(ra["ips"].as_array().unwrap().len(), 2, "{ra}");
    assert_eq!(
        kind.container_links().len(),
        2,
        "{:?}",
        kind.container_links()
    );

    // Routed through the host: each container reaches the other and its
    // gateway, over both families.
    for v6 in [false, true] {
        assert!(ping(&a, &ip_of(&rb, v6)), "a -> b (v6: {v6})");
        assert!(ping(&b, &ip_of(&ra, v6)), "b -> a (v6: {v6})");
    }
    // The host port, from outside through the host's address and from the
    // other container.
    let _s = Server::start(&a, 80, "kind");
    for proto in ["tcp", "udp"] {
        let outside = tag(proto, &kind.lab.outside, sock(HOST4, 8081));
        assert_eq!(outside.as_deref(), Some("kind"), "{proto} from outside");
        let other = tag(proto, &b, sock(HOST4, 8081));
        assert_eq!(other.as_deref(), Some("kind"), "{proto} from b");
    }

    // kind's 0.3.1 network predates CHECK: libcni refuses it, and so do we.
    let (ok, out) = kind.try_cnitool("check", &a, &web);
    assert!(
        !ok && out.contains("does not support the CHECK command"),
        "{out}"
    );
    assert!(!kind.rules().is_empty(), "no portmap rules after ADD");
    kind.cnitool("del", &a, &web);
    kind.cnitool("del", &b, &json!([]));
    assert_eq!(tag("tcp", &kind.lab.outside, sock(HOST4, 8081)), None);

    // Nothing left: links, host routes, leases, rules, records.
    assert!(
        kind.container_links().is_empty(),
        "{:?}",
        kind.container_links()
    );
    let routes =
        kind.lab.host.sh(&["ip", "-4", "route"]) + &kind.lab.host.sh(&["ip", "-6", "route"]);
    assert!(
        !routes.contains("10.240.62.") && !routes.contains("fd40:62:"),
        "{routes}"
    );
    let leases = testsupport::lease_files(&kind.ipam.join(&kind.name));
    assert!(leases.is_empty(), "{leases:?}");
    let rules = kind.lab.host.rules(
        &["comment \"".to_string()],
        &["CNI-DN-".to_string(), "CNI-HOSTPORT-SETMARK".to_string()],
    );
    assert!(
        rules.iter().all(|r| !r.starts_with("-A CNI-DN")),
        "{rules:?}"
    );
    assert!(
        !rules.iter().any(|r| r.contains(&kind.name)),
        "rules of {}: {rules:?}",
        kind.name
    );
    assert_eq!(kind.lab.records(), 0);
    // A second DEL of a gone container succeeds.
    kind.cnitool("del", &a, &web);
}
