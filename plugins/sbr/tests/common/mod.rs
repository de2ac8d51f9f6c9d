//! Shared setup of the sbr root tests: a pod namespace with two
//! interfaces, `eth0` and `net1`, each one end of a veth pair whose other
//! end is in a throwaway "network" namespace of its own (`h1`, `h2`), with
//! the addresses and routes a main plugin would have configured, and the
//! `prevResult` it would have passed on. Each network also holds a "far"
//! address (on its `lo`) reached only through it: a request from there
//! can only be answered by a reply that leaves the pod by the interface
//! the request came in on.

#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};
use testsupport::{Call, PluginRun, TestNetns};

pub const GO: &str = "/usr/lib/cni/sbr";

pub fn ours() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_sbr"))
}

pub fn go() -> &'static Path {
    Path::new(GO)
}

/// One network of the pod: its interface there and the addresses.
pub struct Net {
    pub ifname: &'static str,
    pub ns: TestNetns,
    /// The pod's addresses and the network's gateway, per family.
    pub v4: (&'static str, &'static str),
    pub v6: (&'static str, &'static str),
    /// Addresses beyond the gateway (on the network namespace's `lo`).
    pub far4: &'static str,
    pub far6: &'static str,
}

pub struct Pod {
    pub ns: TestNetns,
    pub nets: [Net; 2],
    pub id: String,
}

impl Pod {
    /// `eth0` on 10.240.61.0/24 + fd40:61::/64 with the pod's default
    /// routes, `net1` on 10.240.62.0/24 + fd40:62::/64. The IPv6 router
    /// of `net1` is link-local (`fe80::62:1`), as with router
    /// advertisements: its IP has no gateway, main has a default route
    /// via it with a higher metric.
    pub fn new(tag: &str) -> Pod {
        let ns = TestNetns::new(tag);
        let nets = [
            Net {
                ifname: "eth0",
                ns: TestNetns::new(&format!("{tag}a")),
                v4: ("10.240.61.2", "10.240.61.1"),
                v6: ("fd40:61::2", "fd40:61::1"),
                far4: "10.240.161.1",
                far6: "fd40:161::1",
            },
            Net {
                ifname: "net1",
                ns: TestNetns::new(&format!("{tag}b")),
                v4: ("10.240.62.2", "10.240.62.1"),
                v6: ("fd40:62::2", "fe80::62:1"),
                far4: "10.240.162.1",
                far6: "fd40:162::1",
            },
        ];
        for n in &nets {
            n.ns.exec(&[
                "ip", "link", "add", "gw0", "type", "veth", "peer", "name", n.ifname,
            ]);
            n.ns.exec(&["ip", "link", "set", n.ifname, "netns", ns.name()]);
            let net6 = n.v6.0.replace("::2", "::1");
            for cmd in [
                vec!["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0"],
                vec!["sysctl", "-qw", "net.ipv6.conf.gw0.accept_dad=0"],
                vec!["ip", "addr", "add", &format!("{}/24", n.v4.1), "dev", "gw0"],
                vec!["ip", "addr", "add", &format!("{net6}/64"), "dev", "gw0"],
                vec!["ip", "addr", "add", "fe80::62:1/64", "dev", "gw0"],
                vec!["ip", "addr", "add", &format!("{}/32", n.far4), "dev", "lo"],
                vec!["ip", "addr", "add", &format!("{}/128", n.far6), "dev", "lo"],
                vec!["ip", "link", "set", "lo", "up"],
                vec!["ip", "link", "set", "gw0", "up"],
            ] {
                n.ns.exec(&cmd);
            }
        }
        ns.exec(&["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0"]);
        ns.exec(&["sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0"]);
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        for n in &nets {
            ns.exec(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{}.accept_dad=0", n.ifname),
            ]);
            ns.exec(&[
                "ip",
                "addr",
                "add",
                &format!("{}/24", n.v4.0),
                "dev",
                n.ifname,
            ]);
            ns.exec(&[
                "ip",
                "addr",
                "add",
                &format!("{}/64", n.v6.0),
                "dev",
                n.ifname,
            ]);
            ns.exec(&["ip", "link", "set", n.ifname, "up"]);
        }
        // The routes the main plugins installed: the pod's defaults via
        // eth0, a worse one via net1.
        for cmd in [
            [
                "ip",
                "-4",
                "route",
                "add",
                "default",
                "via",
                "10.240.61.1",
                "dev",
                "eth0",
                "metric",
                "100",
            ],
            [
                "ip",
                "-6",
                "route",
                "add",
                "default",
                "via",
                "fd40:61::1",
                "dev",
                "eth0",
                "metric",
                "100",
            ],
        ] {
            ns.exec(&cmd);
        }
        ns.exec(&[
            "ip",
            "-4",
            "route",
            "add",
            "default",
            "via",
            "10.240.62.1",
            "dev",
            "net1",
            "metric",
            "200",
        ]);
        ns.exec(&[
            "ip",
            "-6",
            "route",
            "add",
            "default",
            "via",
            "fe80::62:1",
            "dev",
            "net1",
            "metric",
            "200",
        ]);
        let id = format!("cid{tag}");
        Pod { ns, nets, id }
    }

    /// The `prevResult` of net `i`'s main plugin.
    pub fn prev(&self, i: usize) -> Value {
        let n = &self.nets[i];
        let v4 = json!({"address": format!("{}/24", n.v4.0), "gateway": n.v4.1, "interface": 0});
        let mut v6 = json!({"address": format!("{}/64", n.v6.0), "interface": 0});
        if !n.v6.1.starts_with("fe80") {
            v6["gateway"] = json!(n.v6.1);
        }
        json!({
            "cniVersion": "1.0.0",
            "interfaces": [{"name": n.ifname, "sandbox": self.ns.path()}],
            "ips": [v4, v6],
        })
    }

    /// The config of net `i` with `keys` merged on top.
    pub fn conf(&self, i: usize, keys: Value) -> Value {
        let mut c = json!({
            "cniVersion": "1.0.0", "name": format!("sbrnet{i}"), "type": "sbr",
            "prevResult": self.prev(i),
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
            .ifname(self.nets[i].ifname)
            .path("/nonexistent")
            .stdin(conf.to_string())
    }

    pub fn run(&self, cmd: &str, i: usize) -> PluginRun {
        self.call(cmd, i, &self.conf(i, json!({}))).run(ours())
    }

    pub fn run_go(&self, cmd: &str, i: usize) -> PluginRun {
        self.call(cmd, i, &self.conf(i, json!({}))).run(go())
    }

    /// `ip rule` of both families, one line each, sorted.
    pub fn rules(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in ["-4", "-6"] {
            out.extend(
                self.ns
                    .stdout(&["ip", f, "rule"])
                    .lines()
                    .map(str::to_string),
            );
        }
        out.sort();
        out
    }

    /// The routes of `table` of one family (`main`, `100`...), sorted,
    /// without the kernel's `proto`/`linkdown` and expiry decorations.
    pub fn table(&self, v6: bool, table: &str) -> Vec<String> {
        let f = if v6 { "-6" } else { "-4" };
        // A table that never held a route does not exist (an error).
        let out = self
            .ns
            .exec_output(&["ip", f, "route", "show", "table", table]);
        let text = String::from_utf8_lossy(&out.stdout);
        let mut out: Vec<String> = text.lines().map(normalize).collect();
        out.sort();
        out
    }

    /// Every table of both families but `local`, as `<table>: <route>`.
    pub fn all_tables(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in ["-4", "-6"] {
            let text = self.ns.stdout(&["ip", f, "route", "show", "table", "all"]);
            for l in text.lines().filter(|l| !l.contains("table local")) {
                out.push(format!("{f} {}", normalize(l)));
            }
        }
        out.sort();
        out
    }

    /// Everything sbr may change: rules, and every table but `local`.
    pub fn state(&self) -> (Vec<String>, Vec<String>) {
        (self.rules(), self.all_tables())
    }

    /// The tables sbr's rules point to, per source address.
    pub fn rule_tables(&self) -> Vec<(String, String)> {
        self.rules()
            .iter()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let from = w.iter().position(|x| *x == "from")?;
                let lookup = w.iter().position(|x| *x == "lookup")?;
                (w[from + 1] != "all").then(|| (w[from + 1].to_string(), w[lookup + 1].to_string()))
            })
            .collect()
    }
}

fn normalize(l: &str) -> String {
    let mut w: Vec<&str> = l.split_whitespace().collect();
    for key in ["proto", "pref", "expires"] {
        while let Some(i) = w.iter().position(|x| *x == key) {
            w.drain(i..(i + 2).min(w.len()));
        }
    }
    w.retain(|x| *x != "linkdown");
    w.join(" ")
}

impl Pod {
    /// Counters in the pod of the packets leaving by each interface to
    /// each far address (`nft`, output hook).
    pub fn count_replies(&self) {
        let mut rules = String::new();
        for n in &self.nets {
            for far in self.fars() {
                let f = if far.contains(':') { "ip6" } else { "ip" };
                rules.push_str(&format!(
                    "oifname \"{}\" {f} daddr {far} counter comment \"{} {far}\"\n",
                    n.ifname, n.ifname
                ));
            }
        }
        self.ns.nft_f(&format!(
            "table inet cnirs_sbr {{\nchain out {{\ntype filter hook output priority 0; policy accept;\n{rules}}}\n}}\n"
        ));
    }

    fn fars(&self) -> Vec<&'static str> {
        self.nets.iter().flat_map(|n| [n.far4, n.far6]).collect()
    }

    /// Packets counted for `<ifname> <far address>`.
    pub fn counted(&self, ifname: &str, far: &str) -> u64 {
        let v = self.ns.nft_json("inet", "cnirs_sbr");
        let key = format!("{ifname} {far}");
        v["nftables"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["rule"]["comment"] == key.as_str())
            .flat_map(|i| i["rule"]["expr"].as_array().cloned().unwrap_or_default())
            .filter_map(|e| e["counter"]["packets"].as_u64())
            .sum()
    }
}
