//! The CNI commands: ADD, DEL, CHECK, GC and STATUS on top of the store.

use std::collections::HashSet;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use skel::types::{Cidr, Dns, IpConfig, Result1};
use skel::{CmdArgs, Outcome, Plugin, Reply};

use crate::alloc::{self, Lease, Owner};
use crate::config::IpamConfig;
use crate::dns;
use crate::error::Error;
use crate::gotext::ip_string;
use crate::index::Index;
use crate::store::{Store, lease_key, legacy_key, scan_dir, walk_leases};

/// The plugin: skel calls one method per CNI command.
pub struct HostLocal;

impl Plugin for HostLocal {
    fn about(&self) -> String {
        skel::about("host-local")
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        Ok(add(args)?)
    }

    fn del(&self, args: &CmdArgs) -> Outcome {
        Ok(del(args)?)
    }

    fn check(&self, args: &CmdArgs) -> Outcome {
        Ok(check(args)?)
    }

    fn gc(&self, args: &CmdArgs) -> Outcome {
        Ok(gc(args)?)
    }

    fn status(&self, args: &CmdArgs) -> Outcome {
        Ok(status(args)?)
    }
}

/// Take the network's lock, drop stale temporary files and load (or
/// rebuild) the index.
fn prepare(mut store: Store) -> Result<(Store, Index), Error> {
    store.clean_tmp()?;
    let index = Index::load(&mut store)?;
    Ok((store, index))
}

/// The same for a network that may not exist yet (DEL, CHECK).
fn open_existing(conf: &IpamConfig) -> Result<Option<(Store, Index)>, Error> {
    Store::open_existing(&conf.data_dir, &conf.name)?
        .map(prepare)
        .transpose()
}

fn add(args: &CmdArgs) -> Result<Reply, Error> {
    let conf = IpamConfig::load(&args.stdin, &args.args)?;
    let dns = if conf.resolv_conf.is_empty() {
        Dns::default()
    } else {
        dns::parse_resolv_conf(&conf.resolv_conf)?
    };
    let (mut store, mut index) = prepare(Store::open(&conf.data_dir, &conf.name)?)?;
    let owner = Owner {
        container_id: &args.container_id,
        ifname: &args.ifname,
    };
    // One lock for the whole ADD: either every range set gets an address
    // or none does, and no other writer sees the half-done state.
    let outcome = allocate_all(&conf, &mut store, &mut index, &owner);
    let committed = index.commit(&mut store);
    let leases = outcome?;
    if let Err(e) = committed {
        // The index could not record the new leases: give them back rather
        // than report a failed ADD that still holds addresses. The stamp is
        // gone, so the next call rebuilds the index from the files.
        for l in &leases {
            let _ = store.release(l.ip);
        }
        return Err(e);
    }
    let result = Result1 {
        cni_version: skel::version::CURRENT.to_string(),
        dns,
        ips: leases
            .iter()
            .map(|l| IpConfig {
                address: Cidr(
                    IpNetwork::new(l.ip, l.range.subnet.prefix)
                        .unwrap_or_else(|_| IpNetwork::from(l.ip)),
                ),
                gateway: Some(l.range.gateway),
                interface: None,
            })
            .collect(),
        routes: conf.routes.clone(),
        ..Default::default()
    };
    Ok(Reply::Result(result.into()))
}

fn allocate_all(
    conf: &IpamConfig,
    store: &mut Store,
    index: &mut Index,
    owner: &Owner,
) -> Result<Vec<Lease>, Error> {
    let mut requested = conf.requested.clone();
    let mut leases: Vec<Lease> = Vec::new();
    let key = lease_key(owner.container_id, owner.ifname);
    // Undo only what this call created; the reference releases every lease
    // of (ID, ifname), including those of an earlier, successful ADD.
    let rollback = |store: &mut Store, index: &mut Index, leases: &[Lease]| {
        for l in leases {
            if store.release(l.ip).is_ok() && index.remove(&key, &ip_string(l.ip)).is_err() {
                index.invalidate();
            }
        }
    };
    for (idx, set) in conf.ranges.iter().enumerate() {
        let pick = requested.iter().position(|ip| set.contains(*ip));
        let want = pick.map(|i| requested.remove(i));
        match alloc::get(store, index, set, idx, owner, want) {
            Ok(lease) => leases.push(lease),
            Err(e) => {
                rollback(store, index, &leases);
                return Err(e.context(format_args!("failed to allocate for range {idx}")));
            }
        }
    }
    if !requested.is_empty() {
        rollback(store, index, &leases);
        let list: Vec<String> = requested.iter().map(IpAddr::to_string).collect();
        return Err(Error::config(format!(
            "failed to allocate all requested IPs: {}",
            list.join(" ")
        )));
    }
    Ok(leases)
}

/// Release every lease of (ID, ifname); if there is none, every lease of
/// the bare ID (files written before the ifname was recorded).
fn del(args: &CmdArgs) -> Result<Reply, Error> {
    let conf = IpamConfig::load(&args.stdin, &args.args)?;
    let Some((mut store, mut index)) = open_existing(&conf)? else {
        return Ok(Reply::None);
    };
    let mut key = lease_key(&args.container_id, &args.ifname);
    let mut files = index.lookup(&store, &key)?;
    if files.is_empty() {
        key = legacy_key(&args.container_id);
        files = index.lookup(&store, &key)?;
    }
    let mut errors = Vec::new();
    for f in files {
        match store.release_path(&f.path) {
            Ok(_) => {
                if let Err(e) = index.remove(&key, &f.path) {
                    index.invalidate();
                    errors.push(e.to_string());
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    index.commit(&mut store)?;
    if !errors.is_empty() {
        return Err(Error::config(errors.join(";")));
    }
    Ok(Reply::None)
}

fn check(args: &CmdArgs) -> Result<Reply, Error> {
    let conf = IpamConfig::load(&args.stdin, &args.args)?;
    let found = match open_existing(&conf)? {
        None => false,
        Some((store, index)) => {
            !index
                .lookup(&store, &lease_key(&args.container_id, &args.ifname))?
                .is_empty()
                || !index
                    .lookup(&store, &legacy_key(&args.container_id))?
                    .is_empty()
        }
    };
    if !found {
        return Err(Error::config(format!(
            "host-local: Failed to find address added by container {}",
            args.container_id
        )));
    }
    Ok(Reply::None)
}

/// Release every lease not owned by a valid attachment. A lease written
/// before ifnames were recorded is kept when its container ID is valid.
fn gc(args: &CmdArgs) -> Result<Reply, Error> {
    let conf = IpamConfig::load(&args.stdin, &args.args)?;
    let Some(valid) = skel::conf::valid_attachments(&args.stdin).map_err(Error::Cni)? else {
        eprintln!(
            "host-local: GC of network {} without cni.dev/valid-attachments: releasing nothing",
            conf.name
        );
        return Ok(Reply::None);
    };
    let keys: HashSet<String> = valid.iter().map(|(id, ifn)| lease_key(id, ifn)).collect();
    let ids: HashSet<String> = valid.iter().map(|(id, _)| legacy_key(id)).collect();
    let Some(mut store) = Store::open_existing(&conf.data_dir, &conf.name)? else {
        return Ok(Reply::None);
    };
    store.clean_tmp()?;
    let mut errors = Vec::new();
    for f in walk_leases(store.net_dir())?.files {
        let Some(content) = store.read_lease(&f.path) else {
            continue;
        };
        let keep = keys.contains(&content) || (!content.contains("\r\n") && ids.contains(&content));
        if !keep {
            eprintln!("host-local: gc: releasing {} held by {content:?}", f.path);
            if let Err(e) = store.release_path(&f.path) {
                errors.push(e.to_string());
            }
        }
    }
    // Rebuild the index from what is left.
    let _ = std::fs::remove_file(store.state_dir().join("stamp"));
    Index::load(&mut store)?;
    if !errors.is_empty() {
        return Err(Error::config(errors.join(";")));
    }
    Ok(Reply::None)
}

/// Code 50 when any range set has no free address left.
fn status(args: &CmdArgs) -> Result<Reply, Error> {
    let conf = IpamConfig::load(&args.stdin, &args.args)?;
    // A directory read needs no lock: it is a snapshot either way.
    let scan = scan_dir(&conf.data_dir.join(&conf.name))?;
    for (idx, set) in conf.ranges.iter().enumerate() {
        let used = scan
            .taken
            .iter()
            .filter(|ip| set.range_for(**ip).is_ok_and(|r| r.gateway != **ip))
            .count() as u128;
        if set.capacity() <= used {
            return Err(Error::Unavailable(format!(
                "network {}: no IP addresses available in range set {idx} ({set}): all {used} addresses are leased",
                conf.name
            )));
        }
    }
    Ok(Reply::None)
}

#[cfg(test)]
mod tests;
