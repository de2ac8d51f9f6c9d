//! The link attributes: what to back up, applying a plan in the
//! reference's order (MAC, promiscuous mode, MTU, all-multicast, queue
//! length), undoing it, and restoring a backup.

use cni_net::{Link, Netlink, format_mac};

use crate::backup::Saved;
use crate::config::{Plan, parse_mac};
use crate::error::Error;

/// An attribute ADD changed, to undo in reverse order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attr {
    Mac,
    Promisc,
    Mtu,
    Allmulti,
    TxQLen,
}

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

/// Apply `plan` to `link`, recording each change in `done` as soon as it
/// is made, and passing a failpoint after each.
pub fn apply(nl: &Netlink, link: &Link, plan: &Plan, done: &mut Vec<Attr>) -> Result<(), Error> {
    if let Some(mac) = &plan.mac {
        nl.set_mac(link, mac)?;
        done.push(Attr::Mac);
        skel::failpoint::hit("tuning/mac")?;
    }
    if plan.promisc {
        nl.set_promisc(link, true)?;
        done.push(Attr::Promisc);
        skel::failpoint::hit("tuning/promisc")?;
    }
    if let Some(mtu) = plan.mtu {
        nl.set_mtu(link, mtu)?;
        done.push(Attr::Mtu);
        skel::failpoint::hit("tuning/mtu")?;
    }
    if let Some(on) = plan.allmulti {
        nl.set_allmulti(link, on)?;
        done.push(Attr::Allmulti);
        skel::failpoint::hit("tuning/allmulti")?;
    }
    if let Some(q) = plan.txqlen {
        nl.set_txqlen(link, q)?;
        done.push(Attr::TxQLen);
        skel::failpoint::hit("tuning/txqlen")?;
    }
    Ok(())
}

/// Put back what `done` changed, to the values `before` had, last first.
/// Returns what could not be put back.
pub fn undo(nl: &Netlink, before: &Link, done: &[Attr]) -> Vec<String> {
    let mut failed = Vec::new();
    for attr in done.iter().rev() {
        let r = match attr {
            Attr::Mac => nl.set_mac(before, &before.mac),
            Attr::Promisc => nl.set_promisc(before, before.promisc),
            Attr::Mtu => nl.set_mtu(before, before.mtu),
            Attr::Allmulti => nl.set_allmulti(before, before.allmulti),
            Attr::TxQLen => nl.set_txqlen(before, before.txqlen),
        };
        if let Err(e) = r {
            failed.push(e.to_string());
        }
    }
    failed
}

/// The reference's `restoreBackup`: each recorded attribute set back, in
/// its order (MTU, MAC, promiscuous mode, all-multicast, queue length),
/// every one tried; the failures in its words.
pub fn restore(nl: &Netlink, link: &Link, saved: &Saved) -> Vec<String> {
    let mut failed = Vec::new();
    let mut note = |what: &str, r: Result<(), Error>| {
        if let Err(e) = r {
            failed.push(format!("failed to restore {what}: {e}"));
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
    failed
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
