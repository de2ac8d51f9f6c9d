//! GC and STATUS (CNI 1.1); the reference has neither.
//!
//! GC removes the rules of this network's attachments that are not in
//! `cni.dev/valid-attachments`: nftables rules by their comment (which
//! names the network and the container), iptables rules and firewalld
//! sources by the records (the reference's rules name only an address),
//! except addresses another remaining record holds. Without the list GC
//! removes nothing.
//!
//! STATUS succeeds when the backend ADD would use is usable.

use std::net::IpAddr;

use cni_attach::Error;
use cni_firewall::{Backend, Probe, Scope, System};
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::{del, firewalld, nft, record};

pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let Some(valid) = skel::conf::valid_attachments(&args.stdin)? else {
        return Ok(());
    };
    // What killed writes left goes under the lock every writer holds.
    let lock = record::lock(&conf.data_dir).ok();
    if lock.is_some() {
        cni_firewall::records::sweep(&conf.data_dir, &conf.name);
    }
    let is_valid = |cid: &str, ifname: &str| valid.iter().any(|(c, i)| c == cid && i == ifname);
    let (stale, live): (Vec<_>, Vec<_>) = record::all(&conf.data_dir)
        .into_iter()
        .partition(|r| r.network == conf.name && !is_valid(&r.container_id, &r.ifname));
    let held: Vec<IpAddr> = live.iter().flat_map(|r| r.addrs.clone()).collect();
    let mut errors = Vec::new();
    for r in &stale {
        // nftables rules go below, for every attachment at once.
        let b = Some(r.backend.as_str());
        del::remove(
            &conf,
            (&r.container_id, &r.ifname),
            &r.addrs,
            &|| held.clone(),
            b,
            false,
            &mut errors,
        );
    }
    let scope = Scope::of(conf.configured());
    if scope.includes(Backend::Nftables) {
        let keep: Vec<String> = valid
            .iter()
            .map(|(c, i)| nft::owner(&conf.name, c, i))
            .collect();
        let r = Netlink::host()
            .map_err(cni_firewall::Error::from)
            .and_then(|nl| nft::gc(&nl, &conf.name, &keep));
        match r {
            Err(e) if !(scope == Scope::Every && e.is_unavailable()) => errors.push(e.to_string()),
            _ => {}
        }
    }
    if !errors.is_empty() {
        return Err(Error::internal(errors.join("; ")));
    }
    for r in &stale {
        record::remove(&conf.data_dir, &conf.name, &r.container_id, &r.ifname)?;
    }
    Ok(())
}

pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let host = Netlink::host().map_err(|e| Error::internal(e.to_string()))?;
    let probe = System::new(&host);
    let usable = match conf.backend(&probe)? {
        Backend::Nftables => probe.nftables(),
        Backend::Iptables => probe.iptables(),
        Backend::Firewalld => return Ok(firewalld::status()?),
    };
    usable.map_err(|e| Error::internal(format!("firewall backend not usable: {e}")))
}
