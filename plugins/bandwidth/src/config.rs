//! The plugin's stdin: the four limits, at the top level or in
//! `runtimeConfig.bandwidth`, decoded and validated as the reference does
//! (its `PluginConf` embeds a `*BandwidthEntry`), and `prevResult`.
//!
//! Precedence is the reference's: if any of the four keys is at the top
//! level (even as `null`), the top-level entry is used and
//! `runtimeConfig.bandwidth` is ignored. Keys match as Go's decoder matches
//! them ([`gojson`]; containerd sends `IngressRate`, ...). The limits are
//! read here rather than through a derived struct because Go's embedded
//! `*BandwidthEntry` is allocated by the presence of any one of its keys,
//! and because they are `uint64`, which Go's errors name as such.

use serde_json::{Map, Value};
use skel::CniResult;
use skel::conf::NetConf;
use skel::gojson::{self, kind, lookup};

use crate::Error;

/// The JSON names of the limits, in the reference's field order.
const KEYS: [&str; 4] = ["ingressRate", "ingressBurst", "egressRate", "egressBurst"];

/// Limits in bits per second and bits; 0 is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub ingress_rate: u64,
    pub ingress_burst: u64,
    pub egress_rate: u64,
    pub egress_burst: u64,
}

impl Limits {
    pub fn is_zero(&self) -> bool {
        *self == Limits::default()
    }

    /// (rate, burst) of traffic into the container, when both are set.
    pub fn ingress(&self) -> Option<(u64, u64)> {
        (self.ingress_rate > 0 && self.ingress_burst > 0)
            .then_some((self.ingress_rate, self.ingress_burst))
    }

    /// (rate, burst) of traffic out of the container, when both are set.
    pub fn egress(&self) -> Option<(u64, u64)> {
        (self.egress_rate > 0 && self.egress_burst > 0)
            .then_some((self.egress_rate, self.egress_burst))
    }

    fn validate(&self) -> Result<(), Error> {
        validate(self.ingress_rate, self.ingress_burst)?;
        validate(self.egress_rate, self.egress_burst)
    }
}

/// One direction's rate and burst, with the reference's messages.
fn validate(rate: u64, burst: u64) -> Result<(), Error> {
    let msg = if burst == 0 && rate != 0 {
        "if rate is set, burst must also be set"
    } else if rate == 0 && burst != 0 {
        "if burst is set, rate must also be set"
    } else if burst / 8 >= u64::from(u32::MAX) {
        "burst cannot be more than 4GB"
    } else {
        return Ok(());
    };
    Err(Error::internal(msg))
}

#[derive(Debug, Clone)]
pub struct Config {
    pub cni_version: String,
    pub name: String,
    /// `None` when neither the top level nor `runtimeConfig` has an entry.
    pub limits: Option<Limits>,
    pub prev_result: Option<CniResult>,
}

impl Config {
    /// Decode and validate `stdin` (validation errors fail ADD, CHECK and,
    /// in the reference, DEL).
    pub fn parse(stdin: &[u8]) -> Result<Config, Error> {
        let fail =
            |e: String| Error::internal(format!("failed to parse network configuration: {e}"));
        let doc = gojson::parse(stdin).map_err(|e| fail(e.into()))?;
        let net: NetConf = gojson::from_value(&doc).map_err(|e| fail(e.into()))?;
        let no_keys = Map::new();
        let top = doc.as_object().unwrap_or(&no_keys);
        let limits = match entry(top, "PluginConf", "").map_err(fail)? {
            Some(l) => Some(l),
            None => runtime_entry(top).map_err(fail)?,
        };
        if let Some(l) = &limits {
            l.validate()?;
        }
        let prev_result = net.prev_result()?;
        Ok(Config {
            cni_version: net.cni_version,
            name: net.name,
            limits,
            prev_result,
        })
    }
}

/// `runtimeConfig.bandwidth`, Go's anonymous `RuntimeConfig` struct and its
/// `*BandwidthEntry`.
fn runtime_entry(top: &Map<String, Value>) -> Result<Option<Limits>, String> {
    const RC_TYPE: &str =
        r#"struct { Bandwidth *main.BandwidthEntry "json:\"bandwidth,omitempty\"" }"#;
    let rc = match lookup(top, "runtimeConfig") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(rc)) => rc,
        Some(other) => {
            return Err(mismatch(
                kind(other),
                "PluginConf",
                "runtimeConfig",
                RC_TYPE,
            ));
        }
    };
    match lookup(rc, "bandwidth") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(bw)) => Ok(Some(
            entry(bw, "BandwidthEntry", "runtimeConfig.bandwidth.")?.unwrap_or_default(),
        )),
        Some(other) => Err(mismatch(
            kind(other),
            "",
            "runtimeConfig.bandwidth",
            "main.BandwidthEntry",
        )),
    }
}

/// The four keys of `obj`; `None` when none of them is there (Go leaves
/// the embedded pointer nil only then).
fn entry(obj: &Map<String, Value>, strukt: &str, path: &str) -> Result<Option<Limits>, String> {
    let mut values = [0u64; 4];
    let mut any = false;
    for (key, out) in KEYS.iter().zip(values.iter_mut()) {
        let Some(v) = lookup(obj, key) else {
            continue;
        };
        any = true;
        *out = match v {
            Value::Null => 0,
            Value::Number(n) => n.as_u64().ok_or_else(|| {
                mismatch(
                    &format!("number {n}"),
                    strukt,
                    &format!("{path}{key}"),
                    "uint64",
                )
            })?,
            other => {
                return Err(mismatch(
                    kind(other),
                    strukt,
                    &format!("{path}{key}"),
                    "uint64",
                ));
            }
        };
    }
    let [ingress_rate, ingress_burst, egress_rate, egress_burst] = values;
    Ok(any.then_some(Limits {
        ingress_rate,
        ingress_burst,
        egress_rate,
        egress_burst,
    }))
}

/// Go's `UnmarshalTypeError` text: innermost struct, JSON path from the top.
fn mismatch(what: &str, strukt: &str, path: &str, go_type: &str) -> String {
    format!("json: cannot unmarshal {what} into Go struct field {strukt}.{path} of type {go_type}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, Error> {
        Config::parse(s.as_bytes())
    }

    fn limits(s: &str) -> Option<Limits> {
        parse(s).unwrap().limits
    }

    #[test]
    fn top_level_beats_runtime_config() {
        let l = limits(
            r#"{"name":"n","ingressRate":8000,"ingressBurst":800,
                "runtimeConfig":{"bandwidth":{"egressRate":1,"egressBurst":1}}}"#,
        )
        .unwrap();
        assert_eq!((l.ingress(), l.egress()), (Some((8000, 800)), None));
        // Even a null top-level key takes precedence (Go allocates the
        // embedded entry for any of its keys).
        let l = limits(
            r#"{"name":"n","egressBurst":null,
                "runtimeConfig":{"bandwidth":{"egressRate":1000,"egressBurst":800}}}"#,
        );
        assert_eq!(l, Some(Limits::default()));
        let l = limits(
            r#"{"name":"n","runtimeConfig":{"bandwidth":{"egressRate":1000,"egressBurst":800}}}"#,
        );
        assert_eq!(l.unwrap().egress(), Some((1000, 800)));
        assert_eq!(limits(r#"{"name":"n"}"#), None);
        assert_eq!(
            limits(r#"{"name":"n","runtimeConfig":{"bandwidth":null}}"#),
            None
        );
        assert_eq!(
            limits(r#"{"name":"n","runtimeConfig":{"bandwidth":{}}}"#),
            Some(Limits::default())
        );
    }

    #[test]
    fn go_cased_keys_match() {
        let l = limits(
            r#"{"name":"n","runtimeConfig":{"Bandwidth":{"IngressRate":8000,"IngressBurst":80,
                "EGRESSRATE":16000,"egressburst":160}}}"#,
        )
        .unwrap();
        assert_eq!(
            (l.ingress(), l.egress()),
            (Some((8000, 80)), Some((16000, 160)))
        );
    }

    #[test]
    fn validation_messages_are_the_references() {
        for (conf, msg) in [
            (
                r#""ingressRate":1"#,
                "if rate is set, burst must also be set",
            ),
            (
                r#""egressBurst":1"#,
                "if burst is set, rate must also be set",
            ),
            (
                r#""egressRate":1,"egressBurst":34359738360"#,
                "burst cannot be more than 4GB",
            ),
            (
                r#""ingressRate":-1"#,
                "failed to parse network configuration: json: cannot unmarshal number -1 into Go struct field PluginConf.ingressRate of type uint64",
            ),
            (
                r#""ingressRate":"1""#,
                "failed to parse network configuration: json: cannot unmarshal string into Go struct field PluginConf.ingressRate of type uint64",
            ),
            (
                r#""runtimeConfig":{"bandwidth":{"egressBurst":1.5}}"#,
                "failed to parse network configuration: json: cannot unmarshal number 1.5 into Go struct field BandwidthEntry.runtimeConfig.bandwidth.egressBurst of type uint64",
            ),
            (
                r#""runtimeConfig":{"bandwidth":[]}"#,
                "failed to parse network configuration: json: cannot unmarshal array into Go struct field .runtimeConfig.bandwidth of type main.BandwidthEntry",
            ),
        ] {
            let e = parse(&format!(r#"{{"name":"n",{conf}}}"#)).unwrap_err();
            assert_eq!((e.code, e.msg.as_str()), (999, msg), "{conf}");
        }
        // 4 GB less a byte is still a valid burst.
        assert!(parse(r#"{"name":"n","egressRate":1,"egressBurst":34359738359}"#).is_ok());
    }

    #[test]
    fn prev_result_is_read_and_checked() {
        let c = parse(
            r#"{"cniVersion":"0.4.0","name":"n","prevResult":{"cniVersion":"0.4.0",
                "interfaces":[{"name":"veth1"}],"ips":[]}}"#,
        )
        .unwrap();
        assert_eq!(c.prev_result.unwrap().version(), "0.4.0");
        let e =
            parse(r#"{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[{"address":"x"}]}}"#)
                .unwrap_err();
        assert!(e.msg.starts_with("could not parse prevResult"), "{e:?}");
    }

    use proptest::prelude::*;

    /// A value Go may or may not take for a `uint64`.
    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<u64>().prop_map(Value::from),
            (0u64..1 << 40).prop_map(Value::from),
            Just(Value::from(0)),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            Just(Value::Null),
            "[a-z0-9]{0,4}".prop_map(Value::from),
            Just(serde_json::json!([1])),
            Just(serde_json::json!({"ingressRate": 1})),
        ]
    }

    /// Some of the four keys (in any case) with generated values.
    fn entry() -> impl Strategy<Value = Map<String, Value>> {
        proptest::collection::vec((0usize..4, any::<bool>(), value()), 0..5).prop_map(|keys| {
            keys.into_iter()
                .map(|(k, upper, v)| {
                    let key = if upper {
                        KEYS[k].to_uppercase()
                    } else {
                        KEYS[k].to_string()
                    };
                    (key, v)
                })
                .collect()
        })
    }

    proptest! {
        /// Whatever the input, parsing ends in limits that pass the
        /// reference's validation or in an error; never a panic.
        #[test]
        fn accepted_limits_are_valid(top in entry(), rc in entry(), rc_shape in 0u8..4) {
            let mut doc = serde_json::json!({"name": "n"});
            doc.as_object_mut().unwrap().extend(top);
            doc["runtimeConfig"] = match rc_shape {
                0 => serde_json::json!({"bandwidth": rc}),
                1 => serde_json::json!({"Bandwidth": rc}),
                2 => Value::Null,
                _ => serde_json::json!("x"),
            };
            let limits = Config::parse(doc.to_string().as_bytes()).ok().and_then(|c| c.limits);
            if let Some(l) = limits {
                for (rate, burst) in [(l.ingress_rate, l.ingress_burst), (l.egress_rate, l.egress_burst)] {
                    prop_assert_eq!(rate == 0, burst == 0);
                    prop_assert!(burst / 8 < u64::from(u32::MAX));
                }
            }
        }
    }
}
