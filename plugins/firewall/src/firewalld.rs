//! The firewalld backend: each container address (`/32` or `/128`) a
//! source of zone `firewalldZone` in firewalld's runtime configuration,
//! through `cni-firewall`'s D-Bus client (`addSource`, `removeSource`,
//! `querySource` on `org.fedoraproject.FirewallD1`), as the reference.
//! An address already in the zone is fine (`ZONE_ALREADY_SET`); in
//! another zone it is an error, as in the reference.
//!
//! Ours: a failed ADD removes only the sources it added; DEL reports a
//! refusal (the reference ignores every error) but not a firewalld that
//! is gone (its runtime sources went with it) nor an unknown zone; CHECK fails when an
//! address is not in the zone (the reference ignores the answer).

use std::net::IpAddr;

use cni_firewall::firewalld::{self as fwd, Firewalld};
use skel::Error;

/// Whether firewalld is running on the system bus (auto picks it then).
pub fn running() -> bool {
    fwd::running()
}

/// The source a container address becomes.
pub fn source(ip: &IpAddr) -> String {
    let len = if ip.is_ipv6() { 128 } else { 32 };
    format!("{ip}/{len}")
}

fn error(e: cni_firewall::Error) -> Error {
    Error::internal(e.to_string())
}

fn connect() -> Result<Firewalld, Error> {
    Firewalld::connect().map_err(error)
}

/// ADD: the addresses into `zone`; into `added`, the sources this call
/// bound (not those already there), for the undo of a failed ADD.
pub fn add(zone: &str, ips: &[IpAddr], added: &mut Vec<String>) -> Result<(), Error> {
    let mut f = connect()?;
    for ip in ips {
        let src = source(ip);
        if f.add_source(zone, &src).map_err(error)? {
            added.push(src);
        }
    }
    Ok(())
}

/// Unbind `sources` from `zone`; what could not be removed.
pub fn remove_sources(zone: &str, sources: &[String]) -> Vec<String> {
    if sources.is_empty() {
        return Vec::new();
    }
    let mut f = match Firewalld::connect() {
        Ok(f) => f,
        Err(e) if e.is_unavailable() => return Vec::new(),
        Err(e) => return vec![e.to_string()],
    };
    sources
        .iter()
        .filter_map(|s| match f.remove_source(zone, s) {
            Err(e) if !e.is_unavailable() => Some(e.to_string()),
            _ => None,
        })
        .collect()
}

/// DEL: the addresses out of `zone`.
pub fn del(zone: &str, ips: &[IpAddr]) -> Vec<String> {
    let sources: Vec<String> = ips.iter().map(source).collect();
    remove_sources(zone, &sources)
}

/// CHECK: every address a source of `zone`.
pub fn check(zone: &str, ips: &[IpAddr]) -> Result<(), Error> {
    let mut f = connect()?;
    for ip in ips {
        let src = source(ip);
        if !f.query_source(zone, &src).map_err(error)? {
            return Err(Error::internal(format!(
                "expected the address {src} in {zone} zone, not found"
            )));
        }
    }
    Ok(())
}

/// STATUS: firewalld answers on the system bus.
pub fn status() -> Result<(), Error> {
    match running() {
        true => Ok(()),
        false => Err(Error::internal(
            "firewall backend not usable: firewalld is not running on the system bus",
        )),
    }
}
