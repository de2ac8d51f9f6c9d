//! The IPAM configuration: decoding (by Go's `encoding/json` rules, through
//! [`skel::gojson`]), the legacy single range, `runtimeConfig`
//! capabilities, requested addresses and every validation rule of the
//! reference's `LoadIPAMConfig`.

use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::Value;
use skel::args::{self, Args, Kind};
use skel::gojson::{self, DecodeError, Field, Object};
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

/// The reference's anonymous `Net.RuntimeConfig` type, as Go names it.
const RUNTIME_CONFIG: &str = r#"struct { IPRanges []allocator.RangeSet "json:\"ipRanges\""; IPs []*ip.IP "json:\"ips,omitempty\"" }"#;

/// The reference's anonymous `Net.Args` type, as Go names it.
const ARGS: &str = r#"struct { A *allocator.IPAMArgs "json:\"cni\"" }"#;

fn json_err(e: DecodeError) -> Error {
    Error::config(e.to_string())
}

/// A `net.IP` field: `""` means absent, anything else must parse.
fn opt_ip(obj: &Object, key: &str) -> Result<Option<IpAddr>, Error> {
    let s: String = obj.field(key).map_err(json_err)?;
    if s.is_empty() {
        return Ok(None);
    }
    s.parse::<IpAddr>()
        .map(|ip| Some(canon(ip)))
        .map_err(|_| Error::config(format!("invalid IP address: {s}")))
}

/// An `allocator.Range` (also the legacy single range inlined in `ipam`).
fn raw_range(obj: &Object) -> Result<RawRange, Error> {
    let subnet = match obj.field::<Option<String>>("subnet").map_err(json_err)? {
        None => None,
        Some(s) => Some(Subnet::parse(&s).map_err(Error::config)?),
    };
    Ok(RawRange {
        subnet,
        range_start: opt_ip(obj, "rangeStart")?,
        range_end: opt_ip(obj, "rangeEnd")?,
        gateway: opt_ip(obj, "gateway")?,
    })
}

/// A list of range sets. A flat list of range objects (what go-cni's
/// Go-cased `ipRanges` looks like) is read as one set per object instead
/// of being refused.
fn range_sets(list: Field) -> Result<Vec<Vec<RawRange>>, Error> {
    let range = |f: &Field| raw_range(&f.as_struct("allocator.Range").map_err(json_err)?);
    list.items("[]allocator.RangeSet")
        .map_err(json_err)?
        .iter()
        .map(|set| match set.value() {
            Value::Object(_) => Ok(vec![range(set)?]),
            _ => set
                .items("allocator.RangeSet")
                .map_err(json_err)?
                .iter()
                .map(range)
                .collect(),
        })
        .collect()
}

/// A requested address: `10.1.2.3` or `10.1.2.3/24` (the prefix is
/// ignored; the range decides the mask).
fn requested_ips(list: Field, out: &mut Vec<IpAddr>) -> Result<(), Error> {
    for ip in list.items("[]*ip.IP").map_err(json_err)? {
        let s: String = ip.decode().map_err(json_err)?;
        let ip =
            args::parse_ip(&s).map_err(|_| Error::config(format!("invalid IP address: {s}")))?;
        out.push(canon(ip));
    }
    Ok(())
}

impl IpamConfig {
    /// Decode and validate, in the reference's order and with its messages.
    pub fn load(stdin: &[u8], cni_args: &str) -> Result<IpamConfig, Error> {
        let root = gojson::parse(stdin)
            .map_err(|e| Error::config(format!("failed to load netconf: {e}")))?;
        let root = Object::new(&root, "allocator.Net").map_err(json_err)?;
        let name: String = root.field("name").map_err(json_err)?;
        let cni_version: String = root.field("cniVersion").map_err(json_err)?;

        // Decode every typed field first, as json.Unmarshal does, so that a
        // malformed value is reported even when the config is also
        // incomplete.
        let ipam = root
            .object("ipam", "allocator.IPAMConfig")
            .map_err(json_err)?;
        let rt = root
            .get("runtimeConfig")
            .as_struct(RUNTIME_CONFIG)
            .map_err(json_err)?;
        let runtime_ranges = range_sets(rt.get("ipRanges"))?;
        let args_cni = match root.object("args", ARGS).map_err(json_err)? {
            Some(args) => args.object("cni", "allocator.IPAMArgs").map_err(json_err)?,
            None => None,
        };

        let Some(ipam) = ipam else {
            return Err(Error::config("IPAM config missing 'ipam' key"));
        };
        let legacy = raw_range(&ipam)?;
        let mut sets = range_sets(ipam.get("ranges"))?;
        let routes = ipam
            .get("routes")
            .items("[]*types.Route")
            .map_err(json_err)?
            .iter()
            .map(|r| r.decode::<Route>().map_err(json_err))
            .collect::<Result<Vec<_>, _>>()?;
        let data_dir: String = ipam.field("dataDir").map_err(json_err)?;
        let resolv_conf: String = ipam.field("resolvConf").map_err(json_err)?;

        let mut requested = Vec::new();
        if !cni_args.is_empty() {
            let parsed = Args::parse(cni_args, &[("IP", Kind::Ip)]).map_err(Error::config)?;
            if let Some(ip) = parsed.ip("IP") {
                requested.push(canon(ip));
            }
        }
        if let Some(cni) = args_cni {
            requested_ips(cni.get("ips"), &mut requested)?;
        }
        requested_ips(rt.get("ips"), &mut requested)?;
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
