//! Result types of every spec version and the conversions between them.
//!
//! Three wire shapes exist: 0.1.0/0.2.0 (`ip4`/`ip6`), 0.3.x/0.4.0
//! (`interfaces`, `ips` with `version`) and 1.x. Each has its own struct so
//! that (de)serialisation is exact; [`CniResult`] holds any of them and
//! converts along the reference's rules. Plugins build a [`Result1`] and let
//! skel convert it to the config's version.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use ipnetwork::IpNetwork;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;
use crate::gojson;
use crate::version::{self, Family};

/// An address with its prefix length, keeping host bits (`10.1.2.3/24`),
/// like the reference's `types.IPNet`. A bare address without `/` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr(pub IpNetwork);

impl Cidr {
    pub fn ip(&self) -> IpAddr {
        self.0.ip()
    }
    pub fn prefix(&self) -> u8 {
        self.0.prefix()
    }
    pub fn is_ipv4(&self) -> bool {
        self.0.is_ipv4()
    }
    /// The network containing this address (host bits cleared).
    pub fn network(&self) -> Cidr {
        Cidr(IpNetwork::new(self.0.network(), self.0.prefix()).unwrap_or(self.0))
    }
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let Some((addr, prefix)) = s.split_once('/') else {
            return Err(format!("invalid CIDR address: {s}"));
        };
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| format!("invalid CIDR address: {s}"))?;
        if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("invalid CIDR address: {s}"));
        }
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| format!("invalid CIDR address: {s}"))?;
        IpNetwork::new(ip, prefix)
            .map(Cidr)
            .map_err(|_| format!("invalid CIDR address: {s}"))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.0.ip(), self.0.prefix())
    }
}

impl Serialize for Cidr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cidr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(D::Error::custom)
    }
}

/// An optional IP where `""` and `null` mean absent, as Go's `net.IP` treats them.
mod opt_ip {
    use super::*;
    pub fn serialize<S: Serializer>(ip: &Option<IpAddr>, s: S) -> Result<S::Ok, S::Error> {
        match ip {
            Some(ip) => s.collect_str(ip),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IpAddr>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) if s.is_empty() => Ok(None),
            Some(s) => s
                .parse()
                .map(Some)
                .map_err(|_| D::Error::custom(format!("invalid IP address: {s}"))),
        }
    }
}

/// `null` decodes as the default value, as in Go.
pub fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// DNS settings. Fields are declared in Go's sorted map order so that the
/// 1.x output is key-sorted like the newest reference.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename = "types.DNS")]
pub struct Dns {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub domain: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub nameservers: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub options: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub search: Vec<String>,
}

impl Dns {
    pub fn is_empty(&self) -> bool {
        self.domain.is_empty()
            && self.nameservers.is_empty()
            && self.options.is_empty()
            && self.search.is_empty()
    }
}

/// A route (shared by every version; 0.1/0.2 keep only `dst` and `gw`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_zero"
    )]
    pub advmss: i64,
    pub dst: Cidr,
    #[serde(default, with = "opt_ip", skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_zero"
    )]
    pub mtu: i64,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_zero"
    )]
    pub priority: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<i64>,
}

impl Route {
    pub fn new(dst: Cidr, gw: Option<IpAddr>) -> Route {
        Route {
            advmss: 0,
            dst,
            gw,
            mtu: 0,
            priority: 0,
            scope: None,
            table: None,
        }
    }
}

// ---------------------------------------------------------------- 1.x

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub mac: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_zero"
    )]
    pub mtu: i64,
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    #[serde(
        rename = "pciID",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub pci_id: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub sandbox: String,
    #[serde(
        rename = "socketPath",
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub socket_path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig {
    pub address: Cidr,
    #[serde(default, with = "opt_ip", skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
}

/// The 1.0.0/1.1.0 result; the superset every plugin builds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Result1 {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    pub cni_version: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Dns::is_empty"
    )]
    pub dns: Dns,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub interfaces: Vec<Interface>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ips: Vec<IpConfig>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub routes: Vec<Route>,
}

// ---------------------------------------------------------- 0.3.x / 0.4.0

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface04 {
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub mac: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub sandbox: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig04 {
    #[serde(default, deserialize_with = "null_default")]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
    pub address: Cidr,
    #[serde(default, with = "opt_ip", skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
}

/// A route in the 0.x struct order (`dst`, `gw`, then the rest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route0 {
    pub dst: Cidr,
    #[serde(default, with = "opt_ip", skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_zero"
    )]
    pub mtu: i64,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_zero"
    )]
    pub advmss: i64,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "is_zero"
    )]
    pub priority: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<i64>,
}

impl From<Route> for Route0 {
    fn from(r: Route) -> Route0 {
        Route0 {
            dst: r.dst,
            gw: r.gw,
            mtu: r.mtu,
            advmss: r.advmss,
            priority: r.priority,
            table: r.table,
            scope: r.scope,
        }
    }
}

impl From<Route0> for Route {
    fn from(r: Route0) -> Route {
        Route {
            advmss: r.advmss,
            dst: r.dst,
            gw: r.gw,
            mtu: r.mtu,
            priority: r.priority,
            scope: r.scope,
            table: r.table,
        }
    }
}

/// DNS in the 0.x struct order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dns0 {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub nameservers: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub domain: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub search: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub options: Vec<String>,
}

impl From<Dns> for Dns0 {
    fn from(d: Dns) -> Dns0 {
        Dns0 {
            nameservers: d.nameservers,
            domain: d.domain,
            search: d.search,
            options: d.options,
        }
    }
}

impl From<Dns0> for Dns {
    fn from(d: Dns0) -> Dns {
        Dns {
            domain: d.domain,
            nameservers: d.nameservers,
            options: d.options,
            search: d.search,
        }
    }
}

/// The 0.3.0/0.3.1/0.4.0 result. `dns` is always printed, as by the reference.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Result04 {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    pub cni_version: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub interfaces: Vec<Interface04>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ips: Vec<IpConfig04>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub routes: Vec<Route0>,
    #[serde(default, deserialize_with = "null_default")]
    pub dns: Dns0,
}

// ---------------------------------------------------------- 0.1.0 / 0.2.0

/// A 0.1/0.2 route keeps only `dst` and `gw`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route02 {
    pub dst: Cidr,
    #[serde(default, with = "opt_ip", skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig02 {
    pub ip: Cidr,
    #[serde(default, with = "opt_ip", skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub routes: Vec<Route02>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Result02 {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    pub cni_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip4: Option<IpConfig02>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip6: Option<IpConfig02>,
    #[serde(default, deserialize_with = "null_default")]
    pub dns: Dns0,
}

// ------------------------------------------------------------ any version

/// A result in any spec version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CniResult {
    V02(Result02),
    V04(Result04),
    V1(Result1),
}

impl From<Result1> for CniResult {
    fn from(r: Result1) -> Self {
        CniResult::V1(r)
    }
}

impl CniResult {
    /// Parse a result, using its own `cniVersion` label, or `default_version`
    /// when the label is missing (as libcni's `fixupResultVersion` does).
    pub fn parse(json: &serde_json::Value, default_version: &str) -> Result<CniResult, Error> {
        let label = match json.get("cniVersion") {
            Some(serde_json::Value::String(s)) if !s.is_empty() => s.clone(),
            Some(serde_json::Value::String(_)) | Some(serde_json::Value::Null) | None => {
                default_version.to_string()
            }
            Some(other) => {
                return Err(Error::new(
                    crate::error::code::DECODING_FAILURE,
                    format!("failed to decode result: cniVersion {other} is not a string"),
                ));
            }
        };
        let family = version::family(&label)
            .ok_or_else(|| Error::internal(format!("unsupported CNI result version {label:?}")))?;
        // Go decodes results like any JSON: keys match case-insensitively.
        let decode_err = |e: crate::gojson::DecodeError| {
            Error::new(
                crate::error::code::DECODING_FAILURE,
                format!("failed to decode result: {e}"),
            )
        };
        let label = if label.is_empty() {
            "0.1.0".to_string()
        } else {
            label
        };
        Ok(match family {
            Family::V02 => {
                let mut r: Result02 = crate::gojson::from_value(json).map_err(decode_err)?;
                r.cni_version = label;
                CniResult::V02(r)
            }
            Family::V04 => {
                let mut r: Result04 = crate::gojson::from_value(json).map_err(decode_err)?;
                r.cni_version = label;
                CniResult::V04(r)
            }
            Family::V1 => {
                let mut r: Result1 = crate::gojson::from_value(json).map_err(decode_err)?;
                r.cni_version = label;
                CniResult::V1(r)
            }
        })
    }

    /// Parse from bytes; see [`CniResult::parse`].
    pub fn parse_bytes(bytes: &[u8], default_version: &str) -> Result<CniResult, Error> {
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            Error::new(
                crate::error::code::DECODING_FAILURE,
                format!("failed to decode result: {e}"),
            )
        })?;
        CniResult::parse(&v, default_version)
    }

    pub fn version(&self) -> &str {
        match self {
            CniResult::V02(r) => &r.cni_version,
            CniResult::V04(r) => &r.cni_version,
            CniResult::V1(r) => &r.cni_version,
        }
    }

    /// Convert to `to` (`""` means 0.1.0), following the reference converters.
    pub fn convert(self, to: &str) -> Result<CniResult, Error> {
        let to = if to.is_empty() { "0.1.0" } else { to };
        let target = version::family(to)
            .ok_or_else(|| Error::internal(format!("unsupported CNI result version {to:?}")))?;
        let out = match (self, target) {
            (CniResult::V02(mut r), Family::V02) => {
                r.cni_version = to.into();
                CniResult::V02(r)
            }
            (CniResult::V04(mut r), Family::V04) => {
                r.cni_version = to.into();
                CniResult::V04(r)
            }
            (CniResult::V1(mut r), Family::V1) => {
                r.cni_version = to.into();
                CniResult::V1(r)
            }
            (CniResult::V02(r), Family::V04) => CniResult::V04(v02_to_v04(r, to)),
            (CniResult::V02(r), Family::V1) => CniResult::V1(v04_to_v1(v02_to_v04(r, to), to)),
            (CniResult::V04(r), Family::V02) => CniResult::V02(v04_to_v02(r, to)?),
            (CniResult::V04(r), Family::V1) => CniResult::V1(v04_to_v1(r, to)),
            (CniResult::V1(r), Family::V04) => CniResult::V04(v1_to_v04(r, to)),
            (CniResult::V1(r), Family::V02) => CniResult::V02(v04_to_v02(v1_to_v04(r, to), to)?),
        };
        Ok(out)
    }

    /// Convert to the 1.x superset (labelled `to`, which must be 1.x-family,
    /// typically 1.1.0) for plugins to work on.
    pub fn into_v1(self) -> Result<Result1, Error> {
        let label = match &self {
            CniResult::V1(r) => r.cni_version.clone(),
            _ => version::CURRENT.to_string(),
        };
        match self.convert(&label)? {
            CniResult::V1(r) => Ok(r),
            _ => Err(Error::internal("result conversion to 1.x failed")),
        }
    }

    /// The JSON value in the shape of the result's own version.
    pub fn to_value(&self) -> serde_json::Value {
        let v = match self {
            CniResult::V02(r) => serde_json::to_value(r),
            CniResult::V04(r) => serde_json::to_value(r),
            CniResult::V1(r) => serde_json::to_value(r),
        };
        v.unwrap_or(serde_json::Value::Null)
    }

    /// What the reference's `PrintResult` writes: Go's `MarshalIndent`
    /// with four spaces, no trailing newline. 0.x keeps struct order; 1.x
    /// fields are declared in sorted order.
    pub fn to_json_pretty(&self) -> String {
        match self {
            CniResult::V02(r) => gojson::marshal_indent(r),
            CniResult::V04(r) => gojson::marshal_indent(r),
            CniResult::V1(r) => gojson::marshal_indent(r),
        }
    }

    /// Go's `json.Marshal` of the result (what noop's PASSTHROUGH prints).
    pub fn to_json_compact(&self) -> String {
        match self {
            CniResult::V02(r) => gojson::marshal(r),
            CniResult::V04(r) => gojson::marshal(r),
            CniResult::V1(r) => gojson::marshal(r),
        }
    }
}

fn family_str(ip: IpAddr) -> &'static str {
    match ip {
        IpAddr::V4(_) => "4",
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => "4",
        IpAddr::V6(_) => "6",
    }
}

fn v02_to_v04(r: Result02, to: &str) -> Result04 {
    let mut out = Result04 {
        cni_version: to.into(),
        dns: r.dns,
        ..Default::default()
    };
    for (ver, ipc) in [("4", r.ip4), ("6", r.ip6)] {
        if let Some(ipc) = ipc {
            out.ips.push(IpConfig04 {
                version: ver.into(),
                interface: None,
                address: ipc.ip,
                gateway: ipc.gateway,
            });
            out.routes.extend(ipc.routes.into_iter().map(|rt| Route0 {
                dst: rt.dst,
                gw: rt.gw,
                mtu: 0,
                advmss: 0,
                priority: 0,
                table: None,
                scope: None,
            }));
        }
    }
    out
}

fn v04_to_v02(r: Result04, to: &str) -> Result<Result02, Error> {
    let mut out = Result02 {
        cni_version: to.into(),
        dns: r.dns,
        ..Default::default()
    };
    for ip in &r.ips {
        let slot = match ip.version.as_str() {
            "4" => &mut out.ip4,
            "6" => &mut out.ip6,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(IpConfig02 {
                ip: ip.address,
                gateway: ip.gateway,
                routes: Vec::new(),
            });
        }
    }
    if out.ip4.is_none() && out.ip6.is_none() {
        return Err(Error::internal("cannot convert: no valid IP addresses"));
    }
    for rt in r.routes {
        let slot = if family_str(rt.dst.ip()) == "4" {
            &mut out.ip4
        } else {
            &mut out.ip6
        };
        if let Some(ipc) = slot {
            ipc.routes.push(Route02 {
                dst: rt.dst,
                gw: rt.gw,
            });
        }
    }
    Ok(out)
}

fn v04_to_v1(r: Result04, to: &str) -> Result1 {
    Result1 {
        cni_version: to.into(),
        dns: r.dns.into(),
        interfaces: r
            .interfaces
            .into_iter()
            .map(|i| Interface {
                mac: i.mac,
                name: i.name,
                sandbox: i.sandbox,
                ..Default::default()
            })
            .collect(),
        ips: r
            .ips
            .into_iter()
            .map(|ip| IpConfig {
                address: ip.address,
                gateway: ip.gateway,
                interface: ip.interface,
            })
            .collect(),
        routes: r.routes.into_iter().map(Route::from).collect(),
    }
}

fn v1_to_v04(r: Result1, to: &str) -> Result04 {
    Result04 {
        cni_version: to.into(),
        interfaces: r
            .interfaces
            .into_iter()
            .map(|i| Interface04 {
                name: i.name,
                mac: i.mac,
                sandbox: i.sandbox,
            })
            .collect(),
        ips: r
            .ips
            .into_iter()
            .map(|ip| IpConfig04 {
                version: family_str(ip.address.ip()).into(),
                interface: ip.interface,
                address: ip.address,
                gateway: ip.gateway,
            })
            .collect(),
        routes: r.routes.into_iter().map(Route0::from).collect(),
        dns: r.dns.into(),
    }
}

#[cfg(test)]
mod tests;
