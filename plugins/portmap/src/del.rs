//! DEL: idempotent and best effort. The attachment's rules are found by
//! what names them, not rebuilt from the config: the iptables chain
//! `CNI-DN-<hash(net, cid)>` with every rule jumping to it, the nftables
//! rules commented with the container ID. So DEL works with an empty
//! `CNI_NETNS`, a namespace that is gone, no `prevResult` and (when ADD
//! left a record) no mappings. With the backend unset, both backends are
//! looked at; one that cannot be used here is skipped. The UDP conntrack
//! entries DNAT'ed to the removed rules' targets go too.
//!
//! Without mappings and without a record, DEL reads nothing else (no
//! socket, no process), as the reference returns at once.

use cni_attach::Error;
use cni_firewall::{Backend, Scope, System};
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::conntrack::{self, Target};
use crate::{iptables, nft, record};

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin).map_err(|e| e.context("failed to parse config"))?;
    let (cid, ifname) = (args.container_id.as_str(), args.ifname.as_str());
    let recorded = record::exists(&conf, cid, ifname);
    if conf.mappings.is_empty() && !recorded && !conf.has_backend_options() {
        return Ok(());
    }
    let host = Netlink::host().map_err(|e| Error::internal(e.to_string()))?;
    // The reference checks the backend's options in DEL too.
    let configured = conf
        .backend(false, &System::new(&host))
        .map_err(|e| e.context("failed to parse config"))?;
    if conf.mappings.is_empty() && !recorded {
        return Ok(());
    }
    // Best effort: with `dataDir` unusable there is no record to guard.
    let _lock = record::lock(&conf.data_dir).ok();
    let scope = Scope::of(configured.filter(|_| conf.backend.is_some()));
    let mut targets = Vec::new();
    let mut errors = Vec::new();
    if scope.includes(Backend::Nftables) {
        match remove_nft(&host, &conf, (cid, ifname), &mut targets) {
            Err(e) if !(scope == Scope::Every && e.is_unavailable()) => errors.push(e.to_string()),
            _ => {}
        }
    }
    // Kill points (tests): DEL after a kill anywhere finishes the job.
    skel::failpoint::pass("portmap/del-nftables-done");
    if scope.includes(Backend::Iptables) {
        remove_iptables(
            scope,
            &conf.name,
            Some(&[cid]),
            &[],
            &mut targets,
            &mut errors,
        );
    }
    skel::failpoint::pass("portmap/del-iptables-done");
    conntrack::flush_targets(&host, &targets);
    skel::failpoint::pass("portmap/del-conntrack-done");
    if errors.is_empty() {
        Ok(record::remove(&conf.data_dir, &conf.name, cid, ifname)?)
    } else {
        Err(Error::internal(errors.join("; ")))
    }
}

/// The nftables rules commented `cid`, in both families, except those
/// of the container's other attachments (they match another network's
/// record, or this network's on another interface). The records, every
/// network's, are read only when the container has such rules.
fn remove_nft(
    host: &Netlink,
    conf: &Config,
    (cid, ifname): (&str, &str),
    targets: &mut Vec<Target>,
) -> Result<(), cni_firewall::Error> {
    let mut others = None;
    for v6 in [false, true] {
        let mut found = nft::find(host, v6, cid)?;
        if found.is_empty() {
            continue;
        }
        let others = others.get_or_insert_with(|| {
            record::of_container_others(&conf.data_dir, &conf.name, cid, ifname)
        });
        for r in others.iter() {
            for addr in r.addrs.iter().filter(|a| a.is_ipv6() == v6) {
                let theirs = nft::matching(&found, &nft::rules(&r.conf, addr, cid));
                found.retain(|f| !theirs.contains(f));
            }
        }
        targets.extend(nft::udp_targets(&found));
        nft::delete(host, v6, &found)?;
    }
    Ok(())
}

/// The iptables chains of `cids` (all: `None`, the attachments of
/// `network` not in `valid`) in both families. As in the reference, a
/// family whose table cannot be read is skipped when the other's can.
pub fn remove_iptables(
    scope: Scope,
    network: &str,
    cids: Option<&[&str]>,
    valid: &[&str],
    targets: &mut Vec<Target>,
    errors: &mut Vec<String>,
) {
    let mut unusable = Vec::new();
    // Both tables are read before either is written: a tool that exits
    // right after our removal (ip6tables-save, say) would wait for the
    // kernel's cleanup of it on its exit (see `cni_firewall::iptables`).
    for (v6, save) in [false, true].map(|v6| (v6, iptables::save(v6))) {
        let save = match save {
            Ok(s) => s,
            Err(e) => {
                unusable.push((v6, e));
                continue;
            }
        };
        let stale;
        let ids = match cids {
            Some(ids) => ids,
            None => {
                stale = iptables::stale(&save, network, valid);
                &stale.iter().map(String::as_str).collect::<Vec<_>>()[..]
            }
        };
        match iptables::teardown(&save, v6, network, ids) {
            Ok(t) => targets.extend(t),
            Err(e) => errors.push(e.to_string()),
        }
    }
    let unavailable = unusable.iter().all(|(_, e)| e.is_unavailable());
    if unusable.len() == 2 && !(scope == Scope::Every && unavailable) {
        let why: Vec<String> = unusable
            .iter()
            .map(|(v6, e)| format!("({}) {e}", if *v6 { "ip6tables" } else { "iptables" }))
            .collect();
        errors.push(format!(
            "neither iptables nor ip6tables is usable, {}",
            why.join(", ")
        ));
    }
}
