//! Routes: add, list, delete.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use rtnetlink::packet_core::{NLM_F_CREATE, NLM_F_DUMP};
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::error::Result;
use crate::netlink::Netlink;

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
        }
    }

    /// `<dst> via <gw> dev <oif> metric <p>`, for messages.
    fn describe(&self) -> String {
        let mut s = format!("{}", self.dst);
        if let Some(gw) = self.gw {
            s.push_str(&format!(" via {gw}"));
        }
        if let Some(oif) = self.oif {
            s.push_str(&format!(" dev {oif}"));
        }
        if let Some(p) = self.priority {
            s.push_str(&format!(" metric {p}"));
        }
        if let Some(t) = self.table {
            s.push_str(&format!(" table {t}"));
        }
        s
    }

    fn message(&self, scope: u8, kind: RouteType) -> RouteMessage {
        let mut m = RouteMessage::default();
        m.header.address_family = if self.dst.is_ipv4() {
            AddressFamily::Inet
        } else {
            AddressFamily::Inet6
        };
        m.header.destination_prefix_length = self.dst.prefix();
        let table = self.table.unwrap_or(TABLE_MAIN);
        // The header holds 8 bits; larger ids travel only in RTA_TABLE.
        m.header.table = u8::try_from(table).unwrap_or(0);
        m.header.protocol = RouteProtocol::Boot;
        m.header.scope = RouteScope::from(scope);
        m.header.kind = kind;
        m.attributes.push(RouteAttribute::Table(table));
        if self.dst.prefix() > 0 {
            m.attributes
                .push(RouteAttribute::Destination(RouteAddress::from(
                    self.dst.network(),
                )));
        }
        if let Some(gw) = self.gw {
            m.attributes
                .push(RouteAttribute::Gateway(RouteAddress::from(gw)));
        }
        if let Some(oif) = self.oif {
            m.attributes.push(RouteAttribute::Oif(oif));
        }
        if let Some(p) = self.priority {
            m.attributes.push(RouteAttribute::Priority(p));
        }
        m
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
    /// `RTN_*` (1 unicast, 2 local, 3 broadcast, ...).
    pub kind: u8,
    /// `RTPROT_*` (2 kernel, 3 boot, ...).
    pub protocol: u8,
}

fn route_ip(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(ip) => Some(IpAddr::V4(*ip)),
        RouteAddress::Inet6(ip) => Some(IpAddr::V6(*ip)),
        _ => None,
    }
}

impl RouteInfo {
    fn from_message(m: RouteMessage) -> Option<RouteInfo> {
        let v6 = m.header.address_family == AddressFamily::Inet6;
        let mut dst = None;
        let mut gw = None;
        let mut oif = None;
        let mut priority = None;
        let mut table = u32::from(m.header.table);
        for attr in &m.attributes {
            match attr {
                RouteAttribute::Destination(a) => dst = route_ip(a),
                RouteAttribute::Gateway(a) => gw = route_ip(a),
                RouteAttribute::Oif(i) => oif = Some(*i),
                RouteAttribute::Priority(p) => priority = Some(*p),
                RouteAttribute::Table(t) => table = *t,
                _ => {}
            }
        }
        let dst = dst.unwrap_or(if v6 {
            IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
        });
        Some(RouteInfo {
            dst: IpNetwork::new(dst, m.header.destination_prefix_length).ok()?,
            gw,
            oif,
            priority,
            table,
            scope: u8::from(m.header.scope),
            kind: u8::from(m.header.kind),
            protocol: u8::from(m.header.protocol),
        })
    }
}

impl Netlink {
    /// Add a route. Created without `NLM_F_EXCL`, like the reference's
    /// `RouteAddEcmp`, so an equal-cost route via another gateway can be
    /// added next to an existing one; an identical route still fails with
    /// `EEXIST`.
    pub fn add_route(&self, r: &RouteSpec) -> Result<()> {
        let scope = r.scope.unwrap_or(SCOPE_UNIVERSE);
        self.request(
            &format!("add route {}", r.describe()),
            RouteNetlinkMessage::NewRoute(r.message(scope, RouteType::Unicast)),
            NLM_F_CREATE,
        )
        .map(drop)
    }

    /// Delete a route; `ESRCH` when no route matches.
    pub fn delete_route(&self, r: &RouteSpec) -> Result<()> {
        let scope = r.scope.unwrap_or(SCOPE_NOWHERE);
        self.request(
            &format!("delete route {}", r.describe()),
            RouteNetlinkMessage::DelRoute(r.message(scope, RouteType::Unspec)),
            0,
        )
        .map(drop)
    }

    /// Routes of one family, optionally only those leaving through `oif`
    /// and/or in `table`.
    pub fn routes(
        &self,
        ipv6: bool,
        oif: Option<u32>,
        table: Option<u32>,
    ) -> Result<Vec<RouteInfo>> {
        let mut m = RouteMessage::default();
        m.header.address_family = if ipv6 {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        let replies = self.request("list routes", RouteNetlinkMessage::GetRoute(m), NLM_F_DUMP)?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewRoute(r) => RouteInfo::from_message(r),
                _ => None,
            })
            .filter(|r| oif.is_none_or(|o| r.oif == Some(o)))
            .filter(|r| table.is_none_or(|t| r.table == t))
            .collect())
    }
}
