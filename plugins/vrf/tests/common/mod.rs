//! Shared setup of the vrf root tests: a pod namespace with interfaces
//! `net<i>`, each one end of a veth pair whose other end is in a
//! throwaway "network" namespace of its own, addressed as a main plugin
//! would have (an IPv4 and an IPv6 address, a route via the network's
//! gateway), and the `prevResult` it would have passed on.

#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};
use testsupport::{Call, PluginRun, TestNetns};

pub const GO: &str = "/usr/lib/cni/vrf";

pub fn ours() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_vrf"))
}

pub fn go() -> &'static Path {
    Path::new(GO)
}

/// Whether this kernel makes VRF devices.
pub fn kernel_has_vrf() -> bool {
    let ns = TestNetns::new("vrfk");
    ns.exec_output(&["ip", "link", "add", "k", "type", "vrf", "table", "7"])
        .status
        .success()
}

/// The third byte of `net<i>`'s subnet: `net0` and `net1` share
/// 10.240.70.0/24 (one in each VRF), `net2` and `net3` have 71 (a third
/// interface joins a VRF on a subnet of its own: one VRF's table holds
/// one route per subnet).
pub fn third(i: usize) -> usize {
    70 + i / 2
}

/// The IPv4 address of `net<i>`.
pub fn v4(i: usize) -> String {
    format!("10.240.{}.{}", third(i), 2 + i)
}

/// The IPv6 address of `net<i>`.
pub fn v6(i: usize) -> String {
    format!("fd40:{}::{}", third(i), 2 + i)
}

/// The gateways of `net<i>`.
pub fn gw4(i: usize) -> String {
    format!("10.240.{}.1", third(i))
}

pub fn gw6(i: usize) -> String {
    format!("fd40:{}::1", third(i))
}

pub struct Pod {
    pub ns: TestNetns,
    /// The network namespaces, one per interface.
    pub nets: Vec<TestNetns>,
    pub id: String,
}

impl Pod {
    /// `n` interfaces `net0`.. on subnets that overlap ([`third`]):
    /// 10.240.70.0/24 and fd40:70::/64, `net<i>` with host `2 + i`,
    /// gateway .1, and a route to 10.240.170.0/24 via the gateway (which
    /// holds 10.240.170.1). The hosts differ: an address the pod also has
    /// outside every VRF sits in the `local` table, whose rule comes
    /// before the VRFs', and would take the VRF's IPv6 traffic.
    pub fn new(tag: &str, n: usize) -> Pod {
        let ns = TestNetns::new(tag);
        ns.exec(&["sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0"]);
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        let mut nets = Vec::new();
        for i in 0..n {
            let net = TestNetns::new(&format!("{tag}{i}"));
            let ifname = format!("net{i}");
            let (g4, g6) = (format!("{}/24", gw4(i)), format!("{}/64", gw6(i)));
            net.exec(&[
                "ip", "link", "add", "gw0", "type", "veth", "peer", "name", &ifname,
            ]);
            net.exec(&["ip", "link", "set", &ifname, "netns", ns.name()]);
            for cmd in [
                vec!["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0"],
                vec!["sysctl", "-qw", "net.ipv6.conf.gw0.accept_dad=0"],
                vec!["ip", "addr", "add", &g4, "dev", "gw0"],
                vec!["ip", "addr", "add", &g6, "dev", "gw0"],
                vec!["ip", "addr", "add", "10.240.170.1/32", "dev", "lo"],
                vec!["ip", "link", "set", "lo", "up"],
                vec!["ip", "link", "set", "gw0", "up"],
            ] {
                net.exec(&cmd);
            }
            ns.exec(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{ifname}.accept_dad=0"),
            ]);
            ns.exec(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{ifname}.keep_addr_on_down=1"),
            ]);
            ns.exec(&[
                "ip",
                "addr",
                "add",
                &format!("{}/24", v4(i)),
                "dev",
                &ifname,
            ]);
            ns.exec(&[
                "ip",
                "addr",
                "add",
                &format!("{}/64", v6(i)),
                "dev",
                &ifname,
            ]);
            ns.exec(&["ip", "link", "set", &ifname, "up"]);
            ns.exec(&[
                "ip",
                "route",
                "add",
                "10.240.170.0/24",
                "via",
                &gw4(i),
                "dev",
                &ifname,
                "metric",
                &(100 + i).to_string(),
            ]);
            nets.push(net);
        }
        Pod {
            ns,
            nets,
            id: format!("cid{tag}"),
        }
    }

    pub fn prev(&self, i: usize) -> Value {
        json!({
            "cniVersion": "1.0.0",
            "interfaces": [{"name": format!("net{i}"), "sandbox": self.ns.path()}],
            "ips": [{"address": format!("{}/24", v4(i)), "gateway": gw4(i), "interface": 0},
                    {"address": format!("{}/64", v6(i)), "gateway": gw6(i), "interface": 0}],
            "routes": [{"dst": "10.240.170.0/24", "gw": gw4(i)}],
        })
    }

    /// The config of interface `i` in the VRF `vrf`, `keys` on top.
    pub fn conf(&self, i: usize, vrf: &str, keys: Value) -> Value {
        let mut c = json!({
            "cniVersion": "1.0.0", "name": format!("vrfnet{i}"), "type": "vrf",
            "vrfname": vrf, "prevResult": self.prev(i),
        });
        if let (Some(c), Some(k)) = (c.as_object_mut(), keys.as_object()) {
            c.extend(k.clone());
        }
        c
    }

    pub fn call(&self, cmd: &str, i: usize, conf: &Value) -> Call {
        Call::new(cmd)
            .container_id(&self.id)
            .netns(self.ns.path())
            .ifname(&format!("net{i}"))
            .path("/nonexistent")
            .stdin(conf.to_string())
    }

    pub fn run(&self, cmd: &str, i: usize, vrf: &str) -> PluginRun {
        self.call(cmd, i, &self.conf(i, vrf, json!({}))).run(ours())
    }

    /// `ip -d link` of the pod, one line per link, as `name master kind`.
    pub fn links(&self) -> Vec<String> {
        let v: Value = serde_json::from_str(&self.ns.stdout(&["ip", "-d", "-j", "link"])).unwrap();
        let mut out: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                format!(
                    "{} master={} kind={} table={}",
                    l["ifname"].as_str().unwrap_or(""),
                    l["master"].as_str().unwrap_or("-"),
                    l["linkinfo"]["info_kind"].as_str().unwrap_or("-"),
                    l["linkinfo"]["info_data"]["table"]
                )
            })
            .collect();
        out.sort();
        out
    }

    /// The routes of `table` of both families, sorted.
    pub fn table(&self, table: &str) -> Vec<String> {
        let mut out = Vec::new();
        for f in ["-4", "-6"] {
            let o = self
                .ns
                .exec_output(&["ip", f, "route", "show", "table", table]);
            out.extend(
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(str::to_string),
            );
        }
        out.sort();
        out
    }

    /// The addresses of `ifname`, `ip -br addr` style.
    pub fn addrs(&self, ifname: &str) -> String {
        self.ns.stdout(&["ip", "-br", "addr", "show", ifname])
    }
}
