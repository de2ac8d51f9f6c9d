//! Interface addresses: add, list (with DAD state), delete.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use rtnetlink::packet_core::{NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL};
use rtnetlink::packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage,
};
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::error::{Error, Result};
use crate::link::Link;
use crate::netlink::Netlink;

/// `IFA_F_*` flags of an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddrFlags(pub u32);

impl AddrFlags {
    pub const SECONDARY: AddrFlags = AddrFlags(0x01);
    pub const NODAD: AddrFlags = AddrFlags(0x02);
    pub const DADFAILED: AddrFlags = AddrFlags(0x08);
    pub const TENTATIVE: AddrFlags = AddrFlags(0x40);
    pub const PERMANENT: AddrFlags = AddrFlags(0x80);

    pub fn contains(self, other: AddrFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// An address as the kernel lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addr {
    /// Index of the link carrying the address.
    pub index: u32,
    /// The address with its prefix length (host bits kept).
    pub addr: IpNetwork,
    pub flags: AddrFlags,
    /// `RT_SCOPE_*` (0 universe, 253 link, 254 host).
    pub scope: u8,
}

impl Addr {
    /// Still doing duplicate address detection (IPv6).
    pub fn is_tentative(&self) -> bool {
        self.flags.contains(AddrFlags::TENTATIVE)
    }

    /// Duplicate address detection found a conflict (IPv6).
    pub fn is_dadfailed(&self) -> bool {
        self.flags.contains(AddrFlags::DADFAILED)
    }

    fn from_message(m: AddressMessage) -> Option<Addr> {
        let mut flags = AddrFlags(u32::from(m.header.flags.bits()));
        let mut address = None;
        let mut local = None;
        for attr in m.attributes {
            match attr {
                AddressAttribute::Address(ip) => address = Some(ip),
                AddressAttribute::Local(ip) => local = Some(ip),
                // The 32-bit attribute carries flags that do not fit the header.
                AddressAttribute::Flags(f) => flags = AddrFlags(f.bits()),
                _ => {}
            }
        }
        // For IPv4 IFA_LOCAL is the interface's own address; IFA_ADDRESS
        // is the peer on point-to-point links.
        let ip = local.or(address)?;
        Some(Addr {
            index: m.header.index,
            addr: IpNetwork::new(ip, m.header.prefix_len).ok()?,
            flags,
            scope: u8::from(m.header.scope),
        })
    }
}

fn family_of(ip: &IpAddr) -> AddressFamily {
    if ip.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

fn message(link: &Link, addr: IpNetwork) -> AddressMessage {
    let mut m = AddressMessage::default();
    m.header.family = family_of(&addr.ip());
    m.header.prefix_len = addr.prefix();
    m.header.index = link.index;
    m.attributes.push(AddressAttribute::Address(addr.ip()));
    if let IpNetwork::V4(v4) = addr {
        m.attributes.push(AddressAttribute::Local(addr.ip()));
        // Like the reference (netlink.AddrAdd), give IPv4 addresses their
        // broadcast unless the prefix is too long to have one.
        if v4.prefix() < 31 {
            m.attributes
                .push(AddressAttribute::Broadcast(v4.broadcast()));
        }
    }
    m
}

impl Netlink {
    /// Add `addr` to `link`; `EEXIST` when it is already there. `nodad`
    /// skips IPv6 duplicate address detection (`IFA_F_NODAD`).
    pub fn add_addr(&self, link: &Link, addr: IpNetwork, nodad: bool) -> Result<()> {
        let mut m = message(link, addr);
        if nodad {
            m.header.flags = AddressHeaderFlags::Nodad;
            m.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        self.request(
            &format!("add address {addr} to {}", link.name),
            RouteNetlinkMessage::NewAddress(m),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map(drop)
    }

    /// Addresses of `link` (of every link when `None`), both families.
    pub fn addrs(&self, link: Option<&Link>) -> Result<Vec<Addr>> {
        let op = match link {
            Some(l) => format!("list addresses of {}", l.name),
            None => "list addresses".to_string(),
        };
        let replies = self.request(
            &op,
            RouteNetlinkMessage::GetAddress(AddressMessage::default()),
            NLM_F_DUMP,
        )?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewAddress(a) => Addr::from_message(a),
                _ => None,
            })
            .filter(|a| link.is_none_or(|l| l.index == a.index))
            .collect())
    }

    /// Wait until no IPv6 address of `link` is tentative, polling every
    /// 50 ms (the reference's `SettleAddresses`). An address that failed
    /// duplicate address detection is an error at once; running out of
    /// time is an error only when the link is operationally up, since DAD
    /// never completes on a link without carrier.
    pub fn settle_addrs(&self, link: &Link, timeout: std::time::Duration) -> Result<()> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let addrs = self.addrs(Some(link))?;
            if let Some(bad) = addrs.iter().find(|a| a.is_dadfailed()) {
                return Err(Error::other(
                    format!("settle addresses of {}", link.name),
                    format!(
                        "address {} failed duplicate address detection",
                        bad.addr.ip()
                    ),
                ));
            }
            if !addrs.iter().any(|a| !a.addr.is_ipv4() && a.is_tentative()) {
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                let now = self.link_by_index(link.index)?;
                if now.oper_state == crate::link::OperState::Up {
                    return Err(Error::other(
                        format!("settle addresses of {}", link.name),
                        format!("still tentative after {timeout:?}"),
                    ));
                }
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Remove `addr` from `link`; `EADDRNOTAVAIL` when it is not there.
    pub fn delete_addr(&self, link: &Link, addr: IpNetwork) -> Result<()> {
        self.request(
            &format!("delete address {addr} from {}", link.name),
            RouteNetlinkMessage::DelAddress(message(link, addr)),
            0,
        )
        .map(drop)
    }
}
