//! Shared setup of the ptp plugin's root tests: a [`PluginHost`] (the
//! plugin runs in a throwaway "host" namespace) with our host-local and
//! static IPAM on its `CNI_PATH`; containers are further namespaces.

#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};
use testsupport::TestNetns;
#[allow(unused_imports)]
pub use testsupport::{
    PluginHost, eventually, has_link, ip_of, links, ping, ping_unanswered, ping_with, with_prev,
};

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ptp"))
}

/// The reference plugins (Debian's `containernetworking-plugins`).
pub const REFERENCE: &str = "/usr/lib/cni";

/// A host running ptp.
pub fn host(tag: &str) -> PluginHost {
    PluginHost::new(tag, bin(), &["host-local", "static"])
}

/// A ptp config with host-local on `subnets` and a default route for each
/// family; `extra` keys are merged on top.
pub fn conf(h: &PluginHost, version: &str, subnets: &[&str], extra: Value) -> Value {
    let mut c = h.conf("ptp", version, subnets, extra);
    if c["ipam"]["type"] == "host-local" {
        let mut routes = Vec::new();
        if subnets.iter().any(|s| !s.contains(':')) {
            routes.push(json!({"dst": "0.0.0.0/0"}));
        }
        if subnets.iter().any(|s| s.contains(':')) {
            routes.push(json!({"dst": "::/0"}));
        }
        c["ipam"]["routes"] = Value::Array(routes);
    }
    c
}

/// The host ends of container veths in `h` (links whose peer is in
/// another namespace).
pub fn veths(h: &PluginHost) -> Vec<String> {
    links(&h.ns)
        .into_iter()
        .filter(|(_, peer)| peer.starts_with("if"))
        .map(|(name, _)| name)
        .collect()
}

/// Masquerade rules of container `cid` in `h`: nftables rules commented
/// `…, id: <cid>`, iptables rules commented `id: "<cid>"` and the
/// container's chain.
pub fn rules_of(h: &PluginHost, cid: &str) -> Vec<String> {
    let chain = cni_firewall::ipmasq::iptables_chain(&h.net, cid);
    h.rules(
        &[format!("id: {cid}\"")],
        &[format!("id: \\\"{cid}\\\""), chain],
    )
}

/// Whether `c` has nothing but `lo`.
pub fn is_empty(c: &TestNetns) -> bool {
    links(c).iter().all(|(name, _)| name == "lo")
}

/// `ip -o <args>` lines in `ns`, with runs of spaces squeezed.
pub fn ip_lines(ns: &TestNetns, args: &[&str]) -> Vec<String> {
    let mut cmd = vec!["ip"];
    cmd.extend_from_slice(args);
    ns.stdout(&cmd)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}
