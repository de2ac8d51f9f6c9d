//! Container side: sysctls, addresses, link state and routes of the
//! container interface, the reference's `ipam.ConfigureIface` in order.

use std::fs::File;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use cni_net::{Batch, Link, Netlink, RouteSpec, netns, sysctl};
use skel::types::Result1;

use crate::error::Error;

/// Sysctls of the container interface that do not depend on the
/// addresses, written in one namespace switch (while IPAM runs). Best
/// effort, like the reference.
pub fn set_sysctls(ns: &File, ifname: &str, enable_dad: bool) -> Result<(), Error> {
    netns::run(ns, || {
        let v6 = |k: &str| format!("net/ipv6/conf/{ifname}/{k}");
        if enable_dad {
            let _ = sysctl::set(&v6("enhanced_dad"), "1");
            let _ = sysctl::set(&v6("accept_dad"), "1");
        } else {
            let _ = sysctl::set(&v6("accept_dad"), "0");
        }
        let _ = sysctl::set(&format!("net/ipv4/conf/{ifname}/arp_notify"), "1");
    })?;
    Ok(())
}

/// Sysctls needed when IPv6 addresses follow: IPv6 on for `lo` and the
/// interface, and `keep_addr_on_down`, which the reference treats as fatal.
pub fn set_v6_sysctls(ns: &File, ifname: &str) -> Result<(), Error> {
    netns::run(ns, || -> Result<(), Error> {
        for dev in ["lo", ifname] {
            let key = format!("net/ipv6/conf/{dev}/disable_ipv6");
            if sysctl::get(&key).map(|v| v != "0").unwrap_or(false) {
                let _ = sysctl::set(&key, "0");
            }
        }
        sysctl::set(&format!("net/ipv6/conf/{ifname}/keep_addr_on_down"), "1").map_err(|e| {
            Error::from(e).context(format!("failed to set keep_addr_on_down on {ifname}"))
        })
    })?
}

/// Addresses, link up, DAD settle (only when DAD is on and an IPv6
/// gateway exists), then routes. Addresses are added with `IFA_F_NODAD`
/// unless `enable_dad`, so they are usable at once.
pub fn configure(
    cont: &Netlink,
    link: &Link,
    result: &Result1,
    enable_dad: bool,
) -> Result<(), Error> {
    let mut gw4: Option<IpAddr> = None;
    let mut gw6: Option<IpAddr> = None;
    // Addresses, link up and routes go out as one pipelined batch; each
    // request keeps its own error context.
    let mut batch = Batch::new();
    let mut what: Vec<String> = Vec::new();
    for ip in &result.ips {
        if ip.interface != Some(2) {
            continue;
        }
        batch.add_addr(link, ip.address.0, !enable_dad);
        what.push(format!(
            "failed to add IP addr {} to {:?}",
            ip.address, link.name
        ));
        match (ip.address.is_ipv4(), ip.gateway) {
            (true, Some(g)) if gw4.is_none() => gw4 = Some(g),
            (false, Some(g)) if gw6.is_none() => gw6 = Some(g),
            _ => {}
        }
    }
    batch.set_up(link);
    what.push(format!("failed to set {:?} UP", link.name));
    let settle_first = enable_dad && gw6.is_some();
    if settle_first {
        run(cont, std::mem::take(&mut batch), &mut what)?;
        settle(cont, link, Duration::from_secs(5))?;
    }
    for r in &result.routes {
        let gw = r.gw.or(if r.dst.is_ipv4() { gw4 } else { gw6 });
        let spec = RouteSpec {
            dst: r.dst.network().0,
            gw,
            oif: Some(link.index),
            priority: u32::try_from(r.priority).ok().filter(|p| *p > 0),
            table: r.table.and_then(|t| u32::try_from(t).ok()),
            scope: r.scope.and_then(|s| u8::try_from(s).ok()),
        };
        batch.add_route(&spec);
        let via = gw.map(|g| format!(" via {g}")).unwrap_or_default();
        what.push(format!(
            "failed to add route '{}{via} dev {}'",
            r.dst.network(),
            link.name
        ));
    }
    run(cont, batch, &mut what)
}

/// Run `batch`; `what` holds the error context of each request in order
/// and is emptied.
fn run(cont: &Netlink, batch: Batch, what: &mut Vec<String>) -> Result<(), Error> {
    let contexts = std::mem::take(what);
    if batch.is_empty() {
        return Ok(());
    }
    cont.run_batch(batch).map_err(|(i, e)| {
        let ctx = contexts.get(i).cloned().unwrap_or_default();
        Error::from(e).context(ctx)
    })
}

/// Wait until no IPv6 address of `link` is tentative.
fn settle(cont: &Netlink, link: &Link, timeout: Duration) -> Result<(), Error> {
    let start = Instant::now();
    loop {
        let addrs = cont.addrs(Some(link))?;
        if let Some(a) = addrs.iter().find(|a| a.is_dadfailed()) {
            return Err(Error::internal(format!(
                "link {} has address {} in DADFAILED state",
                link.name, a.addr
            )));
        }
        if !addrs.iter().any(|a| a.addr.is_ipv6() && a.is_tentative()) {
            return Ok(());
        }
        if start.elapsed() > timeout {
            let l = cont.link_by_index(link.index)?;
            if l.oper_state == cni_net::OperState::Up {
                return Err(Error::internal(format!(
                    "link {} still has tentative addresses after {}s",
                    link.name,
                    timeout.as_secs()
                )));
            }
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
