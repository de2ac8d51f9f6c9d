//! CHECK's view of the container interface: every address of
//! `prevResult` on it with a route to its subnet, and every route of
//! `prevResult` in the routing table (the reference's
//! `ip.ValidateExpectedInterfaceIPs` and `ip.ValidateExpectedRoute`).

use cni_net::{Link, Netlink};
use skel::types::Result1;

use crate::error::Error;

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
