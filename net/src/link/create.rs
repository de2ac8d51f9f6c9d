//! Creating a link of any kind: one [`LinkSpec`] (name, [`Kind`] with its
//! settings, MTU, MAC, parent, queue length, target namespace, master,
//! up, a veth's peer) and one [`Netlink::create_link`], which sends it as
//! one `RTM_NEWLINK` (`NLM_F_CREATE | NLM_F_EXCL`); tun/tap devices go
//! through `/dev/net/tun` instead ([`super::tap`]).
//!
//! A link created with [`LinkSpec::netns`] is made in that namespace. Its
//! parent ([`LinkSpec::parent`]) is looked up in the namespace of the
//! connection that sends the request, its master in the new link's own.
//! Older kernels also refuse a name the sender's namespace has (Debian
//! 12's 6.1 does, seen in the VM tier; this machine's 6.18 checks the
//! target only, as rtnetlink does since it creates links in the target
//! namespace directly, believed to be 6.15). The reference's
//! macvlan/ipvlan/vlan/tap create under a temporary name for that, and its
//! dummy failed on `eth0` until v1.9.0. [`Netlink::create_link_in`] creates a link in another namespace
//! under its final name on any kernel: directly when it can, under a
//! temporary name renamed there when the sender's namespace has the name
//! ([`Netlink::create_link_renamed`]).
//!
//! Names are checked before anything is sent ([`name_problem`]); a random
//! name for a link on its way elsewhere is [`random_name`] (`veth` + 8 hex
//! digits, the reference's `ip.RandomVethName`).

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;

use super::{
    IFF_UP, IFLA_ADDRESS, IFLA_IFALIAS, IFLA_IFNAME, IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINK,
    IFLA_LINKINFO, IFLA_MASTER, IFLA_MTU, IFLA_NET_NS_FD, IFLA_TXQLEN, Kind, Link, RTM_NEWLINK,
    RTM_SETLINK, get_by_name, ifinfo, links_of,
};
use crate::error::{Error, Result};
use crate::netlink::{Msg, NLM_F_CREATE, NLM_F_EXCL, Netlink};

const VETH_INFO_PEER: u16 = 1;

/// A link to create. Fields left `None` get the kernel's defaults; build one
/// with [`LinkSpec::new`] and struct update syntax.
#[derive(Debug, Clone)]
pub struct LinkSpec<'a> {
    pub name: &'a str,
    pub kind: Kind,
    pub mtu: Option<u32>,
    pub mac: Option<[u8; 6]>,
    /// `IFLA_LINK`: the parent of a macvlan, ipvlan or vlan, by its index
    /// in the namespace of the connection that creates the link.
    pub parent: Option<u32>,
    /// `IFLA_TXQLEN`.
    pub txqlen: Option<u32>,
    /// `IFLA_NET_NS_FD`: create the link in this namespace rather than in
    /// the connection's.
    pub netns: Option<&'a File>,
    /// The bridge or VRF to enslave the link to, by its index in the
    /// namespace the link is created in.
    pub master: Option<u32>,
    /// Created administratively up.
    pub up: bool,
    /// The other end of a veth pair, created with it.
    pub peer: Option<Peer<'a>>,
    /// `IFLA_IFALIAS`, which the kernel ignores in `RTM_NEWLINK`: set by
    /// name right after the creation, in the same datagram, so that the
    /// link has it from its creation on for whoever looks, even when the
    /// creator is killed right after (bandwidth's IFB, whose alias tells
    /// GC whose it is). Only for a link made in the connection's own
    /// namespace ([`Netlink::create_link_get`]).
    pub alias: Option<&'a str>,
}

/// The other end of a veth pair.
#[derive(Debug, Clone, Copy)]
pub struct Peer<'a> {
    pub name: &'a str,
    /// Its namespace; the same as the first end's when `None`.
    pub netns: Option<&'a File>,
    pub mac: Option<[u8; 6]>,
    pub mtu: Option<u32>,
}

impl<'a> LinkSpec<'a> {
    /// `name` of `kind`, everything else the kernel's default, down, in the
    /// connection's namespace.
    pub fn new(name: &'a str, kind: Kind) -> LinkSpec<'a> {
        LinkSpec {
            name,
            kind,
            mtu: None,
            mac: None,
            parent: None,
            txqlen: None,
            netns: None,
            master: None,
            up: false,
            peer: None,
            alias: None,
        }
    }

    /// `create <kind> <name>` (`create veth pair eth0/veth1234abcd` for a
    /// veth with its peer), the operation named in errors.
    fn describe(&self) -> String {
        match (&self.kind, &self.peer) {
            (Kind::Veth, Some(p)) => format!("create veth pair {}/{}", p.name, self.name),
            (kind, _) => format!("create {} {}", kind.name(), self.name),
        }
    }

    /// The MTU, MAC and queue length, when set. Returns whether any is.
    pub(super) fn settings(&self, m: &mut Msg) -> bool {
        if let Some(mtu) = self.mtu {
            m.u32(IFLA_MTU, mtu);
        }
        if let Some(mac) = self.mac {
            m.attr(IFLA_ADDRESS, &mac);
        }
        if let Some(q) = self.txqlen {
            m.u32(IFLA_TXQLEN, q);
        }
        self.mtu.is_some() || self.mac.is_some() || self.txqlen.is_some()
    }

    /// The `RTM_NEWLINK` of this spec; borrowed namespace descriptors stay
    /// open for the whole call.
    pub(crate) fn message(&self) -> Result<Msg> {
        check_new_name(self.name)?;
        if let Some(p) = &self.peer {
            check_new_name(p.name)?;
        }
        if self.kind == Kind::Device {
            return Err(Error::other(self.describe(), "a device cannot be created"));
        }
        if self.alias.is_some() && self.netns.is_some() {
            return Err(Error::other(
                self.describe(),
                "an alias is set in the connection's own namespace only",
            ));
        }
        let flags = if self.up { IFF_UP } else { 0 };
        let mut m = Msg::new(
            RTM_NEWLINK,
            NLM_F_CREATE | NLM_F_EXCL,
            &ifinfo(0, 0, flags, flags),
        );
        m.str(IFLA_IFNAME, self.name);
        self.settings(&mut m);
        if let Some(parent) = self.parent {
            m.u32(IFLA_LINK, parent);
        }
        if let Some(master) = self.master {
            m.u32(IFLA_MASTER, master);
        }
        if let Some(ns) = self.netns {
            m.u32(IFLA_NET_NS_FD, ns.as_raw_fd() as u32);
        }
        m.nest(IFLA_LINKINFO, |m| {
            m.str(IFLA_INFO_KIND, self.kind.name());
            match (&self.kind, &self.peer) {
                (Kind::Veth, Some(p)) => {
                    m.nest(IFLA_INFO_DATA, |m| {
                        m.nest(VETH_INFO_PEER, |m| p.encode(m));
                    });
                }
                (kind, _) => kind.encode_data(m),
            }
        });
        Ok(m)
    }
}

impl Peer<'_> {
    fn encode(&self, m: &mut Msg) {
        m.raw(&ifinfo(0, 0, 0, 0));
        m.str(IFLA_IFNAME, self.name);
        if let Some(ns) = self.netns {
            m.u32(IFLA_NET_NS_FD, ns.as_raw_fd() as u32);
        }
        if let Some(mac) = self.mac {
            m.attr(IFLA_ADDRESS, &mac);
        }
        if let Some(mtu) = self.mtu {
            m.u32(IFLA_MTU, mtu);
        }
    }
}

impl Netlink {
    /// Create the link `spec` with one request. `EEXIST`
    /// ([`Error::is_exists`]) when its name (or a veth peer's) is taken in
    /// the namespace it is created in: concurrent creators of a shared
    /// link (a bridge) can all treat that as success after checking the
    /// kind, and callers of a veth tell which name by looking them up.
    pub fn create_link(&self, spec: &LinkSpec<'_>) -> Result<()> {
        if let Kind::Tun(_) = spec.kind {
            return super::tap::create(self, spec);
        }
        // With a netns, message() refuses the alias.
        if spec.alias.is_some() && spec.netns.is_none() {
            return self.create_link_get(spec).map(drop);
        }
        self.request(&spec.describe(), spec.message()?).map(drop)
    }

    /// Create `spec` in the namespace of `target` (a handle opened with
    /// [`Netlink::in_netns`]; `spec.netns` is ignored) from this
    /// connection, so that its parent is looked up here; returns the link
    /// as `target` sees it. Made directly, in one request; when this
    /// namespace has a link of that name and `target` has none (a kernel
    /// that checks both), made again as
    /// [`Netlink::create_link_renamed`] does. `EEXIST` when `target` has
    /// the name.
    pub fn create_link_in(&self, target: &Netlink, spec: &LinkSpec<'_>) -> Result<Link> {
        let ns = target_ns(target, spec)?;
        let direct = LinkSpec {
            netns: Some(ns),
            ..spec.clone()
        };
        match self.create_link(&direct) {
            Ok(()) => target.link_by_name(spec.name),
            Err(e) if e.is_exists() && target.find_link(spec.name)?.is_none() => {
                self.create_link_renamed(target, spec)
            }
            Err(e) => Err(e),
        }
    }

    /// Create `spec` in the namespace of `target` under a random temporary
    /// name ([`random_name`], free in both namespaces), then rename it
    /// there to its name, and set it up if `spec.up`, in one request (a
    /// link is renamed before it is set up). A link that cannot be renamed
    /// is deleted. Returns the link as `target` sees it.
    pub fn create_link_renamed(&self, target: &Netlink, spec: &LinkSpec<'_>) -> Result<Link> {
        let ns = target_ns(target, spec)?;
        check_new_name(spec.name)?;
        let tmp = random_name()?;
        let temporary = LinkSpec {
            name: &tmp,
            netns: Some(ns),
            up: false,
            ..spec.clone()
        };
        self.create_link(&temporary)?;
        let made = target.link_by_name(&tmp)?;
        let flags = if spec.up { IFF_UP } else { 0 };
        let mut m = Msg::new(RTM_SETLINK, 0, &ifinfo(0, made.index, flags, flags));
        m.str(IFLA_IFNAME, spec.name);
        let op = format!("rename {tmp} to {}", spec.name);
        let find_op = format!("find link {}", spec.name);
        let (renamed, found) = target.request_pair((&op, m), (&find_op, get_by_name(spec.name)));
        if let Err(e) = renamed {
            let _ = target.delete_link(&made);
            return Err(e);
        }
        first_link(found?, find_op)
    }

    /// [`Netlink::create_link`], and the link as the kernel reports it right
    /// after: the lookup is sent together with the creation, so both take
    /// one round trip. Only for a link created in this connection's
    /// namespace (a veth whose peer goes elsewhere is one).
    pub fn create_link_get(&self, spec: &LinkSpec<'_>) -> Result<Link> {
        let create_op = spec.describe();
        if spec.netns.is_some() {
            return Err(Error::other(
                create_op,
                "a link created in another namespace is looked up there",
            ));
        }
        let find_op = format!("find link {}", spec.name);
        if let Kind::Tun(_) = spec.kind {
            super::tap::create(self, spec)?;
            return self.link_by_name(spec.name);
        }
        if let Some(alias) = spec.alias {
            return self.create_aliased(spec, alias);
        }
        let (created, found) = self.request_pair(
            (&create_op, spec.message()?),
            (&find_op, get_by_name(spec.name)),
        );
        created?;
        first_link(found?, find_op)
    }

    /// [`Netlink::create_link_get`] of a spec with an alias: a lookup, the
    /// creation, the alias set by name and a lookup, pipelined in one
    /// datagram, which the kernel handles within one `sendmsg` (so a kill
    /// cannot come between the creation and the alias). Should the name be
    /// taken, the alias lands on the link that has it, and is put back as
    /// the first lookup saw it.
    fn create_aliased(&self, spec: &LinkSpec<'_>, alias: &str) -> Result<Link> {
        let create_op = spec.describe();
        let find_op = format!("find link {}", spec.name);
        let alias_op = format!("set alias of {}", spec.name);
        let mut set = Msg::new(RTM_SETLINK, 0, &ifinfo(0, 0, 0, 0));
        set.str(IFLA_IFNAME, spec.name).str(IFLA_IFALIAS, alias);
        let mut answers = self
            .pipeline(vec![
                (&find_op, get_by_name(spec.name)),
                (&create_op, spec.message()?),
                (&alias_op, set),
                (&find_op, get_by_name(spec.name)),
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
            let _ = self.set_alias(&old, old.alias.as_deref().unwrap_or(""));
            return Err(e.clone());
        }
        created?;
        aliased?;
        first_link(found?, find_op)
    }
}

/// The link of a lookup's replies (`ENODEV` when there is none).
fn first_link(replies: Vec<Vec<u8>>, op: String) -> Result<Link> {
    links_of(replies)
        .into_iter()
        .next()
        .ok_or_else(|| Error::errno(op, nix::errno::Errno::ENODEV))
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
    check_name(name, format!("create link {name:?}"))
}

/// `name` as the new name of a link, for `op` (creating, renaming,
/// moving).
pub(super) fn check_name(name: &str, op: impl Into<String>) -> Result<()> {
    match name_problem(name) {
        Some(p) => Err(Error::other(op, format!("interface name {p}"))),
        None => Ok(()),
    }
}

/// `veth` + 8 random lowercase hex digits (the reference's
/// `ip.RandomVethName`): the host end of a veth pair, or a temporary name
/// for a link on its way to another namespace, where its final name may be
/// taken in the namespace it leaves.
pub fn random_name() -> Result<String> {
    let mut b = [0u8; 4];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::io("read /dev/urandom", &e))?;
    Ok(format!(
        "veth{:02x}{:02x}{:02x}{:02x}",
        b[0], b[1], b[2], b[3]
    ))
}

/// The namespace of `target`, for creating `spec` there.
fn target_ns<'a>(target: &'a Netlink, spec: &LinkSpec<'_>) -> Result<&'a File> {
    target.netns_file().ok_or_else(|| {
        Error::other(
            spec.describe(),
            "the target connection was not opened in another namespace",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn random_names_are_veth_and_eight_hex_digits() {
        let a = random_name().unwrap();
        assert_eq!(a.len(), 12, "{a}");
        assert!(a.starts_with("veth"), "{a}");
        assert!(
            a[4..]
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, random_name().unwrap());
        assert_eq!(name_problem(&a), None);
    }

    #[test]
    fn a_spec_is_one_message_with_every_setting() {
        let spec = LinkSpec {
            mtu: Some(1400),
            mac: Some([2, 0, 0, 0, 0, 1]),
            parent: Some(7),
            txqlen: Some(0),
            master: Some(9),
            up: true,
            ..LinkSpec::new("net1", Kind::Dummy)
        };
        let m = spec.message().unwrap();
        let got: Vec<u16> = crate::netlink::attrs(&m.body()[16..])
            .map(|(k, _)| k)
            .collect();
        assert_eq!(
            got,
            [
                IFLA_IFNAME,
                IFLA_MTU,
                IFLA_ADDRESS,
                IFLA_TXQLEN,
                IFLA_LINK,
                IFLA_MASTER,
                IFLA_LINKINFO
            ]
        );
        assert_eq!(spec.describe(), "create dummy net1");
        let e = LinkSpec::new("eth0", Kind::Device).message().unwrap_err();
        assert_eq!(e.to_string(), "create  eth0: a device cannot be created");
    }
}
