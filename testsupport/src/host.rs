//! A plugin's "host" for root tests: a throwaway namespace the plugin runs
//! in (through `ip netns exec`), so the links, firewall rules and
//! forwarding sysctls it changes on "the host" never reach the real one; a
//! `CNI_PATH` with the workspace's IPAM plugins; a host-local data
//! directory; a network name. Containers are further [`TestNetns`]s.
//! Helpers for what the tests look at follow.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::wait::retry;
use crate::{Call, PluginRun, TempDir, TestNetns, cni_path_with, lease_files, unique_name};

pub struct PluginHost {
    pub ns: TestNetns,
    pub data: TempDir,
    pub path: TempDir,
    pub net: String,
    bin: PathBuf,
}

impl PluginHost {
    /// A host running `bin`, with the workspace binaries `ipam` on its
    /// `CNI_PATH`.
    pub fn new(tag: &str, bin: &Path, ipam: &[&str]) -> PluginHost {
        PluginHost {
            ns: TestNetns::new(tag),
            data: TempDir::new("hostdata"),
            path: cni_path_with(ipam),
            net: unique_name("net"),
            bin: bin.to_path_buf(),
        }
    }

    /// An `ipam` object: host-local on `subnets` (a range set each), with
    /// this host's data directory.
    pub fn host_local(&self, subnets: &[&str]) -> Value {
        let ranges: Vec<Value> = subnets.iter().map(|s| json!([{ "subnet": s }])).collect();
        json!({"type": "host-local", "dataDir": self.data.to_str(), "ranges": ranges})
    }

    /// A config of `plugin` on this host's network, in `version`, with
    /// host-local on `subnets`; `extra` keys are merged on top (an `ipam`
    /// key replaces the whole object).
    pub fn conf(&self, plugin: &str, version: &str, subnets: &[&str], extra: Value) -> Value {
        let mut c = json!({
            "cniVersion": version,
            "name": self.net,
            "type": plugin,
            "ipam": self.host_local(subnets),
        });
        if let (Some(obj), Some(more)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in more {
                obj.insert(k.clone(), v.clone());
            }
        }
        c
    }

    /// The call [`PluginHost::call`] makes, to add to before
    /// [`PluginHost::run`].
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
        call.run_in(self.ns.name(), &self.bin)
    }

    pub fn call(&self, cmd: &str, conf: &Value, cid: &str, netns: &str, ifname: &str) -> PluginRun {
        self.run(self.request(cmd, conf, cid, netns, ifname))
    }

    /// ADD of `eth0` in `c`; the result.
    pub fn add(&self, conf: &Value, cid: &str, c: &TestNetns) -> Value {
        self.call("ADD", conf, cid, c.path(), "eth0").ok()
    }

    /// DEL of `eth0`, which must succeed.
    pub fn del(&self, conf: &Value, cid: &str, netns: &str) {
        self.call("DEL", conf, cid, netns, "eth0").ok();
    }

    /// Stdout of a command in the host namespace.
    pub fn sh(&self, cmd: &[&str]) -> String {
        self.ns.stdout(cmd)
    }

    /// Lease files of the network (names that are IP addresses).
    pub fn leases(&self) -> Vec<String> {
        lease_files(&self.data.join(&self.net))
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    /// An "outside" namespace reachable from the host namespace over its
    /// own veth (host 10.250.0.1/24, outside 10.250.0.2/24), with no route
    /// back to any container subnet: only masqueraded traffic can get an
    /// answer.
    pub fn outside(&self) -> TestNetns {
        let out = TestNetns::new("out");
        let a = unique_name("cnirso");
        let peer = ["peer", "name", "uplink", "netns", out.name()];
        let mut add = vec!["ip", "link", "add", a.as_str(), "type", "veth"];
        add.extend(peer);
        self.ns.exec(&add);
        self.ns
            .exec(&["ip", "addr", "add", "10.250.0.1/24", "dev", &a]);
        self.ns.exec(&["ip", "link", "set", &a, "up"]);
        out.exec(&["ip", "addr", "add", "10.250.0.2/24", "dev", "uplink"]);
        out.exec(&["ip", "link", "set", "uplink", "up"]);
        out
    }

    /// Firewall rules in the host namespace: lines of `nft list ruleset`
    /// containing one of `nft`, lines of the `nat` table of either iptables
    /// family containing one of `iptables`.
    pub fn rules(&self, nft: &[String], iptables: &[String]) -> Vec<String> {
        let ruleset = self.sh(&["nft", "list", "ruleset"]);
        let mut ipt = String::new();
        for save in ["iptables-save", "ip6tables-save"] {
            let out = self.ns.exec_output(&[save, "-t", "nat"]);
            ipt.push_str(&String::from_utf8_lossy(&out.stdout));
        }
        let pick = |text: &str, markers: &[String]| -> Vec<String> {
            text.lines()
                .filter(|l| markers.iter().any(|m| l.contains(m.as_str())))
                .map(str::to_string)
                .collect()
        };
        let mut out = pick(&ruleset, nft);
        out.extend(pick(&ipt, iptables));
        out
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

/// Whether a ping from `from` to `to` is answered within the tests'
/// [`deadline`](crate::deadline):
/// pings (each waiting a second for its answer) until one is answered, so
/// neighbour resolution, duplicate address detection and a busy machine
/// only make it slower. For traffic that must *not* pass, see
/// [`ping_unanswered`].
pub fn ping(from: &TestNetns, to: &str) -> bool {
    ping_with(from, &[], to)
}

/// [`ping`] with more options (`-I <source address>`).
pub fn ping_with(from: &TestNetns, opts: &[&str], to: &str) -> bool {
    let family = if to.contains(':') { "-6" } else { "-4" };
    let mut cmd = vec!["ping", family, "-c", "1", "-W", "1"];
    cmd.extend_from_slice(opts);
    cmd.push(to);
    // A ping that fails at once (no route yet) is retried after a pause.
    retry(|| from.exec_output(&cmd).status.success())
}

/// Whether three pings from `from` to `to` all go unanswered (each waits
/// a second): traffic that must be dropped. A busy machine makes answers
/// late, never makes them up, so this cannot fail for load; pair it with a
/// [`ping`] that shows the path works otherwise.
pub fn ping_unanswered(from: &TestNetns, to: &str) -> bool {
    let family = if to.contains(':') { "-6" } else { "-4" };
    let cmd = ["ping", family, "-c", "3", "-i", "0.3", "-W", "1", to];
    !from.exec_output(&cmd).status.success()
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
