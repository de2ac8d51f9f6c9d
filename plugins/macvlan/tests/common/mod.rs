//! Shared setup of the macvlan plugin's root tests: a [`PluginHost`] (the
//! plugin runs in a throwaway "host" namespace) whose master is one end
//! of a veth pair (`master0`), the other end (`peer0`) left in the host
//! or moved into a "lan" namespace on the master's segment
//! ([`segment`]); our host-local and static on its `CNI_PATH`.

#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};
use testsupport::TestNetns;
#[allow(unused_imports)]
pub use testsupport::{PluginHost, has_link, ip_of, links, ping, ping_unanswered, with_prev};

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_macvlan"))
}

/// The reference plugins (Debian's `containernetworking-plugins`).
pub const REFERENCE: &str = "/usr/lib/cni";

/// The master every test config names.
pub const MASTER: &str = "master0";

/// A host running macvlan, with `master0` (MTU 1500) up.
pub fn host(tag: &str) -> PluginHost {
    let h = PluginHost::new(tag, bin(), &["host-local", "static"]);
    let add = [
        "ip", "link", "add", MASTER, "type", "veth", "peer", "name", "peer0",
    ];
    h.ns.exec(&add);
    h.ns.exec(&["ip", "link", "set", MASTER, "up"]);
    h.ns.exec(&["ip", "link", "set", "peer0", "up"]);
    h
}

/// A "lan" namespace on the master's segment: `peer0` moved there, with
/// `addr` (`10.240.50.1/24`).
pub fn segment(h: &PluginHost, addr: &str) -> TestNetns {
    let lan = TestNetns::new("lan");
    h.ns.exec(&["ip", "link", "set", "peer0", "netns", lan.name()]);
    lan.exec(&["ip", "addr", "add", addr, "dev", "peer0"]);
    lan.exec(&["ip", "link", "set", "peer0", "up"]);
    lan
}

/// A macvlan config on `master0` in `version`, host-local on `subnets`;
/// `extra` keys merged on top.
pub fn conf(h: &PluginHost, version: &str, subnets: &[&str], extra: Value) -> Value {
    let mut keys = json!({"master": MASTER});
    if let (Some(k), Some(more)) = (keys.as_object_mut(), extra.as_object()) {
        for (name, v) in more {
            k.insert(name.clone(), v.clone());
        }
    }
    h.conf("macvlan", version, subnets, keys)
}

/// Whether `c` has nothing but `lo`.
pub fn is_empty(c: &TestNetns) -> bool {
    links(c).iter().all(|(name, _)| name == "lo")
}

/// `ip -d -j link show <ifname>` in `ns`, parsed.
pub fn link_json(ns: &TestNetns, ifname: &str) -> Value {
    let out = ns.stdout(&["ip", "-d", "-j", "link", "show", ifname]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    v[0].clone()
}
