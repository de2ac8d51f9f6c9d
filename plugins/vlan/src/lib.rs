//! The `vlan` plugin: an 802.1Q VLAN link (`vlanId`) on a parent
//! ("master") interface, in the container under `CNI_IFNAME`, with IPAM's
//! addresses. The rest is `cni_attach::onelink`, shared with macvlan,
//! ipvlan and dummy.

pub use cni_attach::error;

use cni_attach::onelink::{self, Addressing, Attachment, Expect, Links};
use cni_net::link::ETH_P_8021Q;
use cni_net::{Kind, Link};
use serde::Deserialize;
use skel::CmdArgs;
use skel::types::{Dns, Result1, null_default};

use crate::error::Error;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Main = cni_attach::Main {
    name: "vlan",
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
    pub master: String,
    /// 0–4094 (0: priority tagged).
    pub vlan_id: u16,
    /// Checked against the master's by ADD; 0 is the master's.
    pub mtu: i64,
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
    #[serde(rename = "vlanId", default, deserialize_with = "null_default")]
    vlan_id: i64,
    #[serde(default, deserialize_with = "null_default")]
    mtu: i64,
    #[serde(rename = "linkInContainer", default, deserialize_with = "null_default")]
    link_in_container: bool,
}

impl Config {
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        let nc: NetConf = skel::gojson::unmarshal(stdin)
            .map_err(|e| Error::decode(format!("failed to load netconf: {e}")))?;
        if nc.master.is_empty() {
            return Err(Error::config(
                "\"master\" field is required. It specifies the host interface name to create \
                 the VLAN for",
            ));
        }
        // The reference's message names 4095; its check, and the kernel,
        // stop at 4094.
        let vlan_id = u16::try_from(nc.vlan_id)
            .ok()
            .filter(|id| *id <= 4094)
            .ok_or_else(|| {
                Error::config(format!(
                    "invalid VLAN ID {} (must be between 0 and 4095 inclusive)",
                    nc.vlan_id
                ))
            })?;
        Ok(Config {
            cni_version: nc.cni_version,
            ipam_type: nc.ipam.plugin_type,
            dns: nc.dns,
            master: nc.master,
            vlan_id,
            mtu: nc.mtu,
            link_in_container: nc.link_in_container,
        })
    }
}

fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let c = Config::parse(&args.stdin)?;
    if c.ipam_type.is_empty() {
        // Refused before the link exists (the reference leaves it behind).
        return Err(Error::config(
            "failed to execute IPAM delegate: no plugin name provided",
        ));
    }
    let links = Links::open(args)?;
    let master = onelink::master(&links, Some(&c.master), c.link_in_container)?;
    onelink::check_mtu(&master, c.mtu)?;
    let a = Attachment {
        plugin: "vlan",
        kind: Kind::Vlan {
            id: c.vlan_id,
            protocol: ETH_P_8021Q,
        },
        master: Some(&master),
        in_container: c.link_in_container,
        mtu: c.mtu as u32,
        mac: None,
        addressing: Addressing::Ipam(c.ipam_type.clone()),
        announce: None,
        dns: Some(c.dns.clone()),
        cni_version: &c.cni_version,
    };
    onelink::add(args, &links, &a)
}

fn check(args: &CmdArgs) -> Result<(), Error> {
    let c = Config::parse(&args.stdin)?;
    let verify = |l: &Link| {
        if let Kind::Vlan { id, .. } = l.kind
            && id != c.vlan_id
        {
            // The reference's words, copied from tuning's.
            return Err(Error::internal(format!(
                "Error: Tuning link {} configured promisc is {}, current value is {id}",
                l.name, c.vlan_id
            )));
        }
        if c.mtu != 0 && c.mtu != i64::from(l.mtu) {
            return Err(Error::internal(format!(
                "Error: Tuning configured MTU of {} is {}, current value is {}",
                l.name, c.mtu, l.mtu
            )));
        }
        Ok(())
    };
    let words = onelink::Words {
        prev_missing: "vlan: Required prevResult missing",
        not_found: "vlan: Container",
        mac: "vlan: Interface",
        ..onelink::UPPER
    };
    onelink::check(
        args,
        &Expect {
            ipam_type: &c.ipam_type,
            words,
            kind: "vlan",
            master: Some((&c.master, c.link_in_container)),
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
    fn keys_and_the_references_refusals() {
        let c =
            parse(r#"{"master":"eth9","vlanId":4094,"mtu":1400,"linkInContainer":true}"#).unwrap();
        assert_eq!((c.master.as_str(), c.vlan_id, c.mtu), ("eth9", 4094, 1400));
        assert!(c.link_in_container);
        assert_eq!(parse(r#"{"master":"eth9"}"#).unwrap().vlan_id, 0);
        let cases = [
            (
                r#"{"vlanId":5}"#,
                "\"master\" field is required. It specifies the host interface name to create \
                 the VLAN for",
            ),
            (
                r#"{"master":"eth9","vlanId":4095}"#,
                "invalid VLAN ID 4095 (must be between 0 and 4095 inclusive)",
            ),
            (
                r#"{"master":"eth9","vlanId":-1}"#,
                "invalid VLAN ID -1 (must be between 0 and 4095 inclusive)",
            ),
        ];
        for (conf, msg) in cases {
            let e = parse(conf).unwrap_err();
            assert_eq!((e.code, e.msg.as_str()), (7, msg), "{conf}");
        }
    }
}
