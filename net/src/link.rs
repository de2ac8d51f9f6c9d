//! Links: lookup, state changes, bridges and veth pairs.

use std::fs::File;
use std::os::fd::AsRawFd;

use rtnetlink::packet_core::{DefaultNla, NLA_F_NESTED, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL};
use rtnetlink::packet_route::link::{
    InfoBridge, InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
    State,
};
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::error::{Error, Result};
use crate::netlink::Netlink;

/// What the kernel reports about a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub index: u32,
    pub name: String,
    /// `IFLA_INFO_KIND` (`bridge`, `veth`, ...); empty for `lo` and
    /// physical devices.
    pub kind: String,
    /// Hardware address (`IFLA_ADDRESS`), empty when the link has none.
    pub mac: Vec<u8>,
    pub mtu: u32,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    pub oper_state: OperState,
    /// Index of the bridge this link is enslaved to.
    pub master: Option<u32>,
    /// `IFLA_LINK`: for a veth, the peer's index (in the peer's namespace).
    pub link: Option<u32>,
    /// `IFLA_LINK_NETNSID`: set when the peer lives in another namespace.
    pub link_netnsid: Option<i32>,
    /// Promiscuous mode as requested by a user (`IFF_PROMISC`).
    pub promisc: bool,
    /// The kernel's promiscuity counter (bridge ports raise it too).
    pub promiscuity: u32,
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

impl From<&State> for OperState {
    fn from(s: &State) -> OperState {
        match s {
            State::Unknown => OperState::Unknown,
            State::NotPresent => OperState::NotPresent,
            State::Down => OperState::Down,
            State::LowerLayerDown => OperState::LowerLayerDown,
            State::Testing => OperState::Testing,
            State::Dormant => OperState::Dormant,
            State::Up => OperState::Up,
            other => OperState::Other(u8::from(*other)),
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

/// A veth pair created with one `RTM_NEWLINK` on the host connection: the
/// host end stays in the connection's namespace, the peer is created
/// directly in `container_ns` under `container_name`.
#[derive(Debug)]
pub struct VethPair<'a> {
    pub host_name: &'a str,
    pub container_name: &'a str,
    pub container_ns: &'a File,
    /// MAC of the container end; the kernel picks one when `None`.
    pub container_mac: Option<[u8; 6]>,
    /// MTU of both ends; kernel default when `None`.
    pub mtu: Option<u32>,
    /// Bridge to enslave the host end to, in the same message.
    pub host_master: Option<u32>,
}

impl Link {
    fn from_message(m: LinkMessage) -> Link {
        let mut link = Link {
            index: m.header.index,
            name: String::new(),
            kind: String::new(),
            mac: Vec::new(),
            mtu: 0,
            up: m.header.flags.contains(LinkFlags::Up),
            oper_state: OperState::Unknown,
            master: None,
            link: None,
            link_netnsid: None,
            promisc: m.header.flags.contains(LinkFlags::Promisc),
            promiscuity: 0,
        };
        for attr in m.attributes {
            match attr {
                LinkAttribute::IfName(n) => link.name = n,
                LinkAttribute::Address(a) => link.mac = a,
                LinkAttribute::Mtu(v) => link.mtu = v,
                LinkAttribute::OperState(s) => link.oper_state = OperState::from(&s),
                LinkAttribute::Controller(i) if i != 0 => link.master = Some(i),
                LinkAttribute::Link(i) if i != 0 => link.link = Some(i),
                LinkAttribute::LinkNetNsId(i) => link.link_netnsid = Some(i),
                LinkAttribute::Promiscuity(v) => link.promiscuity = v,
                LinkAttribute::LinkInfo(infos) => {
                    for info in infos {
                        if let LinkInfo::Kind(k) = info {
                            link.kind = k.to_string();
                        }
                    }
                }
                _ => {}
            }
        }
        link
    }
}

fn links_of(replies: Vec<RouteNetlinkMessage>) -> Vec<Link> {
    replies
        .into_iter()
        .filter_map(|m| match m {
            RouteNetlinkMessage::NewLink(l) => Some(Link::from_message(l)),
            _ => None,
        })
        .collect()
}

fn by_index(index: u32) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = index;
    m
}

impl Netlink {
    /// Every link of the namespace.
    pub fn links(&self) -> Result<Vec<Link>> {
        let replies = self.request(
            "list links",
            RouteNetlinkMessage::GetLink(LinkMessage::default()),
            NLM_F_DUMP,
        )?;
        Ok(links_of(replies))
    }

    /// The link named `name`; `ENODEV` (see [`Error::is_not_found`]) when
    /// there is none.
    pub fn link_by_name(&self, name: &str) -> Result<Link> {
        let mut m = LinkMessage::default();
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        let replies = self.request(
            &format!("find link {name}"),
            RouteNetlinkMessage::GetLink(m),
            0,
        )?;
        links_of(replies)
            .into_iter()
            .next()
            .ok_or_else(|| Error::errno(format!("find link {name}"), nix::errno::Errno::ENODEV))
    }

    /// The link with index `index`.
    pub fn link_by_index(&self, index: u32) -> Result<Link> {
        let op = format!("find link with index {index}");
        let replies = self.request(&op, RouteNetlinkMessage::GetLink(by_index(index)), 0)?;
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

    fn set_link(&self, op: &str, m: LinkMessage) -> Result<()> {
        self.request(op, RouteNetlinkMessage::SetLink(m), 0)
            .map(drop)
    }

    fn set_flag(&self, link: &Link, flag: LinkFlags, on: bool, op: &str) -> Result<()> {
        let mut m = by_index(link.index);
        m.header.change_mask = flag;
        if on {
            m.header.flags = flag;
        }
        self.set_link(&format!("{op} {}", link.name), m)
    }

    pub fn set_up(&self, link: &Link) -> Result<()> {
        self.set_flag(link, LinkFlags::Up, true, "set up")
    }

    pub fn set_down(&self, link: &Link) -> Result<()> {
        self.set_flag(link, LinkFlags::Up, false, "set down")
    }

    pub fn set_promisc(&self, link: &Link, on: bool) -> Result<()> {
        let op = if on {
            "set promisc on"
        } else {
            "set promisc off"
        };
        self.set_flag(link, LinkFlags::Promisc, on, op)
    }

    /// Enslave `link` to the bridge `master`, or release it with `None`.
    pub fn set_master(&self, link: &Link, master: Option<&Link>) -> Result<()> {
        let mut m = by_index(link.index);
        m.attributes
            .push(LinkAttribute::Controller(master.map_or(0, |b| b.index)));
        let op = match master {
            Some(b) => format!("set master of {} to {}", link.name, b.name),
            None => format!("release {} from its master", link.name),
        };
        self.set_link(&op, m)
    }

    pub fn set_mac(&self, link: &Link, mac: &[u8]) -> Result<()> {
        let mut m = by_index(link.index);
        m.attributes.push(LinkAttribute::Address(mac.to_vec()));
        self.set_link(
            &format!("set mac of {} to {}", link.name, format_mac(mac)),
            m,
        )
    }

    pub fn set_mtu(&self, link: &Link, mtu: u32) -> Result<()> {
        let mut m = by_index(link.index);
        m.attributes.push(LinkAttribute::Mtu(mtu));
        self.set_link(&format!("set mtu of {} to {mtu}", link.name), m)
    }

    pub fn delete_link(&self, link: &Link) -> Result<()> {
        self.request(
            &format!("delete link {}", link.name),
            RouteNetlinkMessage::DelLink(by_index(link.index)),
            0,
        )
        .map(drop)
    }

    /// Create a bridge. An existing link of that name gives `EEXIST`
    /// ([`Error::is_exists`]), so concurrent creators can all treat that as
    /// success (after checking the kind).
    pub fn create_bridge(&self, name: &str, mtu: Option<u32>, vlan_filtering: bool) -> Result<()> {
        let mut m = LinkMessage::default();
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        if let Some(mtu) = mtu {
            m.attributes.push(LinkAttribute::Mtu(mtu));
        }
        let mut info = vec![LinkInfo::Kind(InfoKind::Bridge)];
        if vlan_filtering {
            info.push(LinkInfo::Data(InfoData::Bridge(vec![
                InfoBridge::VlanFiltering(true),
            ])));
        }
        m.attributes.push(LinkAttribute::LinkInfo(info));
        self.request(
            &format!("create bridge {name}"),
            RouteNetlinkMessage::NewLink(m),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map(drop)
    }

    /// Create a veth pair across namespaces in one message. `EEXIST` when
    /// either name is taken in its namespace; callers tell which by looking
    /// the names up.
    pub fn create_veth_pair(&self, v: &VethPair<'_>) -> Result<()> {
        let mut peer = LinkMessage::default();
        peer.attributes
            .push(LinkAttribute::IfName(v.container_name.to_string()));
        peer.attributes
            .push(LinkAttribute::NetNsFd(v.container_ns.as_raw_fd()));
        if let Some(mac) = v.container_mac {
            peer.attributes.push(LinkAttribute::Address(mac.to_vec()));
        }
        let mut m = LinkMessage::default();
        m.attributes
            .push(LinkAttribute::IfName(v.host_name.to_string()));
        if let Some(mtu) = v.mtu {
            peer.attributes.push(LinkAttribute::Mtu(mtu));
            m.attributes.push(LinkAttribute::Mtu(mtu));
        }
        if let Some(master) = v.host_master {
            m.attributes.push(LinkAttribute::Controller(master));
        }
        m.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))),
        ]));
        self.request(
            &format!("create veth pair {}/{}", v.container_name, v.host_name),
            RouteNetlinkMessage::NewLink(m),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map(drop)
    }

    /// Set bridge-port options of `port` (an enslaved link) through
    /// `IFLA_PROTINFO`: hairpin mode and port isolation.
    pub fn set_bridge_port(&self, port: &Link, opts: &BridgePortOptions) -> Result<()> {
        let mut nested = Vec::new();
        if let Some(on) = opts.hairpin {
            push_u8_nla(&mut nested, IFLA_BRPORT_MODE, on.into());
        }
        if let Some(on) = opts.isolated {
            push_u8_nla(&mut nested, IFLA_BRPORT_ISOLATED, on.into());
        }
        if nested.is_empty() {
            return Ok(());
        }
        let mut m = by_index(port.index);
        m.header.interface_family = AddressFamily::Bridge;
        // The bridge only parses the new-style attributes when the nested
        // flag is set; without it the payload is read as an STP state.
        m.attributes.push(LinkAttribute::Other(DefaultNla::new(
            IFLA_PROTINFO | NLA_F_NESTED,
            nested,
        )));
        self.set_link(&format!("set bridge port options of {}", port.name), m)
    }
}

/// Bridge-port settings; `None` leaves a setting as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct BridgePortOptions {
    pub hairpin: Option<bool>,
    pub isolated: Option<bool>,
}

const IFLA_PROTINFO: u16 = 12;
const IFLA_BRPORT_MODE: u16 = 4;
const IFLA_BRPORT_ISOLATED: u16 = 33;

/// Append a netlink attribute holding one byte, padded to 4 bytes.
fn push_u8_nla(buf: &mut Vec<u8>, kind: u16, value: u8) {
    buf.extend_from_slice(&5u16.to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(&[value, 0, 0, 0]);
}
