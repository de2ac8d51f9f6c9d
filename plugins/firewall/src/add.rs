//! ADD: the reference's steps (§12.3) for the chosen backend, then the
//! ingress policy's bridge rules (through the chosen backend; with
//! firewalld through iptables, as the reference), and `prevResult` back.
//!
//! Unlike the reference, everything is validated before anything
//! changes (an unknown `ingressPolicy`, a missing bridge), ADDs are
//! serialised by a lock in `dataDir` (the shared chains are created once),
//! and a failed ADD removes what it created: its record (an earlier
//! ADD's record of the attachment is put back), its rules, and any
//! shared chain or rule it was the first to create, the firewalld
//! sources it bound.

use std::net::IpAddr;

use cni_attach::Error;
use cni_firewall::iptables::{Batch, Family};
use cni_firewall::{Backend, System};
use cni_net::Netlink;
use skel::failpoint::hit;
use skel::{CmdArgs, CniResult};

use crate::config::{Config, Isolation};
use crate::record::{self, Record};
use crate::{firewalld, iptables, nft};

pub fn add(args: &CmdArgs) -> Result<CniResult, Error> {
    let conf = Config::parse(&args.stdin)?;
    let Some(prev) = conf.prev_result.clone() else {
        return Err(Error::internal("missing prevResult from earlier plugin"));
    };
    let iso = conf.isolation()?;
    let ips = conf.addrs();
    let host = Netlink::host().map_err(|e| Error::internal(e.to_string()))?;
    let backend = conf.backend(&System::new(&host))?;
    if ips.is_empty() {
        return Ok(prev);
    }
    if backend != Backend::Nftables {
        iptables::check_bridge(iso.as_ref())?;
    }
    let _lock = record::lock(&conf.data_dir)?;
    let mut undo = Undo::default();
    match install(&conf, args, &host, backend, &ips, iso.as_ref(), &mut undo) {
        Ok(()) => Ok(prev),
        Err(e) => Err(undo.run(e, &conf, args, &host)),
    }
}

fn install(
    conf: &Config,
    args: &CmdArgs,
    host: &Netlink,
    backend: Backend,
    ips: &[IpAddr],
    iso: Option<&Isolation>,
    undo: &mut Undo,
) -> Result<(), Error> {
    let rec = Record {
        network: conf.name.clone(),
        container_id: args.container_id.clone(),
        ifname: args.ifname.clone(),
        backend: backend.to_string(),
        addrs: ips.to_vec(),
    };
    undo.previous = record::read(&conf.data_dir, &conf.name, &rec.container_id, &rec.ifname);
    record::write(&conf.data_dir, &rec)?;
    undo.recorded = true;
    hit("firewall/recorded")?;
    match backend {
        Backend::Iptables => {
            iptables::add(&conf.admin_chain, ips, true, iso, &mut undo.iptables)?;
        }
        Backend::Nftables => {
            let owner = nft::owner(&conf.name, &args.container_id, &args.ifname);
            undo.nft = Some(nft::add(host, ips, &owner, iso)?);
            hit("firewall/nftables")?;
        }
        Backend::Firewalld => {
            firewalld::add(&conf.zone, ips, &mut undo.firewalld)?;
            hit("firewall/firewalld")?;
            if iso.is_some() {
                iptables::add(&conf.admin_chain, ips, false, iso, &mut undo.iptables)?;
            }
        }
    }
    Ok(())
}

/// What ADD did so far, undone when a later step fails.
#[derive(Default)]
struct Undo {
    recorded: bool,
    /// The record of an earlier ADD of this attachment (a runtime
    /// retrying): put back, since that ADD's rules stay.
    previous: Option<Record>,
    iptables: Vec<(Family, Batch)>,
    nft: Option<nft::Undo>,
    /// The sources this ADD bound.
    firewalld: Vec<String>,
}

impl Undo {
    /// Undo everything, newest first; `e` with what could not be undone.
    fn run(self, mut e: Error, conf: &Config, args: &CmdArgs, host: &Netlink) -> Error {
        let mut left = iptables::undo(&self.iptables);
        if let Some(u) = &self.nft
            && let Err(x) = nft::undo(host, u)
        {
            left.push(x.msg);
        }
        left.extend(firewalld::remove_sources(&conf.zone, &self.firewalld));
        let restored = match (&self.previous, self.recorded) {
            (_, false) => Ok(()),
            (Some(p), true) => record::write(&conf.data_dir, p),
            (None, true) => {
                record::remove(&conf.data_dir, &conf.name, &args.container_id, &args.ifname)
            }
        };
        if let Err(x) = restored {
            left.push(x.msg);
        }
        if !left.is_empty() {
            e.msg
                .push_str(&format!("; undoing the ADD failed: {}", left.join("; ")));
        }
        e
    }
}
