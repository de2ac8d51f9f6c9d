//! GC and STATUS (CNI 1.1); the reference has neither.
//!
//! GC removes the rules of this network's attachments that are not in
//! `cni.dev/valid-attachments`: iptables chains found by the comments of
//! their entry rules (`dnat name: "<net>" id: "<cid>"`); nftables rules
//! only where a record of this network says they are its own (the rules'
//! comment names no network, and the tables are shared by all), so
//! another network's rules are never touched. Records of removed
//! attachments go too. Without the list GC removes nothing.
//!
//! STATUS succeeds when the configured backend (or, unset, either one) is
//! usable.

use cni_attach::Error;
use cni_firewall::{Backend, Probe, Scope, System};
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::conntrack::{self, Target};
use crate::del::remove_iptables;
use crate::{nft, record};

pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let Some(valid) = skel::conf::valid_attachments(&args.stdin)? else {
        eprintln!(
            "portmap: GC of network {} without cni.dev/valid-attachments: removing no rules",
            conf.name
        );
        return Ok(());
    };
    let host = Netlink::host().map_err(|e| Error::internal(e.to_string()))?;
    let configured = conf.backend(false, &System::new(&host))?;
    let scope = Scope::of(configured.filter(|_| conf.backend.is_some()));
    // Best effort, as in DEL; what killed writes left goes under it.
    let lock = record::lock(&conf.data_dir).ok();
    if lock.is_some() {
        cni_firewall::records::sweep(&conf.data_dir, &conf.name);
    }
    let ids: Vec<&str> = valid.iter().map(|(cid, _)| cid.as_str()).collect();
    let mut targets = Vec::new();
    let mut errors = Vec::new();
    if scope.includes(Backend::Iptables) {
        remove_iptables(scope, &conf.name, None, &ids, &mut targets, &mut errors);
    }
    for r in record::of_network(&conf.data_dir, &conf.name) {
        let pair = (r.container_id.clone(), r.ifname.clone());
        if valid.contains(&pair) {
            continue;
        }
        let removed = if scope.includes(Backend::Nftables) {
            remove_recorded(&host, &r, &mut targets)
        } else {
            Ok(())
        };
        match removed {
            Err(e) if !(scope == Scope::Every && e.is_unavailable()) => errors.push(e.to_string()),
            _ => {
                if let Err(e) = record::remove(&conf.data_dir, &conf.name, &pair.0, &pair.1) {
                    errors.push(e.msg);
                }
            }
        }
    }
    conntrack::flush_targets(&host, &targets);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::internal(errors.join("; ")))
    }
}

/// The nftables rules a record describes, and only those.
fn remove_recorded(
    host: &Netlink,
    r: &record::Record,
    targets: &mut Vec<Target>,
) -> Result<(), cni_firewall::Error> {
    for addr in &r.addrs {
        let v6 = addr.is_ipv6();
        let found = nft::find(host, v6, &r.container_id)?;
        let ours = nft::matching(&found, &nft::rules(&r.conf, addr, &r.container_id));
        targets.extend(nft::udp_targets(&ours));
        nft::delete(host, v6, &ours)?;
    }
    Ok(())
}

pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let host = Netlink::host().map_err(|e| Error::internal(e.to_string()))?;
    let probe = System::new(&host);
    let usable = match conf.backend(true, &probe)? {
        Some(Backend::Nftables) => probe.nftables(),
        _ => probe.iptables(),
    };
    usable.map_err(|e| Error::internal(format!("portmap backend not usable: {e}")))
}
