//! Interface addresses: add, list (with DAD state), delete.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::error::Result;
use crate::link::Link;
use crate::netlink::{Msg, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, Netlink, attrs, u32_of};

const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
const RTM_GETADDR: u16 = 22;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_BROADCAST: u16 = 4;
const IFA_FLAGS: u16 = 8;
pub(crate) const AF_INET: u8 = 2;
pub(crate) const AF_INET6: u8 = 10;

/// `IFA_F_*` flags of an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddrFlags(pub u32);

impl AddrFlags {
    pub const SECONDARY: AddrFlags = AddrFlags(0x01);
    pub const NODAD: AddrFlags = AddrFlags(0x02);
    pub const DADFAILED: AddrFlags = AddrFlags(0x08);
    pub const TENTATIVE: AddrFlags = AddrFlags(0x40);
    pub const PERMANENT: AddrFlags = AddrFlags(0x80);
    /// No prefix route for the address's subnet (Linux 3.14 IPv6, 4.4
    /// IPv4); only carried in `IFA_FLAGS`.
    pub const NOPREFIXROUTE: AddrFlags = AddrFlags(0x200);

    pub fn contains(self, other: AddrFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for AddrFlags {
    type Output = AddrFlags;
    fn bitor(self, other: AddrFlags) -> AddrFlags {
        AddrFlags(self.0 | other.0)
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

    /// An address from the body of an `RTM_NEWADDR` message.
    pub(crate) fn from_body(b: &[u8]) -> Option<Addr> {
        let (family, prefix, hflags, scope) = (*b.first()?, *b.get(1)?, *b.get(2)?, *b.get(3)?);
        let index = u32_of(b.get(4..8)?)?;
        let mut flags = AddrFlags(u32::from(hflags));
        let mut address = None;
        let mut local = None;
        for (kind, d) in attrs(b.get(8..)?) {
            match kind {
                IFA_ADDRESS => address = ip_of(family, d),
                IFA_LOCAL => local = ip_of(family, d),
                // The 32-bit attribute carries flags that do not fit the header.
                IFA_FLAGS => flags = AddrFlags(u32_of(d)?),
                _ => {}
            }
        }
        // For IPv4 IFA_LOCAL is the interface's own address; IFA_ADDRESS
        // is the peer on point-to-point links.
        let ip = local.or(address)?;
        Some(Addr {
            index,
            addr: IpNetwork::new(ip, prefix).ok()?,
            flags,
            scope,
        })
    }
}

/// An address attribute of `family`.
pub(crate) fn ip_of(family: u8, d: &[u8]) -> Option<IpAddr> {
    match family {
        AF_INET => Some(IpAddr::from(<[u8; 4]>::try_from(d.get(..4)?).ok()?)),
        AF_INET6 => Some(IpAddr::from(<[u8; 16]>::try_from(d.get(..16)?).ok()?)),
        _ => None,
    }
}

pub(crate) fn ip_bytes(ip: &IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

pub(crate) fn family_of(ip: &IpAddr) -> u8 {
    if ip.is_ipv4() { AF_INET } else { AF_INET6 }
}

/// `struct ifaddrmsg` and the address attributes of `addr` on `link`.
fn message(kind: u16, flags: u16, link: &Link, addr: IpNetwork, ifa_flags: u8) -> Msg {
    let mut h = [0u8; 8];
    h[0] = family_of(&addr.ip());
    h[1] = addr.prefix();
    h[2] = ifa_flags;
    h[4..8].copy_from_slice(&link.index.to_ne_bytes());
    let mut m = Msg::new(kind, flags, &h);
    let ip = ip_bytes(&addr.ip());
    m.attr(IFA_ADDRESS, &ip);
    if let IpNetwork::V4(v4) = addr {
        m.attr(IFA_LOCAL, &ip);
        // Like the reference (netlink.AddrAdd), give IPv4 addresses their
        // broadcast unless the prefix is too long to have one.
        if v4.prefix() < 31 {
            m.attr(IFA_BROADCAST, &v4.broadcast().octets());
        }
    }
    m
}

/// `RTM_NEWADDR` for `addr` on `link` with `flags` (`IFA_F_*`): the low
/// eight bits in the header, all of them in `IFA_FLAGS` when any is set.
pub(crate) fn add_message(link: &Link, addr: IpNetwork, flags: AddrFlags) -> Msg {
    let mut m = message(
        RTM_NEWADDR,
        NLM_F_CREATE | NLM_F_EXCL,
        link,
        addr,
        (flags.0 & 0xff) as u8,
    );
    if flags.0 != 0 {
        m.u32(IFA_FLAGS, flags.0);
    }
    m
}

/// [`AddrFlags::NODAD`] when `nodad`, else none.
pub(crate) fn nodad_flags(nodad: bool) -> AddrFlags {
    if nodad {
        AddrFlags::NODAD
    } else {
        AddrFlags::default()
    }
}

impl Netlink {
    /// Add `addr` to `link`; `EEXIST` when it is already there. `nodad`
    /// skips IPv6 duplicate address detection (`IFA_F_NODAD`).
    pub fn add_addr(&self, link: &Link, addr: IpNetwork, nodad: bool) -> Result<()> {
        self.add_addr_with(link, addr, nodad_flags(nodad))
    }

    /// Add `addr` to `link` with `flags` (`IFA_F_*`, e.g.
    /// [`AddrFlags::NODAD`] | [`AddrFlags::NOPREFIXROUTE`]).
    pub fn add_addr_with(&self, link: &Link, addr: IpNetwork, flags: AddrFlags) -> Result<()> {
        self.request(
            &format!("add address {addr} to {}", link.name),
            add_message(link, addr, flags),
        )
        .map(drop)
    }

    /// Addresses of `link` (of every link when `None`), both families.
    pub fn addrs(&self, link: Option<&Link>) -> Result<Vec<Addr>> {
        self.dump_addrs(link, 0)
    }

    /// Addresses of one family (IPv6 when `ipv6`) of `link` (of every link
    /// when `None`). Cheaper than [`Netlink::addrs`] under load: recent
    /// kernels (6.9 on) dump one family's addresses under RCU, while an
    /// `AF_UNSPEC` dump still takes the RTNL lock and so waits behind every
    /// link change of the host; on a bridge with hundreds of ports the
    /// kernel's IPv6 duplicate address detection for new ports holds it for
    /// milliseconds at a time.
    pub fn addrs_of_family(&self, link: Option<&Link>, ipv6: bool) -> Result<Vec<Addr>> {
        self.dump_addrs(link, if ipv6 { AF_INET6 } else { AF_INET })
    }

    /// `RTM_GETADDR` dump of `family` (0: every family).
    fn dump_addrs(&self, link: Option<&Link>, family: u8) -> Result<Vec<Addr>> {
        let op = match link {
            Some(l) => format!("list addresses of {}", l.name),
            None => "list addresses".to_string(),
        };
        let mut h = [0u8; 8];
        h[0] = family;
        if let Some(l) = link {
            // Kernels with strict checking dump only this link's addresses
            // instead of every address of the namespace.
            self.set_strict();
            h[4..8].copy_from_slice(&l.index.to_ne_bytes());
        }
        let replies = self.request(&op, Msg::new(RTM_GETADDR, NLM_F_DUMP, &h))?;
        Ok(replies
            .iter()
            .filter_map(|b| Addr::from_body(b))
            .filter(|a| link.is_none_or(|l| l.index == a.index))
            .filter(|a| family == 0 || family_of(&a.addr.ip()) == family)
            .collect())
    }

    /// Wait until no IPv6 address of `link` is tentative, polling every
    /// 20 ms (the reference's `SettleAddresses`). An address that failed
    /// duplicate address detection ends the wait at once; running out of
    /// time counts only when the link is operationally up, since DAD never
    /// completes on a link without carrier. The caller words the outcome.
    pub fn settle_addrs(&self, link: &Link, timeout: std::time::Duration) -> Result<Settled> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let addrs = self.addrs(Some(link))?;
            if let Some(bad) = addrs.iter().find(|a| a.is_dadfailed()) {
                return Ok(Settled::DadFailed(bad.addr));
            }
            if !addrs.iter().any(|a| !a.addr.is_ipv4() && a.is_tentative()) {
                return Ok(Settled::Done);
            }
            if std::time::Instant::now() >= deadline {
                let now = self.link_by_index(link.index)?;
                return Ok(if now.oper_state == crate::link::OperState::Up {
                    Settled::StillTentative
                } else {
                    Settled::Done
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Remove `addr` from `link`; `EADDRNOTAVAIL` when it is not there.
    pub fn delete_addr(&self, link: &Link, addr: IpNetwork) -> Result<()> {
        self.request(
            &format!("delete address {addr} from {}", link.name),
            message(RTM_DELADDR, 0, link, addr, 0),
        )
        .map(drop)
    }
}

/// How [`Netlink::settle_addrs`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// No IPv6 address is tentative (or the link has no carrier).
    Done,
    /// This address failed duplicate address detection.
    DadFailed(IpNetwork),
    /// Time ran out with an address still tentative on a running link.
    StillTentative,
}
