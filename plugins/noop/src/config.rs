//! noop's stdin config: the shared keys, `debugFile`, `commandLog` and the
//! parsed `prevResult`, plus where the debug file is.

use serde::Deserialize;
use skel::conf::NetConf;
use skel::types::CniResult;
use skel::{Error, gojson};

use crate::extra_args;

/// The keys only noop reads (the rest of the reference's `main.NetConf`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename = "main.NetConf")]
struct NoopKeys {
    #[serde(rename = "debugFile")]
    debug_file: String,
    #[serde(rename = "commandLog")]
    command_log: String,
}

#[derive(Debug)]
pub struct Conf {
    /// `cniVersion` as written (`""` when absent).
    pub cni_version: String,
    pub debug_file: String,
    pub command_log: String,
    /// `prevResult` in its own version (not yet converted).
    pub prev_result: Option<CniResult>,
}

/// The reference's `loadConf`: the config must decode, and a `prevResult`
/// must parse. Failures are plain errors (code 999), as there.
pub fn load(stdin: &[u8]) -> Result<Conf, Error> {
    let load_err = |e: gojson::DecodeError| {
        Error::internal(format!(
            "failed to load netconf: {e} {}",
            gojson::quote(&String::from_utf8_lossy(stdin))
        ))
    };
    let doc = gojson::parse(stdin).map_err(load_err)?;
    let net: NetConf = gojson::from_value(&doc).map_err(load_err)?;
    let keys: NoopKeys = gojson::from_value(&doc).map_err(load_err)?;
    let prev_result = match &net.prev_result {
        None | Some(serde_json::Value::Null) => None,
        Some(raw) => Some(
            CniResult::parse(raw, &net.cni_version)
                .map_err(|e| Error::internal(format!("could not parse prevResult: {}", e.msg)))?,
        ),
    };
    Ok(Conf {
        cni_version: net.cni_version,
        debug_file: keys.debug_file,
        command_log: keys.command_log,
        prev_result,
    })
}

/// The reference's `getConfig`: the debug file is `DEBUG=` from CNI_ARGS,
/// else the config's `debugFile`; `""` means "no debug behaviour".
pub fn load_with_debug_path(stdin: &[u8], cni_args: &str) -> Result<(String, Conf), Error> {
    let conf = load(stdin)?;
    let extra = extra_args::parse(cni_args).map_err(Error::internal)?;
    let path = match extra.get("DEBUG") {
        Some(p) => p.clone(),
        None => conf.debug_file.clone(),
    };
    Ok((path, conf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use skel::code;

    #[test]
    fn debug_path_from_args_or_config() {
        let stdin = br#"{"cniVersion":"1.0.0","name":"n","debugFile":"/conf","commandLog":"/log"}"#;
        let (p, c) = load_with_debug_path(stdin, "DEBUG=/args;FOO=BAR").unwrap();
        assert_eq!(p, "/args");
        assert_eq!(c.command_log, "/log");
        let (p, _) = load_with_debug_path(stdin, "FOO=BAR").unwrap();
        assert_eq!(p, "/conf");
        // `DEBUG=` present but empty wins over the config, as in Go.
        let (p, _) = load_with_debug_path(stdin, "DEBUG=").unwrap();
        assert_eq!(p, "");
    }

    #[test]
    fn errors_are_plain() {
        let e = load(b"{").unwrap_err();
        assert_eq!(e.code, code::INTERNAL);
        assert!(e.msg.starts_with("failed to load netconf: "), "{e:?}");
        assert!(e.msg.ends_with(" \"{\""), "{e:?}");
        let e = load_with_debug_path(br#"{"name":"n"}"#, "a=b=c").unwrap_err();
        assert_eq!(
            e,
            Error::internal("CNI_ARGS invalid key/value pair: [a b c]")
        );
        let e =
            load(br#"{"name":"n","cniVersion":"1.0.0","prevResult":{"ips":[{"address":"x"}]}}"#)
                .unwrap_err();
        assert!(e.msg.starts_with("could not parse prevResult: "), "{e:?}");
        let e = load(br#"{"name":"n","debugFile":5}"#).unwrap_err();
        assert!(e.msg.starts_with("failed to load netconf: "), "{e:?}");
    }

    #[test]
    fn prev_result_keeps_its_version() {
        let c = load(br#"{"name":"n","cniVersion":"0.4.0","prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.240.0.2/24"}]}}"#)
            .unwrap();
        assert_eq!(c.prev_result.unwrap().version(), "1.0.0");
    }
}
