//! Shared setup of the firewall plugin's root tests: a [`Lab`], i.e. a
//! throwaway "host" namespace with two bridge networks made by our
//! `bridge` (with host-local): A on 10.240.70.0/24 + fd40:70::/64, B on
//! 10.240.71.0/24 + fd40:71::/64 (gateways .1 / ::1), and an "outside"
//! namespace on its own veth (host 10.250.0.1, outside 10.250.0.2) with
//! routes to both. The firewall runs in the host namespace; records go
//! to a temporary dataDir.

#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};
#[allow(unused_imports)]
pub use testsupport::{
    PluginHost, PluginRun, TempDir, TestNetns, ip_of, ping, ping_unanswered, with_prev,
};

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_firewall"))
}

/// The reference plugins (Debian's `containernetworking-plugins` v1.1.1).
pub const REFERENCE_FIREWALL: &str = "/usr/lib/cni/firewall";

/// A system bus address nothing listens on: with the backend unset the
/// plugin asks the bus whether firewalld runs, and a test must never
/// reach the machine's own firewalld.
pub const NO_BUS: &str = "unix:path=/nonexistent/cnirs-no-bus";

/// One bridge network of the lab.
pub struct Net {
    pub name: String,
    pub bridge: String,
    pub subnets: [&'static str; 2],
}

pub struct Lab {
    pub host: PluginHost,
    pub outside: TestNetns,
    pub a: Net,
    pub b: Net,
    /// The firewall's records.
    pub records: TempDir,
}

impl Lab {
    pub fn new(tag: &str) -> Lab {
        let host = PluginHost::new(tag, &testsupport::plugin_bin("bridge"), &["host-local"]);
        let outside = host.outside();
        host.ns.exec(&["ip", "link", "set", "lo", "up"]);
        for dst in ["10.240.70.0/24", "10.240.71.0/24"] {
            outside.exec(&["ip", "route", "add", dst, "via", "10.250.0.1"]);
        }
        // Bridged traffic through the IP hooks, where the isolation rules
        // see it (what Docker and the reference rely on for `isolated`).
        for key in ["bridge-nf-call-iptables", "bridge-nf-call-ip6tables"] {
            host.ns
                .exec(&["sysctl", "-qw", &format!("net.bridge.{key}=1")]);
        }
        let net = |n: &str, subnets| Net {
            name: format!("{}{n}", host.net),
            bridge: testsupport::unique_name("cnirsfw"),
            subnets,
        };
        Lab {
            a: net("a", ["10.240.70.0/24", "fd40:70::/64"]),
            b: net("b", ["10.240.71.0/24", "fd40:71::/64"]),
            host,
            outside,
            records: TempDir::new("fwrec"),
        }
    }

    pub fn bridge_conf(&self, n: &Net) -> Value {
        self.host.conf(
            "bridge",
            "1.0.0",
            &n.subnets,
            json!({"name": n.name, "bridge": n.bridge, "isDefaultGateway": true}),
        )
    }

    /// A container `cid` attached to `n` by bridge: its namespace and
    /// the bridge's result (the firewall's prevResult).
    pub fn container(&self, n: &Net, cid: &str) -> (TestNetns, Value) {
        let c = TestNetns::new("fwc");
        c.exec(&["ip", "link", "set", "lo", "up"]);
        let r = self.host.add(&self.bridge_conf(n), cid, &c);
        // Duplicate address detection would hold IPv6 back for a second.
        c.exec(&["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0"]);
        (c, r)
    }

    /// A firewall config of network `net` with `extra` keys.
    pub fn conf(&self, net: &str, extra: Value) -> Value {
        let mut c = json!({
            "cniVersion": "1.0.0",
            "name": net,
            "type": "firewall",
            "dataDir": self.records.to_str(),
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            c[k] = v.clone();
        }
        c
    }

    /// Run the firewall `cmd` for `cid` in the host namespace.
    pub fn firewall(&self, cmd: &str, conf: &Value, cid: &str, netns: &str) -> PluginRun {
        self.run(bin(), cmd, conf, cid, netns)
    }

    pub fn run(&self, bin: &Path, cmd: &str, conf: &Value, cid: &str, netns: &str) -> PluginRun {
        self.host
            .request(cmd, conf, cid, netns, "eth0")
            .env("DBUS_SYSTEM_BUS_ADDRESS", NO_BUS)
            .run_in(self.host.ns.name(), bin)
    }

    /// The `filter` table of both iptables families, as saved (without
    /// the comment lines that carry a time).
    pub fn iptables(&self) -> String {
        let mut out = String::new();
        for save in ["iptables-save", "ip6tables-save"] {
            let o = self.host.ns.exec_output(&[save, "-t", "filter"]);
            for l in String::from_utf8_lossy(&o.stdout).lines() {
                if !l.starts_with('#') {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        out
    }

    /// The whole nftables ruleset of the host namespace.
    pub fn nft(&self) -> String {
        self.host.sh(&["nft", "list", "ruleset"])
    }

    /// The rules that name `ip` (iptables) or `cid` (nftables comments).
    pub fn rules_of(&self, ip: &str, cid: &str) -> Vec<String> {
        let needle = format!(" {ip}/");
        let mut out: Vec<String> = self
            .iptables()
            .lines()
            .filter(|l| l.contains(&needle))
            .map(str::to_string)
            .collect();
        let comment = format!(" id: {cid}\"");
        out.extend(
            self.nft()
                .lines()
                .filter(|l| l.contains(&comment))
                .map(str::to_string),
        );
        out
    }

    /// How many attachment records the firewall keeps.
    pub fn records(&self) -> usize {
        std::fs::read_dir(self.records.path())
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().is_dir())
                    .flat_map(|e| std::fs::read_dir(e.path()).unwrap().flatten())
                    .count()
            })
            .unwrap_or(0)
    }
}

/// A bridge-shaped prevResult (bridge first, as the bridge plugin
/// reports it) with `ips` on the container's interface; for the tests
/// that need no traffic.
pub fn prev(bridge: &str, ips: &[&str]) -> Value {
    let ips: Vec<Value> = ips
        .iter()
        .map(|a| json!({"address": a, "interface": 2}))
        .collect();
    json!({"cniVersion": "1.0.0",
        "interfaces": [{"name": bridge}, {"name": "veth0"}, {"name": "eth0", "sandbox": "/x"}],
        "ips": ips})
}

/// portmap's runner of a runtime's default network list through our
/// `cnitool` (one copy of it, shared by these tests).
#[path = "../../../portmap/tests/common/chain.rs"]
pub mod chain;

pub mod runtime;
