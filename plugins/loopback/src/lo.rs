//! What the plugin does to `lo` inside a namespace.

use std::fs::File;

use cni_net::{Addr, IpNetwork, Netlink};

use crate::error::Error;

const LO: &str = "lo";

/// The first IPv4 and the first IPv6 address on `lo`.
#[derive(Debug, Default)]
pub struct LoAddrs {
    pub v4: Option<IpNetwork>,
    pub v6: Option<IpNetwork>,
}

/// Refuse any address a loopback device should not carry, so a misused
/// namespace (or the wrong one) is reported instead of reused.
fn vet(addrs: &[Addr]) -> Result<LoAddrs, Error> {
    let mut out = LoAddrs::default();
    // IPv4 first, like the reference, so the reported offender matches.
    let (v4, v6): (Vec<&Addr>, Vec<&Addr>) = addrs.iter().partition(|a| a.addr.is_ipv4());
    for a in v4.iter().chain(v6.iter()) {
        if !a.addr.ip().is_loopback() {
            return Err(Error::NonLoopbackAddress(a.addr.ip()));
        }
    }
    out.v4 = v4.first().map(|a| a.addr);
    out.v6 = v6.first().map(|a| a.addr);
    Ok(out)
}

/// Bring `lo` up and return its addresses. Foreign addresses are refused
/// before anything is changed, and checked again once `lo` is up (IPv6
/// addresses appear only then).
pub fn up(ns: &File) -> Result<LoAddrs, Error> {
    let nl = Netlink::in_netns(ns)?;
    let lo = nl.link_by_name(LO)?;
    vet(&nl.addrs(Some(&lo))?)?;
    nl.set_up(&lo)?;
    vet(&nl.addrs(Some(&lo))?)
}

/// Take `lo` down.
pub fn down(ns: &File) -> Result<(), Error> {
    let nl = Netlink::in_netns(ns)?;
    let lo = nl.link_by_name(LO)?;
    nl.set_down(&lo)?;
    Ok(())
}

/// `lo` must exist and be administratively up.
pub fn check(ns: &File) -> Result<(), Error> {
    let nl = Netlink::in_netns(ns)?;
    match nl.link_by_name(LO)? {
        lo if lo.up => Ok(()),
        _ => Err(Error::Down),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Addr {
        Addr {
            index: 1,
            addr: s.parse().unwrap(),
            flags: Default::default(),
            scope: 254,
        }
    }

    #[test]
    fn loopback_addresses_pass_and_first_of_each_family_is_kept() {
        let got = vet(&[addr("::1/128"), addr("127.0.0.1/8"), addr("127.0.0.2/8")]).unwrap();
        assert_eq!(got.v4.unwrap().to_string(), "127.0.0.1/8");
        assert_eq!(got.v6.unwrap().to_string(), "::1/128");
        let none = vet(&[]).unwrap();
        assert!(none.v4.is_none() && none.v6.is_none());
    }

    #[test]
    fn foreign_address_is_refused_v4_first() {
        let e = vet(&[
            addr("fd40::1/64"),
            addr("127.0.0.1/8"),
            addr("10.240.0.9/32"),
        ])
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "loopback interface found with non-loopback address \"10.240.0.9\""
        );
        let e = vet(&[addr("fd40::1/64")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "loopback interface found with non-loopback address \"fd40::1\""
        );
    }
}
