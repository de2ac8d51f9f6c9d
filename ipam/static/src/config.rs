//! The configuration: `ipam.addresses`, `routes` and `dns`, the addresses
//! of CNI_ARGS `IP=`/`GATEWAY=`, `args.cni.ips` and `runtimeConfig.ips`,
//! decoded by Go's rules ([`skel::gojson`]) and combined in the reference's
//! order, with its messages.

use std::net::IpAddr;

use skel::Error;
use skel::args::{Args, Kind};
use skel::gojson::{self, DecodeError, Field, Object};
use skel::types::{Dns, Route};

/// The reference's anonymous `Net.RuntimeConfig` type, as Go names it.
const RUNTIME_CONFIG: &str = r#"struct { IPs []string "json:\"ips,omitempty\"" }"#;
/// The reference's anonymous `Net.Args` type.
const ARGS: &str = r#"struct { A *main.IPAMArgs "json:\"cni\"" }"#;

/// One address of the result: canonical (an IPv4-mapped IPv6 address is
/// IPv4, as Go's `To4` makes it) with the prefix Go prints for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub ip: IpAddr,
    pub prefix: u8,
    pub gateway: Option<IpAddr>,
}

impl Address {
    /// Whether `ip` lies in this address's subnet (Go's `IPNet.Contains`).
    fn contains(&self, ip: IpAddr) -> bool {
        match (self.ip, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// What ADD returns and CHECK compares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub cni_version: String,
    pub addresses: Vec<Address>,
    pub routes: Vec<Route>,
    pub dns: Dns,
}

/// Go's `net.ParseCIDR` followed by the reference's canonicalisation:
/// decimal prefix (leading zeros allowed), no zone; an IPv4-mapped IPv6
/// address becomes IPv4, and its prefix the part of the mask that covers
/// the IPv4 bits (Go prints `::ffff:10.1.0.5/120` as `10.1.0.5/24`).
pub fn parse_cidr(s: &str) -> Option<Address> {
    let (addr, prefix) = s.split_once('/')?;
    let ip: IpAddr = addr.parse().ok()?;
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = prefix.trim_start_matches('0');
    if digits.len() > 3 {
        return None;
    }
    let prefix: u32 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    if prefix > bits {
        return None;
    }
    let canonical = ip.to_canonical();
    let prefix = if canonical.is_ipv4() && ip.is_ipv6() {
        prefix.saturating_sub(96)
    } else {
        prefix
    };
    Some(Address {
        ip: canonical,
        prefix: prefix as u8,
        gateway: None,
    })
}

/// Go's `net.ParseIP`, canonical.
fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
}

fn json(e: DecodeError) -> Error {
    Error::internal(e.to_string())
}

/// An entry of `ipam.addresses`, still as text: the reference parses it
/// only after CNI_ARGS and the overriding lists, so a bad entry that is
/// overridden is never reported.
struct ConfAddress {
    address: String,
    gateway: Option<IpAddr>,
}

fn conf_address(f: &Field) -> Result<ConfAddress, Error> {
    let entry = f.as_struct("main.Address").map_err(json)?;
    let address: String = entry.field("address").map_err(json)?;
    // `net.IP`'s UnmarshalText: empty is no address.
    let gateway: String = entry.field("gateway").map_err(json)?;
    let gateway = match gateway.as_str() {
        "" => None,
        s => Some(parse_ip(s).ok_or_else(|| Error::internal(format!("invalid IP address: {s}")))?),
    };
    Ok(ConfAddress { address, gateway })
}

/// Where an address came from: `ipam.addresses` entries are parsed last.
enum Pending {
    Text(ConfAddress),
    Parsed(Address),
}

/// A list of CIDRs that replaces every address so far (`args.cni.ips`,
/// `runtimeConfig.ips`).
fn replacing(list: &[String]) -> Result<Vec<Pending>, Error> {
    list.iter()
        .map(|s| {
            parse_cidr(s).map(Pending::Parsed).ok_or_else(|| {
                Error::internal(format!(
                    "an entry in the 'ips' field is NOT in CIDR notation, got: '{s}'"
                ))
            })
        })
        .collect()
}

impl Config {
    /// The reference's `LoadIPAMConfig`: decode, then CNI_ARGS `IP=`
    /// (appended) and `GATEWAY=`, then `args.cni.ips`, then
    /// `runtimeConfig.ips` (each replacing everything before it), then
    /// validation of what is left.
    pub fn load(stdin: &[u8], cni_args: &str) -> Result<Config, Error> {
        let root = gojson::parse(stdin).map_err(json)?;
        let net = Object::new(&root, "main.Net").map_err(json)?;
        let cni_version: String = net.field("cniVersion").map_err(json)?;
        let ipam = net.object("ipam", "main.IPAMConfig").map_err(json)?;
        let runtime = net.get("runtimeConfig").as_struct(RUNTIME_CONFIG);
        let runtime_ips: Vec<String> = runtime.map_err(json)?.field("ips").map_err(json)?;
        let args_ips: Vec<String> = match net.object("args", ARGS).map_err(json)? {
            Some(args) => match args.object("cni", "main.IPAMArgs").map_err(json)? {
                Some(cni) => cni.field("ips").map_err(json)?,
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        let Some(ipam) = ipam else {
            return Err(Error::internal("IPAM config missing 'ipam' key"));
        };
        let routes = ipam
            .get("routes")
            .items("[]*types.Route")
            .map_err(json)?
            .iter()
            .map(route)
            .collect::<Result<Vec<_>, _>>()?;
        let mut addresses = ipam
            .get("addresses")
            .items("[]main.Address")
            .map_err(json)?
            .iter()
            .map(|a| conf_address(a).map(Pending::Text))
            .collect::<Result<Vec<_>, _>>()?;
        let dns: Dns = ipam.field("dns").map_err(json)?;

        if !cni_args.is_empty() {
            apply_cni_args(cni_args, &mut addresses)?;
        }
        if !args_ips.is_empty() {
            addresses = replacing(&args_ips)?;
        }
        if !runtime_ips.is_empty() {
            addresses = replacing(&runtime_ips)?;
        }
        let addresses = validate(addresses, &cni_version)?;
        Ok(Config {
            cni_version,
            addresses,
            routes,
            dns,
        })
    }
}

/// One entry of `ipam.routes`. One without `dst` is refused (code 7): the
/// reference returns it with `"dst": "<nil>"` (Go's zero `IPNet` printed),
/// which no plugin reads back (its bridge and ptp fail with `invalid CIDR
/// address: <nil>`), so the route never reached a kernel; it is not taken
/// for a default route either, which would be a route nobody configured.
fn route(r: &Field) -> Result<Route, Error> {
    if let Some(obj) = r.value().as_object()
        && gojson::lookup(obj, "dst").is_none()
    {
        return Err(Error::config(format!(
            "route {} has no \"dst\": a route needs its destination in CIDR notation \
             (0.0.0.0/0 or ::/0 for a default route)",
            gojson::marshal(r.value())
        )));
    }
    r.decode::<Route>().map_err(json)
}

/// CNI_ARGS `IP=` (comma-separated CIDRs, appended) and `GATEWAY=`
/// (comma-separated addresses). A gateway goes to every `IP=` address
/// whose subnet holds it. `ipam.addresses` entries keep theirs: the
/// reference compares with their parsed subnet, which is still empty at
/// this point, so they never match.
fn apply_cni_args(cni_args: &str, addresses: &mut Vec<Pending>) -> Result<(), Error> {
    let args = Args::parse(cni_args, &[("IP", Kind::String), ("GATEWAY", Kind::String)])
        .map_err(Error::internal)?;
    if let Some(ips) = args.get("IP").filter(|s| !s.is_empty()) {
        for item in ips.split(',') {
            let item = item.trim();
            let addr = parse_cidr(item).ok_or_else(|| {
                Error::internal(format!(
                    "the 'ip' field is expected to be in CIDR notation, got: '{item}'"
                ))
            })?;
            addresses.push(Pending::Parsed(addr));
        }
    }
    if let Some(gateways) = args.get("GATEWAY").filter(|s| !s.is_empty()) {
        for item in gateways.split(',') {
            let gw = parse_ip(item.trim())
                .ok_or_else(|| Error::internal(format!("invalid gateway address: {item}")))?;
            for a in addresses.iter_mut() {
                if let Pending::Parsed(a) = a
                    && a.contains(gw)
                {
                    a.gateway = Some(gw);
                }
            }
        }
    }
    Ok(())
}

/// Parse what is left of `ipam.addresses`, and refuse more than one
/// address per family before 0.3.0.
fn validate(pending: Vec<Pending>, cni_version: &str) -> Result<Vec<Address>, Error> {
    let mut out = Vec::with_capacity(pending.len());
    for p in pending {
        out.push(match p {
            Pending::Parsed(a) => a,
            Pending::Text(c) => {
                let mut a = parse_cidr(&c.address).ok_or_else(|| {
                    Error::internal(format!(
                        "the 'address' field is expected to be in CIDR notation, got: '{}'",
                        c.address
                    ))
                })?;
                a.gateway = c.gateway;
                a
            }
        });
    }
    let v4 = out.iter().filter(|a| a.ip.is_ipv4()).count();
    let v6 = out.len() - v4;
    if (v4 > 1 || v6 > 1) && !skel::version::greater_or_equal(cni_version, "0.3.0").unwrap_or(false)
    {
        return Err(Error::internal(format!(
            "CNI version {cni_version} does not support more than 1 address per family"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
