//! The link attributes: what to back up, applying a plan, undoing it,
//! restoring a backup, and comparing with the kernel (CHECK).

use cni_net::{Errno, Link, LinkChanges, Netlink, format_mac};

use crate::backup::Saved;
use crate::config::{Plan, parse_mac};
use crate::error::Error;

/// `link`, or the reference's error when it is missing.
pub fn find(nl: &Netlink, ifname: &str) -> Result<Link, Error> {
    nl.find_link(ifname)?
        .ok_or_else(|| Error::config(format!("failed to get {ifname:?}: Link not found")))
}

/// The current values of the attributes `plan` changes: what the backup
/// records (the reference's `createBackup`).
pub fn saved_of(plan: &Plan, link: &Link) -> Saved {
    Saved {
        mac: if plan.mac.is_some() {
            link.mac_string()
        } else {
            String::new()
        },
        promisc: plan.promisc.then_some(link.promisc),
        mtu: if plan.mtu.is_some() {
            i64::from(link.mtu)
        } else {
            0
        },
        allmulti: plan.allmulti.map(|_| link.allmulti),
        txqlen: plan.txqlen.map(|_| i64::from(link.txqlen)),
    }
}

/// What `plan` changes on the link.
pub fn changes(plan: &Plan) -> LinkChanges {
    LinkChanges {
        mac: plan.mac.clone(),
        mtu: plan.mtu,
        promisc: plan.promisc.then_some(true),
        allmulti: plan.allmulti,
        txqlen: plan.txqlen,
    }
}

/// Apply `plan` to `link` in one message (one RTNL lock: the reference
/// takes one per attribute, after looking the link up again for each).
pub fn apply(nl: &Netlink, link: &Link, plan: &Plan) -> Result<(), Error> {
    nl.change_link(link, &changes(plan))?;
    Ok(())
}

/// Put back the attributes `plan` changes to the values `before` had.
pub fn undo(nl: &Netlink, before: &Link, plan: &Plan) -> Result<(), Error> {
    let c = changes(plan);
    let back = LinkChanges {
        mac: c.mac.map(|_| before.mac.clone()),
        mtu: c.mtu.map(|_| before.mtu),
        promisc: c.promisc.map(|_| before.promisc),
        allmulti: c.allmulti.map(|_| before.allmulti),
        txqlen: c.txqlen.map(|_| before.txqlen),
    };
    nl.change_link(before, &back)?;
    Ok(())
}

/// What a restore could not do.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unrestored {
    /// Failures a later DEL may get past (the backup is kept for it).
    pub retry: Vec<String>,
    /// Values no DEL can ever restore: invalid in the file, or refused by
    /// the kernel as invalid for the device (a multicast MAC, an MTU out
    /// of range, an attribute the device cannot change). Keeping the
    /// backup for them made DEL fail forever.
    pub never: Vec<String>,
}

/// The reference's `restoreBackup`: every recorded attribute set back, in
/// one message. Should the kernel refuse it, each is tried on its own in
/// the reference's order (MTU, MAC, promiscuous mode, all-multicast,
/// queue length), so that all that can be restored is, and the failures
/// read as the reference's.
pub fn restore(nl: &Netlink, link: &Link, saved: &Saved) -> Unrestored {
    let mut out = Unrestored::default();
    if let Some(all) = saved_changes(saved)
        && nl.change_link(link, &all).is_ok()
    {
        return out;
    }
    let mut note = |what: &str, r: Result<(), Error>| {
        if let Err(e) = r {
            let permanent = match &e {
                Error::Net(n) => [
                    Errno::EINVAL,
                    Errno::ERANGE,
                    Errno::EADDRNOTAVAIL,
                    Errno::EOPNOTSUPP,
                ]
                .into_iter()
                .any(|errno| n.is(errno)),
                _ => true,
            };
            let list = if permanent {
                &mut out.never
            } else {
                &mut out.retry
            };
            list.push(format!("failed to restore {what}: {e}"));
        }
    };
    if saved.mtu != 0 {
        let r = u32::try_from(saved.mtu)
            .map_err(|_| Error::config(format!("invalid MTU {}", saved.mtu)))
            .and_then(|mtu| Ok(nl.set_mtu(link, mtu)?));
        note("MTU", r);
    }
    if !saved.mac.is_empty() {
        let r = parse_mac(&saved.mac).and_then(|mac| Ok(nl.set_mac(link, &mac)?));
        note("MAC address", r);
    }
    if let Some(on) = saved.promisc {
        note(
            "promiscuous mode",
            nl.set_promisc(link, on).map_err(Error::from),
        );
    }
    if let Some(on) = saved.allmulti {
        note(
            "all-multicast mode",
            nl.set_allmulti(link, on).map_err(Error::from),
        );
    }
    if let Some(q) = saved.txqlen {
        let r = u32::try_from(q)
            .map_err(|_| Error::config(format!("invalid txQLen {q}")))
            .and_then(|q| Ok(nl.set_txqlen(link, q)?));
        note("transmit queue length", r);
    }
    out
}

/// The backup as one change, `None` when a value in it is invalid.
fn saved_changes(saved: &Saved) -> Option<LinkChanges> {
    Some(LinkChanges {
        mac: match saved.mac.as_str() {
            "" => None,
            m => Some(parse_mac(m).ok()?),
        },
        mtu: match saved.mtu {
            0 => None,
            m => Some(u32::try_from(m).ok()?),
        },
        promisc: saved.promisc,
        allmulti: saved.allmulti,
        txqlen: saved.txqlen.map(u32::try_from).transpose().ok()?,
    })
}

/// Differences between `plan` and the kernel's view of `link`, in the
/// reference's CHECK order and words (with values where the reference
/// prints pointers). The MAC is compared as an address, not as text.
pub fn check(plan: &Plan, mac_text: &str, link: &Link) -> Result<(), Error> {
    let name = &link.name;
    if let Some(mac) = &plan.mac
        && *mac != link.mac
    {
        return Err(Error::config(format!(
            "Error: Tuning configured Ethernet of {name} is {mac_text}, current value is {}",
            format_mac(&link.mac)
        )));
    }
    if plan.promisc && !link.promisc {
        return Err(Error::config(format!(
            "Error: Tuning link {name} configured promisc is true, current value is 0"
        )));
    }
    if let Some(mtu) = plan.mtu
        && mtu != link.mtu
    {
        return Err(Error::config(format!(
            "Error: Tuning configured MTU of {name} is {mtu}, current value is {}",
            link.mtu
        )));
    }
    if let Some(on) = plan.allmulti
        && on != link.allmulti
    {
        return Err(Error::config(format!(
            "Error: Tuning configured all-multicast mode of {name} is {on}, current value is {}",
            link.allmulti
        )));
    }
    if let Some(q) = plan.txqlen
        && q != link.txqlen
    {
        return Err(Error::config(format!(
            "Error: Tuning configured Transmit Queue Length of {name} is {q}, current value is {}",
            link.txqlen
        )));
    }
    Ok(())
}
