//! tun/tap devices: rtnetlink cannot create them (the kernel refuses
//! `RTM_NEWLINK` of kind `tun`), so they are made as `ip tuntap add` does:
//! `/dev/net/tun` opened inside the connection's namespace (a device is
//! created in the namespace of the opener), `TUNSETIFF` with
//! `IFF_TUN_EXCL` (an existing device of that name is refused rather
//! than attached to), `TUNSETOWNER` / `TUNSETGROUP`, and `TUNSETPERSIST`
//! so that it outlives the descriptor. The rest of the [`LinkSpec`] (MTU,
//! MAC, queue length, master, up, alias) follows in one `RTM_SETLINK` (the
//! alias therefore not in the creation's datagram, as for other kinds); a
//! device that cannot be finished is deleted.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;

use nix::libc;

use super::kind::IFF_TAP;
use super::{
    IFF_UP, IFLA_IFALIAS, IFLA_IFNAME, IFLA_MASTER, Kind, LinkSpec, RTM_SETLINK, Tun, ifinfo,
};
use crate::error::{Errno, Error, Result};
use crate::netlink::{Msg, Netlink};

// `libc::Ioctl`: the request's type differs between glibc and musl.
const TUNSETIFF: libc::Ioctl = 0x4004_54ca;
const TUNSETPERSIST: libc::Ioctl = 0x4004_54cb;
const TUNSETOWNER: libc::Ioctl = 0x4004_54cc;
const TUNSETGROUP: libc::Ioctl = 0x4004_54ce;
const IFF_TUN: u16 = 0x1;
const IFF_MULTI_QUEUE: u16 = 0x100;
const IFF_NO_PI: u16 = 0x1000;
const IFF_VNET_HDR: u16 = 0x4000;
const IFF_TUN_EXCL: u16 = 0x8000;

/// `struct ifreq` as `TUNSETIFF` reads it: the name, then the flags.
fn ifreq(name: &str, flags: u16) -> [u8; 40] {
    let mut r = [0u8; 40];
    r[..name.len()].copy_from_slice(name.as_bytes());
    r[16..18].copy_from_slice(&flags.to_ne_bytes());
    r
}

fn flags(t: &Tun) -> u16 {
    let mut f = IFF_TUN_EXCL | if t.tap { IFF_TAP } else { IFF_TUN };
    if !t.pi {
        f |= IFF_NO_PI;
    }
    if t.vnet_hdr {
        f |= IFF_VNET_HDR;
    }
    if t.multi_queue {
        f |= IFF_MULTI_QUEUE;
    }
    f
}

/// Create the persistent device `name` in the calling thread's namespace.
/// An existing device of that name is `EEXIST`, as for other kinds.
fn make(name: &str, t: &Tun, op: &str) -> Result<()> {
    let tun = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .map_err(|e| Error::io(format!("{op}: open /dev/net/tun"), &e))?;
    let fd = tun.as_raw_fd();
    let mut req = ifreq(name, flags(t));
    let ioctl = |what: &str, r: libc::c_int| match r {
        0.. => Ok(()),
        _ => match Errno::last() {
            Errno::EBUSY => Err(Error::errno(op, Errno::EEXIST)),
            e => Err(Error::errno(format!("{op}: {what}"), e)),
        },
    };
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq` (40 bytes),
    // which `req` is; the others take an integer argument.
    unsafe {
        ioctl("TUNSETIFF", libc::ioctl(fd, TUNSETIFF, req.as_mut_ptr()))?;
        if let Some(uid) = t.owner {
            ioctl(
                "TUNSETOWNER",
                libc::ioctl(fd, TUNSETOWNER, uid as libc::c_ulong),
            )?;
        }
        if let Some(gid) = t.group {
            ioctl(
                "TUNSETGROUP",
                libc::ioctl(fd, TUNSETGROUP, gid as libc::c_ulong),
            )?;
        }
        ioctl(
            "TUNSETPERSIST",
            libc::ioctl(fd, TUNSETPERSIST, 1 as libc::c_ulong),
        )
    }
}

/// The `RTM_SETLINK` (by name) with the rest of the spec, if it sets
/// anything.
fn finish_message(spec: &LinkSpec<'_>) -> Option<Msg> {
    let flags = if spec.up { IFF_UP } else { 0 };
    let mut m = Msg::new(RTM_SETLINK, 0, &ifinfo(0, 0, flags, flags));
    m.str(IFLA_IFNAME, spec.name);
    let set = spec.settings(&mut m);
    if let Some(master) = spec.master {
        m.u32(IFLA_MASTER, master);
    }
    if let Some(alias) = spec.alias {
        m.str(IFLA_IFALIAS, alias);
    }
    (spec.up || set || spec.master.is_some() || spec.alias.is_some()).then_some(m)
}

/// [`Netlink::create_link`] of a [`Kind::Tun`] spec, in `nl`'s namespace.
pub(super) fn create(nl: &Netlink, spec: &LinkSpec<'_>) -> Result<()> {
    let Kind::Tun(t) = &spec.kind else {
        return Err(Error::other("create tun", "not a tun/tap spec"));
    };
    let op = format!("create {} {}", if t.tap { "tap" } else { "tun" }, spec.name);
    super::create::check_name(spec.name, op.as_str())?;
    if spec.netns.is_some() || spec.parent.is_some() || spec.peer.is_some() {
        return Err(Error::other(
            op,
            "a tun/tap device has no parent or peer and is created in the connection's \
             namespace (open one there)",
        ));
    }
    nl.run_in_netns(&op, || make(spec.name, t, &op))??;
    let Some(m) = finish_message(spec) else {
        return Ok(());
    };
    if let Err(e) = nl.request(&op, m) {
        if let Ok(l) = nl.link_by_name(spec.name) {
            let _ = nl.delete_link(&l);
        }
        return Err(e);
    }
    Ok(())
}
