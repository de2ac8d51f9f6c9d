//! The IPAM configuration: decoding (keys matched case-insensitively, as
//! Go's `encoding/json` does), the legacy single range, `runtimeConfig`
//! capabilities, requested addresses and every validation rule of the
//! reference's `LoadIPAMConfig`.

use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::{Map, Value};
use skel::args::{self, Args, Kind};
use skel::types::Route;

use crate::error::Error;
use crate::range::{RangeSet, RawRange, Subnet, canon};

pub const DEFAULT_DATA_DIR: &str = "/var/lib/cni/networks";

/// Everything host-local needs from stdin and `CNI_ARGS`.
#[derive(Debug, Clone)]
pub struct IpamConfig {
    /// The network name; already validated, it becomes a directory name.
    pub name: String,
    pub cni_version: String,
    pub ranges: Vec<RangeSet>,
    pub routes: Vec<Route>,
    pub data_dir: PathBuf,
    pub resolv_conf: String,
    /// Requested addresses, in the order CNI_ARGS, `args.cni.ips`,
    /// `runtimeConfig.ips`, without duplicates.
    pub requested: Vec<IpAddr>,
}

/// A JSON object's value by key: the exact key first, else the first key
/// equal ignoring ASCII case. `null` counts as absent, as for Go pointers.
fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key)
        .or_else(|| {
            obj.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_null())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_err(v: &Value, at: &str, want: &str) -> Error {
    Error::config(format!(
        "json: cannot unmarshal {} into Go struct field {at} of type {want}",
        kind(v)
    ))
}

fn as_str<'a>(v: &'a Value, at: &str) -> Result<&'a str, Error> {
    v.as_str().ok_or_else(|| type_err(v, at, "string"))
}

fn as_obj<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>, Error> {
    v.as_object().ok_or_else(|| type_err(v, at, "object"))
}

fn as_list<'a>(v: &'a Value, at: &str) -> Result<&'a [Value], Error> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| type_err(v, at, "array"))
}

fn opt_str(obj: &Map<String, Value>, key: &str, at: &str) -> Result<String, Error> {
    field(obj, key)
        .map(|v| as_str(v, at).map(str::to_string))
        .transpose()
        .map(Option::unwrap_or_default)
}

/// A `net.IP` field: `""` means absent, anything else must parse.
fn opt_ip(obj: &Map<String, Value>, key: &str, at: &str) -> Result<Option<IpAddr>, Error> {
    let s = opt_str(obj, key, at)?;
    if s.is_empty() {
        return Ok(None);
    }
    s.parse::<IpAddr>()
        .map(|ip| Some(canon(ip)))
        .map_err(|_| Error::config(format!("invalid IP address: {s}")))
}

fn raw_range(v: &Value, at: &str) -> Result<RawRange, Error> {
    let obj = as_obj(v, at)?;
    let subnet = match field(obj, "subnet") {
        None => None,
        Some(v) => {
            let s = as_str(v, &format!("{at}.subnet"))?;
            Some(Subnet::parse(s).map_err(Error::config)?)
        }
    };
    Ok(RawRange {
        subnet,
        range_start: opt_ip(obj, "rangeStart", &format!("{at}.rangeStart"))?,
        range_end: opt_ip(obj, "rangeEnd", &format!("{at}.rangeEnd"))?,
        gateway: opt_ip(obj, "gateway", &format!("{at}.gateway"))?,
    })
}

/// A list of range sets. A flat list of range objects (what go-cni's
/// Go-cased `ipRanges` looks like) is read as one set per object instead
/// of being refused.
fn range_sets(v: &Value, at: &str) -> Result<Vec<Vec<RawRange>>, Error> {
    as_list(v, at)?
        .iter()
        .map(|set| match set {
            Value::Object(_) => Ok(vec![raw_range(set, at)?]),
            _ => as_list(set, at)?.iter().map(|r| raw_range(r, at)).collect(),
        })
        .collect()
}

/// A requested address: `10.1.2.3` or `10.1.2.3/24` (the prefix is
/// ignored; the range decides the mask).
fn requested_ips(v: Option<&Value>, at: &str, out: &mut Vec<IpAddr>) -> Result<(), Error> {
    let Some(v) = v else { return Ok(()) };
    for ip in as_list(v, at)? {
        let s = as_str(ip, at)?;
        let ip =
            args::parse_ip(s).map_err(|_| Error::config(format!("invalid IP address: {s}")))?;
        out.push(canon(ip));
    }
    Ok(())
}

fn route(v: &Value, at: &str) -> Result<Route, Error> {
    let obj = as_obj(v, at)?;
    // Rename keys to their canonical case so serde sees what Go would.
    const KEYS: [&str; 7] = ["dst", "gw", "mtu", "advmss", "priority", "table", "scope"];
    let mut fixed = Map::new();
    for key in KEYS {
        if let Some(v) = field(obj, key) {
            fixed.insert(key.to_string(), v.clone());
        }
    }
    serde_json::from_value(Value::Object(fixed))
        .map_err(|e| Error::config(format!("json: {at}: {e}")))
}

impl IpamConfig {
    /// Decode and validate, in the reference's order and with its messages.
    pub fn load(stdin: &[u8], cni_args: &str) -> Result<IpamConfig, Error> {
        let root: Value = serde_json::from_slice(stdin)
            .map_err(|e| Error::config(format!("failed to load netconf: {e}")))?;
        let root = as_obj(&root, "Net")?;
        let name = opt_str(root, "name", "Net.name")?;
        let cni_version = opt_str(root, "cniVersion", "Net.cniVersion")?;

        // Decode every typed field first, as json.Unmarshal does, so that a
        // malformed value is reported even when the config is also
        // incomplete.
        let ipam = field(root, "ipam")
            .map(|v| as_obj(v, "Net.ipam"))
            .transpose()?;
        let empty = Map::new();
        let rt = match field(root, "runtimeConfig") {
            Some(v) => as_obj(v, "Net.runtimeConfig")?,
            None => &empty,
        };
        let runtime_ranges = match field(rt, "ipRanges") {
            Some(v) => range_sets(v, "Net.runtimeConfig.ipRanges")?,
            None => Vec::new(),
        };
        let args_cni = match field(root, "args") {
            Some(v) => match field(as_obj(v, "Net.args")?, "cni") {
                Some(v) => Some(as_obj(v, "Net.args.cni")?),
                None => None,
            },
            None => None,
        };

        let Some(ipam) = ipam else {
            return Err(Error::config("IPAM config missing 'ipam' key"));
        };
        let legacy = raw_range(&Value::Object(ipam.clone()), "IPAMConfig")?;
        let mut sets = match field(ipam, "ranges") {
            Some(v) => range_sets(v, "IPAMConfig.ranges")?,
            None => Vec::new(),
        };
        let routes = match field(ipam, "routes") {
            Some(v) => as_list(v, "IPAMConfig.routes")?
                .iter()
                .map(|r| route(r, "IPAMConfig.routes"))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let data_dir = opt_str(ipam, "dataDir", "IPAMConfig.dataDir")?;
        let resolv_conf = opt_str(ipam, "resolvConf", "IPAMConfig.resolvConf")?;

        let mut requested = Vec::new();
        if !cni_args.is_empty() {
            let parsed = Args::parse(cni_args, &[("IP", Kind::Ip)]).map_err(Error::config)?;
            if let Some(ip) = parsed.ip("IP") {
                requested.push(canon(ip));
            }
        }
        if let Some(cni) = args_cni {
            requested_ips(field(cni, "ips"), "IPAMArgs.ips", &mut requested)?;
        }
        requested_ips(field(rt, "ips"), "Net.runtimeConfig.ips", &mut requested)?;
        let mut unique = Vec::with_capacity(requested.len());
        for ip in requested {
            if !unique.contains(&ip) {
                unique.push(ip);
            }
        }

        if legacy.subnet.is_some() {
            sets.insert(0, vec![legacy]);
        }
        if !runtime_ranges.is_empty() {
            sets.splice(0..0, runtime_ranges);
        }
        if sets.is_empty() {
            return Err(Error::config("no IP ranges specified"));
        }

        let mut ranges = Vec::with_capacity(sets.len());
        let (mut v4, mut v6) = (0, 0);
        for (i, raw) in sets.iter().enumerate() {
            let set = RangeSet::canonicalize(raw)
                .map_err(|e| Error::config(format!("invalid range set {i}: {e}")))?;
            if set.is_ipv4() {
                v4 += 1;
            } else {
                v6 += 1;
            }
            ranges.push(set);
        }
        if (v4 > 1 || v6 > 1)
            && !skel::version::greater_or_equal(&cni_version, "0.3.0").unwrap_or(false)
        {
            return Err(Error::config(format!(
                "CNI version {cni_version} does not support more than 1 address per family"
            )));
        }
        for (i, a) in ranges.iter().enumerate() {
            for (j, b) in ranges.iter().enumerate().skip(i + 1) {
                if a.overlaps(b) {
                    return Err(Error::config(format!("range set {i} overlaps with {j}")));
                }
            }
        }

        // skel has already refused bad names; check again because the name
        // is about to become a directory under dataDir.
        skel::validate_network_name(&name).map_err(Error::Cni)?;

        Ok(IpamConfig {
            name,
            cni_version,
            ranges,
            routes,
            data_dir: if data_dir.is_empty() {
                PathBuf::from(DEFAULT_DATA_DIR)
            } else {
                PathBuf::from(data_dir)
            },
            resolv_conf,
            requested: unique,
        })
    }
}

#[cfg(test)]
mod tests;
