//! The `ipvlan` plugin: an ipvlan link (mode `l2`, `l3` or `l3s`) on a
//! parent ("master") interface, in the container under `CNI_IFNAME`.
//! Without `master`, the parent is the default route's interface, or,
//! chained after a plugin whose result names exactly one interface, that
//! interface; without `ipam`, the addresses are `prevResult`'s. The rest
//! is `cni_attach::onelink`, shared with macvlan, vlan and dummy.

pub use cni_attach::error;

use cni_attach::onelink::{self, Addressing, Attachment, Expect, Links};
use cni_net::{IpvlanMode, Kind, Link};
use serde::Deserialize;
use skel::CmdArgs;
use skel::types::{Dns, Result1, null_default};

use crate::error::Error;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Main = cni_attach::Main {
    name: "ipvlan",
    since: "",
    add,
    del: onelink::del,
    check,
    status: onelink::status,
    gc: onelink::gc,
};

/// The stdin configuration (the reference's `NetConf`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub cni_version: String,
    pub ipam_type: String,
    pub dns: Dns,
    /// Empty: from `prevResult`, or the default route's interface.
    pub master: String,
    pub mode: IpvlanMode,
    /// Not bounded by the master's, as the reference; 0 (or negative, which
    /// Go does not send) is the kernel's default.
    pub mtu: u32,
    pub link_in_container: bool,
}

#[derive(Deserialize)]
#[serde(rename = "main.NetConf")]
struct NetConf {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    cni_version: String,
    #[serde(default, deserialize_with = "null_default")]
    ipam: skel::conf::Ipam,
    #[serde(default, deserialize_with = "null_default")]
    dns: Dns,
    #[serde(default, deserialize_with = "null_default")]
    master: String,
    #[serde(default, deserialize_with = "null_default")]
    mode: String,
    #[serde(default, deserialize_with = "null_default")]
    mtu: i64,
    #[serde(rename = "linkInContainer", default, deserialize_with = "null_default")]
    link_in_container: bool,
}

impl Config {
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        let nc: NetConf = skel::gojson::unmarshal(stdin)
            .map_err(|e| Error::decode(format!("failed to load netconf: {e}")))?;
        let mode = match nc.mode.as_str() {
            "" => IpvlanMode::L2,
            m => IpvlanMode::from_name(m)
                .ok_or_else(|| Error::config(format!("unknown ipvlan mode: {m:?}")))?,
        };
        Ok(Config {
            cni_version: nc.cni_version,
            ipam_type: nc.ipam.plugin_type,
            dns: nc.dns,
            master: nc.master,
            mode,
            mtu: u32::try_from(nc.mtu.max(0)).unwrap_or(u32::MAX),
            link_in_container: nc.link_in_container,
        })
    }
}

/// `prevResult` in the current shape, when there is one.
fn prev(stdin: &[u8]) -> Result<Option<Result1>, Error> {
    let net = skel::conf::NetConf::parse(stdin)?;
    match cni_attach::chained::prev_result(&net)? {
        Some(p) => Ok(Some(cni_attach::chained::current(&p)?)),
        None => Ok(None),
    }
}

/// The master's name: the config's, else the single named interface of
/// `prev`, else (none given) the default route's (empty here).
fn master_name(c: &Config, prev: Option<&Result1>) -> Result<String, Error> {
    if !c.master.is_empty() {
        return Ok(c.master.clone());
    }
    match prev.map(|p| &p.interfaces[..]) {
        None => Ok(String::new()),
        Some([only]) if !only.name.is_empty() => Ok(only.name.clone()),
        Some(_) => Err(Error::config(
            "chained master failure. PrevResult lacks a single named interface",
        )),
    }
}

fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let c = Config::parse(&args.stdin)?;
    let prev = prev(&args.stdin)?;
    let name = master_name(&c, prev.as_ref())?;
    let links = Links::open(args)?;
    let master = onelink::master(&links, Some(&name), c.link_in_container)
        .map_err(|e| e.context(format!("failed to lookup master {name:?}")))?;
    let addressing = match (c.ipam_type.as_str(), prev) {
        ("", Some(p)) if !p.ips.is_empty() => Addressing::Prev(p),
        (t, _) => Addressing::Ipam(t.to_string()),
    };
    let a = Attachment {
        plugin: "ipvlan",
        kind: Kind::Ipvlan { mode: c.mode },
        master: Some(&master),
        in_container: c.link_in_container,
        mtu: c.mtu,
        mac: None,
        addressing,
        announce: Some(true),
        dns: Some(c.dns.clone()),
        cni_version: &c.cni_version,
    };
    onelink::add(args, &links, &a)
}

fn check(args: &CmdArgs) -> Result<(), Error> {
    let c = Config::parse(&args.stdin)?;
    let verify = |l: &Link| match &l.kind {
        Kind::Ipvlan { mode } if *mode != c.mode => Err(Error::internal(format!(
            "Container IPVlan mode {} does not match expected value: {}",
            mode.name(),
            c.mode.name()
        ))),
        _ => Ok(()),
    };
    onelink::check(
        args,
        &Expect {
            ipam_type: &c.ipam_type,
            words: onelink::UPPER,
            kind: "ipvlan",
            master: Some((c.master.as_str(), c.link_in_container)).filter(|m| !m.0.is_empty()),
            verify: &verify,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, Error> {
        Config::parse(s.as_bytes())
    }

    #[test]
    fn keys_defaults_and_bad_modes() {
        let c = parse(r#"{"name":"n"}"#).unwrap();
        assert_eq!((c.mode, c.mtu, c.master.as_str()), (IpvlanMode::L2, 0, ""));
        let c =
            parse(r#"{"master":"eth9","mode":"l3s","mtu":1400,"linkInContainer":true}"#).unwrap();
        assert_eq!(
            (c.mode, c.mtu, c.master.as_str()),
            (IpvlanMode::L3s, 1400, "eth9")
        );
        assert!(c.link_in_container);
        let e = parse(r#"{"mode":"bridge"}"#).unwrap_err();
        assert_eq!(
            (e.code, e.msg.as_str()),
            (7, r#"unknown ipvlan mode: "bridge""#)
        );
    }

    #[test]
    fn master_from_a_single_named_interface_of_prev_result() {
        let c = parse(r#"{"name":"n"}"#).unwrap();
        let r = |ifs: &[&str]| Result1 {
            interfaces: ifs
                .iter()
                .map(|n| skel::types::Interface {
                    name: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        assert_eq!(master_name(&c, None).unwrap(), "");
        assert_eq!(master_name(&c, Some(&r(&["eth5"]))).unwrap(), "eth5");
        for ifs in [&[][..], &["a", "b"], &[""]] {
            let e = master_name(&c, Some(&r(ifs))).unwrap_err();
            assert_eq!(
                e.msg,
                "chained master failure. PrevResult lacks a single named interface"
            );
        }
        let named = parse(r#"{"master":"eth1"}"#).unwrap();
        assert_eq!(master_name(&named, Some(&r(&["a", "b"]))).unwrap(), "eth1");
    }
}
