//! CNI_ARGS (`K=V;K2=V2`) parsing with the reference's rules
//! (`types.LoadArgs`): keys are exact-case Go field names, every pair has
//! exactly one `=`, each value goes through its Go type's `UnmarshalText`
//! (so an empty value is valid where that accepts one), a later pair
//! overrides an earlier one, and unknown keys fail unless the *final*
//! `IgnoreUnknown` is true, wherever it appears.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::gojson::{quote, to_lower};
use crate::version::quote_list;

/// The Go type of a known key's field, which decides what its value may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `types.UnmarshallableString`: anything, empty included.
    String,
    /// `types.UnmarshallableBool`: `1`, `true`, `0`, `false`, any case.
    Bool,
    /// `ip.IP`: an address, optionally with a `/prefix` that is ignored;
    /// empty means no address.
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
        if raw.is_empty() {
            return Ok(Args { values });
        }
        for pair in raw.split(';') {
            let kv: Vec<&str> = pair.split('=').collect();
            let [key, value] = kv[..] else {
                return Err(format!("ARGS: invalid pair {}", quote(pair)));
            };
            let kind = match key {
                "IgnoreUnknown" => Kind::Bool,
                // Every args struct embeds `types.CommonArgs`, which Go
                // finds by name too and cannot unmarshal text into.
                "CommonArgs" => {
                    return Err("ARGS: cannot unmarshal into field 'CommonArgs' - type '*types.CommonArgs' does not implement encoding.TextUnmarshaler".into());
                }
                _ => match known.iter().find(|(k, _)| *k == key) {
                    Some((_, kind)) => *kind,
                    None => {
                        unknown.push(pair);
                        continue;
                    }
                },
            };
            check_value(kind, value)
                .map_err(|e| format!("ARGS: error parsing value of pair {}: {e}", quote(pair)))?;
            values.insert(key.to_string(), value.to_string());
        }
        let ignore_unknown = values
            .get("IgnoreUnknown")
            .is_some_and(|v| parse_bool(v) == Ok(true));
        if !unknown.is_empty() && !ignore_unknown {
            return Err(format!("ARGS: unknown args {}", quote_list(&unknown)));
        }
        Ok(Args { values })
    }

    /// The value of a known key as given (`""` included).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The address of an `Ip` key, without any prefix; `None` when absent
    /// or empty.
    pub fn ip(&self, key: &str) -> Option<IpAddr> {
        self.get(key).and_then(|v| parse_ip(v).ok())
    }
}

fn check_value(kind: Kind, value: &str) -> Result<(), String> {
    match kind {
        Kind::String => Ok(()),
        Kind::Bool => parse_bool(value).map(|_| ()),
        Kind::Ip if value.is_empty() => Ok(()),
        Kind::Ip => parse_ip(value).map(|_| ()),
    }
}

/// `UnmarshallableBool.UnmarshalText`; its error shows the text lowercased.
pub fn parse_bool(value: &str) -> Result<bool, String> {
    let lower = to_lower(value);
    match lower.as_str() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(format!("boolean unmarshal error: invalid input {lower}")),
    }
}

/// `ip.ParseIP`: `10.1.2.3`, or `10.1.2.3/24` as Go's `net.ParseCIDR`
/// takes it (decimal prefix digits only, leading zeros allowed, no zone);
/// the prefix is dropped.
pub fn parse_ip(value: &str) -> Result<IpAddr, String> {
    let invalid = || format!("invalid IP address {value}");
    let (addr, prefix) = match value.split_once('/') {
        Some((addr, prefix)) => (addr, Some(prefix)),
        None => (value, None),
    };
    let ip: IpAddr = addr.parse().map_err(|_| invalid())?;
    if let Some(prefix) = prefix {
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        let digits_only = !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit());
        let len = prefix.trim_start_matches('0');
        if !digits_only || len.len() > 3 || len.parse::<u32>().unwrap_or(0) > bits {
            return Err(invalid());
        }
    }
    Ok(ip)
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

    /// Go's `LoadArgs` into a struct with `IP ip.IP` and `MAC
    /// types.UnmarshallableString`, case by case: what the reference answers
    /// (an error text, or the values it keeps).
    #[test]
    fn typed_values_follow_go_unmarshal_text() {
        const KNOWN: &[(&str, Kind)] = &[("IP", Kind::Ip), ("MAC", Kind::String)];
        let ok = |raw: &str| Args::parse(raw, KNOWN).unwrap_or_else(|e| panic!("{raw:?}: {e}"));
        let err = |raw: &str| Args::parse(raw, KNOWN).unwrap_err();
        // ip.IP: empty text is the zero IP, i.e. no request.
        assert_eq!(ok("IP=").ip("IP"), None);
        assert_eq!(ok("IP=10.0.0.1;IP=").ip("IP"), None);
        assert_eq!(
            ok("IP=;IP=10.0.0.1").ip("IP"),
            Some("10.0.0.1".parse().unwrap())
        );
        assert_eq!(
            ok("IP=10.0.0.1/024").ip("IP"),
            Some("10.0.0.1".parse().unwrap())
        );
        assert_eq!(
            err("IP= "),
            "ARGS: error parsing value of pair \"IP= \": invalid IP address  "
        );
        assert_eq!(
            err("IP=10.0.0.1/+24"),
            "ARGS: error parsing value of pair \"IP=10.0.0.1/+24\": invalid IP address 10.0.0.1/+24"
        );
        assert!(err("IP=fe80::1%eth0").ends_with("invalid IP address fe80::1%eth0"));
        assert!(err("IP=10.0.0.1/33").ends_with("invalid IP address 10.0.0.1/33"));
        assert!(err("IP=10.0.0.1/").ends_with("invalid IP address 10.0.0.1/"));
        // UnmarshallableString: anything, empty included.
        assert_eq!(ok("MAC=").get("MAC"), Some(""));
        assert_eq!(ok("MAC=a b").get("MAC"), Some("a b"));
        // UnmarshallableBool: Go lowercases the text it reports.
        assert_eq!(
            err("IgnoreUnknown="),
            "ARGS: error parsing value of pair \"IgnoreUnknown=\": boolean unmarshal error: invalid input "
        );
        assert_eq!(
            err("IgnoreUnknown=YES"),
            "ARGS: error parsing value of pair \"IgnoreUnknown=YES\": boolean unmarshal error: invalid input yes"
        );
        // The embedded struct is a field too, and not a TextUnmarshaler.
        assert_eq!(
            err("CommonArgs=1"),
            "ARGS: cannot unmarshal into field 'CommonArgs' - type '*types.CommonArgs' does not implement encoding.TextUnmarshaler"
        );
        // The last IgnoreUnknown decides, wherever the unknown keys are.
        assert!(ok("IgnoreUnknown=0;X=1;IgnoreUnknown=1").get("X").is_none());
        assert_eq!(
            err("X=1;IgnoreUnknown=1;IgnoreUnknown=0"),
            "ARGS: unknown args [\"X=1\"]"
        );
        // Pairs are quoted as Go's %q does.
        assert_eq!(err("a\u{1}b"), "ARGS: invalid pair \"a\\x01b\"");
        assert_eq!(err("X=\u{1}"), "ARGS: unknown args [\"X=\\x01\"]");
    }
}
