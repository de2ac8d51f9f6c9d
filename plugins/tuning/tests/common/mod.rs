//! Shared setup of the tuning root tests: a container namespace holding
//! the interface to tune (one end of a veth pair whose other end stays in
//! the same namespace), a data directory, and runs of our binary or the
//! reference's with the config a runtime would send.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use testsupport::{Call, PluginRun, TempDir, TestNetns};

pub const GO: &str = "/usr/lib/cni/tuning";

pub fn ours() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tuning"))
}

pub struct Container {
    pub ns: TestNetns,
    pub data: TempDir,
    pub ifname: String,
    pub id: String,
}

/// What the kernel says about the tuned interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    pub mac: String,
    pub mtu: u32,
    pub promisc: bool,
    pub allmulti: bool,
    pub txqlen: u32,
}

impl Container {
    pub fn new(tag: &str) -> Container {
        Container::with_ifname(tag, "eth0")
    }

    /// A container whose interface is named `ifname`.
    pub fn with_ifname(tag: &str, ifname: &str) -> Container {
        let ns = TestNetns::new(tag);
        ns.exec(&[
            "ip", "link", "add", ifname, "type", "veth", "peer", "name", "peer0",
        ]);
        ns.exec(&["ip", "link", "set", ifname, "up"]);
        Container {
            ns,
            data: TempDir::new("tuning"),
            ifname: ifname.to_string(),
            id: format!("cid{tag}"),
        }
    }

    /// A config for this container: `keys` merged on top, with a
    /// `prevResult` naming the interface.
    pub fn conf(&self, version: &str, keys: Value) -> Value {
        let mut c = json!({
            "cniVersion": version, "name": "tunenet", "type": "tuning",
            "dataDir": self.data.to_str(),
            "prevResult": {
                "cniVersion": "1.0.0",
                "interfaces": [{"name": self.ifname, "mac": "00:11:22:33:44:55", "sandbox": self.ns.path()}],
                "ips": [{"address": "10.240.40.2/24", "interface": 0}]
            }
        });
        if let (Some(c), Some(k)) = (c.as_object_mut(), keys.as_object()) {
            c.extend(k.clone());
        }
        c
    }

    pub fn call(&self, cmd: &str, conf: &Value) -> Call {
        Call::new(cmd)
            .container_id(&self.id)
            .netns(self.ns.path())
            .ifname(&self.ifname)
            .path("/nonexistent")
            .stdin(conf.to_string())
    }

    pub fn run(&self, cmd: &str, conf: &Value) -> PluginRun {
        self.call(cmd, conf).run(ours())
    }

    pub fn run_go(&self, cmd: &str, conf: &Value) -> PluginRun {
        self.call(cmd, conf).run(Path::new(GO))
    }

    /// The backup the reference's naming gives this attachment.
    pub fn backup(&self) -> PathBuf {
        self.data.join(&format!("{}_{}.json", self.id, self.ifname))
    }

    pub fn backup_text(&self) -> Option<String> {
        std::fs::read_to_string(self.backup()).ok()
    }

    /// Every file under the data directory, relative names, sorted.
    pub fn data_files(&self) -> Vec<String> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, base, out);
                } else {
                    out.push(p.strip_prefix(base).unwrap().display().to_string());
                }
            }
        }
        let mut out = Vec::new();
        walk(self.data.path(), self.data.path(), &mut out);
        out.sort();
        out
    }

    pub fn link(&self) -> LinkState {
        let j: Value = serde_json::from_str(&self.ns.stdout(&[
            "ip",
            "-j",
            "-d",
            "link",
            "show",
            "dev",
            &self.ifname,
        ]))
        .unwrap();
        let l = &j[0];
        let flags: Vec<&str> = l["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        LinkState {
            mac: l["address"].as_str().unwrap().to_string(),
            mtu: l["mtu"].as_u64().unwrap() as u32,
            promisc: flags.contains(&"PROMISC"),
            allmulti: flags.contains(&"ALLMULTI"),
            // iproute2 leaves out a zero queue length.
            txqlen: l["txqlen"].as_u64().unwrap_or(0) as u32,
        }
    }

    /// A `/proc/sys` value inside the container (`net/ipv4/...`).
    pub fn sysctl(&self, key: &str) -> String {
        self.ns
            .stdout(&["cat", &format!("/proc/sys/{key}")])
            .trim_end()
            .to_string()
    }

    pub fn set_sysctl(&self, key: &str, value: &str) {
        self.ns
            .exec(&["sh", "-c", &format!("echo {value} > /proc/sys/{key}")]);
    }

    pub fn ip_link_set(&self, args: &[&str]) {
        let mut cmd = vec!["ip", "link", "set", "dev", &self.ifname];
        cmd.extend_from_slice(args);
        self.ns.exec(&cmd);
    }
}

/// A config with every key set to a value unlike the kernel defaults.
pub fn every_key() -> Value {
    json!({
        "sysctl": {
            "net.ipv4.conf.IFNAME.arp_notify": "1",
            "net.ipv6.conf.IFNAME.hop_limit": "33",
            "net.core.somaxconn": "1234"
        },
        "mac": "02:42:0A:F0:28:02",
        "promisc": true,
        "mtu": 1400,
        "txQLen": 321,
        "allmulti": true
    })
}

/// The sysctls [`every_key`] writes, as `/proc/sys` paths.
pub fn every_sysctl(ifname: &str) -> Vec<(String, &'static str)> {
    vec![
        (format!("net/ipv4/conf/{ifname}/arp_notify"), "1"),
        (format!("net/ipv6/conf/{ifname}/hop_limit"), "33"),
        ("net/core/somaxconn".to_string(), "1234"),
    ]
}
