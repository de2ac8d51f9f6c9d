//! CHECK's view of the container interface: every address of
//! `prevResult` on it with a route to its subnet, and every route of
//! `prevResult` in the routing table (the reference's
//! `ip.ValidateExpectedInterfaceIPs` and `ip.ValidateExpectedRoute`).

use cni_net::{Link, Netlink};
use skel::CmdArgs;
use skel::types::{Interface, Result1};

use crate::error::Error;

/// CHECK's `prevResult`, in the current shape; `missing` is the plugin's
/// words for a CHECK without one.
pub fn prev_result(args: &CmdArgs, missing: &str) -> Result<Result1, Error> {
    Ok(skel::conf::NetConf::parse(&args.stdin)?
        .prev_result()?
        .ok_or_else(|| Error::internal(missing))?
        .into_v1()?)
}

/// The interface of `prev` that is `CNI_IFNAME` in `CNI_NETNS`, or the
/// reference's refusal (with its doubled space: the Go code prints an
/// empty sandbox there), whose first word is the plugin's (`Sandbox`,
/// macvlan's `sandbox`).
pub fn prev_interface<'p>(
    prev: &'p Result1,
    args: &CmdArgs,
    word: &str,
) -> Result<&'p Interface, Error> {
    prev.interfaces
        .iter()
        .find(|i| i.name == args.ifname && i.sandbox == args.netns_path)
        .ok_or_else(|| {
            Error::internal(format!(
                "{word} in prevResult  doesn't match configured netns: {}",
                args.netns_path
            ))
        })
}

/// The addresses and routes of `prev` on `link` (in `cont`'s namespace),
/// in the reference's order and wording.
pub fn addresses_and_routes(cont: &Netlink, link: &Link, prev: &Result1) -> Result<(), Error> {
    let addrs = cont.addrs(Some(link))?;
    for ip in &prev.ips {
        if !addrs.iter().any(|a| a.addr == ip.address.0) {
            return Err(Error::internal(format!(
                "Failed to match addr {} on interface {}",
                ip.address, link.name
            )));
        }
    }
    let mut routes = cont.routes(false, None, None)?;
    routes.extend(cont.routes(true, None, None)?);
    for ip in &prev.ips {
        let net = ip.address.network().0;
        if !routes
            .iter()
            .any(|r| r.dst == net && r.oif == Some(link.index))
        {
            return Err(Error::internal(format!(
                "Failed to match route to {} on interface {}",
                net, link.name
            )));
        }
    }
    for r in &prev.routes {
        let dst = r.dst.network().0;
        let found = routes
            .iter()
            .any(|k| k.dst == dst && (r.gw.is_none() || k.gw == r.gw));
        if !found {
            let via = r.gw.map(|g| format!(" via {g}")).unwrap_or_default();
            return Err(Error::internal(format!(
                "Expected Route {{Dst: {dst}{via}}} not found in routing table"
            )));
        }
    }
    Ok(())
}
