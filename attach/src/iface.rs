//! The container interface's addresses, link state and routes: the
//! reference's `ipam.ConfigureIface`, as netlink requests pipelined in one
//! round trip ([`Requests`]), for a link of any kind (veth, macvlan,
//! ipvlan, vlan, dummy, tap, a host device). [`configure`] is the whole of
//! it; plugins that route differently (ptp) compose [`addresses`] and
//! [`routes`] with requests of their own. The sysctls that go with it:
//! [`set_v6_sysctls`] before IPv6 addresses, [`announce`] (`arp_notify`,
//! `ndisc_notify`) for the links that share their parent's segment.

use std::fs::File;
use std::net::IpAddr;
use std::time::Duration;

use cni_net::{AddrFlags, Batch, IpNetwork, Link, Netlink, RouteSpec, Settled, netns, sysctl};
use skel::types::{IpConfig, Result1, Route};

use crate::error::Error;

/// Netlink requests sent in one round trip, each with the error context
/// the reference gives that step.
#[derive(Debug, Default)]
pub struct Requests {
    batch: Batch,
    what: Vec<String>,
}

impl Requests {
    pub fn new() -> Requests {
        Requests::default()
    }

    pub fn add_addr(
        &mut self,
        link: &Link,
        addr: IpNetwork,
        flags: AddrFlags,
        what: String,
    ) -> &mut Requests {
        self.batch.add_addr_with(link, addr, flags);
        self.what.push(what);
        self
    }

    pub fn set_up(&mut self, link: &Link) -> &mut Requests {
        self.batch.set_up(link);
        self.what.push(format!("failed to set {:?} UP", link.name));
        self
    }

    pub fn add_route(&mut self, route: &RouteSpec, what: String) -> &mut Requests {
        self.batch.add_route(route);
        self.what.push(what);
        self
    }

    /// Send every request on `nl`; the first failure, in its context.
    pub fn run(self, nl: &Netlink) -> Result<(), Error> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let what = self.what;
        nl.run_batch(self.batch).map_err(|(i, e)| {
            let ctx = what.get(i).cloned().unwrap_or_default();
            Error::from(e).context(ctx)
        })
    }
}

/// The first gateway of each family among the addresses of an interface:
/// the gateway of its routes that name none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gateways {
    pub v4: Option<IpAddr>,
    pub v6: Option<IpAddr>,
}

/// Add `ips` to `link` with `flags`; returns their first gateways.
pub fn addresses<'a>(
    reqs: &mut Requests,
    link: &Link,
    ips: impl IntoIterator<Item = &'a IpConfig>,
    flags: AddrFlags,
) -> Gateways {
    let mut gws = Gateways::default();
    for ip in ips {
        let what = format!("failed to add IP addr {} to {:?}", ip.address, link.name);
        reqs.add_addr(link, ip.address.0, flags, what);
        match (ip.address.is_ipv4(), ip.gateway) {
            (true, Some(g)) if gws.v4.is_none() => gws.v4 = Some(g),
            (false, Some(g)) if gws.v6.is_none() => gws.v6 = Some(g),
            _ => {}
        }
    }
    gws
}

/// Add `routes` through `link`; a route without a gateway goes via the
/// first gateway of its family, if any.
pub fn routes(reqs: &mut Requests, link: &Link, routes: &[Route], gws: Gateways) {
    for r in routes {
        let gw = r.gw.or(if r.dst.is_ipv4() { gws.v4 } else { gws.v6 });
        let spec = RouteSpec {
            gw,
            oif: Some(link.index),
            priority: u32::try_from(r.priority).ok().filter(|p| *p > 0),
            table: r.table.and_then(|t| u32::try_from(t).ok()),
            scope: r.scope.and_then(|s| u8::try_from(s).ok()),
            ..RouteSpec::new(r.dst.network().0)
        };
        let via = gw.map(|g| format!(" via {g}")).unwrap_or_default();
        let what = format!(
            "failed to add route '{}{via} dev {}'",
            r.dst.network(),
            link.name
        );
        reqs.add_route(&spec, what);
    }
}

/// Sysctls needed when IPv6 addresses follow: IPv6 on for `lo` and the
/// interface, and `keep_addr_on_down`, which the reference treats as fatal.
pub fn set_v6_sysctls(ns: &File, ifname: &str) -> Result<(), Error> {
    netns::run(ns, || -> Result<(), Error> {
        for dev in ["lo", ifname] {
            let key = format!("net/ipv6/conf/{dev}/disable_ipv6");
            if sysctl::get(&key).map(|v| v != "0").unwrap_or(false) {
                let _ = sysctl::set(&key, "0");
            }
        }
        sysctl::set(&format!("net/ipv6/conf/{ifname}/keep_addr_on_down"), "1").map_err(|e| {
            Error::from(e).context(format!("failed to set keep_addr_on_down on {ifname}"))
        })
    })?
}

/// Have the interface `ifname` of `ns` announce itself when it comes up or
/// changes address (gratuitous ARP, `arp_notify`; with `ndisc`,
/// unsolicited neighbour advertisements, `ndisc_notify`), as the
/// reference's macvlan and ipvlan (`ndisc` too) and tap do, so that
/// neighbours on the parent's segment learn a reused address at once.
/// Best effort, like the reference (IPv6 may be disabled).
pub fn announce(ns: &File, ifname: &str, ndisc: bool) -> Result<(), Error> {
    netns::run(ns, || {
        let _ = sysctl::set(&format!("net/ipv4/conf/{ifname}/arp_notify"), "1");
        if ndisc {
            let _ = sysctl::set(&format!("net/ipv6/conf/{ifname}/ndisc_notify"), "1");
        }
    })?;
    Ok(())
}

/// The addresses of `result` for interface `index` on `link`, link up, DAD
/// settle (only when DAD is on and an IPv6 gateway exists), then routes.
/// Addresses are added with `IFA_F_NODAD` unless `enable_dad`, so they are
/// usable at once.
pub fn configure(
    cont: &Netlink,
    link: &Link,
    result: &Result1,
    index: usize,
    enable_dad: bool,
) -> Result<(), Error> {
    let mut reqs = Requests::new();
    let flags = if enable_dad {
        AddrFlags::default()
    } else {
        AddrFlags::NODAD
    };
    let ips = result.ips.iter().filter(|ip| ip.interface == Some(index));
    let gws = addresses(&mut reqs, link, ips, flags);
    reqs.set_up(link);
    if enable_dad && gws.v6.is_some() {
        std::mem::take(&mut reqs).run(cont)?;
        settle(cont, link, Duration::from_secs(5))?;
    }
    routes(&mut reqs, link, &result.routes, gws);
    reqs.run(cont)
}

/// Wait until no IPv6 address of `link` is tentative, in the reference's
/// words when it does not settle.
fn settle(cont: &Netlink, link: &Link, timeout: Duration) -> Result<(), Error> {
    match cont.settle_addrs(link, timeout)? {
        Settled::Done => Ok(()),
        Settled::DadFailed(addr) => Err(Error::internal(format!(
            "link {} has address {addr} in DADFAILED state",
            link.name
        ))),
        Settled::StillTentative => Err(Error::internal(format!(
            "link {} still has tentative addresses after {}s",
            link.name,
            timeout.as_secs()
        ))),
    }
}
