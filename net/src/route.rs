//! Routes: add, list, delete.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::addr::{AF_INET, AF_INET6, ip_bytes, ip_of};
use crate::error::Result;
use crate::netlink::{Msg, NLM_F_CREATE, NLM_F_DUMP, Netlink, attrs, u32_of};

const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_GETROUTE: u16 = 26;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PREFSRC: u16 = 7;
const RTA_PRIORITY: u16 = 6;
const RTA_TABLE: u16 = 15;
const RTPROT_BOOT: u8 = 3;
const RTN_UNSPEC: u8 = 0;
const RTN_UNICAST: u8 = 1;
const NLM_F_REPLACE: u16 = 0x100;

/// The main routing table.
pub const TABLE_MAIN: u32 = 254;
/// `RT_SCOPE_UNIVERSE`, `RT_SCOPE_LINK`, `RT_SCOPE_HOST`.
pub const SCOPE_UNIVERSE: u8 = 0;
pub const SCOPE_LINK: u8 = 253;
pub const SCOPE_HOST: u8 = 254;
const SCOPE_NOWHERE: u8 = 255;

/// A route to add or delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    pub dst: IpNetwork,
    pub gw: Option<IpAddr>,
    /// Output link index.
    pub oif: Option<u32>,
    /// Metric.
    pub priority: Option<u32>,
    /// Table; main when `None`.
    pub table: Option<u32>,
    /// Scope; universe when `None` (on delete: any).
    pub scope: Option<u8>,
    /// Preferred source address (`RTA_PREFSRC`, `ip route ... src`).
    pub src: Option<IpAddr>,
}

impl RouteSpec {
    pub fn new(dst: IpNetwork) -> RouteSpec {
        RouteSpec {
            dst,
            gw: None,
            oif: None,
            priority: None,
            table: None,
            scope: None,
            src: None,
        }
    }

    /// `<dst> via <gw> dev <oif> metric <p>`, for messages.
    pub(crate) fn describe(&self) -> String {
        let mut s = format!("{}", self.dst);
        if let Some(gw) = self.gw {
            s.push_str(&format!(" via {gw}"));
        }
        if let Some(oif) = self.oif {
            s.push_str(&format!(" dev {oif}"));
        }
        if let Some(src) = self.src {
            s.push_str(&format!(" src {src}"));
        }
        if let Some(p) = self.priority {
            s.push_str(&format!(" metric {p}"));
        }
        if let Some(t) = self.table {
            s.push_str(&format!(" table {t}"));
        }
        s
    }

    /// `struct rtmsg` and attributes for this route.
    fn message(&self, kind: u16, flags: u16, scope: u8, rtype: u8, protocol: u8) -> Msg {
        let table = self.table.unwrap_or(TABLE_MAIN);
        let mut h = [0u8; 12];
        h[0] = if self.dst.is_ipv4() {
            AF_INET
        } else {
            AF_INET6
        };
        h[1] = self.dst.prefix();
        // The header holds 8 bits; larger ids travel only in RTA_TABLE.
        h[4] = u8::try_from(table).unwrap_or(0);
        h[5] = protocol;
        h[6] = scope;
        h[7] = rtype;
        let mut m = Msg::new(kind, flags, &h);
        m.u32(RTA_TABLE, table);
        if self.dst.prefix() > 0 {
            m.attr(RTA_DST, &ip_bytes(&self.dst.network()));
        }
        if let Some(gw) = self.gw {
            m.attr(RTA_GATEWAY, &ip_bytes(&gw));
        }
        if let Some(oif) = self.oif {
            m.u32(RTA_OIF, oif);
        }
        if let Some(p) = self.priority {
            m.u32(RTA_PRIORITY, p);
        }
        if let Some(src) = self.src {
            m.attr(RTA_PREFSRC, &ip_bytes(&src));
        }
        m
    }

    /// The `RTM_NEWROUTE` of [`Netlink::add_route`].
    pub(crate) fn add_message(&self) -> Msg {
        let scope = self.scope.unwrap_or(SCOPE_UNIVERSE);
        self.message(RTM_NEWROUTE, NLM_F_CREATE, scope, RTN_UNICAST, RTPROT_BOOT)
    }

    /// The `RTM_NEWROUTE` of [`Netlink::replace_route`].
    pub(crate) fn replace_message(&self) -> Msg {
        let scope = self.scope.unwrap_or(SCOPE_UNIVERSE);
        self.message(
            RTM_NEWROUTE,
            NLM_F_CREATE | NLM_F_REPLACE,
            scope,
            RTN_UNICAST,
            RTPROT_BOOT,
        )
    }
}

/// A route as the kernel lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteInfo {
    pub dst: IpNetwork,
    pub gw: Option<IpAddr>,
    pub oif: Option<u32>,
    pub priority: Option<u32>,
    pub table: u32,
    pub scope: u8,
    /// Preferred source address.
    pub src: Option<IpAddr>,
    /// `RTN_*` (1 unicast, 2 local, 3 broadcast, ...).
    pub kind: u8,
    /// `RTPROT_*` (2 kernel, 3 boot, ...).
    pub protocol: u8,
}

impl RouteInfo {
    /// The spec that adds this route again, or deletes exactly it: same
    /// destination, gateway, link, metric, table, scope and source.
    pub fn spec(&self) -> RouteSpec {
        RouteSpec {
            dst: self.dst,
            gw: self.gw,
            oif: self.oif,
            priority: self.priority,
            table: Some(self.table),
            scope: Some(self.scope),
            src: self.src,
        }
    }

    /// A unicast route (not local, broadcast, multicast, unreachable...).
    pub fn is_unicast(&self) -> bool {
        self.kind == RTN_UNICAST
    }

    /// A route from the body of an `RTM_NEWROUTE` message.
    pub(crate) fn from_body(b: &[u8]) -> Option<RouteInfo> {
        let family = *b.first()?;
        let mut dst = None;
        let mut gw = None;
        let mut oif = None;
        let mut priority = None;
        let mut src = None;
        let mut table = u32::from(*b.get(4)?);
        for (kind, d) in attrs(b.get(12..)?) {
            match kind {
                RTA_DST => dst = ip_of(family, d),
                RTA_GATEWAY => gw = ip_of(family, d),
                RTA_OIF => oif = u32_of(d),
                RTA_PRIORITY => priority = u32_of(d),
                RTA_PREFSRC => src = ip_of(family, d),
                RTA_TABLE => table = u32_of(d)?,
                _ => {}
            }
        }
        let dst = dst.unwrap_or(if family == AF_INET6 {
            IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
        });
        Some(RouteInfo {
            dst: IpNetwork::new(dst, *b.get(1)?).ok()?,
            gw,
            oif,
            priority,
            table,
            scope: *b.get(6)?,
            src,
            kind: *b.get(7)?,
            protocol: *b.get(5)?,
        })
    }
}

impl Netlink {
    /// Add a route. Created without `NLM_F_EXCL`, like the reference's
    /// `RouteAddEcmp`, so an equal-cost route via another gateway can be
    /// added next to an existing one; an identical route still fails with
    /// `EEXIST`.
    pub fn add_route(&self, r: &RouteSpec) -> Result<()> {
        self.request(&format!("add route {}", r.describe()), r.add_message())
            .map(drop)
    }

    /// Add a route, or replace the one with the same destination, metric
    /// and table (`ip route replace`).
    pub fn replace_route(&self, r: &RouteSpec) -> Result<()> {
        self.request(
            &format!("replace route {}", r.describe()),
            r.replace_message(),
        )
        .map(drop)
    }

    /// Delete a route; `ESRCH` when no route matches.
    pub fn delete_route(&self, r: &RouteSpec) -> Result<()> {
        let scope = r.scope.unwrap_or(SCOPE_NOWHERE);
        self.request(
            &format!("delete route {}", r.describe()),
            r.message(RTM_DELROUTE, 0, scope, RTN_UNSPEC, RTPROT_BOOT),
        )
        .map(drop)
    }

    /// Delete exactly the route `r` as listed, whoever added it (the
    /// kernel's own subnet routes included: a deletion names the
    /// protocol it must match).
    pub fn delete_listed_route(&self, r: &RouteInfo) -> Result<()> {
        let spec = r.spec();
        self.request(
            &format!("delete route {}", spec.describe()),
            spec.message(RTM_DELROUTE, 0, r.scope, RTN_UNSPEC, r.protocol),
        )
        .map(drop)
    }

    /// The route the kernel picks for `dst` (`ip route get`): its output
    /// link, gateway and source. `ENETUNREACH` and the like when none.
    pub fn route_get(&self, dst: IpAddr) -> Result<RouteInfo> {
        let mut h = [0u8; 12];
        h[0] = crate::addr::family_of(&dst);
        h[1] = if dst.is_ipv4() { 32 } else { 128 };
        let mut m = Msg::new(RTM_GETROUTE, 0, &h);
        m.attr(RTA_DST, &ip_bytes(&dst));
        let op = format!("get route to {dst}");
        let replies = self.request(&op, m)?;
        replies
            .iter()
            .find_map(|b| RouteInfo::from_body(b))
            .ok_or_else(|| crate::Error::other(op, "no route in the answer"))
    }

    /// Routes of one family, optionally only those leaving through `oif`
    /// and/or in `table`.
    pub fn routes(
        &self,
        ipv6: bool,
        oif: Option<u32>,
        table: Option<u32>,
    ) -> Result<Vec<RouteInfo>> {
        let mut h = [0u8; 12];
        h[0] = if ipv6 { AF_INET6 } else { AF_INET };
        let replies = self.request("list routes", Msg::new(RTM_GETROUTE, NLM_F_DUMP, &h))?;
        Ok(replies
            .iter()
            .filter_map(|b| RouteInfo::from_body(b))
            .filter(|r| oif.is_none_or(|o| r.oif == Some(o)))
            .filter(|r| table.is_none_or(|t| r.table == t))
            .collect())
    }
}
