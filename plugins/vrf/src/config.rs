//! The plugin's stdin: `vrfname` (required, also on DEL), `table`, and
//! `prevResult`, with the reference's messages.

use serde::Deserialize;
use serde_json::Value;
use skel::gojson;
use skel::types::{CniResult, null_default};

use crate::Error;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename = "main.VRFNetConf")]
pub struct Config {
    #[serde(rename = "cniVersion", default, deserialize_with = "null_default")]
    pub cni_version: String,
    #[serde(rename = "prevResult", default)]
    pub prev_result: Option<Value>,
    #[serde(default, deserialize_with = "null_default")]
    pub vrfname: String,
    /// 0: pick one for a new VRF, accept any for an existing one.
    #[serde(default, deserialize_with = "null_default")]
    pub table: u32,
}

impl Config {
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        let c: Config = gojson::unmarshal(stdin)
            .map_err(|e| Error::internal(format!("failed to load netconf: {e}")))?;
        if c.vrfname.is_empty() {
            return Err(Error::internal(
                "configuration is expected to have a valid vrf name",
            ));
        }
        Ok(c)
    }

    /// ADD's and CHECK's `prevResult`, in the config's version (an empty
    /// one is enough), converted to the current shape once to check it.
    pub fn require_prev(&self) -> Result<CniResult, Error> {
        let net = skel::conf::NetConf {
            cni_version: self.cni_version.clone(),
            prev_result: self.prev_result.clone(),
            ..Default::default()
        };
        let prev = cni_attach::chained::require(
            cni_attach::chained::prev_result(&net)?,
            "missing prevResult from earlier plugin",
        )?;
        // Through the current shape and back, as the reference prints it.
        let current = cni_attach::chained::current(&prev)?;
        Ok(CniResult::from(current).convert(&self.cni_version)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(json: &str) -> String {
        Config::parse(json.as_bytes())
            .and_then(|c| c.require_prev().map(drop))
            .unwrap_err()
            .msg
            .clone()
    }

    #[test]
    fn keys_and_messages_are_the_references() {
        let c = Config::parse(br#"{"cniVersion":"1.0.0","vrfname":"blue","table":1001}"#).unwrap();
        assert_eq!((c.vrfname.as_str(), c.table), ("blue", 1001));
        assert_eq!(
            msg(r#"{"cniVersion":"1.0.0"}"#),
            "configuration is expected to have a valid vrf name"
        );
        assert_eq!(
            msg(r#"{"cniVersion":"1.0.0","vrfname":"blue"}"#),
            "missing prevResult from earlier plugin"
        );
        assert_eq!(
            msg(r#"{"vrfname":"blue","table":-1}"#),
            "failed to load netconf: json: cannot unmarshal number -1 into Go struct field \
             VRFNetConf.table of type uint32"
        );
        let e = Config::parse(b"{").unwrap_err();
        assert_eq!(e.code, skel::code::INTERNAL);
        assert!(e.msg.starts_with("failed to load netconf: "), "{}", e.msg);
        let ok = Config::parse(
            br#"{"cniVersion":"1.0.0","vrfname":"blue","prevResult":{"cniVersion":"1.0.0"}}"#,
        )
        .unwrap();
        assert_eq!(ok.require_prev().unwrap().version(), "1.0.0");
    }
}
