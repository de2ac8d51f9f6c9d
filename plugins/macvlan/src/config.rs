//! macvlan's stdin configuration (the reference's `NetConf`): `master`,
//! `mode`, `mtu`, `mac`, `linkInContainer`, `bcqueuelen`, the common keys;
//! the MAC also from CNI_ARGS `MAC` and `runtimeConfig.mac` (which wins).
//! Decoded as Go does (`skel::gojson`). Everything here is checked before
//! any side effect; the master, which needs the namespaces, is resolved by
//! `cni_attach::onelink::master`.

use cni_attach::mac;
use cni_net::MacvlanMode;
use serde::Deserialize;
use skel::args::{Args, Kind};
use skel::conf::Ipam;
use skel::types::{Dns, null_default};

use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub cni_version: String,
    /// `ipam.type`; empty: an L2 attachment.
    pub ipam_type: String,
    pub dns: Dns,
    /// Empty: the default route's interface.
    pub master: String,
    pub mode: MacvlanMode,
    /// Checked against the master's by ADD; 0 is the master's.
    pub mtu: i64,
    pub mac: Option<[u8; 6]>,
    pub link_in_container: bool,
    /// 0: the kernel's default.
    pub bcqueuelen: u32,
}

#[derive(Deserialize, Default)]
#[serde(rename = "main.RuntimeConfig")]
struct RuntimeConfig {
    #[serde(default, deserialize_with = "null_default")]
    mac: String,
}

/// The keys as the reference declares them.
#[derive(Deserialize)]
#[serde(rename = "main.NetConf")]
struct NetConf {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    cni_version: String,
    #[serde(default, deserialize_with = "null_default")]
    ipam: Ipam,
    #[serde(default, deserialize_with = "null_default")]
    dns: Dns,
    #[serde(default, deserialize_with = "null_default")]
    master: String,
    #[serde(default, deserialize_with = "null_default")]
    mode: String,
    #[serde(default, deserialize_with = "null_default")]
    mtu: i64,
    #[serde(default, deserialize_with = "null_default")]
    mac: String,
    #[serde(rename = "linkInContainer", default, deserialize_with = "null_default")]
    link_in_container: bool,
    #[serde(default, deserialize_with = "null_default")]
    bcqueuelen: u32,
    #[serde(rename = "runtimeConfig", default, deserialize_with = "null_default")]
    runtime_config: RuntimeConfig,
}

impl Config {
    /// The config of `stdin` with CNI_ARGS `cni_args`.
    pub fn parse(stdin: &[u8], cni_args: &str) -> Result<Config, Error> {
        let nc: NetConf = skel::gojson::unmarshal(stdin)
            .map_err(|e| Error::decode(format!("failed to load netconf: {e}")))?;
        let mode = match nc.mode.as_str() {
            "" => MacvlanMode::Bridge,
            m => MacvlanMode::from_name(m)
                .filter(|m| *m != MacvlanMode::Source)
                .ok_or_else(|| Error::config(format!("unknown macvlan mode: {m:?}")))?,
        };
        let args = Args::parse(cni_args, &[("MAC", Kind::String)]).map_err(Error::config)?;
        let mut mac = nc.mac;
        if let Some(m) = args.get("MAC").filter(|m| !m.is_empty()) {
            mac = m.to_string();
        }
        if !nc.runtime_config.mac.is_empty() {
            mac = nc.runtime_config.mac;
        }
        let mac = match mac.as_str() {
            "" => None,
            m => Some(
                mac::parse(m)
                    .map_err(|e| Error::config(format!("invalid args {m} for MAC addr: {e}")))?,
            ),
        };
        Ok(Config {
            cni_version: nc.cni_version,
            ipam_type: nc.ipam.plugin_type,
            dns: nc.dns,
            master: nc.master,
            mode,
            mtu: nc.mtu,
            mac,
            link_in_container: nc.link_in_container,
            bcqueuelen: nc.bcqueuelen,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str, args: &str) -> Result<Config, Error> {
        Config::parse(s.as_bytes(), args)
    }

    #[test]
    fn keys_and_defaults() {
        let c = parse(r#"{"cniVersion":"1.0.0","name":"n","type":"macvlan"}"#, "").unwrap();
        assert_eq!(
            (c.master.as_str(), c.mode, c.mtu),
            ("", MacvlanMode::Bridge, 0)
        );
        assert_eq!((c.mac, c.link_in_container, c.bcqueuelen), (None, false, 0));
        assert_eq!(c.ipam_type, "");
        let c = parse(
            r#"{"cniVersion":"1.0.0","name":"n","master":"eth9","mode":"passthru","mtu":1400,
                "mac":"02:00:00:00:00:01","linkInContainer":true,"bcqueuelen":100,
                "ipam":{"type":"static"},"dns":{"nameservers":["10.240.0.53"]}}"#,
            "",
        )
        .unwrap();
        assert_eq!(
            (c.master.as_str(), c.mode, c.mtu),
            ("eth9", MacvlanMode::Passthru, 1400)
        );
        assert_eq!(c.mac, Some([2, 0, 0, 0, 0, 1]));
        assert!(c.link_in_container);
        assert_eq!((c.bcqueuelen, c.ipam_type.as_str()), (100, "static"));
        assert_eq!(c.dns.nameservers, ["10.240.0.53"]);
    }

    #[test]
    fn mac_precedence_config_args_runtime_config() {
        let conf = r#"{"name":"n","mac":"02:00:00:00:00:01"}"#;
        assert_eq!(parse(conf, "").unwrap().mac, Some([2, 0, 0, 0, 0, 1]));
        let args = "IgnoreUnknown=1;MAC=02:00:00:00:00:02;K8S_POD_NAME=x";
        assert_eq!(parse(conf, args).unwrap().mac, Some([2, 0, 0, 0, 0, 2]));
        let rc =
            r#"{"name":"n","mac":"02:00:00:00:00:01","runtimeConfig":{"mac":"02:00:00:00:00:03"}}"#;
        assert_eq!(parse(rc, args).unwrap().mac, Some([2, 0, 0, 0, 0, 3]));
    }

    #[test]
    fn bad_values_in_the_references_words() {
        let cases = [
            (
                r#"{"mode":"source"}"#,
                "",
                7,
                r#"unknown macvlan mode: "source""#,
            ),
            (r#"{"mode":"x"}"#, "", 7, r#"unknown macvlan mode: "x""#),
            (
                r#"{"mac":"zz"}"#,
                "",
                7,
                "invalid args zz for MAC addr: address zz: invalid MAC address",
            ),
            (r#"{}"#, "FOO=1", 7, r#"ARGS: unknown args ["FOO=1"]"#),
        ];
        for (conf, args, code, msg) in cases {
            let e = parse(conf, args).unwrap_err();
            assert_eq!((e.code, e.msg.as_str()), (code, msg), "{conf}");
        }
        let e = parse(r#"{"mtu":"x"}"#, "").unwrap_err();
        assert_eq!(e.code, 6);
        assert!(e.msg.starts_with("failed to load netconf: "), "{}", e.msg);
    }
}
