//! The plugin's stdin: `table` (v1.6), `gateways` and `addSourceHints`
//! (upstream main, PR #1217) and `prevResult`, decoded by Go's rules with
//! the reference's messages; the addresses of `CNI_IFNAME` picked out of
//! `prevResult` as the reference picks them.

use std::net::IpAddr;

use cni_attach::chained;
use serde::Deserialize;
use serde_json::Value;
use skel::gojson;
use skel::types::{CniResult, IpConfig, Result1, null_default};

use crate::Error;

/// The first table tried for an interface's routes.
pub const FIRST_TABLE: u32 = 100;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename = "main.PluginConf")]
pub struct Config {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    pub cni_version: String,
    #[serde(rename = "prevResult", default)]
    pub prev_result: Option<Value>,
    /// A fixed table: only the rules are added.
    pub table: Option<i64>,
    #[serde(default, deserialize_with = "null_default")]
    pub gateways: Vec<String>,
    #[serde(rename = "addSourceHints", default, deserialize_with = "null_default")]
    pub add_source_hints: bool,
}

impl Config {
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        gojson::unmarshal(stdin)
            .map_err(|e| Error::internal(format!("failed to parse network configuration: {e}")))
    }

    /// `table` as a kernel table id; the reference sends whatever int it
    /// gets, we refuse what no table can be.
    pub fn table(&self) -> Result<Option<u32>, Error> {
        match self.table {
            None => Ok(None),
            Some(t) => match u32::try_from(t) {
                Ok(t) if t > 0 => Ok(Some(t)),
                _ => Err(Error::config(format!("invalid table {t}"))),
            },
        }
    }

    /// `prevResult` in the config's version, as ADD passes it on.
    pub fn prev_result(&self) -> Result<Option<CniResult>, Error> {
        let net = skel::conf::NetConf {
            cni_version: self.cni_version.clone(),
            prev_result: self.prev_result.clone(),
            ..Default::default()
        };
        chained::prev_result(&net)
    }

    /// ADD's output: `prevResult` through the current shape and back to
    /// the config's version, as the reference prints it (a 0.x address
    /// gets its `version` again).
    pub fn output(&self, current: Result1) -> Result<CniResult, Error> {
        Ok(CniResult::from(current).convert(&self.cni_version)?)
    }

    /// ADD's and CHECK's `prevResult`, required, in both shapes.
    pub fn require_prev(&self) -> Result<(CniResult, Result1), Error> {
        let prev = chained::require(
            self.prev_result()?,
            "This plugin must be called as chained plugin",
        )?;
        let current = chained::current(&prev)?;
        Ok((prev, current))
    }

    /// The static gateways (at most one per family), with the reference's
    /// messages.
    pub fn gateways(&self) -> Result<Gateways, Error> {
        if self.gateways.len() > 2 {
            return Err(Error::internal(
                "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)",
            ));
        }
        let mut g = Gateways::default();
        for text in &self.gateways {
            let ip: IpAddr = go_parse_ip(text).ok_or_else(|| {
                Error::internal(format!("invalid static gateway IP address: {text}"))
            })?;
            let (slot, family) = match ip {
                IpAddr::V4(_) => (&mut g.v4, "IPv4"),
                IpAddr::V6(_) => (&mut g.v6, "IPv6"),
            };
            if let Some(first) = slot {
                return Err(Error::internal(format!(
                    "gateways list contains multiple {family} addresses: {first} and {text}"
                )));
            }
            *slot = Some(ip);
        }
        Ok(g)
    }
}

/// `net.ParseIP`: dotted IPv4, IPv6 (an IPv4-mapped one is IPv4, as Go's
/// `To4` sees it).
fn go_parse_ip(text: &str) -> Option<IpAddr> {
    let ip: IpAddr = text.parse().ok()?;
    Some(match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    })
}

/// `gateways`, by family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gateways {
    pub v4: Option<IpAddr>,
    pub v6: Option<IpAddr>,
}

impl Gateways {
    /// The gateway of `ip`'s table: the static one of its family, else
    /// the address's own.
    pub fn for_ip(&self, ip: &IpConfig) -> Option<IpAddr> {
        let fixed = if ip.address.is_ipv4() {
            self.v4
        } else {
            self.v6
        };
        fixed.or(ip.gateway)
    }
}

/// The addresses of `ifname` in `prev`, as the reference selects them: an
/// address without an interface index counts, one whose index names
/// another interface does not, one whose index is out of range does.
pub fn addresses(ifname: &str, prev: &Result1) -> Result<Vec<IpConfig>, Error> {
    if prev.ips.is_empty() {
        return Err(Error::internal(format!(
            "No IP addresses supplied on interface: {ifname}"
        )));
    }
    Ok(prev
        .ips
        .iter()
        .filter(|ip| match ip.interface {
            Some(i) => prev
                .interfaces
                .get(i)
                .is_none_or(|iface| iface.name == ifname),
            None => true,
        })
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(json: &str) -> Config {
        Config::parse(json.as_bytes()).unwrap()
    }

    #[test]
    fn keys_decode_with_the_references_messages() {
        let c = conf(
            r#"{"cniVersion":"1.0.0","table":7,"gateways":["10.240.0.1","fd40::1"],"addSourceHints":true}"#,
        );
        assert_eq!(c.table().unwrap(), Some(7));
        assert!(c.add_source_hints);
        let g = c.gateways().unwrap();
        assert_eq!(g.v4, Some("10.240.0.1".parse().unwrap()));
        assert_eq!(g.v6, Some("fd40::1".parse().unwrap()));
        let e = Config::parse(br#"{"table":"x"}"#).unwrap_err();
        assert_eq!(
            e.msg,
            "failed to parse network configuration: json: cannot unmarshal string into Go struct \
             field PluginConf.table of type int"
        );
        assert_eq!(e.code, skel::code::INTERNAL);
        assert_eq!(
            conf(r#"{"table":0}"#).table().unwrap_err().msg,
            "invalid table 0"
        );
        assert_eq!(conf(r#"{"table":null}"#).table().unwrap(), None);
    }

    #[test]
    fn gateways_are_checked_as_the_reference_checks_them() {
        let msg = |g: &str| {
            conf(&format!(r#"{{"gateways":{g}}}"#))
                .gateways()
                .unwrap_err()
                .msg
                .clone()
        };
        assert_eq!(
            msg(r#"["10.240.0.1","fd40::1","10.240.0.2"]"#),
            "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)"
        );
        assert_eq!(
            msg(r#"["nope"]"#),
            "invalid static gateway IP address: nope"
        );
        assert_eq!(
            msg(r#"["10.240.0.1","10.240.0.2"]"#),
            "gateways list contains multiple IPv4 addresses: 10.240.0.1 and 10.240.0.2"
        );
        assert_eq!(
            msg(r#"["fd40::1","fd40::2"]"#),
            "gateways list contains multiple IPv6 addresses: fd40::1 and fd40::2"
        );
        assert_eq!(
            conf(r#"{"gateways":["::ffff:10.240.0.1"]}"#)
                .gateways()
                .unwrap()
                .v4,
            Some("10.240.0.1".parse().unwrap())
        );
    }

    #[test]
    fn addresses_are_selected_as_the_reference_selects_them() {
        let c = conf(
            r#"{"cniVersion":"1.0.0","prevResult":{"cniVersion":"1.0.0",
            "interfaces":[{"name":"eth0"},{"name":"net1"}],
            "ips":[{"address":"10.240.0.2/24","interface":0},{"address":"10.240.1.2/24","interface":1},
                   {"address":"10.240.2.2/24"},{"address":"10.240.3.2/24","interface":9}]}}"#,
        );
        let (_, current) = c.require_prev().unwrap();
        let got: Vec<String> = addresses("net1", &current)
            .unwrap()
            .iter()
            .map(|ip| ip.address.0.to_string())
            .collect();
        assert_eq!(got, ["10.240.1.2/24", "10.240.2.2/24", "10.240.3.2/24"]);
        let none = conf(r#"{"cniVersion":"1.0.0","prevResult":{"cniVersion":"1.0.0"}}"#);
        let (_, current) = none.require_prev().unwrap();
        assert_eq!(
            addresses("net1", &current).unwrap_err().msg,
            "No IP addresses supplied on interface: net1"
        );
        let e = conf(r#"{"cniVersion":"1.0.0"}"#)
            .require_prev()
            .unwrap_err();
        assert_eq!(e.msg, "This plugin must be called as chained plugin");
    }
}
