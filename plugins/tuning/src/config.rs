//! The configuration: decoding by Go's rules ([`skel::gojson`]), the
//! duplicate-sysctl check, the precedence of `mac` sources and `args.cni`
//! overrides, and the validation of every value before anything changes.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};
use skel::args::{Args, Kind};
use skel::gojson::{self, Object};

use crate::error::Error;
use crate::{mac, sysctl};

pub const DEFAULT_DATA_DIR: &str = "/run/cni/tuning";

/// The reference's anonymous `TuningConf.RuntimeConfig` and `Args` types.
const RUNTIME_CONFIG: &str = r#"struct { Mac string "json:\"mac,omitempty\"" }"#;
const ARGS: &str = r#"struct { A *main.IPAMArgs "json:\"cni\"" }"#;

/// What the plugin is asked to do, after every source is merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub cni_version: String,
    pub name: String,
    pub data_dir: PathBuf,
    /// Key order, where the reference takes Go's random map order.
    pub sysctl: BTreeMap<String, String>,
    /// `""`: leave the MAC as it is.
    pub mac: String,
    /// Only `true` acts: `false` never turns promiscuous mode off.
    pub promisc: bool,
    /// `0`: leave the MTU as it is.
    pub mtu: i64,
    pub txqlen: Option<i64>,
    pub allmulti: Option<bool>,
    pub prev_result: Option<Value>,
}

impl Config {
    /// The reference's `parseConf`: decode, default `dataDir`, then the MAC
    /// from CNI_ARGS `MAC=`, then `runtimeConfig.mac`, then `args.cni`
    /// (whose `sysctl` entries are merged into `sysctl`, even when the
    /// config has none: the reference panics on that).
    pub fn parse(stdin: &[u8], cni_args: &str) -> Result<Config, Error> {
        let load = |e: gojson::DecodeError| Error::config(format!("failed to load netconf: {e}"));
        let root = gojson::parse(stdin).map_err(load)?;
        let conf = Object::new(&root, "main.TuningConf").map_err(load)?;
        let field = |name: &str| conf.get(name);
        let mut c = Config {
            cni_version: field("cniVersion").decode().map_err(load)?,
            name: field("name").decode().map_err(load)?,
            prev_result: field("prevResult")
                .decode::<Option<Map<String, Value>>>()
                .map_err(load)?
                .map(Value::Object),
            sysctl: field("sysctl")
                .decode::<Option<BTreeMap<String, String>>>()
                .map_err(load)?
                .unwrap_or_default(),
            mac: field("mac").decode().map_err(load)?,
            promisc: field("promisc").decode().map_err(load)?,
            mtu: field("mtu").decode().map_err(load)?,
            txqlen: field("txQLen").decode().map_err(load)?,
            allmulti: field("allmulti").decode().map_err(load)?,
            data_dir: PathBuf::new(),
        };
        let data_dir: String = field("dataDir").decode().map_err(load)?;
        let runtime = field("runtimeConfig")
            .as_struct(RUNTIME_CONFIG)
            .map_err(load)?;
        let runtime_mac: String = runtime.field("mac").map_err(load)?;
        let args_cni = match conf.object("args", ARGS).map_err(load)? {
            Some(args) => args.object("cni", "main.IPAMArgs").map_err(load)?,
            None => None,
        };
        let overrides = args_cni
            .map(|a| Overrides::decode(&a))
            .transpose()
            .map_err(load)?;

        c.data_dir = PathBuf::from(if data_dir.is_empty() {
            DEFAULT_DATA_DIR
        } else {
            &data_dir
        });
        if !cni_args.is_empty() {
            let parsed = Args::parse(cni_args, &[("MAC", Kind::String)]).map_err(Error::Config)?;
            if let Some(m) = parsed.get("MAC").filter(|m| !m.is_empty()) {
                c.mac = m.to_string();
            }
        }
        if !runtime_mac.is_empty() {
            c.mac = runtime_mac;
        }
        if let Some(o) = overrides {
            o.apply(&mut c);
        }
        Ok(c)
    }

    /// Whether any link attribute is to change (the reference then reads
    /// the link and writes a backup).
    pub fn changes_link(&self) -> bool {
        !self.mac.is_empty()
            || self.mtu != 0
            || self.promisc
            || self.allmulti.is_some()
            || self.txqlen.is_some()
    }
}

/// `args.cni`: each key present overrides the config's.
struct Overrides {
    sysctl: Option<BTreeMap<String, String>>,
    mac: Option<String>,
    promisc: Option<bool>,
    mtu: Option<i64>,
    allmulti: Option<bool>,
    txqlen: Option<i64>,
}

impl Overrides {
    fn decode(a: &Object) -> Result<Overrides, gojson::DecodeError> {
        Ok(Overrides {
            sysctl: a.field("sysctl")?,
            mac: a.field("mac")?,
            promisc: a.field("promisc")?,
            mtu: a.field("mtu")?,
            allmulti: a.field("allmulti")?,
            txqlen: a.field("txQLen")?,
        })
    }

    fn apply(self, c: &mut Config) {
        if let Some(s) = self.sysctl {
            c.sysctl.extend(s);
        }
        if let Some(m) = self.mac {
            c.mac = m;
        }
        if let Some(p) = self.promisc {
            c.promisc = p;
        }
        if let Some(m) = self.mtu {
            c.mtu = m;
        }
        if self.allmulti.is_some() {
            c.allmulti = self.allmulti;
        }
        if self.txqlen.is_some() {
            c.txqlen = self.txqlen;
        }
    }
}

/// Everything ADD will do, checked: sysctl files (under `/proc/sys/net`),
/// a parsed MAC, MTU and queue length in range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// `(file, value)` in key order.
    pub sysctls: Vec<(String, String)>,
    pub mac: Option<Vec<u8>>,
    pub promisc: bool,
    pub mtu: Option<u32>,
    pub allmulti: Option<bool>,
    pub txqlen: Option<u32>,
}

impl Plan {
    pub fn new(c: &Config, ifname: &str) -> Result<Plan, Error> {
        let sysctls = c
            .sysctl
            .iter()
            .map(|(k, v)| Ok((sysctl::file_of(k, ifname)?, v.clone())))
            .collect::<Result<Vec<_>, Error>>()?;
        let mac = match c.mac.as_str() {
            "" => None,
            m => Some(parse_mac(m)?),
        };
        let mtu = match c.mtu {
            0 => None,
            m => Some(u32::try_from(m).map_err(|_| {
                Error::config(format!("invalid MTU {m}: it must be a positive number"))
            })?),
        };
        let txqlen = c
            .txqlen
            .map(|q| {
                u32::try_from(q).map_err(|_| {
                    Error::config(format!(
                        "invalid txQLen {q}: it must be between 0 and {}",
                        u32::MAX
                    ))
                })
            })
            .transpose()?;
        Ok(Plan {
            sysctls,
            mac,
            promisc: c.promisc,
            mtu,
            allmulti: c.allmulti,
            txqlen,
        })
    }

    pub fn changes_link(&self) -> bool {
        self.mac.is_some()
            || self.promisc
            || self.mtu.is_some()
            || self.allmulti.is_some()
            || self.txqlen.is_some()
    }

    /// Refuse what the link itself cannot take, before anything changes:
    /// a MAC of another length (the kernel would silently truncate a longer
    /// one) and an MTU outside the device's range.
    pub fn check_link(&self, link: &cni_net::Link) -> Result<(), Error> {
        if let Some(mac) = &self.mac
            && mac.len() != link.mac.len()
        {
            return Err(Error::config(format!(
                "invalid MAC address {} for {}: it has {} bytes, the device takes {}",
                cni_net::format_mac(mac),
                link.name,
                mac.len(),
                link.mac.len()
            )));
        }
        if let Some(mtu) = self.mtu {
            let (min, max) = (link.min_mtu.unwrap_or(0), link.max_mtu.unwrap_or(u32::MAX));
            // A zero maximum means the device sets no limit.
            if mtu < min || (max != 0 && mtu > max) {
                return Err(Error::config(format!(
                    "invalid MTU {mtu} for {}: the device takes {min} to {max}",
                    link.name
                )));
            }
        }
        Ok(())
    }
}

/// The reference's MAC error: `invalid args <mac> for MAC addr: address
/// <mac>: invalid MAC address`.
pub fn parse_mac(m: &str) -> Result<Vec<u8>, Error> {
    mac::parse(m).map_err(|e| Error::config(format!("invalid args {m} for MAC addr: {e}")))
}

/// The reference's `validateSysctlConflictingKeys`, run before the config
/// is decoded (ADD and CHECK): a key written twice in `sysctl` is refused.
/// Decoding into a map keeps only the last value, so this reads the
/// document itself. Every top-level key Go would match to `sysctl` counts,
/// and type errors read as the reference's (its check decodes into a
/// struct named `sysctlCheck`).
pub fn check_duplicate_sysctl_keys(stdin: &[u8]) -> Result<(), Error> {
    let mut scan = Scan::default();
    let mut de = serde_json::Deserializer::from_slice(stdin);
    match de.deserialize_any(&mut scan) {
        Ok(()) => scan.type_error.map_or(Ok(()), |e| Err(Error::Config(e))),
        Err(e) => Err(Error::Config(match e.to_string() {
            s if s.starts_with(DUPLICATED) => DUPLICATED.to_string(),
            _ => scan.type_error.unwrap_or_else(|| e.to_string()),
        })),
    }
}

const DUPLICATED: &str = "duplicated sysctl keys are not allowed";

#[derive(Default)]
struct Scan {
    seen: HashSet<String>,
    /// The first type error; Go reports it once the document is read.
    type_error: Option<String>,
}

impl Scan {
    fn mismatch(&mut self, kind: &str, go_type: &str) {
        self.type_error.get_or_insert_with(|| {
            format!("json: cannot unmarshal {kind} into Go struct field sysctlCheck.sysctl of type {go_type}")
        });
    }
}

impl<'de> Visitor<'de> for &mut Scan {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if is_sysctl_key(&key) {
                map.next_value_seed(SysctlMap(&mut *self))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    // Anything but an object at the top is skel's to refuse.
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Whether `key` fills the field `sysctl` (Go's case-insensitive match).
fn is_sysctl_key(key: &str) -> bool {
    let mut one = Map::new();
    one.insert(key.to_string(), Value::Null);
    gojson::lookup(&one, "sysctl").is_some()
}

struct SysctlMap<'a>(&'a mut Scan);

impl<'de> DeserializeSeed<'de> for SysctlMap<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SysctlMap<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            let value: Value = map.next_value()?;
            if !value.is_string() && !value.is_null() {
                self.0.mismatch(gojson::kind(&value), "string");
            }
            if !self.0.seen.insert(key) {
                return Err(de::Error::custom(DUPLICATED));
            }
        }
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.0.mismatch("bool", MAP_TYPE);
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.0.mismatch("number", MAP_TYPE);
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.0.mismatch("number", MAP_TYPE);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.0.mismatch("number", MAP_TYPE);
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.0.mismatch("string", MAP_TYPE);
        Ok(())
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.0.mismatch("array", MAP_TYPE);
        Ok(())
    }
}

const MAP_TYPE: &str = "map[main.sysctlKey]string";

#[cfg(test)]
mod tests;
