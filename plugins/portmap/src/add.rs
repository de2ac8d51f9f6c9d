//! ADD: the reference's steps (§11.3): per container address, IPv4 first,
//! the rules of the chosen backend, the stale UDP conntrack entries of the
//! mapped ports, and for IPv4 with `snat` `route_localnet` on the host
//! interface that routes to the container (the bridge; ptp's host veth).
//! The output is `prevResult`, in the config's version.
//!
//! Without mappings nothing is opened or run: `prevResult` goes straight
//! back. Unlike the reference, a failed ADD undoes what it did, whatever
//! step failed: the rules of each family written so far, the record (an
//! earlier ADD's record of the attachment is put back), `route_localnet`
//! when it was off. ADD holds the dataDir lock throughout.

use cni_attach::{Error, chained};
use cni_firewall::{Backend, System};
use cni_net::{IpNetwork, Netlink};
use skel::failpoint::hit;
use skel::{CmdArgs, CniResult};

use crate::config::Config;
use crate::{conntrack, iptables, nft, record};

pub fn add(args: &CmdArgs) -> Result<CniResult, Error> {
    let conf = Config::parse(&args.stdin).map_err(|e| e.context("failed to parse config"))?;
    if conf.has_backend_options() {
        // The reference decides and checks the backend even for a call
        // without mappings.
        let host = Netlink::host().map_err(net_error)?;
        conf.backend(false, &System::new(&host))
            .map_err(|e| e.context("failed to parse config"))?;
    }
    let prev = chained::require(conf.prev_result.clone(), "must be called as chained plugin")?;
    if conf.mappings.is_empty() {
        return Ok(prev);
    }
    let addrs = conf
        .container_addrs(&args.ifname)
        .map_err(|e| e.context("failed to parse config"))?;
    let host = Netlink::host().map_err(net_error)?;
    let backend = conf
        .backend(true, &System::new(&host))
        .map_err(|e| e.context("failed to parse config"))?
        .unwrap_or(Backend::Iptables);
    let mut undo = Undo {
        conf: &conf,
        args,
        host: &host,
        backend,
        families: Vec::new(),
        localnet: None,
        recorded: false,
        previous: None,
    };
    // Held until the undo is done too: it puts the record back.
    let _lock = record::lock(&conf.data_dir)?;
    match install(&mut undo, &addrs) {
        Ok(()) => Ok(prev),
        Err(e) => Err(undo.run(e)),
    }
}

fn net_error(e: cni_net::Error) -> Error {
    Error::internal(e.to_string())
}

fn install(u: &mut Undo<'_>, addrs: &[IpNetwork]) -> Result<(), Error> {
    let (conf, cid, ifname) = (u.conf, u.args.container_id.as_str(), &u.args.ifname);
    u.previous = record::snapshot(&conf.data_dir, &conf.name, cid, ifname);
    record::write(conf, cid, ifname, u.backend, addrs)?;
    u.recorded = true;
    hit("portmap/recorded")?;
    let mut ordered: Vec<&IpNetwork> = addrs.iter().filter(|a| a.is_ipv4()).collect();
    ordered.extend(addrs.iter().filter(|a| a.is_ipv6()));
    for addr in ordered {
        let v6 = addr.is_ipv6();
        u.families.push(*addr);
        match u.backend {
            Backend::Nftables => nft::setup(u.host, conf, addr, cid)?,
            _ => iptables::setup(conf, addr, cid)?,
        }
        hit(if v6 {
            "portmap/rules-v6"
        } else {
            "portmap/rules-v4"
        })?;
        let udp: Vec<u16> = conf
            .mappings
            .iter()
            .filter(|m| m.protocol.eq_ignore_ascii_case("udp"))
            .map(|m| m.host_port)
            .collect();
        conntrack::flush_ports(u.host, v6, &udp, addr.ip());
        if !v6 && conf.snat {
            u.route_localnet(addr)?;
            hit("portmap/route-localnet")?;
        }
    }
    Ok(())
}

/// What ADD did so far, undone when a later step fails.
struct Undo<'a> {
    conf: &'a Config,
    args: &'a CmdArgs,
    host: &'a Netlink,
    backend: Backend,
    /// Container addresses whose rules were (perhaps partly) written.
    families: Vec<IpNetwork>,
    /// The sysctl key set to 1 that was 0 before.
    localnet: Option<String>,
    recorded: bool,
    /// The record of an earlier ADD of the attachment, put back when this
    /// one fails (DEL without mappings and GC go by it).
    previous: Option<Vec<u8>>,
}

impl Undo<'_> {
    /// `route_localnet` = 1 on the host interface routing to the
    /// container; no route, no change (as the reference).
    fn route_localnet(&mut self, addr: &IpNetwork) -> Result<(), Error> {
        let Ok(route) = self.host.route_get(addr.ip()) else {
            return Ok(());
        };
        let Some(link) = route.oif.and_then(|i| self.host.link_by_index(i).ok()) else {
            return Ok(());
        };
        let key = format!("net/ipv4/conf/{}/route_localnet", link.name);
        let before = cni_net::sysctl::get(&key).unwrap_or_default();
        if before == "1" {
            return Ok(());
        }
        cni_net::sysctl::set(&key, "1")
            .map_err(|e| Error::internal(format!("unable to enable route_localnet: {e}")))?;
        self.localnet = Some(key);
        Ok(())
    }

    /// Undo everything, in reverse; `e` with what could not be undone.
    fn run(self, mut e: Error) -> Error {
        let cid = self.args.container_id.as_str();
        let mut left = Vec::new();
        if let Some(key) = &self.localnet
            && let Err(x) = cni_net::sysctl::set(key, "0")
        {
            left.push(x.to_string());
        }
        for addr in self.families.iter().rev() {
            let v6 = addr.is_ipv6();
            let r = match self.backend {
                Backend::Nftables => nft::find(self.host, v6, cid).and_then(|found| {
                    let ours = nft::matching(&found, &nft::rules(self.conf, addr, cid));
                    nft::delete(self.host, v6, &ours)
                }),
                _ => iptables::save(v6)
                    .and_then(|save| iptables::teardown(&save, v6, &self.conf.name, &[cid]))
                    .map(drop),
            };
            if let Err(x) = r {
                left.push(x.to_string());
            }
        }
        let (dir, net, ifname) = (&self.conf.data_dir, &self.conf.name, &self.args.ifname);
        let restored = match (&self.previous, self.recorded) {
            (_, false) => Ok(()),
            (Some(bytes), true) => record::put_back(dir, net, cid, ifname, bytes),
            (None, true) => record::remove(dir, net, cid, ifname),
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
