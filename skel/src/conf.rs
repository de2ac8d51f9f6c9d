//! The parts of the stdin configuration every plugin shares.

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, code};
use crate::gojson;
use crate::types::{CniResult, Dns, null_default};

/// Common keys of a plugin's stdin config (the reference's `types.NetConf`).
/// Plugins usually parse their own struct too; this one is for the shared
/// pieces, decoded by Go's rules ([`gojson`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename = "types.NetConf")]
pub struct NetConf {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    pub cni_version: String,
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    #[serde(rename = "type", default, deserialize_with = "null_default")]
    pub plugin_type: String,
    #[serde(default, deserialize_with = "null_default")]
    pub ipam: Ipam,
    #[serde(default, deserialize_with = "null_default")]
    pub dns: Dns,
    #[serde(rename = "prevResult", default)]
    pub prev_result: Option<Value>,
    #[serde(rename = "runtimeConfig", default)]
    pub runtime_config: Option<Value>,
    #[serde(default)]
    pub args: Option<Value>,
}

/// The `ipam` object; only `type` matters to the calling plugin.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename = "types.IPAM")]
pub struct Ipam {
    #[serde(rename = "type", default, deserialize_with = "null_default")]
    pub plugin_type: String,
}

impl NetConf {
    pub fn parse(stdin: &[u8]) -> Result<NetConf, Error> {
        gojson::unmarshal(stdin).map_err(|e| {
            Error::new(
                code::DECODING_FAILURE,
                format!("failed to load netconf: {e}"),
            )
        })
    }

    /// `prevResult`, in whatever version it came, converted to the config's
    /// version. A `prevResult` without `cniVersion` is taken to be in the
    /// config's version, as the reference does.
    pub fn prev_result(&self) -> Result<Option<CniResult>, Error> {
        let Some(raw) = &self.prev_result else {
            return Ok(None);
        };
        if raw.is_null() {
            return Ok(None);
        }
        let parsed = CniResult::parse(raw, &self.cni_version)
            .map_err(|e| e.context("could not parse prevResult"))?;
        parsed.convert(&self.cni_version).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_as_go_matches_them_and_errors_read_as_go() {
        let c =
            NetConf::parse(br#"{"CNIVersion":"1.0.0","Name":"n","IPAM":{"Type":"x"}}"#).unwrap();
        assert_eq!((c.cni_version.as_str(), c.name.as_str()), ("1.0.0", "n"));
        assert_eq!(c.ipam.plugin_type, "x");
        assert_eq!(
            NetConf::parse(br#"{"ipam":{"type":1}}"#).unwrap_err().msg,
            "failed to load netconf: json: cannot unmarshal number into Go struct field IPAM.ipam.type of type string"
        );
    }

    #[test]
    fn keeps_shared_fields_and_ignores_unknown() {
        let c = NetConf::parse(
            br#"{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","x":1},
                "dns":{"nameservers":["1.1.1.1"]},"runtimeConfig":{"mac":"aa"},"args":{"cni":{}},"zzz":true}"#,
        )
        .unwrap();
        assert_eq!(c.ipam.plugin_type, "host-local");
        assert_eq!(c.dns.nameservers, vec!["1.1.1.1"]);
        assert!(c.runtime_config.is_some());
        assert!(c.prev_result().unwrap().is_none());
    }

    #[test]
    fn prev_result_of_any_version_is_converted() {
        let c = NetConf::parse(
            br#"{"cniVersion":"0.4.0","name":"n","prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.240.0.2/24"}]}}"#,
        )
        .unwrap();
        let prev = c.prev_result().unwrap().unwrap();
        assert_eq!(prev.version(), "0.4.0");
        assert_eq!(prev.to_value()["ips"][0]["version"], "4");
    }

    #[test]
    fn prev_result_without_version_takes_config_version() {
        let c = NetConf::parse(
            br#"{"cniVersion":"0.2.0","name":"n","prevResult":{"ip4":{"ip":"10.240.0.2/24"}}}"#,
        )
        .unwrap();
        let prev = c.prev_result().unwrap().unwrap();
        assert_eq!(prev.to_value()["ip4"]["ip"], "10.240.0.2/24");
    }

    #[test]
    fn bad_prev_result_is_an_error() {
        let c = NetConf::parse(
            br#"{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[{"address":"nope"}]}}"#,
        )
        .unwrap();
        assert!(
            c.prev_result()
                .unwrap_err()
                .msg
                .starts_with("could not parse prevResult")
        );
    }
}
