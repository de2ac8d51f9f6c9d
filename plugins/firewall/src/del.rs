//! DEL: idempotent and best effort, without the netns and without
//! `prevResult`. The addresses are `prevResult`'s and the record's; with
//! the backend configured only that backend is looked at, else the one
//! the record names, else every one that is usable here (the rules may
//! come from the Go plugin or another configuration).
//!
//! - iptables: the two rules of each address, unless another attachment
//!   recorded the same address (a stale DEL after the address was reused
//!   must not open the live container's rules); shared chains, jumps and
//!   bridge rules stay, as in the reference.
//! - nftables: every rule commented with the attachment's owner.
//! - firewalld: the addresses' sources.
//!
//! An unknown `ingressPolicy` does not fail DEL (the reference fails it
//! after removing the rules, so a runtime retries forever).

use std::net::IpAddr;

use cni_attach::Error;
use cni_firewall::{Backend, Scope};
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::record;
use crate::{firewalld, iptables, nft};

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let (cid, ifname) = (args.container_id.as_str(), args.ifname.as_str());
    // Under ADD's lock: two DELs of one attachment at once would delete
    // the same nftables rules (the second fails), and a stale DEL could
    // read the records just before an ADD reusing its address writes its
    // own. Best effort: without it (dataDir not writable) DEL goes on.
    let _lock = record::lock(&conf.data_dir).ok();
    let mut ips = conf.addrs();
    let rec = record::read(&conf.data_dir, &conf.name, cid, ifname);
    let recorded = rec.as_ref().map(|r| r.backend.clone());
    if let Some(r) = rec {
        for a in r.addrs {
            if !ips.contains(&a) {
                ips.push(a);
            }
        }
    }
    let held = || record::held_elsewhere(&conf.data_dir, &conf.name, cid, ifname);
    let mut errors = Vec::new();
    remove(
        &conf,
        (cid, ifname),
        &ips,
        &held,
        recorded.as_deref(),
        true,
        &mut errors,
    );
    // Kill point (tests): DEL after a kill anywhere finishes the job.
    skel::failpoint::pass("firewall/del-rules-removed");
    if errors.is_empty() {
        Ok(record::remove(&conf.data_dir, &conf.name, cid, ifname)?)
    } else {
        Err(Error::internal(errors.join("; ")))
    }
}

/// Remove the rules of one attachment, `(cid, ifname)`: `ips`, except
/// those `held` by other attachments (asked only when iptables or
/// firewalld is looked at: it reads every record), for iptables and firewalld;
/// nftables rules too when `nftables`. Failures into `errors`. The backends looked at: the
/// configured one; else the one the record names (`recorded`: what ADD
/// used); else every usable one, firewalld when it runs.
pub fn remove(
    conf: &Config,
    (cid, ifname): (&str, &str),
    ips: &[IpAddr],
    held: &dyn Fn() -> Vec<IpAddr>,
    recorded: Option<&str>,
    nftables: bool,
    errors: &mut Vec<String>,
) {
    let scope = Scope::of(
        conf.configured()
            .or_else(|| recorded.and_then(|r| r.parse().ok())),
    );
    let by_address = scope.includes(Backend::Iptables) || scope.includes(Backend::Firewalld);
    let mine: Vec<IpAddr> = match by_address && !ips.is_empty() {
        true => {
            let held = held();
            ips.iter().copied().filter(|i| !held.contains(i)).collect()
        }
        false => Vec::new(),
    };
    let keep = |e: &cni_firewall::Error| !(scope == Scope::Every && e.is_unavailable());
    if scope.includes(Backend::Iptables) && !mine.is_empty() {
        errors.extend(
            iptables::del(&mine)
                .iter()
                .filter(|e| keep(e))
                .map(|e| e.to_string()),
        );
    }
    if nftables && scope.includes(Backend::Nftables) {
        let owner = nft::owner(&conf.name, cid, ifname);
        let r = Netlink::host()
            .map_err(cni_firewall::Error::from)
            .and_then(|nl| nft::del(&nl, &owner));
        if let Err(e) = r.as_ref()
            && keep(e)
        {
            errors.push(e.to_string());
        }
    }
    // Scope::Every: only when firewalld runs (a bus that cannot be used
    // counts as none); the connection that asked removes the sources.
    let firewalld = match scope {
        Scope::Only(b) => b == Backend::Firewalld,
        Scope::Every => !mine.is_empty() && firewalld::running(),
    };
    if firewalld && !mine.is_empty() {
        errors.extend(firewalld::del(&conf.zone, &mine));
    }
}
