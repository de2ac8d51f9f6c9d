//! Links: what the kernel reports about one ([`Link`], with its [`Kind`]
//! and the kind's settings), and the queries that find them.
//!
//! Submodules, by what they hold:
//! - [`kind`]: [`Kind`], one enum for creating and reading back every kind
//!   (veth, bridge, ifb, macvlan, ipvlan, vlan, dummy, vrf, tun/tap);
//! - [`create`]: [`LinkSpec`] and [`Netlink::create_link`], the one way to
//!   create a link of any kind, in the connection's namespace or directly
//!   in another (`IFLA_NET_NS_FD`); name checks and random temporary
//!   names ([`random_name`]);
//! - [`change`]: state and attribute changes, renaming, moving to another
//!   namespace (renamed in the same request), the alias, deletion;
//! - [`tap`]: tun/tap devices, made through `/dev/net/tun` inside the
//!   connection's namespace (rtnetlink cannot make them).
//!
//! ```no_run
//! # fn demo(host: &cni_net::Netlink, ns: &std::fs::File) -> cni_net::Result<()> {
//! use cni_net::{Kind, LinkSpec, MacvlanMode};
//! // A macvlan on the host's eth0, created directly in the container.
//! let master = host.link_by_name("eth0")?;
//! let kind = Kind::Macvlan { mode: MacvlanMode::Bridge, bcqueuelen: None };
//! host.create_link(&LinkSpec {
//!     parent: Some(master.index),
//!     netns: Some(ns),
//!     ..LinkSpec::new("net1", kind)
//! })?;
//! // Read back in the container, for CHECK.
//! let cont = cni_net::Netlink::in_netns(ns)?;
//! let l = cont.link_by_name("net1")?;
//! assert!(matches!(l.kind, Kind::Macvlan { mode: MacvlanMode::Bridge, .. }));
//! # Ok(()) }
//! ```

pub mod change;
pub mod create;
pub mod kind;
pub mod tap;

pub use change::{BridgePortOptions, LinkChanges};
pub use create::{LinkSpec, MAX_NAME_LEN, Peer, name_problem, random_name};
pub use kind::{ETH_P_8021AD, ETH_P_8021Q, IpvlanMode, Kind, MacvlanMode, Tun};

use crate::error::{Error, Result};
use crate::netlink::{Msg, NLM_F_DUMP, Netlink, attrs, str_of, u32_of};

pub(crate) use kind::{IFLA_BR_VLAN_FILTERING, IFLA_INFO_DATA, IFLA_INFO_KIND};

pub(crate) const RTM_NEWLINK: u16 = 16;
pub(crate) const RTM_DELLINK: u16 = 17;
pub(crate) const RTM_GETLINK: u16 = 18;
pub(crate) const RTM_SETLINK: u16 = 19;

pub(crate) const IFLA_ADDRESS: u16 = 1;
pub(crate) const IFLA_IFNAME: u16 = 3;
pub(crate) const IFLA_MTU: u16 = 4;
pub(crate) const IFLA_LINK: u16 = 5;
pub(crate) const IFLA_MASTER: u16 = 10;
pub(crate) const IFLA_PROTINFO: u16 = 12;
pub(crate) const IFLA_TXQLEN: u16 = 13;
const IFLA_OPERSTATE: u16 = 16;
pub(crate) const IFLA_LINKINFO: u16 = 18;
pub(crate) const IFLA_IFALIAS: u16 = 20;
pub(crate) const IFLA_AF_SPEC: u16 = 26;
pub(crate) const IFLA_NET_NS_FD: u16 = 28;
pub(crate) const IFLA_EXT_MASK: u16 = 29;
const IFLA_PROMISCUITY: u16 = 30;
const IFLA_LINK_NETNSID: u16 = 37;
const IFLA_MIN_MTU: u16 = 50;
const IFLA_MAX_MTU: u16 = 51;

pub(crate) const IFF_UP: u32 = 0x1;
pub(crate) const IFF_PROMISC: u32 = 0x100;
pub(crate) const IFF_ALLMULTI: u32 = 0x200;
pub(crate) const AF_BRIDGE: u8 = 7;

/// `struct ifinfomsg`: family, type, index, flags, change mask.
pub(crate) fn ifinfo(family: u8, index: u32, flags: u32, change: u32) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0] = family;
    h[4..8].copy_from_slice(&index.to_ne_bytes());
    h[8..12].copy_from_slice(&flags.to_ne_bytes());
    h[12..16].copy_from_slice(&change.to_ne_bytes());
    h
}

/// What the kernel reports about a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub index: u32,
    pub name: String,
    /// The kind with its settings (`IFLA_LINKINFO`): [`Kind::Device`] for
    /// `lo` and physical devices. `link.kind == "veth"` compares its name.
    pub kind: Kind,
    /// Hardware address (`IFLA_ADDRESS`), empty when the link has none.
    pub mac: Vec<u8>,
    pub mtu: u32,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    pub oper_state: OperState,
    /// Index of the bridge (or VRF) this link is enslaved to.
    pub master: Option<u32>,
    /// `IFLA_LINK`: the parent of a macvlan, ipvlan or vlan; for a veth,
    /// the peer's index. Both in the namespace [`Link::link_netnsid`]
    /// names, when set; else in the link's own.
    pub link: Option<u32>,
    /// `IFLA_LINK_NETNSID`: set when the parent or peer lives in another
    /// namespace (its id as the link's namespace knows it).
    pub link_netnsid: Option<i32>,
    /// Promiscuous mode as requested by a user (`IFF_PROMISC`).
    pub promisc: bool,
    /// The kernel's promiscuity counter (bridge ports raise it too).
    pub promiscuity: u32,
    /// `IFLA_IFALIAS`, the free-text description (`ip link set alias`).
    pub alias: Option<String>,
    /// All-multicast mode as requested by a user (`IFF_ALLMULTI`).
    pub allmulti: bool,
    /// Transmit queue length (`IFLA_TXQLEN`).
    pub txqlen: u32,
    /// The MTU range the device takes (`IFLA_MIN_MTU`, `IFLA_MAX_MTU`);
    /// `None` when the kernel does not say.
    pub min_mtu: Option<u32>,
    pub max_mtu: Option<u32>,
}

impl Link {
    /// The MAC as `aa:bb:cc:dd:ee:ff`.
    pub fn mac_string(&self) -> String {
        format_mac(&self.mac)
    }
}

/// `IFLA_OPERSTATE` (RFC 2863).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperState {
    Unknown,
    NotPresent,
    Down,
    LowerLayerDown,
    Testing,
    Dormant,
    Up,
    Other(u8),
}

impl OperState {
    fn from_u8(s: u8) -> OperState {
        match s {
            0 => OperState::Unknown,
            1 => OperState::NotPresent,
            2 => OperState::Down,
            3 => OperState::LowerLayerDown,
            4 => OperState::Testing,
            5 => OperState::Dormant,
            6 => OperState::Up,
            other => OperState::Other(other),
        }
    }
}

/// Lowercase colon-separated hex, as Go prints a `net.HardwareAddr`.
pub fn format_mac(mac: &[u8]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl Link {
    /// A link from the body of an `RTM_NEWLINK` message.
    pub(crate) fn from_body(b: &[u8]) -> Option<Link> {
        let flags = u32_of(b.get(8..12)?)?;
        let mut link = Link {
            index: u32_of(b.get(4..8)?)?,
            name: String::new(),
            kind: Kind::Device,
            mac: Vec::new(),
            mtu: 0,
            up: flags & IFF_UP != 0,
            oper_state: OperState::Unknown,
            master: None,
            link: None,
            link_netnsid: None,
            promisc: flags & IFF_PROMISC != 0,
            promiscuity: 0,
            alias: None,
            allmulti: flags & IFF_ALLMULTI != 0,
            txqlen: 0,
            min_mtu: None,
            max_mtu: None,
        };
        for (kind, d) in attrs(b.get(16..)?) {
            match kind {
                IFLA_IFNAME => link.name = str_of(d),
                IFLA_ADDRESS => link.mac = d.to_vec(),
                IFLA_MTU => link.mtu = u32_of(d).unwrap_or(0),
                IFLA_OPERSTATE => {
                    link.oper_state = OperState::from_u8(d.first().copied().unwrap_or(0))
                }
                IFLA_MASTER => link.master = u32_of(d).filter(|i| *i != 0),
                IFLA_LINK => link.link = u32_of(d).filter(|i| *i != 0),
                IFLA_LINK_NETNSID => link.link_netnsid = u32_of(d).map(|v| v as i32),
                IFLA_PROMISCUITY => link.promiscuity = u32_of(d).unwrap_or(0),
                IFLA_IFALIAS => link.alias = Some(str_of(d)).filter(|a| !a.is_empty()),
                IFLA_TXQLEN => link.txqlen = u32_of(d).unwrap_or(0),
                IFLA_MIN_MTU => link.min_mtu = u32_of(d),
                IFLA_MAX_MTU => link.max_mtu = u32_of(d),
                IFLA_LINKINFO => link.kind = Kind::parse(d),
                _ => {}
            }
        }
        Some(link)
    }
}

pub(crate) fn links_of(replies: Vec<Vec<u8>>) -> Vec<Link> {
    replies.iter().filter_map(|b| Link::from_body(b)).collect()
}

pub(crate) fn by_index(index: u32) -> Msg {
    Msg::new(RTM_SETLINK, 0, &ifinfo(0, index, 0, 0))
}

/// `RTEXT_FILTER_SKIP_STATS`: no IPv6 counters in the answer.
const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;

/// A `RTM_GETLINK` request (`flags` 0 or a dump) for the link with
/// `index` (0: by name, or all). The answer leaves out IPv6's counters,
/// which the kernel sums over every CPU for each answer and nothing here
/// reads (a quarter of the answer; the link's own counters it always
/// sends).
pub(crate) fn get_link(flags: u16, index: u32) -> Msg {
    let mut m = Msg::new(RTM_GETLINK, flags, &ifinfo(0, index, 0, 0));
    m.u32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
    m
}

pub(crate) fn get_by_name(name: &str) -> Msg {
    let mut m = get_link(0, 0);
    m.str(IFLA_IFNAME, name);
    m
}

#[cfg(test)]
impl Link {
    /// A link with only an index and a name, for message tests.
    pub(crate) fn named(index: u32, name: &str) -> Link {
        let mut m = Msg::new(RTM_NEWLINK, 0, &ifinfo(0, index, 0, 0));
        m.str(IFLA_IFNAME, name);
        Link::from_body(m.body()).unwrap_or_else(|| unreachable!())
    }
}

impl Netlink {
    /// Every link of the namespace.
    pub fn links(&self) -> Result<Vec<Link>> {
        let replies = self.request("list links", get_link(NLM_F_DUMP, 0))?;
        Ok(links_of(replies))
    }

    /// The link named `name`; `ENODEV` (see [`Error::is_not_found`]) when
    /// there is none.
    pub fn link_by_name(&self, name: &str) -> Result<Link> {
        let op = format!("find link {name}");
        let replies = self.request(&op, get_by_name(name))?;
        links_of(replies)
            .into_iter()
            .next()
            .ok_or_else(|| Error::errno(op, nix::errno::Errno::ENODEV))
    }

    /// The link with index `index`.
    pub fn link_by_index(&self, index: u32) -> Result<Link> {
        let op = format!("find link with index {index}");
        let replies = self.request(&op, get_link(0, index))?;
        links_of(replies)
            .into_iter()
            .next()
            .ok_or_else(|| Error::errno(op, nix::errno::Errno::ENODEV))
    }

    /// Like [`Netlink::link_by_name`], with a missing link as `None`.
    pub fn find_link(&self, name: &str) -> Result<Option<Link>> {
        match self.link_by_name(name) {
            Ok(l) => Ok(Some(l)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The other end of the veth `name` of namespace `container`, looked
    /// up in this handle's namespace by its index (`IFLA_LINK`) and
    /// confirmed to be a veth whose own peer is `name` (an index alone may
    /// name an unrelated link when the peer lives elsewhere). Fails only
    /// when `name` cannot be looked up.
    pub fn veth_peer(&self, container: &Netlink, name: &str) -> Result<VethPeer> {
        let inner = container.link_by_name(name)?;
        let Some(index) = inner.link.filter(|_| inner.kind == Kind::Veth) else {
            return Ok(VethPeer::NotVeth);
        };
        match self.link_by_index(index) {
            Ok(l) if l.kind == Kind::Veth && l.link == Some(inner.index) => Ok(VethPeer::Found(l)),
            Ok(_) => Ok(VethPeer::Elsewhere(index)),
            Err(e) if e.is_not_found() => Ok(VethPeer::Elsewhere(index)),
            Err(e) => Err(e),
        }
    }
}

/// What [`Netlink::veth_peer`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VethPeer {
    /// The peer, in this namespace.
    Found(Link),
    /// The link is not a veth (or a kernel older than 4.1 does not give
    /// the peer's index).
    NotVeth,
    /// The peer, of this index, is not in this namespace.
    Elsewhere(u32),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_link_message_body() {
        let flags = IFF_UP | IFF_PROMISC | IFF_ALLMULTI;
        let mut m = Msg::new(RTM_NEWLINK, 0, &ifinfo(0, 7, flags, 0));
        m.str(IFLA_IFNAME, "veth1")
            .attr(IFLA_ADDRESS, &[2, 0, 0, 0, 0, 1])
            .u32(IFLA_MTU, 1400)
            .u32(IFLA_TXQLEN, 500)
            .u32(IFLA_MIN_MTU, 68)
            .u32(IFLA_MAX_MTU, 65535)
            .u32(IFLA_MASTER, 3)
            .u32(IFLA_LINK, 0)
            .u8(IFLA_OPERSTATE, 6)
            .nest(IFLA_LINKINFO, |m| {
                m.str(IFLA_INFO_KIND, "veth");
            });
        let l = Link::from_body(m.body()).unwrap();
        assert_eq!(
            (l.index, l.name.as_str(), l.kind.name()),
            (7, "veth1", "veth")
        );
        assert_eq!(l.mac_string(), "02:00:00:00:00:01");
        assert_eq!((l.mtu, l.master, l.link), (1400, Some(3), None));
        assert!(l.up && l.promisc && l.allmulti);
        assert_eq!(
            (l.txqlen, l.min_mtu, l.max_mtu),
            (500, Some(68), Some(65535))
        );
        assert_eq!(l.oper_state, OperState::Up);
        assert!(Link::from_body(&[0; 8]).is_none());
    }
}
