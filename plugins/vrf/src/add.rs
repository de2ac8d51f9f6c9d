//! ADD, inside the container's namespace: find or make the VRF, then
//! enslave the interface (the reference's `addInterface`): remember its
//! global IPv6 addresses and its routes of universe scope in `main`, set
//! the VRF as master (the kernel cycles the link, moves the connected
//! routes into the VRF's table and may drop IPv6 addresses), add back the
//! addresses that went and wait for their local routes, copy the
//! remembered routes into the VRF's table. Every error reads
//! `cmdAdd failed: ...`; a failure undoes every step, newest first.

use std::time::{Duration, Instant};

use cni_net::{Addr, IpNetwork, Kind, Link, LinkSpec, Netlink, RouteInfo, RouteSpec};
use skel::CmdArgs;
use skel::types::CniResult;

use crate::config::Config;
use crate::{Error, bare, find_vrf};

pub fn add(args: &CmdArgs) -> Result<CniResult, Error> {
    let conf = Config::parse(&args.stdin)?;
    let prev = conf.require_prev()?;
    let nl = Netlink::in_netns(args.netns.file()?)?;
    let mut undo = Vec::new();
    if let Err(e) = attach(&nl, &conf, &args.ifname, &mut undo) {
        for step in undo.iter().rev() {
            if let Err(u) = step.revert(&nl) {
                eprintln!("vrf: cleanup after the failed ADD: {u}");
            }
        }
        return Err(e.context("cmdAdd failed"));
    }
    Ok(prev)
}

/// A change made, and how to take it back.
enum Undo {
    /// The VRF was made by this call: delete it.
    Created(Link),
    /// The interface was enslaved: release it, and put back into `main`
    /// the routes the link's cycle took away.
    Enslaved(Link, Vec<RouteSpec>),
    /// A route added to the VRF's table: delete it.
    Route(RouteSpec),
}

impl Undo {
    fn revert(&self, nl: &Netlink) -> cni_net::Result<()> {
        match self {
            Undo::Created(vrf) => nl.delete_link(vrf),
            Undo::Enslaved(link, routes) => {
                nl.set_master(link, None)?;
                // The kernel brings back the subnet routes itself.
                let now = nl.routes(false, Some(link.index), Some(cni_net::route::TABLE_MAIN))?;
                let now6 = nl.routes(true, Some(link.index), Some(cni_net::route::TABLE_MAIN))?;
                for r in routes {
                    let back = now
                        .iter()
                        .chain(&now6)
                        .any(|n| n.dst == r.dst && n.gw == r.gw && n.priority == r.priority);
                    if !back {
                        nl.replace_route(r)?;
                    }
                }
                Ok(())
            }
            Undo::Route(r) => match nl.delete_route(r) {
                Err(e) if !e.is(cni_net::Errno::ESRCH) => Err(e),
                _ => Ok(()),
            },
        }
    }
}

fn attach(nl: &Netlink, conf: &Config, ifname: &str, undo: &mut Vec<Undo>) -> Result<(), Error> {
    let name = &conf.vrfname;
    let (vrf, table) = match find_vrf(nl, name)? {
        Some((_, t)) if conf.table != 0 && t != conf.table => {
            return Err(Error::internal(format!(
                "VRF {name} already exist with different routing table {t}"
            )));
        }
        Some(found) => found,
        None => create(nl, name, conf.table, undo)?,
    };
    let link = nl
        .find_link(ifname)?
        .ok_or_else(|| Error::internal(format!("could not get link by name {ifname}")))?;
    match link.master {
        Some(m) if m == vrf.index => return Ok(()),
        Some(m) => {
            let master = nl.link_by_index(m).map(|l| l.name).map_err(|e| {
                Error::internal(format!(
                    "interface {ifname} has already a master set, could not retrieve the name: {}",
                    bare(&e)
                ))
            })?;
            return Err(Error::internal(format!(
                "interface {ifname} has already a master set: {master}"
            )));
        }
        None => {}
    }
    enslave(nl, &vrf, table, &link, undo)
}

/// Make the VRF with `table`, or the first free one, and set it up.
fn create(
    nl: &Netlink,
    name: &str,
    table: u32,
    undo: &mut Vec<Undo>,
) -> Result<(Link, u32), Error> {
    let table = match table {
        0 => free_table(nl)?,
        t => t,
    };
    let vrf = nl
        .create_link_get(&LinkSpec::new(name, Kind::Vrf { table }))
        .map_err(|e| Error::internal(format!("could not add VRF {name}: {}", bare(&e))))?;
    undo.push(Undo::Created(vrf.clone()));
    skel::failpoint::hit("vrf/created")?;
    nl.set_up(&vrf).map_err(|e| {
        Error::internal(format!(
            "could not set link up for VRF {name}: {}",
            bare(&e)
        ))
    })?;
    skel::failpoint::hit("vrf/up")?;
    Ok((vrf, table))
}

/// The lowest table from 1 on that no VRF of the namespace uses (the
/// reference's choice), and no rule or route either (sbr's tables).
fn free_table(nl: &Netlink) -> Result<u32, Error> {
    let links = nl
        .links()
        .map_err(|e| Error::internal(format!("createVRF: Failed to find links {}", bare(&e))))?;
    let rules = nl.rules()?;
    let mut routes = nl.routes(false, None, None)?;
    routes.extend(nl.routes(true, None, None)?);
    let used = |t: u32| {
        links.iter().any(|l| l.kind == Kind::Vrf { table: t })
            || rules.iter().any(|r| r.table == t)
            || routes.iter().any(|r| r.table == t)
    };
    (1..u32::MAX).find(|t| !used(*t)).ok_or_else(|| {
        Error::internal("findFreeRoutingTableID: Failed to find an available routing id")
    })
}

/// The link's global IPv6 addresses.
fn global_v6(nl: &Netlink, link: &Link) -> cni_net::Result<Vec<Addr>> {
    Ok(nl
        .addrs_of_family(Some(link), true)?
        .into_iter()
        .filter(|a| a.scope == cni_net::route::SCOPE_UNIVERSE)
        .collect())
}

fn enslave(
    nl: &Netlink,
    vrf: &Link,
    table: u32,
    link: &Link,
    undo: &mut Vec<Undo>,
) -> Result<(), Error> {
    let ifname = &link.name;
    let before = global_v6(nl, link).map_err(|e| {
        Error::internal(format!(
            "failed getting global ipv6 addresses before slaving interface: {e}"
        ))
    })?;
    let mut routes: Vec<RouteInfo> = Vec::new();
    for ipv6 in [false, true] {
        let listed = nl
            .routes(ipv6, Some(link.index), Some(cni_net::route::TABLE_MAIN))
            .map_err(|_| Error::internal(format!("failed getting all routes for {ifname}")))?;
        routes.extend(
            listed
                .into_iter()
                .filter(|r| r.scope == cni_net::route::SCOPE_UNIVERSE && r.is_unicast()),
        );
    }
    nl.set_master(link, Some(vrf)).map_err(|e| {
        Error::internal(format!(
            "could not set vrf {} as master of {ifname}: {}",
            vrf.name,
            bare(&e)
        ))
    })?;
    undo.push(Undo::Enslaved(
        link.clone(),
        routes.iter().map(RouteInfo::spec).collect(),
    ));
    skel::failpoint::hit("vrf/enslaved")?;
    let after = global_v6(nl, link).map_err(|e| {
        Error::internal(format!(
            "failed getting global ipv6 addresses after slaving interface: {e}"
        ))
    })?;
    for gone in before
        .iter()
        .filter(|a| !after.iter().any(|b| b.addr == a.addr))
    {
        nl.add_addr_with(link, gone.addr, gone.flags).map_err(|e| {
            Error::internal(format!(
                "could not restore address {} to {ifname} @ {}: {}",
                gone.addr,
                vrf.name,
                bare(&e)
            ))
        })?;
        skel::failpoint::hit("vrf/address-restored")?;
        wait_local_route(nl, link, table, gone.addr)?;
    }
    for r in &routes {
        let mut spec = r.spec();
        spec.table = Some(table);
        match nl.add_route(&spec) {
            Ok(()) => undo.push(Undo::Route(spec)),
            // Already there (a route the kernel moved, or another
            // interface's): the VRF's table has it.
            Err(e) if e.is_exists() => {}
            Err(e) => {
                return Err(Error::internal(format!(
                    "could not add route '{}': {}",
                    spec_text(&spec),
                    bare(&e)
                )));
            }
        }
        skel::failpoint::hit("vrf/route-copied")?;
    }
    Ok(())
}

/// Wait, as the reference does (10 ms doubling, about 2.5 s, and never
/// past [`skel::deadline`]), for the local route of a restored address to
/// show up in the VRF's table: routes added before it would fail.
fn wait_local_route(nl: &Netlink, link: &Link, table: u32, addr: IpNetwork) -> Result<(), Error> {
    let host = IpNetwork::new(addr.ip(), 128).unwrap_or(addr);
    let end = Instant::now() + Duration::from_millis(2550).min(skel::deadline::timeout());
    let mut pause = Duration::from_millis(10);
    loop {
        let found = nl
            .routes(true, Some(link.index), Some(table))
            .map_err(|e| {
                Error::internal(format!(
                    "failed getting routes for {} table {table} for dst {addr}: {}",
                    link.name,
                    bare(&e)
                ))
            })?
            .iter()
            .any(|r| r.dst == host);
        if found {
            return Ok(());
        }
        let now = Instant::now();
        if now >= end {
            return Err(Error::internal(format!(
                "failed getting local/host addresses for {} in table {table} with dst {addr}",
                link.name
            )));
        }
        std::thread::sleep(pause.min(end - now));
        pause *= 2;
    }
}

/// A route as the reference's message prints it, near enough:
/// `{Ifindex: 2 Dst: 10.0.0.0/24 Gw: 10.0.0.1 Table: 1}`.
fn spec_text(r: &RouteSpec) -> String {
    let mut s = format!("{{Ifindex: {} Dst: {}", r.oif.unwrap_or(0), r.dst);
    if let Some(src) = r.src {
        s.push_str(&format!(" Src: {src}"));
    }
    if let Some(gw) = r.gw {
        s.push_str(&format!(" Gw: {gw}"));
    }
    s.push_str(&format!(" Flags: [] Table: {}}}", r.table.unwrap_or(0)));
    s
}
