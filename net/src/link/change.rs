//! Changing a link: state flags and attributes (one at a time or several
//! in one request, [`LinkChanges`]), its master and bridge-port options,
//! renaming, moving it to another namespace (renamed there in the same
//! request), its alias, and deleting it (also with the kernel's final wait
//! left to a child process).

use std::fs::File;
use std::os::fd::AsRawFd;

use super::{
    AF_BRIDGE, IFF_ALLMULTI, IFF_PROMISC, IFF_UP, IFLA_ADDRESS, IFLA_IFALIAS, IFLA_IFNAME,
    IFLA_MASTER, IFLA_MTU, IFLA_NET_NS_FD, IFLA_PROTINFO, IFLA_TXQLEN, Link, RTM_DELLINK,
    RTM_SETLINK, by_index, format_mac, ifinfo,
};
use crate::error::{Error, Result};
use crate::netlink::{Msg, NLA_F_NESTED, Netlink};

const IFLA_BRPORT_MODE: u16 = 4;
const IFLA_BRPORT_ISOLATED: u16 = 33;

impl Netlink {
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
    /// Rename `link` (`EEXIST` when the name is taken; `EBUSY` while it is
    /// up, on kernels that refuse renaming a live link).
    pub fn rename_link(&self, link: &Link, name: &str) -> Result<()> {
        super::create::check_name(name, format!("rename {} to {name}", link.name))?;
        let mut m = by_index(link.index);
        m.str(IFLA_IFNAME, name);
        self.set_link(&format!("rename {} to {name}", link.name), m)
    }

    /// Move `link` into the namespace `ns`, named `name` there (its own
    /// name when `None`), with one `RTM_SETLINK`: the kernel moves it (and
    /// takes it down), then renames it in `ns`. A link whose own name is
    /// taken in `ns` is moved under `name` at once, so no temporary name is
    /// needed for a name that clashes there (reference #1002). Not atomic:
    /// when `name` is taken in `ns` but the link's own name is not, the
    /// link is moved and keeps its own name, and `EEXIST` is returned.
    pub fn move_link(&self, link: &Link, ns: &File, name: Option<&str>) -> Result<()> {
        self.move_link_with(link, ns, name, None, None)
    }

    /// [`Netlink::move_link`] that also sets the link's alias (`""` clears
    /// it) and MAC in the same request, where the kernel applies them
    /// after the move, in their order (MAC, name, alias): a host device
    /// goes into a container, or back, in one step that a kill cannot
    /// split. The kernel stops at the first it refuses, keeping the move:
    /// a refused MAC leaves the link moved under its own name.
    pub fn move_link_with(
        &self,
        link: &Link,
        ns: &File,
        name: Option<&str>,
        alias: Option<&str>,
        mac: Option<&[u8]>,
    ) -> Result<()> {
        let op = match name {
            Some(n) => format!("move {} to another namespace as {n}", link.name),
            None => format!("move {} to another namespace", link.name),
        };
        if let Some(n) = name {
            super::create::check_name(n, op.as_str())?;
        }
        let mut m = by_index(link.index);
        m.u32(IFLA_NET_NS_FD, ns.as_raw_fd() as u32);
        if let Some(mac) = mac {
            m.attr(IFLA_ADDRESS, mac);
        }
        if let Some(n) = name {
            m.str(IFLA_IFNAME, n);
        }
        match alias {
            Some("") => {
                m.attr(IFLA_IFALIAS, &[]);
            }
            Some(a) => {
                m.str(IFLA_IFALIAS, a);
            }
            None => {}
        }
        self.set_link(&op, m)
    }

    /// Set the alias of `link` (`IFLA_IFALIAS`, `ip link set alias`); an
    /// empty `alias` clears it.
    pub fn set_alias(&self, link: &Link, alias: &str) -> Result<()> {
        let mut m = by_index(link.index);
        // An empty attribute clears the alias; "" with its NUL would set
        // an empty one.
        if alias.is_empty() {
            m.attr(IFLA_IFALIAS, &[]);
        } else {
            m.str(IFLA_IFALIAS, alias);
        }
        let op = if alias.is_empty() {
            format!("clear the alias of {}", link.name)
        } else {
            format!("set the alias of {} to {alias}", link.name)
        };
        self.set_link(&op, m)
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
