//! Shared setup of the bridge plugin's root tests: every test gets its own
//! "host" namespace (the plugin runs inside it through `ip netns exec`), so
//! the bridge, the firewall rules and the forwarding sysctls it touches
//! never reach the real host. Containers are further namespaces.

#![allow(dead_code)]

use std::ops::Deref;
use std::path::Path;

use serde_json::{Value, json};
use testsupport::unique_name;
#[allow(unused_imports)]
pub use testsupport::{
    PluginHost, eventually, has_link, ip_of, links, ping, ping_unanswered, ping_with, with_prev,
};

/// A [`PluginHost`] running bridge, with a bridge name of its own.
pub struct Host {
    pub host: PluginHost,
    pub bridge: String,
}

impl Deref for Host {
    type Target = PluginHost;
    fn deref(&self) -> &PluginHost {
        &self.host
    }
}

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_bridge"))
}

impl Host {
    pub fn new(tag: &str) -> Host {
        Host {
            host: PluginHost::new(tag, bin(), &["host-local"]),
            bridge: unique_name("cnirsbr"),
        }
    }

    /// A config on this host's bridge with host-local on `subnets`; `extra`
    /// keys are merged on top (an `ipam` key replaces the whole object).
    pub fn conf(&self, version: &str, subnets: &[&str], extra: Value) -> Value {
        let mut c = self.host.conf("bridge", version, subnets, extra);
        if let Some(obj) = c.as_object_mut() {
            obj.entry("bridge").or_insert_with(|| json!(self.bridge));
        }
        c
    }
}

/// Firewall rules in the host namespace that mention container `cid`:
/// nftables masquerade (`id: <cid>`) and spoof-check (`<cid>-<ifname>`)
/// rules and chains, iptables rules (`id: "<cid>"`) and chains of either
/// family.
pub fn rules_of(host: &Host, cid: &str) -> Vec<String> {
    let nft_markers = [format!("id: {cid}\""), format!("-{cid}-")];
    let ipt_markers = [
        format!("id: \\\"{cid}\\\""),
        cni_firewall::ipmasq::iptables_chain(&host.net, cid),
    ];
    host.rules(&nft_markers, &ipt_markers)
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
