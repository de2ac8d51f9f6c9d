//! Shared setup of host-device's root tests: a [`PluginHost`] (the plugin
//! runs in a throwaway "host" namespace) with our IPAM plugins on its
//! `CNI_PATH`, and a stand-in for a host device: one end of a veth pair
//! (the other end stays in the host, to talk to the container through).

#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};
use testsupport::TestNetns;
#[allow(unused_imports)]
pub use testsupport::{PluginHost, links, ping, unique_name, with_prev};

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_host-device"))
}

/// The reference plugins (Debian's `containernetworking-plugins`).
pub const REFERENCE: &str = "/usr/lib/cni";

pub fn host(tag: &str) -> PluginHost {
    PluginHost::new(tag, bin(), &["host-local", "static"])
}

/// A device of `h`: one end of a veth pair, up, MTU 1400; the other end
/// (`peer`) stays in the host, up.
pub struct Device {
    pub name: String,
    pub peer: String,
    pub mac: String,
}

impl Device {
    pub fn new(h: &PluginHost) -> Device {
        let (name, peer) = (unique_name("cnirsd"), unique_name("cnirsp"));
        h.ns.exec(&[
            "ip", "link", "add", &name, "type", "veth", "peer", "name", &peer,
        ]);
        h.ns.exec(&["ip", "link", "set", &name, "mtu", "1400", "up"]);
        h.ns.exec(&["ip", "link", "set", &peer, "up"]);
        let mac = link(&h.ns, &name).expect("device")["address"]
            .as_str()
            .unwrap()
            .to_string();
        Device { name, peer, mac }
    }
}

/// `ip -j -d link show <name>` in `ns`, `None` when there is no such link.
pub fn link(ns: &TestNetns, name: &str) -> Option<Value> {
    ns.link_json(name)
}

pub fn is_up(l: &Value) -> bool {
    l["flags"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == "UP"))
}

/// The device is home: in `h` under its own name and MAC, MTU 1400, no
/// alias, up as `up` says.
pub fn assert_home(h: &PluginHost, d: &Device, up: bool, what: &str) {
    let l = link(&h.ns, &d.name)
        .unwrap_or_else(|| panic!("{what}: {} is not in the host: {:?}", d.name, links(&h.ns)));
    assert_eq!(l["address"], d.mac.as_str(), "{what}: {l}");
    assert_eq!(l["mtu"], 1400, "{what}: {l}");
    assert_eq!(l.get("ifalias"), None, "{what}: {l}");
    assert_eq!(is_up(&l), up, "{what}: {l}");
}

/// Whether `c` has nothing but `lo`.
pub fn is_empty(c: &TestNetns) -> bool {
    links(c).iter().all(|(name, _)| name == "lo")
}

/// A host-device config for `d` (`device`), with host-local on `subnets`
/// (no IPAM when empty); `extra` keys merged on top.
pub fn conf(h: &PluginHost, version: &str, d: &Device, subnets: &[&str], extra: Value) -> Value {
    let mut c = h.conf("host-device", version, subnets, json!({"device": d.name}));
    if subnets.is_empty() {
        c.as_object_mut().unwrap().remove("ipam");
    }
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}
