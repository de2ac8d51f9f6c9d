//! Shared setup of the bridge plugin's root tests: every test gets its own
//! "host" namespace (the plugin runs inside it through `ip netns exec`), so
//! the bridge, the firewall rules and the forwarding sysctls it touches
//! never reach the real host. Containers are further namespaces.

#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};
use testsupport::{Call, PluginRun, TempDir, TestNetns, cni_path_with, unique_name};

pub struct Host {
    pub ns: TestNetns,
    pub data: TempDir,
    pub path: TempDir,
    pub bridge: String,
    pub net: String,
}

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_bridge"))
}

impl Host {
    pub fn new(tag: &str) -> Host {
        Host {
            ns: TestNetns::new(tag),
            data: TempDir::new("brdata"),
            path: cni_path_with(&["host-local"]),
            bridge: unique_name("cnirsbr"),
            net: unique_name("net"),
        }
    }

    /// A config on this host's bridge with host-local on `subnets`; `extra`
    /// keys are merged on top (an `ipam` key replaces the whole object).
    pub fn conf(&self, version: &str, subnets: &[&str], extra: Value) -> Value {
        let ranges: Vec<Value> = subnets.iter().map(|s| json!([{ "subnet": s }])).collect();
        let mut c = json!({
            "cniVersion": version,
            "name": self.net,
            "type": "bridge",
            "bridge": self.bridge,
            "ipam": {"type": "host-local", "dataDir": self.data.to_str(), "ranges": ranges},
        });
        if let (Some(obj), Some(more)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in more {
                obj.insert(k.clone(), v.clone());
            }
        }
        c
    }

    pub fn call(&self, cmd: &str, conf: &Value, cid: &str, netns: &str, ifname: &str) -> PluginRun {
        self.run(self.request(cmd, conf, cid, netns, ifname))
    }

    /// The call [`Host::call`] makes, to add to before [`Host::run`].
    pub fn request(&self, cmd: &str, conf: &Value, cid: &str, netns: &str, ifname: &str) -> Call {
        Call::new(cmd)
            .container_id(cid)
            .netns(netns)
            .ifname(ifname)
            .path(self.path.to_str())
            .stdin(conf.to_string())
    }

    /// Run `call` with this host's namespace as the plugin's.
    pub fn run(&self, call: Call) -> PluginRun {
        call.run_in(self.ns.name(), bin())
    }

    pub fn add(&self, conf: &Value, cid: &str, c: &TestNetns) -> Value {
        self.call("ADD", conf, cid, c.path(), "eth0").ok()
    }

    pub fn del(&self, conf: &Value, cid: &str, netns: &str) {
        self.call("DEL", conf, cid, netns, "eth0").ok();
    }

    /// Stdout of a command in the host namespace.
    pub fn sh(&self, cmd: &[&str]) -> String {
        self.ns.stdout(cmd)
    }

    /// Lease files of the network (names that are IP addresses).
    pub fn leases(&self) -> Vec<String> {
        let dir = self.data.join(&self.net);
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        rd.filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
            .collect()
    }
}

/// `conf` with `prevResult` set.
pub fn with_prev(conf: &Value, prev: &Value) -> Value {
    let mut c = conf.clone();
    c["prevResult"] = prev.clone();
    c
}

/// The first address of `result` (1.x / 0.3+ shape) without prefix.
pub fn ip_of(result: &Value, v6: bool) -> String {
    result["ips"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|ip| ip["address"].as_str())
        .find(|a| a.contains(':') == v6)
        .and_then(|a| a.split('/').next())
        .unwrap_or_default()
        .to_string()
}

pub fn ping(from: &TestNetns, to: &str) -> bool {
    let ping = if to.contains(':') { "-6" } else { "-4" };
    from.exec_output(&["ping", ping, "-c", "1", "-W", "1", to])
        .status
        .success()
}

/// Whether `ifname` exists in `ns`.
pub fn has_link(ns: &TestNetns, ifname: &str) -> bool {
    ns.exec_output(&["ip", "link", "show", ifname])
        .status
        .success()
}

/// Every link of `ns` as `(name, peer)`; `peer` is what `ip` prints after
/// `@` (`if7` for a veth whose peer lives in another namespace).
pub fn links(ns: &TestNetns) -> Vec<(String, String)> {
    ns.stdout(&["ip", "-o", "link", "show"])
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| match n.split_once('@') {
            Some((name, peer)) => (name.to_string(), peer.to_string()),
            None => (n.to_string(), String::new()),
        })
        .collect()
}

/// Firewall rules in the host namespace that mention container `cid`:
/// nftables masquerade (`id: <cid>`) and spoof-check (`<cid>-<ifname>`)
/// rules and chains, iptables rules (`id: "<cid>"`) and chains of either
/// family.
pub fn rules_of(host: &Host, cid: &str) -> Vec<String> {
    let nft = host.sh(&["nft", "list", "ruleset"]);
    let mut ipt = String::new();
    for save in ["iptables-save", "ip6tables-save"] {
        ipt.push_str(&String::from_utf8_lossy(
            &host.ns.exec_output(&[save, "-t", "nat"]).stdout,
        ));
    }
    let nft_markers = [format!("id: {cid}\""), format!("-{cid}-")];
    let ipt_markers = [
        format!("id: \\\"{cid}\\\""),
        cni_firewall::ipmasq::iptables_chain(&host.net, cid),
    ];
    let mut out: Vec<String> = nft
        .lines()
        .filter(|l| nft_markers.iter().any(|m| l.contains(m)))
        .map(str::to_string)
        .collect();
    out.extend(
        ipt.lines()
            .filter(|l| ipt_markers.iter().any(|m| l.contains(m)))
            .map(str::to_string),
    );
    out
}

/// Names of the veth ports attached to `bridge` in the host.
pub fn ports(host: &Host) -> Vec<String> {
    let out = host
        .ns
        .exec_output(&["ip", "-o", "link", "show", "master", &host.bridge]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .collect()
}

/// Whether `cond` becomes true within two seconds.
pub fn eventually(cond: impl Fn() -> bool) -> bool {
    for _ in 0..100 {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}
