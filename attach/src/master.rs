//! The parent ("master") link of the links made on one (macvlan, ipvlan,
//! vlan): by default the interface of the default route, as the
//! reference's `getDefaultRouteInterfaceName`.

use cni_net::Netlink;
use cni_net::route::TABLE_MAIN;

use crate::error::Error;

/// The name of the interface of the first default route (no destination,
/// or `0.0.0.0/0` / `::/0`) of `nl`'s main table, IPv4 before IPv6 (the
/// order of the reference's dump): the host's for the default master, the
/// container's with `linkInContainer`. A default route without an output
/// interface (multipath) is passed over; none at all is the reference's
/// `no default route interface found`.
pub fn default_route_interface(nl: &Netlink) -> Result<String, Error> {
    for ipv6 in [false, true] {
        let oif = nl
            .routes(ipv6, None, Some(TABLE_MAIN))?
            .into_iter()
            .filter(|r| r.dst.prefix() == 0 && r.dst.ip().is_unspecified())
            .find_map(|r| r.oif);
        if let Some(index) = oif {
            return Ok(nl.link_by_index(index)?.name);
        }
    }
    Err(Error::internal("no default route interface found"))
}
