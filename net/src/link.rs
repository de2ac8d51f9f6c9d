//! Links: lookup, state changes, bridges and veth pairs.

use std::fs::File;
use std::os::fd::AsRawFd;

use crate::error::{Error, Result};
use crate::netlink::{
    Msg, NLA_F_NESTED, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, Netlink, attrs, str_of, u32_of,
};

pub(crate) const RTM_NEWLINK: u16 = 16;
pub(crate) const RTM_DELLINK: u16 = 17;
pub(crate) const RTM_GETLINK: u16 = 18;
pub(crate) const RTM_SETLINK: u16 = 19;

const IFLA_ADDRESS: u16 = 1;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_LINK: u16 = 5;
const IFLA_MASTER: u16 = 10;
const IFLA_TXQLEN: u16 = 13;
const IFLA_PROTINFO: u16 = 12;
const IFLA_OPERSTATE: u16 = 16;
const IFLA_IFALIAS: u16 = 20;
pub(crate) const IFLA_LINKINFO: u16 = 18;
pub(crate) const IFLA_AF_SPEC: u16 = 26;
const IFLA_NET_NS_FD: u16 = 28;
pub(crate) const IFLA_EXT_MASK: u16 = 29;
const IFLA_PROMISCUITY: u16 = 30;
const IFLA_LINK_NETNSID: u16 = 37;
const IFLA_MIN_MTU: u16 = 50;
const IFLA_MAX_MTU: u16 = 51;
pub(crate) const IFLA_INFO_KIND: u16 = 1;
pub(crate) const IFLA_INFO_DATA: u16 = 2;
const VETH_INFO_PEER: u16 = 1;
pub(crate) const IFLA_BR_VLAN_FILTERING: u16 = 7;
const IFLA_BRPORT_MODE: u16 = 4;
const IFLA_BRPORT_ISOLATED: u16 = 33;

const IFF_UP: u32 = 0x1;
const IFF_PROMISC: u32 = 0x100;
const IFF_ALLMULTI: u32 = 0x200;
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

/// The longest link name the kernel takes (`IFNAMSIZ` - 1).
pub const MAX_NAME_LEN: usize = 15;

/// Why `name` cannot name a new link as given, worded like the reference's
/// interface-name errors (`contains / or : or whitespace characters`), or
/// `None`. Besides what the kernel refuses (`dev_valid_name`), a `%` is
/// refused: the kernel reads such a name as a template (`eth%d` becomes
/// `eth0`), so the link would exist under a name nobody asked for.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return Some("is too long");
    }
    if name == "." || name == ".." {
        return Some("is . or ..");
    }
    // The kernel refuses ASCII whitespace; the reference refuses Unicode
    // whitespace in CNI_IFNAME, and we in every name.
    if name.contains(['/', ':']) || name.chars().any(char::is_whitespace) {
        return Some("contains / or : or whitespace characters");
    }
    if name.contains('%') {
        return Some("contains %, which the kernel reads as a name template");
    }
    if name.contains('\0') {
        return Some("contains a NUL byte");
    }
    None
}

/// The guard of every link creation: a name the kernel would refuse or
/// rewrite never reaches it.
fn check_new_name(name: &str) -> Result<()> {
    match name_problem(name) {
        Some(p) => Err(Error::other(
            format!("create link {name:?}"),
            format!("interface name {p}"),
        )),
        None => Ok(()),
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
    /// A link from the body of an `RTM_NEWLINK` message.
    pub(crate) fn from_body(b: &[u8]) -> Option<Link> {
        let flags = u32_of(b.get(8..12)?)?;
        let mut link = Link {
            index: u32_of(b.get(4..8)?)?,
            name: String::new(),
            kind: String::new(),
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
                IFLA_LINKINFO => {
                    if let Some((_, k)) = attrs(d).find(|(k, _)| *k == IFLA_INFO_KIND) {
                        link.kind = str_of(k);
                    }
                }
                _ => {}
            }
        }
        Some(link)
    }
}

fn links_of(replies: Vec<Vec<u8>>) -> Vec<Link> {
    replies.iter().filter_map(|b| Link::from_body(b)).collect()
}

/// The link of a lookup's replies (`ENODEV` when there is none).
fn first_link(replies: Vec<Vec<u8>>, op: String) -> Result<Link> {
    links_of(replies)
        .into_iter()
        .next()
        .ok_or_else(|| Error::errno(op, nix::errno::Errno::ENODEV))
}

fn by_index(index: u32) -> Msg {
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

fn get_by_name(name: &str) -> Msg {
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

    fn set_link(&self, op: &str, m: Msg) -> Result<()> {
        self.request(op, m).map(drop)
    }

    fn set_flag(&self, link: &Link, flag: u32, on: bool, op: &str) -> Result<()> {
        let m = Msg::new(
            RTM_SETLINK,
            0,
            &ifinfo(0, link.index, if on { flag } else { 0 }, flag),
        );
        self.set_link(&format!("{op} {}", link.name), m)
    }

    pub fn set_up(&self, link: &Link) -> Result<()> {
        self.set_flag(link, IFF_UP, true, "set up")
    }

    pub fn set_down(&self, link: &Link) -> Result<()> {
        self.set_flag(link, IFF_UP, false, "set down")
    }

    pub fn set_promisc(&self, link: &Link, on: bool) -> Result<()> {
        let op = if on {
            "set promisc on"
        } else {
            "set promisc off"
        };
        self.set_flag(link, IFF_PROMISC, on, op)
    }

    pub fn set_allmulti(&self, link: &Link, on: bool) -> Result<()> {
        let op = if on {
            "set allmulticast on"
        } else {
            "set allmulticast off"
        };
        self.set_flag(link, IFF_ALLMULTI, on, op)
    }

    /// Set the transmit queue length (`ip link set ... txqueuelen`).
    pub fn set_txqlen(&self, link: &Link, txqlen: u32) -> Result<()> {
        let mut m = by_index(link.index);
        m.u32(IFLA_TXQLEN, txqlen);
        self.set_link(&format!("set txqueuelen of {} to {txqlen}", link.name), m)
    }

    /// Change several attributes of `link` with one `RTM_SETLINK`: one
    /// round trip and one RTNL lock instead of one each. The kernel
    /// applies them in its order (address, MTU, flags, queue length) and
    /// stops at the first it refuses, keeping those before it.
    pub fn change_link(&self, link: &Link, c: &LinkChanges) -> Result<()> {
        let (mut flags, mut change) = (0, 0);
        for (flag, on) in [(IFF_PROMISC, c.promisc), (IFF_ALLMULTI, c.allmulti)] {
            if let Some(on) = on {
                change |= flag;
                if on {
                    flags |= flag;
                }
            }
        }
        let mut m = Msg::new(RTM_SETLINK, 0, &ifinfo(0, link.index, flags, change));
        if let Some(mac) = &c.mac {
            m.attr(IFLA_ADDRESS, mac);
        }
        if let Some(mtu) = c.mtu {
            m.u32(IFLA_MTU, mtu);
        }
        if let Some(q) = c.txqlen {
            m.u32(IFLA_TXQLEN, q);
        }
        self.set_link(&format!("set {} of {}", c.describe(), link.name), m)
    }

    /// Enslave `link` to the bridge `master`, or release it with `None`.
    pub fn set_master(&self, link: &Link, master: Option<&Link>) -> Result<()> {
        let mut m = by_index(link.index);
        m.u32(IFLA_MASTER, master.map_or(0, |b| b.index));
        let op = match master {
            Some(b) => format!("set master of {} to {}", link.name, b.name),
            None => format!("release {} from its master", link.name),
        };
        self.set_link(&op, m)
    }

    pub fn set_mac(&self, link: &Link, mac: &[u8]) -> Result<()> {
        let mut m = by_index(link.index);
        m.attr(IFLA_ADDRESS, mac);
        self.set_link(
            &format!("set mac of {} to {}", link.name, format_mac(mac)),
            m,
        )
    }

    pub fn set_mtu(&self, link: &Link, mtu: u32) -> Result<()> {
        let mut m = by_index(link.index);
        m.u32(IFLA_MTU, mtu);
        self.set_link(&format!("set mtu of {} to {mtu}", link.name), m)
    }

    pub fn delete_link(&self, link: &Link) -> Result<()> {
        self.request(
            &format!("delete link {}", link.name),
            Msg::new(RTM_DELLINK, 0, &ifinfo(0, link.index, 0, 0)),
        )
        .map(drop)
    }

    /// Delete `link` and return once the kernel has unregistered it: gone
    /// from the namespace with its addresses, routes and neighbours (and a
    /// veth's peer with it). Most of a deletion comes after that: the
    /// kernel waits for the link's last references in an RCU barrier, 10
    /// to 25 ms on a two-CPU machine, while the deleting process waits.
    /// That wait is left to a child process that sends the deletion and
    /// then ends, reaped by whoever inherits it (as for the netfilter
    /// socket, see [`Netlink`]). We watch the link disappear, then make a
    /// request that needs the RTNL lock, which the kernel holds until the
    /// unregistration is complete. Without a child (none can be made, or
    /// none would be reaped: [`skel::orphans`]) the deletion is made here,
    /// in full. Success means the link is gone, whoever removed it; the
    /// child's error when the kernel refused to.
    pub fn delete_link_detached(&self, link: &Link) -> Result<()> {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        if !skel::orphans::reaped() {
            return self.delete_link(link);
        }
        let op = format!("delete link {}", link.name);
        let message = || Msg::new(RTM_DELLINK, 0, &ifinfo(0, link.index, 0, 0));
        let Some(child) = self.request_detached(message())? else {
            return self.delete_link(link);
        };
        let mut pause = std::time::Duration::from_micros(20);
        loop {
            // The child's answer, when it came before the link went.
            match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(_, 0)) => return Ok(()),
                Ok(WaitStatus::Exited(_, code)) => {
                    return Err(Error::errno(op, nix::errno::Errno::from_raw(code)));
                }
                Ok(WaitStatus::StillAlive) => {}
                Ok(_) | Err(_) => return self.delete_link(link),
            }
            match self.link_by_index(link.index) {
                Err(e) if e.is_not_found() => break,
                Err(e) => return Err(e),
                Ok(_) => std::thread::sleep(pause),
            }
            pause = (pause * 2).min(std::time::Duration::from_millis(1));
        }
        // A change with nothing to change: it returns once RTNL is free.
        // Should the index be taken again by then, that link is untouched.
        match self.request(&op, by_index(link.index)) {
            Err(e) if !e.is_not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// Create a bridge. An existing link of that name gives `EEXIST`
    /// ([`Error::is_exists`]), so concurrent creators can all treat that as
    /// success (after checking the kind).
    pub fn create_bridge(&self, name: &str, mtu: Option<u32>, vlan_filtering: bool) -> Result<()> {
        check_new_name(name)?;
        let mut m = Msg::new(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifinfo(0, 0, 0, 0));
        m.str(IFLA_IFNAME, name);
        if let Some(mtu) = mtu {
            m.u32(IFLA_MTU, mtu);
        }
        m.nest(IFLA_LINKINFO, |m| {
            m.str(IFLA_INFO_KIND, "bridge");
            if vlan_filtering {
                m.nest(IFLA_INFO_DATA, |m| {
                    m.u8(IFLA_BR_VLAN_FILTERING, 1);
                });
            }
        });
        self.request(&format!("create bridge {name}"), m).map(drop)
    }

    fn veth_message(v: &VethPair<'_>, up: bool) -> Result<Msg> {
        check_new_name(v.host_name)?;
        check_new_name(v.container_name)?;
        let flags = if up { IFF_UP } else { 0 };
        let mut m = Msg::new(
            RTM_NEWLINK,
            NLM_F_CREATE | NLM_F_EXCL,
            &ifinfo(0, 0, flags, flags),
        );
        m.str(IFLA_IFNAME, v.host_name);
        if let Some(mtu) = v.mtu {
            m.u32(IFLA_MTU, mtu);
        }
        if let Some(master) = v.host_master {
            m.u32(IFLA_MASTER, master);
        }
        m.nest(IFLA_LINKINFO, |m| {
            m.str(IFLA_INFO_KIND, "veth");
            m.nest(IFLA_INFO_DATA, |m| {
                m.nest(VETH_INFO_PEER, |m| {
                    m.raw(&ifinfo(0, 0, 0, 0));
                    m.str(IFLA_IFNAME, v.container_name);
                    // The fd stays open for the whole call (borrowed).
                    m.u32(IFLA_NET_NS_FD, v.container_ns.as_raw_fd() as u32);
                    if let Some(mac) = v.container_mac {
                        m.attr(IFLA_ADDRESS, &mac);
                    }
                    if let Some(mtu) = v.mtu {
                        m.u32(IFLA_MTU, mtu);
                    }
                });
            });
        });
        Ok(m)
    }

    /// Create a veth pair across namespaces in one message. `EEXIST` when
    /// either name is taken in its namespace; callers tell which by looking
    /// the names up.
    pub fn create_veth_pair(&self, v: &VethPair<'_>) -> Result<()> {
        self.request(
            &format!("create veth pair {}/{}", v.container_name, v.host_name),
            Self::veth_message(v, false)?,
        )
        .map(drop)
    }

    /// [`Netlink::create_veth_pair`] with the host end already up, and the
    /// host end as the kernel reports it right after: the lookup is sent
    /// together with the creation, so both take one round trip.
    pub fn create_veth_pair_up(&self, v: &VethPair<'_>) -> Result<Link> {
        let create_op = format!("create veth pair {}/{}", v.container_name, v.host_name);
        let find_op = format!("find link {}", v.host_name);
        let (created, found) = self.request_pair(
            (&create_op, Self::veth_message(v, true)?),
            (&find_op, get_by_name(v.host_name)),
        );
        created?;
        links_of(found?)
            .into_iter()
            .next()
            .ok_or_else(|| Error::errno(find_op, nix::errno::Errno::ENODEV))
    }

    /// Create an IFB device (`ip link add NAME mtu M txqueuelen 0 type
    /// ifb`), down, and return it as the kernel reports it. A qdisc put on
    /// a device that is down spares the kernel waiting for the device to
    /// go quiet (`dev_deactivate`); bring it up afterwards with
    /// [`Netlink::set_up_with_alias`]. With `alias`, the device has it from
    /// its creation on, for whoever looks, even when we are killed right
    /// after (see the body). `EEXIST` when the name is taken (its device's
    /// alias unchanged).
    pub fn create_ifb(&self, name: &str, mtu: u32, alias: Option<&str>) -> Result<Link> {
        let mut m = Msg::new(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifinfo(0, 0, 0, 0));
        m.str(IFLA_IFNAME, name);
        if mtu > 0 {
            m.u32(IFLA_MTU, mtu);
        }
        // No queue: the qdisc put on the device is the only one (the
        // reference sets 0 too, see its PR #1097).
        m.u32(IFLA_TXQLEN, 0);
        m.nest(IFLA_LINKINFO, |m| {
            m.str(IFLA_INFO_KIND, "ifb");
        });
        let create_op = format!("create ifb {name}");
        let find_op = format!("find link {name}");
        let Some(alias) = alias else {
            let (created, found) =
                self.request_pair((&create_op, m), (&find_op, get_by_name(name)));
            created?;
            return first_link(found?, find_op);
        };
        // The kernel ignores IFLA_IFALIAS when it creates a link: it is set
        // by name right after, in the same datagram, so that no kill can
        // leave the device without it. Should the name be taken, the alias
        // lands on the device that has it, and is put back as it was.
        let mut set = Msg::new(RTM_SETLINK, 0, &ifinfo(0, 0, 0, 0));
        set.str(IFLA_IFNAME, name).str(IFLA_IFALIAS, alias);
        let alias_op = format!("set alias of {name}");
        let mut answers = self
            .pipeline(vec![
                (&find_op, get_by_name(name)),
                (&create_op, m),
                (&alias_op, set),
                (&find_op, get_by_name(name)),
            ])
            .into_iter();
        let mut next = || {
            answers
                .next()
                .unwrap_or_else(|| Err(Error::other("netlink", "no answer")))
        };
        let (before, created, aliased, found) = (next(), next(), next(), next());
        if let (Err(e), Ok(before)) = (&created, before)
            && let Some(old) = links_of(before).into_iter().next()
            && old.alias.as_deref() != Some(alias)
        {
            let mut undo = Msg::new(RTM_SETLINK, 0, &ifinfo(0, old.index, 0, 0));
            undo.str(IFLA_IFALIAS, old.alias.as_deref().unwrap_or(""));
            let _ = self.set_link(&alias_op, undo);
            return Err(e.clone());
        }
        created?;
        aliased?;
        first_link(found?, find_op)
    }

    /// Set `link` up and, when given, its alias (`IFLA_IFALIAS`, which the
    /// kernel ignores when it creates a link), in one request.
    pub fn set_up_with_alias(&self, link: &Link, alias: Option<&str>) -> Result<()> {
        let mut m = Msg::new(RTM_SETLINK, 0, &ifinfo(0, link.index, IFF_UP, IFF_UP));
        if let Some(alias) = alias {
            m.str(IFLA_IFALIAS, alias);
        }
        self.set_link(&format!("set up {}", link.name), m)
    }

    /// The other end of the veth `name` of namespace `container`, looked
    /// up in this handle's namespace by its index (`IFLA_LINK`) and
    /// confirmed to be a veth whose own peer is `name` (an index alone may
    /// name an unrelated link when the peer lives elsewhere). Fails only
    /// when `name` cannot be looked up.
    pub fn veth_peer(&self, container: &Netlink, name: &str) -> Result<VethPeer> {
        let inner = container.link_by_name(name)?;
        let Some(index) = inner.link.filter(|_| inner.kind == "veth") else {
            return Ok(VethPeer::NotVeth);
        };
        match self.link_by_index(index) {
            Ok(l) if l.kind == "veth" && l.link == Some(inner.index) => Ok(VethPeer::Found(l)),
            Ok(_) => Ok(VethPeer::Elsewhere(index)),
            Err(e) if e.is_not_found() => Ok(VethPeer::Elsewhere(index)),
            Err(e) => Err(e),
        }
    }

    /// Set bridge-port options of `port` (an enslaved link) through
    /// `IFLA_PROTINFO`: hairpin mode and port isolation.
    pub fn set_bridge_port(&self, port: &Link, opts: &BridgePortOptions) -> Result<()> {
        if opts.hairpin.is_none() && opts.isolated.is_none() {
            return Ok(());
        }
        let mut m = Msg::new(RTM_SETLINK, 0, &ifinfo(AF_BRIDGE, port.index, 0, 0));
        // The bridge only parses the new-style attributes when the nested
        // flag is set; without it the payload is read as an STP state.
        m.nest(IFLA_PROTINFO | NLA_F_NESTED, |m| {
            if let Some(on) = opts.hairpin {
                m.u8(IFLA_BRPORT_MODE, on.into());
            }
            if let Some(on) = opts.isolated {
                m.u8(IFLA_BRPORT_ISOLATED, on.into());
            }
        });
        self.set_link(&format!("set bridge port options of {}", port.name), m)
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

/// Link attributes to change together ([`Netlink::change_link`]); `None`
/// leaves an attribute as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkChanges {
    pub mac: Option<Vec<u8>>,
    pub mtu: Option<u32>,
    pub promisc: Option<bool>,
    pub allmulti: Option<bool>,
    pub txqlen: Option<u32>,
}

impl LinkChanges {
    pub fn is_empty(&self) -> bool {
        *self == LinkChanges::default()
    }

    /// `mac 02:00:00:00:00:01, mtu 1400, promisc on`.
    pub fn describe(&self) -> String {
        let on = |b: bool| if b { "on" } else { "off" };
        let mut parts = Vec::new();
        if let Some(m) = &self.mac {
            parts.push(format!("mac {}", format_mac(m)));
        }
        if let Some(m) = self.mtu {
            parts.push(format!("mtu {m}"));
        }
        if let Some(p) = self.promisc {
            parts.push(format!("promisc {}", on(p)));
        }
        if let Some(a) = self.allmulti {
            parts.push(format!("allmulticast {}", on(a)));
        }
        if let Some(q) = self.txqlen {
            parts.push(format!("txqueuelen {q}"));
        }
        parts.join(", ")
    }
}

/// Bridge-port settings; `None` leaves a setting as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct BridgePortOptions {
    pub hairpin: Option<bool>,
    pub isolated: Option<bool>,
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
            (l.index, l.name.as_str(), l.kind.as_str()),
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

    #[test]
    fn names_the_kernel_would_refuse_or_rewrite() {
        for ok in [
            "eth0",
            "a",
            "br.100",
            "veth-1_x",
            "123456789012345",
            "ümlaut",
            // Ends in the byte 0xa0, which the kernel does not take for a space.
            "caf\u{e0}",
        ] {
            assert_eq!(name_problem(ok), None, "{ok}");
        }
        let cases = [
            ("", "is empty"),
            ("1234567890123456", "is too long"),
            (".", "is . or .."),
            ("..", "is . or .."),
            ("a/b", "contains / or : or whitespace characters"),
            ("eth0:1", "contains / or : or whitespace characters"),
            ("a b", "contains / or : or whitespace characters"),
            ("a\x0bb", "contains / or : or whitespace characters"),
            ("a\u{a0}", "contains / or : or whitespace characters"),
            ("a\u{2003}b", "contains / or : or whitespace characters"),
            (
                "%d",
                "contains %, which the kernel reads as a name template",
            ),
            (
                "eth%d",
                "contains %, which the kernel reads as a name template",
            ),
            (
                "a%",
                "contains %, which the kernel reads as a name template",
            ),
            ("a\0b", "contains a NUL byte"),
        ];
        for (name, problem) in cases {
            assert_eq!(name_problem(name), Some(problem), "{name:?}");
        }
        let e = check_new_name("br%d").unwrap_err();
        assert_eq!(
            e.to_string(),
            "create link \"br%d\": interface name contains %, which the kernel reads as a name template"
        );
        assert_eq!(e.code(), None);
    }
}
