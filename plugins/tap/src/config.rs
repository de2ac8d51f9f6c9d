//! tap's stdin configuration (the reference's `NetConf`), decoded as Go
//! does (`skel::gojson`), with the MAC from `mac` < CNI_ARGS `MAC` <
//! runtimeConfig `mac`, as the reference.

use serde::Deserialize;
use skel::args::{Args, Kind};
use skel::conf::Ipam;
use skel::types::{Dns, null_default};

use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub cni_version: String,
    pub name: String,
    /// `ipam.type`; empty: a layer-2 tap without addresses.
    pub ipam_type: String,
    pub dns: Dns,
    pub mac: Option<[u8; 6]>,
    /// 0: the kernel's default.
    pub mtu: u32,
    pub multi_queue: bool,
    pub owner: Option<u32>,
    pub group: Option<u32>,
    pub selinux_context: String,
    /// A bridge in the container to make the tap a port of.
    pub bridge: String,
}

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
    #[serde(rename = "multiQueue", default, deserialize_with = "null_default")]
    multi_queue: bool,
    #[serde(default, deserialize_with = "null_default")]
    mtu: i64,
    #[serde(default, deserialize_with = "null_default")]
    mac: String,
    #[serde(default)]
    owner: Option<u32>,
    #[serde(default)]
    group: Option<u32>,
    #[serde(rename = "selinuxContext", default, deserialize_with = "null_default")]
    selinux_context: String,
    #[serde(default, deserialize_with = "null_default")]
    bridge: String,
    #[serde(rename = "runtimeConfig", default, deserialize_with = "null_default")]
    runtime_config: RuntimeConfig,
}

#[derive(Deserialize, Default)]
#[serde(rename = "main.RuntimeConfig")]
struct RuntimeConfig {
    #[serde(default, deserialize_with = "null_default")]
    mac: String,
}

impl Config {
    pub fn parse(stdin: &[u8], cni_args: &str) -> Result<Config, Error> {
        let nc: NetConf = skel::gojson::unmarshal(stdin)
            .map_err(|e| Error::decode(format!("failed to load netconf: {e}")))?;
        let args = Args::parse(cni_args, &[("MAC", Kind::String)]).map_err(Error::config)?;
        let mut mac = nc.mac;
        if let Some(m) = args.get("MAC").filter(|m| !m.is_empty()) {
            mac = m.to_string();
        }
        if !nc.runtime_config.mac.is_empty() {
            mac = nc.runtime_config.mac;
        }
        let mac = (!mac.is_empty()).then(|| parse_mac(&mac)).transpose()?;
        let mtu =
            u32::try_from(nc.mtu).map_err(|_| Error::config(format!("invalid MTU {}", nc.mtu)))?;
        Ok(Config {
            cni_version: nc.cni_version,
            name: nc.name,
            ipam_type: nc.ipam.plugin_type,
            dns: nc.dns,
            mac,
            mtu,
            multi_queue: nc.multi_queue,
            owner: nc.owner,
            group: nc.group,
            selinux_context: nc.selinux_context,
            bridge: nc.bridge,
        })
    }
}

/// An Ethernet MAC (`aa:bb:cc:dd:ee:ff`, `aa-bb-…`, `aabb.ccdd.eeff`); the
/// reference's words when it is none.
pub fn parse_mac(s: &str) -> Result<[u8; 6], Error> {
    let bad = || {
        Error::config(format!(
            "invalid args {s} for MAC addr: address {s}: invalid MAC address"
        ))
    };
    let digits: String = match s.len() {
        17 if s.is_ascii() && matches!(s.as_bytes()[2], b':' | b'-') => {
            let sep = s.as_bytes()[2];
            if s.bytes().skip(2).step_by(3).any(|b| b != sep) {
                return Err(bad());
            }
            s.split(sep as char).collect()
        }
        14 if s.is_ascii() && s.bytes().skip(4).step_by(5).all(|b| b == b'.') => {
            s.split('.').collect()
        }
        _ => return Err(bad()),
    };
    if digits.len() != 12 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut out = [0u8; 6];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_mac_precedence() {
        let c = Config::parse(
            br#"{"cniVersion":"1.0.0","name":"n","type":"tap","mac":"02:00:00:00:00:01",
                "mtu":1400,"multiQueue":true,"owner":107,"group":108,"bridge":"br0",
                "selinuxContext":"system_u:system_r:container_t:s0","args":{}}"#,
            "",
        )
        .unwrap();
        assert_eq!(c.mac, Some([2, 0, 0, 0, 0, 1]));
        assert_eq!((c.mtu, c.multi_queue), (1400, true));
        assert_eq!((c.owner, c.group), (Some(107), Some(108)));
        assert_eq!(c.bridge, "br0");
        assert!(c.ipam_type.is_empty());
        let args = "IgnoreUnknown=1;MAC=02:00:00:00:00:02";
        let c = Config::parse(br#"{"mac":"02:00:00:00:00:01"}"#, args).unwrap();
        assert_eq!(c.mac, Some([2, 0, 0, 0, 0, 2]));
        let c = Config::parse(
            br#"{"mac":"02:00:00:00:00:01","runtimeConfig":{"mac":"02-00-00-00-00-03"}}"#,
            args,
        )
        .unwrap();
        assert_eq!(c.mac, Some([2, 0, 0, 0, 0, 3]));
        let c = Config::parse(br#"{"mac":"0200.0000.0004"}"#, "").unwrap();
        assert_eq!(c.mac, Some([2, 0, 0, 0, 0, 4]));
    }

    #[test]
    fn invalid_values() {
        let e = Config::parse(br#"{"mac":"02:00:00:00:00"}"#, "").unwrap_err();
        assert_eq!(
            e.msg,
            "invalid args 02:00:00:00:00 for MAC addr: address 02:00:00:00:00: invalid MAC address"
        );
        for bad in ["02:00:00:00:00:0g", "02:00-00:00:00:00", "020000000001"] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
        let e = Config::parse(br#"{"mtu":-1}"#, "").unwrap_err();
        assert_eq!((e.code, e.msg.as_str()), (7, "invalid MTU -1"));
        let e = Config::parse(br#"{"owner":-1}"#, "").unwrap_err();
        assert_eq!(e.code, skel::code::DECODING_FAILURE);
        let e = Config::parse(b"{}", "FOO=1").unwrap_err();
        assert_eq!(e.code, 7);
    }
}
