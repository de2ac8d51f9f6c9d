//! Shared setup of portmap's root tests: a [`Lab`], i.e. a throwaway
//! "host" namespace where our `bridge` (with host-local) attaches
//! containers to a dual-stack bridge (10.240.60.0/24, fd40:60::/64,
//! gateway .1/::1) and portmap runs, plus an "outside" client namespace on
//! its own veth (host 10.250.0.1, outside 10.250.0.2).

#![allow(dead_code)]

mod chain;
#[allow(unused_imports)]
pub use chain::Chain;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use testsupport::traffic::{Answer, tcp_ask, tcp_ask_once, udp_ask, udp_ask_once};
#[allow(unused_imports)]
pub use testsupport::{PluginHost, PluginRun, TempDir, TestNetns, with_prev};

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_portmap"))
}

/// The reference plugins (Debian's `containernetworking-plugins` v1.1.1).
pub const REFERENCE: &str = "/usr/lib/cni";

pub const HOST4: &str = "10.250.0.1";
pub const GW4: &str = "10.240.60.1";
pub const GW6: &str = "fd40:60::1";

pub struct Lab {
    pub host: PluginHost,
    pub outside: TestNetns,
    pub bridge: String,
    /// portmap's records.
    pub records: TempDir,
}

impl Lab {
    pub fn new(tag: &str) -> Lab {
        let host = PluginHost::new(tag, &testsupport::plugin_bin("bridge"), &["host-local"]);
        let outside = host.outside();
        host.ns.exec(&["ip", "link", "set", "lo", "up"]);
        Lab {
            bridge: testsupport::unique_name("cnirspm"),
            host,
            outside,
            records: TempDir::new("pmrec"),
        }
    }

    pub fn bridge_conf(&self) -> Value {
        self.host.conf(
            "bridge",
            "1.0.0",
            &["10.240.60.0/24", "fd40:60::/64"],
            // Hairpin through a bridge needs the port to send frames back where
            // they came from (kubelet does the same).
            json!({"bridge": self.bridge, "isDefaultGateway": true, "hairpinMode": true}),
        )
    }

    /// A container `cid` attached to the bridge; its result.
    pub fn container(&self, cid: &str) -> (TestNetns, Value) {
        let c = TestNetns::new("pmc");
        c.exec(&["ip", "link", "set", "lo", "up"]);
        let r = self.host.add(&self.bridge_conf(), cid, &c);
        (c, r)
    }

    /// A portmap config of network `net` (this lab's when `None`) with
    /// `mappings` and `extra` keys.
    pub fn conf(&self, net: Option<&str>, mappings: Value, extra: Value) -> Value {
        let mut c = json!({
            "cniVersion": "1.0.0",
            "name": net.unwrap_or(&self.host.net),
            "type": "portmap",
            "dataDir": self.records.to_str(),
            "runtimeConfig": {"portMappings": mappings},
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            c[k] = v.clone();
        }
        c
    }

    /// Run portmap `cmd` for `cid` in the host namespace.
    pub fn portmap(&self, cmd: &str, conf: &Value, cid: &str, netns: &str) -> PluginRun {
        self.portmap_bin(bin(), cmd, conf, cid, netns)
    }

    pub fn portmap_bin(
        &self,
        bin: &Path,
        cmd: &str,
        conf: &Value,
        cid: &str,
        netns: &str,
    ) -> PluginRun {
        self.host
            .request(cmd, conf, cid, netns, "eth0")
            .run_in(self.host.ns.name(), bin)
    }

    /// Every firewall rule mentioning `cid` or its iptables chain, in the
    /// host namespace.
    pub fn rules_of(&self, net: Option<&str>, cid: &str) -> Vec<String> {
        let net = net.unwrap_or(&self.host.net);
        let chain = portmap::iptables::dn_chain(net, cid);
        self.host.rules(
            &[format!("comment \"{cid}\"")],
            &[chain, format!("id: \\\"{cid}\\\"")],
        )
    }

    /// How many attachment records portmap keeps.
    pub fn records(&self) -> usize {
        std::fs::read_dir(self.records.path())
            .unwrap()
            .flatten()
            .filter(|d| d.path().is_dir())
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
            .count()
    }

    pub fn route_localnet(&self) -> String {
        let key = format!("net.ipv4.conf.{}.route_localnet", self.bridge);
        self.host.sh(&["sysctl", "-n", &key]).trim().to_string()
    }
}

pub fn reference(name: &str) -> PathBuf {
    Path::new(REFERENCE).join(name)
}

pub fn sock(ip: &str, port: u16) -> SocketAddr {
    SocketAddr::new(ip.parse().unwrap(), port)
}

/// The tag of the server that answered over `proto` from `ns`, asked
/// until one does (within the tests' deadline), if any.
pub fn ask(proto: &str, ns: &TestNetns, to: SocketAddr) -> Option<Answer> {
    match proto {
        "tcp" => tcp_ask(ns, to),
        _ => udp_ask(ns, 0, to),
    }
}

pub fn tag(proto: &str, ns: &TestNetns, to: SocketAddr) -> Option<String> {
    ask(proto, ns, to).map(|a| a.tag)
}

/// Whether one request over `proto` from `ns` goes unanswered: traffic
/// that must not pass (see [`testsupport::traffic::tcp_ask_once`]).
pub fn silent(proto: &str, ns: &TestNetns, to: SocketAddr) -> bool {
    match proto {
        "tcp" => tcp_ask_once(ns, to).is_none(),
        _ => udp_ask_once(ns, 0, to).is_none(),
    }
}

/// tcp and udp mappings of `host_port` to port 80 (optionally on `host_ip`).
pub fn both(host_port: u16, host_ip: Option<&str>) -> Value {
    let m = |p: &str| {
        let mut e = json!({"hostPort": host_port, "containerPort": 80, "protocol": p});
        if let Some(h) = host_ip {
            e["hostIP"] = json!(h);
        }
        e
    };
    json!([m("tcp"), m("udp")])
}
