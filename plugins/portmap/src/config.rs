//! The plugin's stdin (the reference's `PortMapConf`), decoded as Go does
//! (`skel::gojson`: keys matched case-insensitively, so containerd's
//! `HostPort`/`ContainerPort`/`Protocol`/`HostIP` are read; unknown keys
//! ignored) and validated in the reference's order with its messages:
//! `prevResult`, the mark options, the backend and its options, the ports.
//! Then, what the reference leaves to iptables to refuse half-way through
//! ADD (a port above 65535, a protocol other than tcp/udp/sctp, a `hostIP`
//! that is not an address) is refused here, before anything changes.
//!
//! The backend itself is chosen by `cni-firewall` ([`select::portmap`]);
//! the node is asked only when a call needs the answer.

use std::net::IpAddr;
use std::path::PathBuf;

use cni_firewall::{Backend, Probe, select};
use cni_net::IpNetwork;
use cni_net::nftables::L4Proto;
use serde::Deserialize;
use skel::types::null_default;
use skel::{CniResult, Error};

/// Where ADD records each attachment (see [`crate::record`]).
pub const DEFAULT_DATA_DIR: &str = "/run/cni/portmap";

/// The reference's default mark bit (Kubernetes uses 14 and 15).
const DEFAULT_MARK_BIT: i64 = 13;

/// One port mapping, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub host_port: u16,
    pub container_port: u16,
    /// As configured (iptables groups entry rules by it).
    pub protocol: String,
    pub proto: L4Proto,
    /// `None`: any local address (also for `0.0.0.0` and `::`).
    pub host_ip: Option<IpAddr>,
    /// `hostIP` was given (unspecified or not): the mapping is only for
    /// that address's family.
    pub family: Option<bool>,
}

impl Mapping {
    /// Whether the mapping applies to the container address family
    /// (`true`: IPv6).
    pub fn applies(&self, v6: bool) -> bool {
        self.family.is_none_or(|f| f == v6)
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub cni_version: String,
    pub name: String,
    pub prev_result: Option<CniResult>,
    pub mappings: Vec<Mapping>,
    pub snat: bool,
    pub masq_all: bool,
    /// `1 << markMasqBit`.
    pub mark: u32,
    pub external_set_mark_chain: Option<String>,
    pub conditions_v4: Vec<String>,
    pub conditions_v6: Vec<String>,
    /// `backend` as configured.
    pub backend: Option<String>,
    pub data_dir: PathBuf,
}

#[derive(Deserialize)]
#[serde(rename = "main.PortMapEntry")]
struct RawMapping {
    #[serde(rename = "hostPort", default, deserialize_with = "null_default")]
    host_port: i64,
    #[serde(rename = "containerPort", default, deserialize_with = "null_default")]
    container_port: i64,
    #[serde(default, deserialize_with = "null_default")]
    protocol: String,
    #[serde(rename = "hostIP", default, deserialize_with = "null_default")]
    host_ip: String,
}

#[derive(Deserialize, Default)]
#[serde(rename = "main.RuntimeConfig")]
struct RawRuntime {
    #[serde(rename = "portMappings", default, deserialize_with = "null_default")]
    port_mappings: Vec<RawMapping>,
}

#[derive(Deserialize)]
#[serde(rename = "main.PortMapConf")]
struct Raw {
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    snat: Option<bool>,
    #[serde(rename = "conditionsV4", default)]
    conditions_v4: Option<Vec<String>>,
    #[serde(rename = "conditionsV6", default)]
    conditions_v6: Option<Vec<String>>,
    #[serde(rename = "masqAll", default, deserialize_with = "null_default")]
    masq_all: bool,
    #[serde(rename = "markMasqBit", default)]
    mark_masq_bit: Option<i64>,
    #[serde(rename = "runtimeConfig", default, deserialize_with = "null_default")]
    runtime_config: RawRuntime,
    #[serde(rename = "externalSetMarkChain", default)]
    external_set_mark_chain: Option<String>,
    #[serde(rename = "dataDir", default)]
    data_dir: Option<String>,
}

impl Config {
    /// Decode and validate everything that needs no answer from the node
    /// (the messages are the reference's, unwrapped; ADD and DEL prefix
    /// them with `failed to parse config: `).
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        let fail = |e: skel::gojson::DecodeError| {
            Error::internal(format!("failed to parse network configuration: {e}"))
        };
        let doc = skel::gojson::parse(stdin).map_err(fail)?;
        let net: skel::conf::NetConf = skel::gojson::from_value(&doc).map_err(fail)?;
        let raw: Raw = skel::gojson::from_value(&doc).map_err(fail)?;
        let prev_result = net.prev_result().map_err(|e| Error::internal(e.msg))?;
        if raw.mark_masq_bit.is_some() && raw.external_set_mark_chain.is_some() {
            return Err(Error::internal(
                "Cannot specify externalSetMarkChain and markMasqBit",
            ));
        }
        let bit = raw.mark_masq_bit.unwrap_or(DEFAULT_MARK_BIT);
        if !(0..=31).contains(&bit) {
            return Err(Error::internal("MasqMarkBit must be between 0 and 31"));
        }
        Ok(Config {
            cni_version: net.cni_version,
            name: net.name,
            prev_result,
            mappings: Vec::new(),
            snat: raw.snat.unwrap_or(true),
            masq_all: raw.masq_all,
            mark: 1 << bit,
            external_set_mark_chain: raw.external_set_mark_chain,
            conditions_v4: raw.conditions_v4.unwrap_or_default(),
            conditions_v6: raw.conditions_v6.unwrap_or_default(),
            backend: raw.backend,
            data_dir: PathBuf::from(raw.data_dir.unwrap_or_else(|| DEFAULT_DATA_DIR.into())),
        })
        .and_then(|c| c.with_mappings(raw.runtime_config.port_mappings))
    }

    /// The backend for this call (`None`: unset, and nothing needs it):
    /// the reference's choice and option check. `need` says the call
    /// installs rules (ADD with mappings).
    pub fn backend(&self, need: bool, probe: &dyn Probe) -> Result<Option<Backend>, Error> {
        let opts = select::PortmapOptions {
            external_set_mark_chain: self.external_set_mark_chain.is_some(),
            conditions_v4: &self.conditions_v4,
            conditions_v6: &self.conditions_v6,
        };
        let b = select::portmap(self.backend.as_deref(), &opts, need, probe)
            .map_err(|e| Error::internal(e.to_string()))?;
        if b == Some(Backend::Nftables) {
            // nftables conditions are checked before anything changes.
            for v6 in [false, true] {
                crate::nft::conditions(self.conditions(v6), v6)?;
            }
        }
        Ok(b)
    }

    /// Whether options of a backend are set, so choosing one needs the
    /// node's answer even when nothing is installed.
    pub fn has_backend_options(&self) -> bool {
        self.external_set_mark_chain.is_some()
            || select::conditions_backend(&self.conditions_v4).is_some()
            || select::conditions_backend(&self.conditions_v6).is_some()
    }

    pub fn conditions(&self, v6: bool) -> &[String] {
        if v6 {
            &self.conditions_v6
        } else {
            &self.conditions_v4
        }
    }

    /// The mappings, checked: the reference's port messages first (for
    /// every entry, as it does), then ours.
    fn with_mappings(mut self, raw: Vec<RawMapping>) -> Result<Config, Error> {
        for m in &raw {
            if m.container_port <= 0 {
                return Err(Error::internal(format!(
                    "Invalid container port number: {}",
                    m.container_port
                )));
            }
            if m.host_port <= 0 {
                return Err(Error::internal(format!(
                    "Invalid host port number: {}",
                    m.host_port
                )));
            }
        }
        self.mappings = raw.iter().map(mapping).collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// The first IPv4 and the first IPv6 address of the container's
    /// interface in `prevResult` (the reference's selection: entries
    /// naming another interface, or one outside a sandbox, are skipped;
    /// entries without an interface are taken), with their prefix.
    pub fn container_addrs(&self, ifname: &str) -> Result<Vec<IpNetwork>, Error> {
        let Some(prev) = &self.prev_result else {
            return Ok(Vec::new());
        };
        let r = cni_attach::chained::current(prev)?;
        let mut out: Vec<IpNetwork> = Vec::new();
        for ip in &r.ips {
            let a = ip.address.0;
            if out.iter().any(|o| o.is_ipv6() == a.is_ipv6()) {
                continue;
            }
            let foreign = ip
                .interface
                .and_then(|i| r.interfaces.get(i))
                .is_some_and(|i| i.name != ifname || i.sandbox.is_empty());
            if !foreign {
                out.push(a);
            }
        }
        Ok(out)
    }
}

/// One entry, checked where the reference leaves it to iptables to fail
/// after the chains were made.
fn mapping(m: &RawMapping) -> Result<Mapping, Error> {
    let port = |what: &str, v: i64| {
        u16::try_from(v).map_err(|_| Error::internal(format!("Invalid {what} port number: {v}")))
    };
    let proto = match m.protocol.to_ascii_lowercase().as_str() {
        "tcp" => L4Proto::Tcp,
        "udp" => L4Proto::Udp,
        "sctp" => L4Proto::Sctp,
        _ => {
            return Err(Error::internal(format!(
                "unsupported protocol {} (tcp, udp or sctp)",
                skel::gojson::quote(&m.protocol)
            )));
        }
    };
    let (host_ip, family) = if m.host_ip.is_empty() {
        (None, None)
    } else {
        let ip: IpAddr = m.host_ip.parse().map_err(|_| {
            Error::internal(format!(
                "invalid hostIP {}",
                skel::gojson::quote(&m.host_ip)
            ))
        })?;
        let ip = canonical(ip);
        let family = Some(ip.is_ipv6());
        ((!ip.is_unspecified()).then_some(ip), family)
    };
    Ok(Mapping {
        host_port: port("host", m.host_port)?,
        container_port: port("container", m.container_port)?,
        protocol: m.protocol.clone(),
        proto,
        host_ip,
        family,
    })
}

/// An IPv4-mapped IPv6 address is IPv4, as Go's `To4` sees it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The protocol's lowercase name, as nft and `iptables-save` write it.
pub fn proto_name(p: L4Proto) -> &'static str {
    match p {
        L4Proto::Tcp => "tcp",
        L4Proto::Udp => "udp",
        L4Proto::Sctp => "sctp",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, Error> {
        Config::parse(s.as_bytes())
    }

    #[test]
    fn keys_defaults_and_go_casing() {
        let c = parse(
            r#"{"cniVersion":"1.0.0","name":"n","type":"portmap","runtimeConfig":{"portMappings":[
                {"HostPort":8080,"ContainerPort":80,"Protocol":"TCP","HostIP":"10.240.0.1"},
                {"hostPort":53,"containerPort":53,"protocol":"udp","hostIP":"::"},
                {"hostPort":9090,"containerPort":90,"protocol":"sctp"}]}}"#,
        )
        .unwrap();
        assert!(c.snat && !c.masq_all);
        assert_eq!(c.mark, 0x2000);
        assert_eq!(c.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
        let [a, b, d] = &c.mappings[..] else {
            panic!("{:?}", c.mappings)
        };
        assert_eq!(
            (a.host_port, a.container_port, a.proto),
            (8080, 80, L4Proto::Tcp)
        );
        assert_eq!(a.host_ip, Some("10.240.0.1".parse().unwrap()));
        assert!(a.applies(false) && !a.applies(true));
        assert_eq!((b.host_ip, b.family), (None, Some(true)));
        assert!(d.applies(false) && d.applies(true));
        let c = parse(r#"{"name":"n","snat":false,"markMasqBit":0,"masqAll":true}"#).unwrap();
        assert!(!c.snat && c.masq_all && c.mappings.is_empty());
        assert_eq!(c.mark, 1);
        assert_eq!(
            parse(r#"{"name":"n","markMasqBit":31}"#).unwrap().mark,
            1 << 31
        );
    }

    #[test]
    fn reference_messages_in_reference_order() {
        let msg = |s: &str| parse(s).unwrap_err().msg;
        assert!(msg("{").starts_with("failed to parse network configuration: "));
        assert_eq!(
            msg(r#"{"name":"n","markMasqBit":3,"externalSetMarkChain":"X"}"#),
            "Cannot specify externalSetMarkChain and markMasqBit"
        );
        assert_eq!(
            msg(r#"{"name":"n","markMasqBit":32}"#),
            "MasqMarkBit must be between 0 and 31"
        );
        assert_eq!(
            msg(
                r#"{"name":"n","runtimeConfig":{"portMappings":[{"hostPort":1,"containerPort":0}]}}"#
            ),
            "Invalid container port number: 0"
        );
        assert_eq!(
            msg(
                r#"{"name":"n","runtimeConfig":{"portMappings":[{"hostPort":-1,"containerPort":1}]}}"#
            ),
            "Invalid host port number: -1"
        );
        assert!(
            msg(r#"{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[{"address":"x"}]}}"#)
                .starts_with("could not parse prevResult")
        );
        let pm = |m: &str| format!(r#"{{"name":"n","runtimeConfig":{{"portMappings":[{m}]}}}}"#);
        assert_eq!(
            msg(&pm(
                r#"{"hostPort":70000,"containerPort":1,"protocol":"tcp"}"#
            )),
            "Invalid host port number: 70000"
        );
        assert_eq!(
            msg(&pm(r#"{"hostPort":1,"containerPort":1,"protocol":"icmp"}"#)),
            "unsupported protocol \"icmp\" (tcp, udp or sctp)"
        );
        assert_eq!(
            msg(&pm(
                r#"{"hostPort":1,"containerPort":1,"protocol":"tcp","hostIP":"x"}"#
            )),
            "invalid hostIP \"x\""
        );
    }

    #[test]
    fn container_addresses_as_the_reference_selects_them() {
        let c = parse(
            r#"{"cniVersion":"1.0.0","name":"n","prevResult":{"cniVersion":"1.0.0",
              "interfaces":[{"name":"cni0"},{"name":"eth0","sandbox":"/run/netns/x"},{"name":"eth1","sandbox":"/x"}],
              "ips":[{"address":"10.240.0.1/24","interface":0},{"address":"10.240.1.2/24","interface":2},
                     {"address":"10.240.0.3/24","interface":1},{"address":"10.240.0.4/24","interface":1},
                     {"address":"fd40::3/64"},{"address":"fd40::4/64","interface":1}]}}"#,
        )
        .unwrap();
        let a = c.container_addrs("eth0").unwrap();
        let s: Vec<String> = a.iter().map(|n| n.to_string()).collect();
        assert_eq!(s, ["10.240.0.3/24", "fd40::3/64"]);
        // An out-of-range interface index is taken.
        let c = parse(
            r#"{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[{"address":"10.240.0.9/24","interface":7}]}}"#,
        )
        .unwrap();
        assert_eq!(c.container_addrs("eth0").unwrap().len(), 1);
        assert!(
            parse(r#"{"name":"n"}"#)
                .unwrap()
                .container_addrs("eth0")
                .unwrap()
                .is_empty()
        );
    }
}
