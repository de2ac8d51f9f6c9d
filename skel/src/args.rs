//! CNI_ARGS (`K=V;K2=V2`) parsing with the reference's rules: keys are
//! exact-case field names, every pair has exactly one `=`, unknown keys fail
//! unless `IgnoreUnknown` is true anywhere in the string.

use std::collections::HashMap;
use std::net::IpAddr;

/// The type a known key's value must parse as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    /// `1`, `true`, `0`, `false`, any case.
    Bool,
    /// An IP address, optionally with a `/prefix` that is ignored.
    Ip,
}

/// Parsed, validated arguments for the keys a plugin declared.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args {
    values: HashMap<String, String>,
}

impl Args {
    /// Parse `raw` for the declared `(key, kind)` pairs. `IgnoreUnknown` is
    /// always known. Errors carry the reference's wording.
    pub fn parse(raw: &str, known: &[(&str, Kind)]) -> Result<Args, String> {
        let mut values = HashMap::new();
        let mut unknown = Vec::new();
        let mut ignore_unknown = false;
        if raw.is_empty() {
            return Ok(Args { values });
        }
        for pair in raw.split(';') {
            let kv: Vec<&str> = pair.split('=').collect();
            if kv.len() != 2 {
                return Err(format!("ARGS: invalid pair {pair:?}"));
            }
            let (key, value) = (kv[0], kv[1]);
            let kind = if key == "IgnoreUnknown" {
                Some(Kind::Bool)
            } else {
                known.iter().find(|(k, _)| *k == key).map(|(_, kind)| *kind)
            };
            let Some(kind) = kind else {
                unknown.push(pair.to_string());
                continue;
            };
            check_value(kind, value)
                .map_err(|e| format!("ARGS: error parsing value of pair {pair:?}: {e}"))?;
            if key == "IgnoreUnknown" {
                ignore_unknown = parse_bool(value).unwrap_or(false);
            }
            values.insert(key.to_string(), value.to_string());
        }
        if !unknown.is_empty() && !ignore_unknown {
            return Err(format!(
                "ARGS: unknown args {}",
                crate::version::quote_list(&unknown)
            ));
        }
        Ok(Args { values })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The address of an `Ip` key, without any prefix.
    pub fn ip(&self, key: &str) -> Option<IpAddr> {
        self.get(key).and_then(|v| parse_ip(v).ok())
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(|v| parse_bool(v).ok())
    }
}

fn check_value(kind: Kind, value: &str) -> Result<(), String> {
    match kind {
        Kind::String => Ok(()),
        Kind::Bool => parse_bool(value).map(|_| ()),
        Kind::Ip => parse_ip(value).map(|_| ()),
    }
}

pub fn parse_bool(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(format!("boolean unmarshal error: invalid input {value}")),
    }
}

/// `10.1.2.3` or `10.1.2.3/24`; the prefix is accepted and dropped.
pub fn parse_ip(value: &str) -> Result<IpAddr, String> {
    let addr = match value.split_once('/') {
        Some((addr, prefix)) => {
            let max = if addr.contains(':') { 128 } else { 32 };
            match prefix.parse::<u8>() {
                Ok(p) if p <= max => addr,
                _ => return Err(format!("{value:?} is not a valid IP address")),
            }
        }
        None => value,
    };
    addr.parse::<IpAddr>()
        .map_err(|_| format!("{value:?} is not a valid IP address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST_LOCAL: &[(&str, Kind)] = &[("IP", Kind::Ip)];

    #[test]
    fn empty_is_nothing() {
        assert_eq!(Args::parse("", HOST_LOCAL), Ok(Args::default()));
    }

    #[test]
    fn exact_case_keys() {
        let a = Args::parse("IP=10.1.2.3;IgnoreUnknown=1;ip=10.9.9.9", HOST_LOCAL).unwrap();
        assert_eq!(a.ip("IP"), Some("10.1.2.3".parse().unwrap()));
        assert_eq!(a.get("ip"), None);
        assert_eq!(
            Args::parse("ip=10.9.9.9", HOST_LOCAL),
            Err("ARGS: unknown args [\"ip=10.9.9.9\"]".into())
        );
    }

    #[test]
    fn ignore_unknown_anywhere() {
        let raw = "K8S_POD_NAME=x;K8S_POD_NAMESPACE=y;IgnoreUnknown=TRUE";
        assert!(Args::parse(raw, HOST_LOCAL).is_ok());
        assert_eq!(
            Args::parse("K8S_POD_NAME=x;IgnoreUnknown=0", HOST_LOCAL),
            Err("ARGS: unknown args [\"K8S_POD_NAME=x\"]".into())
        );
    }

    #[test]
    fn malformed_pairs() {
        assert_eq!(
            Args::parse("a=b=c", HOST_LOCAL),
            Err("ARGS: invalid pair \"a=b=c\"".into())
        );
        assert_eq!(
            Args::parse("IP=10.0.0.1;", HOST_LOCAL),
            Err("ARGS: invalid pair \"\"".into())
        );
        assert_eq!(
            Args::parse("none", HOST_LOCAL),
            Err("ARGS: invalid pair \"none\"".into())
        );
    }

    #[test]
    fn typed_values() {
        assert!(
            Args::parse("IgnoreUnknown=yes", HOST_LOCAL)
                .unwrap_err()
                .starts_with("ARGS: error parsing value of pair \"IgnoreUnknown=yes\"")
        );
        assert!(
            Args::parse("IP=banana", HOST_LOCAL)
                .unwrap_err()
                .starts_with("ARGS: error parsing value of pair \"IP=banana\"")
        );
        let a = Args::parse("IP=fd40::5/64", HOST_LOCAL).unwrap();
        assert_eq!(a.ip("IP"), Some("fd40::5".parse().unwrap()));
        assert_eq!(parse_bool("True"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
    }

    #[test]
    fn later_values_win() {
        let a = Args::parse("IP=10.0.0.1;IP=10.0.0.2", HOST_LOCAL).unwrap();
        assert_eq!(a.get("IP"), Some("10.0.0.2"));
    }
}
