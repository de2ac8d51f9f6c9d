//! The plugin's stdin (the reference's `FirewallNetConf`), decoded as Go
//! does (`skel::gojson`), with the reference's messages: `backend`,
//! `iptablesAdminChainName` (default `CNI-ADMIN`), `firewalldZone`
//! (default `trusted`), `ingressPolicy` and `prevResult`; plus ours,
//! `dataDir` (where ADD records each attachment, see [`crate::record`]).
//!
//! Unlike the reference, an unknown `ingressPolicy` is refused before
//! anything changes (the reference adds the `CNI-FORWARD` rules first).

use std::net::IpAddr;
use std::path::PathBuf;

use cni_firewall::{Backend, Probe, select};
use serde::Deserialize;
use skel::types::null_default;
use skel::{CniResult, Error, Result1};

pub const DEFAULT_ADMIN_CHAIN: &str = "CNI-ADMIN";
pub const DEFAULT_ZONE: &str = "trusted";
pub const DEFAULT_DATA_DIR: &str = "/run/cni/firewall";

/// `ingressPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `""` or `open`: nothing beyond the per-address rules.
    Open,
    /// `same-bridge`: other isolated bridges cannot reach this one.
    SameBridge,
    /// `isolated`: nor can containers on the same bridge.
    Isolated,
}

impl Policy {
    pub fn parse(s: &str) -> Result<Policy, Error> {
        match s {
            "" | "open" => Ok(Policy::Open),
            "same-bridge" => Ok(Policy::SameBridge),
            "isolated" => Ok(Policy::Isolated),
            other => Err(Error::internal(format!(
                "unknown ingress policy: {}",
                skel::gojson::quote(other)
            ))),
        }
    }

    /// The name in the reference's rule comments.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Open => "open",
            Policy::SameBridge => "same-bridge",
            Policy::Isolated => "isolated",
        }
    }
}

/// The bridge isolation an ADD sets up: the bridge, and whether ports of
/// the same bridge are cut off from each other too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Isolation {
    pub bridge: String,
    pub policy: Policy,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub cni_version: String,
    pub name: String,
    /// `prevResult` in the config's version (what ADD prints).
    pub prev_result: Option<CniResult>,
    /// `prevResult` as a 1.x result (what the rules are made from).
    pub prev: Option<Result1>,
    /// `backend` as configured.
    pub backend: Option<String>,
    pub admin_chain: String,
    pub zone: String,
    /// An error when the value is not a known policy (the reference's
    /// message): ADD and CHECK refuse it, DEL and GC do not need it.
    pub policy: Result<Policy, Error>,
    pub data_dir: PathBuf,
}

#[derive(Deserialize)]
#[serde(rename = "main.FirewallNetConf")]
struct Raw {
    #[serde(default, deserialize_with = "null_default")]
    backend: String,
    #[serde(
        rename = "iptablesAdminChainName",
        default,
        deserialize_with = "null_default"
    )]
    admin_chain: String,
    #[serde(rename = "firewalldZone", default, deserialize_with = "null_default")]
    zone: String,
    #[serde(rename = "ingressPolicy", default, deserialize_with = "null_default")]
    policy: String,
    #[serde(rename = "dataDir", default, deserialize_with = "null_default")]
    data_dir: String,
}

impl Config {
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        let fail =
            |e: skel::gojson::DecodeError| Error::internal(format!("failed to load netconf: {e}"));
        let doc = skel::gojson::parse(stdin).map_err(fail)?;
        let net: skel::conf::NetConf = skel::gojson::from_value(&doc).map_err(fail)?;
        let raw: Raw = skel::gojson::from_value(&doc).map_err(fail)?;
        let prev_result = net.prev_result().map_err(|e| Error::internal(e.msg))?;
        let prev = match &prev_result {
            None => None,
            Some(p) => Some(cni_attach::chained::current(p)?),
        };
        let or = |v: String, d: &str| if v.is_empty() { d.to_string() } else { v };
        Ok(Config {
            cni_version: net.cni_version,
            name: net.name,
            prev_result,
            prev,
            backend: Some(raw.backend).filter(|b| !b.is_empty()),
            admin_chain: or(raw.admin_chain, DEFAULT_ADMIN_CHAIN),
            zone: or(raw.zone, DEFAULT_ZONE),
            policy: Policy::parse(&raw.policy),
            data_dir: PathBuf::from(or(raw.data_dir, DEFAULT_DATA_DIR)),
        })
    }

    /// The backend named by `backend`, `None` for anything else (auto).
    pub fn configured(&self) -> Option<Backend> {
        self.backend.as_deref()?.parse().ok()
    }

    /// The backend for ADD and CHECK: the configured one, or auto.
    pub fn backend(&self, probe: &dyn Probe) -> Result<Backend, Error> {
        select::firewall(self.backend.as_deref(), probe).map_err(|e| Error::internal(e.to_string()))
    }

    /// `prevResult`, required by ADD and CHECK.
    pub fn require_prev(&self) -> Result<&Result1, Error> {
        self.prev
            .as_ref()
            .ok_or_else(|| Error::internal("missing prevResult from earlier plugin"))
    }

    /// Every address of `prevResult` (all interfaces, as the reference),
    /// without duplicates.
    pub fn addrs(&self) -> Vec<IpAddr> {
        let mut out: Vec<IpAddr> = Vec::new();
        for ip in self.prev.iter().flat_map(|p| &p.ips) {
            let a = ip.address.0.ip();
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }

    /// The isolation ADD sets up (`None` for `open`), with the reference's
    /// messages: the bridge is the first interface of `prevResult`.
    pub fn isolation(&self) -> Result<Option<Isolation>, Error> {
        let policy = self.policy.clone()?;
        if policy == Policy::Open {
            return Ok(None);
        }
        let prev = self.require_prev()?;
        let Some(first) = prev.interfaces.first() else {
            return Err(Error::internal(format!(
                "interface needs to be set for ingress policy {}, make sure to chain \"firewall\" plugin with \"bridge\"",
                skel::gojson::quote(policy.name())
            )));
        };
        if first.name.is_empty() {
            return Err(Error::internal("got empty bridge name"));
        }
        // Ours: a name no interface can have would reach the rules as
        // something else (iptables-restore reads a line break as a blank).
        if skel::validate_ifname(&first.name).is_err() {
            return Err(Error::internal(format!(
                "invalid bridge name {}: not a valid interface name",
                skel::gojson::quote(&first.name)
            )));
        }
        Ok(Some(Isolation {
            bridge: first.name.clone(),
            policy,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<Config, Error> {
        Config::parse(v.to_string().as_bytes())
    }

    fn prev() -> serde_json::Value {
        json!({"cniVersion": "1.0.0",
            "interfaces": [{"name": "cni0"}, {"name": "veth1"}, {"name": "eth0", "sandbox": "/x"}],
            "ips": [{"address": "10.240.1.2/24", "interface": 2},
                    {"address": "fd40:1::2/64", "interface": 2},
                    {"address": "10.240.1.2/24"}]})
    }

    #[test]
    fn defaults() {
        let c = parse(json!({"cniVersion": "1.0.0", "name": "n", "type": "firewall"})).unwrap();
        assert_eq!(c.admin_chain, "CNI-ADMIN");
        assert_eq!(c.zone, "trusted");
        assert_eq!(c.policy, Ok(Policy::Open));
        assert_eq!(c.configured(), None);
        assert_eq!(c.data_dir, PathBuf::from("/run/cni/firewall"));
        assert!(c.addrs().is_empty());
        assert_eq!(
            c.require_prev().unwrap_err().msg,
            "missing prevResult from earlier plugin"
        );
    }

    #[test]
    fn keys_and_addresses() {
        let c = parse(
            json!({"cniVersion": "1.0.0", "name": "n", "backend": "nftables",
            "iptablesAdminChainName": "ADM", "firewalldZone": "public",
            "ingressPolicy": "isolated", "prevResult": prev()}),
        )
        .unwrap();
        assert_eq!(c.configured(), Some(Backend::Nftables));
        assert_eq!((c.admin_chain.as_str(), c.zone.as_str()), ("ADM", "public"));
        let a: Vec<String> = c.addrs().iter().map(|a| a.to_string()).collect();
        assert_eq!(a, ["10.240.1.2", "fd40:1::2"]);
        assert_eq!(
            c.isolation().unwrap(),
            Some(Isolation {
                bridge: "cni0".into(),
                policy: Policy::Isolated
            })
        );
        // Any other backend name means auto, as in the reference.
        let c = parse(json!({"cniVersion": "1.0.0", "name": "n", "backend": "pf"})).unwrap();
        assert_eq!(c.configured(), None);
    }

    #[test]
    fn reference_messages() {
        let c = parse(json!({"cniVersion": "1.0.0", "name": "n", "ingressPolicy": "x"})).unwrap();
        assert_eq!(
            c.isolation().unwrap_err().msg,
            "unknown ingress policy: \"x\""
        );
        let mut p = prev();
        p["interfaces"] = json!([]);
        let c = parse(json!({"cniVersion": "1.0.0", "name": "n",
            "ingressPolicy": "same-bridge", "prevResult": p}))
        .unwrap();
        assert_eq!(
            c.isolation().unwrap_err().msg,
            "interface needs to be set for ingress policy \"same-bridge\", make sure to chain \"firewall\" plugin with \"bridge\""
        );
        p["interfaces"] = json!([{"name": ""}]);
        let c = parse(json!({"cniVersion": "1.0.0", "name": "n",
            "ingressPolicy": "same-bridge", "prevResult": p}))
        .unwrap();
        assert_eq!(c.isolation().unwrap_err().msg, "got empty bridge name");
        let e = parse(json!({"cniVersion": "1.0.0", "name": "n", "backend": 3})).unwrap_err();
        assert!(e.msg.starts_with("failed to load netconf: "), "{}", e.msg);
    }
}
