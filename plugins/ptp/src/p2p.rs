//! The point-to-point addressing of an attachment, as the reference's
//! `setupContainerVeth` and `setupHostVeth` leave it.
//!
//! The container interface keeps its address with the subnet's prefix
//! (`10.240.0.5/24`), but every packet, even to a neighbour in that subnet,
//! goes via the gateway, which only the host end of the veth answers for:
//!
//! ```text
//! container: 10.240.0.1 dev eth0 scope link src 10.240.0.5
//!            10.240.0.0/24 via 10.240.0.1 dev eth0 src 10.240.0.5
//!            (and IPAM's routes, via the gateway unless they name one)
//! host:      vethXXXXXXXX  10.240.0.1/32 (every ptp host veth has it)
//!            10.240.0.5 dev vethXXXXXXXX scope host
//! ```
//!
//! The reference adds the address, lets the kernel add its subnet route
//! and deletes it again; we add the address with `IFA_F_NOPREFIXROUTE`, so
//! that route never exists: the container never reaches a neighbour on
//! the link directly, not even while ADD runs (its link is up early).
//! Addresses are added without duplicate address detection (only the two
//! ends share the link), so they are usable at once.
//!
//! IPAM's routes go in while the reference's subnet route still exists,
//! so their gateway may be any address of the subnet (`10.240.0.254`),
//! not only the host end's. The kernel accepts a gateway only when a link
//! route leads to it, so for each such gateway a link route to that one
//! address stands in for the subnet route while IPAM's routes are added,
//! and is deleted after ([`Container::run`]): the routes left are the
//! reference's, and a gateway outside the subnet still fails as there.

use std::collections::BTreeSet;
use std::net::IpAddr;

use cni_attach::iface::{self, Requests};
use cni_net::route::{SCOPE_HOST, SCOPE_LINK};
use cni_net::{AddrFlags, IpNetwork, Link, Netlink, RouteSpec};
use skel::types::{IpConfig, Result1, Route};

use crate::error::Error;

/// The gateway of `ip`, which ptp cannot do without: it is the host end's
/// address. The reference crashes without one (`numerical result out of
/// range`); this says what is missing, before anything depends on it.
pub fn gateway(ip: &IpConfig) -> Result<IpAddr, Error> {
    let addr = ip.address;
    let gw = ip.gateway.ok_or_else(|| {
        Error::config(format!(
            "IPAM plugin returned no gateway for {addr}: ptp needs one, as the address of the \
             host end of the link"
        ))
    })?;
    if gw.is_ipv4() != addr.is_ipv4() {
        return Err(Error::config(format!(
            "gateway {gw} of {addr} is not of the address's family"
        )));
    }
    if gw == addr.ip() {
        return Err(Error::config(format!(
            "gateway {gw} of {addr} is the container's own address"
        )));
    }
    Ok(gw)
}

/// `ip/32` or `ip/128`.
fn host_prefix(ip: IpAddr) -> IpNetwork {
    IpNetwork::from(ip)
}

/// The container's side of an attachment: requests sent in one round
/// trip, then the stand-in routes deleted.
pub struct Container {
    reqs: Requests,
    /// Link routes to IPAM routes' gateways, there only while IPAM's
    /// routes are added ([`stand_ins`]).
    stand_ins: Vec<RouteSpec>,
}

impl Container {
    pub fn run(self, cont: &Netlink) -> Result<(), Error> {
        self.reqs.run(cont)?;
        for route in &self.stand_ins {
            cont.delete_route(route).map_err(|e| {
                Error::from(e).context(format!("failed to delete route {}", route.dst))
            })?;
        }
        Ok(())
    }
}

/// Requests in the container's namespace: the addresses of interface 1,
/// a route to each gateway, IPAM's routes, each subnet via its gateway.
/// The link is up already.
pub fn container(link: &Link, result: &Result1) -> Result<Container, Error> {
    let mut reqs = Requests::new();
    let ips: Vec<&IpConfig> = result
        .ips
        .iter()
        .filter(|ip| ip.interface == Some(1))
        .collect();
    let flags = AddrFlags::NODAD | AddrFlags::NOPREFIXROUTE;
    let gws = iface::addresses(&mut reqs, link, ips.iter().copied(), flags);
    for ip in &ips {
        let route = RouteSpec {
            oif: Some(link.index),
            scope: Some(SCOPE_LINK),
            src: Some(ip.address.ip()),
            ..RouteSpec::new(host_prefix(gateway(ip)?))
        };
        let what = failed_route(&route);
        reqs.add_route(&route, what);
    }
    let stand_ins = stand_ins(link.index, &ips, &result.routes)?;
    for route in &stand_ins {
        reqs.add_route(route, failed_route(route));
    }
    iface::routes(&mut reqs, link, &result.routes, gws);
    for ip in &ips {
        let route = RouteSpec {
            gw: Some(gateway(ip)?),
            oif: Some(link.index),
            src: Some(ip.address.ip()),
            ..RouteSpec::new(ip.address.network().0)
        };
        let what = failed_route(&route);
        reqs.add_route(&route, what);
    }
    Ok(Container { reqs, stand_ins })
}

/// A link route through `oif` to each gateway of `routes` that the
/// reference's subnet routes would have made reachable: in the subnet of an address in
/// `ips`, yet neither a gateway of `ips` (those have link routes of their
/// own) nor an address of the container (the kernel finds those local).
fn stand_ins(oif: u32, ips: &[&IpConfig], routes: &[Route]) -> Result<Vec<RouteSpec>, Error> {
    let mut own = BTreeSet::new();
    for ip in ips {
        own.insert(gateway(ip)?);
        own.insert(ip.address.ip());
    }
    let mut seen = BTreeSet::new();
    Ok(routes
        .iter()
        .filter_map(|r| r.gw)
        .filter(|gw| !own.contains(gw) && ips.iter().any(|ip| ip.address.0.contains(*gw)))
        .filter(|gw| seen.insert(*gw))
        .map(|gw| RouteSpec {
            oif: Some(oif),
            scope: Some(SCOPE_LINK),
            ..RouteSpec::new(host_prefix(gw))
        })
        .collect())
}

/// Requests in the host's namespace: each gateway once on the host end
/// `port`, a host route to each container address through it.
pub fn host(port: &Link, result: &Result1) -> Result<Requests, Error> {
    let mut reqs = Requests::new();
    let mut gateways = BTreeSet::new();
    let mut addrs = BTreeSet::new();
    for ip in &result.ips {
        let gw = gateway(ip)?;
        if gateways.insert(gw) {
            let what = format!("failed to add IP addr ({}) to veth", go_ipnet(gw));
            reqs.add_addr(port, host_prefix(gw), AddrFlags::NODAD, what);
        }
    }
    for ip in &result.ips {
        if addrs.insert(ip.address.ip()) {
            let route = RouteSpec {
                oif: Some(port.index),
                scope: Some(SCOPE_HOST),
                ..RouteSpec::new(host_prefix(ip.address.ip()))
            };
            reqs.add_route(&route, "failed to add route on host".to_string());
        }
    }
    Ok(reqs)
}

/// No duplicate address detection on the host end `name`, as on every
/// address we add: only the two ends share the link. Best effort (IPv6
/// may be disabled).
pub fn host_without_dad(name: &str) {
    let _ = cni_net::sysctl::set(&format!("net/ipv6/conf/{name}/accept_dad"), "0");
}

/// The reference's message for a failed route, which prints the route as
/// Go's netlink library does.
fn failed_route(r: &RouteSpec) -> String {
    let opt = |ip: Option<IpAddr>| ip.map_or("<nil>".to_string(), |ip| ip.to_string());
    format!(
        "failed to add route {{Ifindex: {} Dst: {} Src: {} Gw: {} Flags: [] Table: 0 Realm: 0}}",
        r.oif.unwrap_or(0),
        r.dst,
        opt(r.src),
        opt(r.gw)
    )
}

/// `ip/32` (`/128`) as Go's `%#v` prints a `*net.IPNet` whose IP came
/// from JSON (16 bytes, also for IPv4).
fn go_ipnet(ip: IpAddr) -> String {
    let (bytes, mask_len) = match ip {
        IpAddr::V4(a) => (a.to_ipv6_mapped().octets(), 4),
        IpAddr::V6(a) => (a.octets(), 16),
    };
    let hex = |b: &[u8]| {
        b.iter()
            .map(|x| format!("{x:#x}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "&net.IPNet{{IP:net.IP{{{}}}, Mask:net.IPMask{{{}}}}}",
        hex(&bytes),
        hex(&vec![0xff; mask_len])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(addr: &str, gw: Option<&str>) -> IpConfig {
        IpConfig {
            address: addr.parse().unwrap(),
            gateway: gw.map(|g| g.parse().unwrap()),
            interface: Some(1),
        }
    }

    #[test]
    fn a_gateway_is_required_and_sensible() {
        let gw = gateway(&ip("10.240.0.5/24", Some("10.240.0.1"))).unwrap();
        assert_eq!(gw, "10.240.0.1".parse::<IpAddr>().unwrap());
        let cases = [
            (
                ip("10.240.0.5/24", None),
                "IPAM plugin returned no gateway for 10.240.0.5/24: ptp needs one, as the \
                 address of the host end of the link",
            ),
            (
                ip("10.240.0.5/24", Some("fd40::1")),
                "gateway fd40::1 of 10.240.0.5/24 is not of the address's family",
            ),
            (
                ip("fd40::5/64", Some("fd40::5")),
                "gateway fd40::5 of fd40::5/64 is the container's own address",
            ),
        ];
        for (ip, msg) in cases {
            let e = gateway(&ip).unwrap_err();
            assert_eq!((e.code, e.msg.as_str()), (7, msg));
        }
    }

    #[test]
    fn stand_ins_only_for_other_gateways_inside_a_subnet() {
        let (a, b) = (
            ip("10.240.0.5/24", Some("10.240.0.1")),
            ip("fd40::5/64", Some("fd40::1")),
        );
        let route = |dst: &str, gw: Option<&str>| -> Route {
            serde_json::from_value(serde_json::json!({"dst": dst, "gw": gw})).unwrap()
        };
        let routes = [
            route("0.0.0.0/0", None),
            route("10.240.9.0/24", Some("10.240.0.1")),
            route("10.240.9.0/24", Some("10.240.0.5")),
            route("10.240.9.0/24", Some("10.240.1.1")),
            route("10.240.8.0/24", Some("10.240.0.254")),
            route("10.240.7.0/24", Some("10.240.0.254")),
            route("::/0", Some("fd40::fe")),
        ];
        let got: Vec<String> = stand_ins(7, &[&a, &b], &routes)
            .unwrap()
            .iter()
            .map(|r| format!("{} {:?} {:?}", r.dst, r.oif, r.scope))
            .collect();
        assert_eq!(
            got,
            [
                "10.240.0.254/32 Some(7) Some(253)",
                "fd40::fe/128 Some(7) Some(253)"
            ]
        );
    }

    #[test]
    fn messages_print_as_the_reference_does() {
        assert_eq!(
            go_ipnet("10.44.0.1".parse().unwrap()),
            "&net.IPNet{IP:net.IP{0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0xff, \
             0xff, 0xa, 0x2c, 0x0, 0x1}, Mask:net.IPMask{0xff, 0xff, 0xff, 0xff}}"
        );
        assert!(
            go_ipnet("fd44::1".parse().unwrap())
                .starts_with("&net.IPNet{IP:net.IP{0xfd, 0x44, 0x0,")
        );
        let r = RouteSpec {
            gw: Some("10.44.0.1".parse().unwrap()),
            oif: Some(5),
            src: Some("10.44.0.3".parse().unwrap()),
            ..RouteSpec::new("10.44.0.0/24".parse().unwrap())
        };
        assert_eq!(
            failed_route(&r),
            "failed to add route {Ifindex: 5 Dst: 10.44.0.0/24 Src: 10.44.0.3 Gw: 10.44.0.1 \
             Flags: [] Table: 0 Realm: 0}"
        );
    }
}
