//! The ptp plugin's stdin configuration (the reference's `NetConf`): the
//! common keys, `ipMasq`, `ipMasqBackend` and `mtu`, decoded as Go does
//! (`skel::gojson`: keys matched case-insensitively, unknown keys ignored,
//! `null` keeps the default, Go's wording for values of the wrong type).

use cni_firewall::Backend;
use serde::Deserialize;
use skel::conf::Ipam;
use skel::types::{Dns, null_default};

use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub cni_version: String,
    pub name: String,
    /// `ipam.type`; required by ADD (`no plugin name provided`).
    pub ipam_type: String,
    pub dns: Dns,
    pub ip_masq: bool,
    /// `None`: chosen by `cni-firewall` (iptables when usable, as the
    /// reference).
    pub ip_masq_backend: Option<Backend>,
    /// MTU of both veth ends; 0 is the kernel default.
    pub mtu: u32,
}

/// The keys as the reference declares them.
#[derive(Deserialize)]
#[serde(rename = "main.NetConf")]
struct NetConf {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    cni_version: String,
    #[serde(default, deserialize_with = "null_default")]
    name: String,
    #[serde(default, deserialize_with = "null_default")]
    ipam: Ipam,
    #[serde(default, deserialize_with = "null_default")]
    dns: Dns,
    #[serde(rename = "ipMasq", default, deserialize_with = "null_default")]
    ip_masq: bool,
    #[serde(rename = "ipMasqBackend", default)]
    ip_masq_backend: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    mtu: i64,
}

impl Config {
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        let nc: NetConf = skel::gojson::unmarshal(stdin)
            .map_err(|e| Error::decode(format!("failed to load netconf: {e}")))?;
        let ip_masq_backend = cni_firewall::select::parse_ipmasq(nc.ip_masq_backend.as_deref())?;
        // The kernel takes an MTU as 32 bits; Go would wrap a negative one.
        let mtu =
            u32::try_from(nc.mtu).map_err(|_| Error::config(format!("invalid MTU {}", nc.mtu)))?;
        Ok(Config {
            cni_version: nc.cni_version,
            name: nc.name,
            ipam_type: nc.ipam.plugin_type,
            dns: nc.dns,
            ip_masq: nc.ip_masq,
            ip_masq_backend,
            mtu,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, Error> {
        Config::parse(s.as_bytes())
    }

    #[test]
    fn keys_and_defaults() {
        let c = parse(
            r#"{"cniVersion":"1.0.0","name":"n","type":"ptp","ipMasq":true,"mtu":1400,
                "ipMasqBackend":"iptables","ipam":{"type":"host-local","x":1},
                "dns":{"nameservers":["10.240.0.53"]},"unknown":[1]}"#,
        )
        .unwrap();
        assert_eq!(
            (
                c.cni_version.as_str(),
                c.name.as_str(),
                c.ipam_type.as_str()
            ),
            ("1.0.0", "n", "host-local")
        );
        assert!(c.ip_masq);
        assert_eq!(c.ip_masq_backend, Some(Backend::Iptables));
        assert_eq!(c.mtu, 1400);
        assert_eq!(c.dns.nameservers, vec!["10.240.0.53"]);

        // Go's decoder: any case of a key, `null` for the zero value.
        let g = parse(r#"{"Name":"n","IPMASQ":true,"Mtu":9000,"IPAM":{"Type":"static"}}"#).unwrap();
        assert_eq!((g.name.as_str(), g.ip_masq, g.mtu), ("n", true, 9000));
        assert_eq!(g.ipam_type, "static");
        let d = parse(r#"{"name":"n","ipam":null,"mtu":null,"ipMasq":null}"#).unwrap();
        assert_eq!((d.mtu, d.ip_masq, d.ip_masq_backend), (0, false, None));
        assert!(d.ipam_type.is_empty() && d.dns.is_empty());
    }

    #[test]
    fn invalid_values() {
        let e = parse(r#"{"name":"n","ipMasqBackend":"ebpf"}"#).unwrap_err();
        assert_eq!(e.code, skel::code::INVALID_NETWORK_CONFIG);
        assert_eq!(e.msg, "unknown ipmasq backend \"ebpf\"");
        let e = parse(r#"{"name":"n","mtu":-1}"#).unwrap_err();
        assert_eq!((e.code, e.msg.as_str()), (7, "invalid MTU -1"));
        let e = parse(r#"{"name":"n","mtu":"1400"}"#).unwrap_err();
        assert_eq!(e.code, skel::code::DECODING_FAILURE);
        assert_eq!(
            e.msg,
            "failed to load netconf: json: cannot unmarshal string into Go struct field \
             NetConf.mtu of type int"
        );
        let e = parse("[]").unwrap_err();
        assert_eq!(
            (e.code, e.msg.as_str()),
            (
                6,
                "failed to load netconf: json: cannot unmarshal array into Go value of type \
                 main.NetConf"
            )
        );
    }
}
