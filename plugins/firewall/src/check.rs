//! CHECK: `prevResult` required; the chosen backend's rules for every
//! address (the reference's checks and messages for iptables), and (ours)
//! the ingress policy's bridge rules. Unlike the reference, CHECK changes
//! nothing (the reference creates missing chains).

use cni_attach::Error;
use cni_firewall::{Backend, System};
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::{firewalld, iptables, nft};

pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    conf.require_prev()?;
    let iso = conf.isolation()?;
    let ips = conf.addrs();
    if ips.is_empty() {
        // ADD installed nothing either.
        return Ok(());
    }
    let host = Netlink::host().map_err(|e| Error::internal(e.to_string()))?;
    let backend = conf.backend(&System::new(&host))?;
    if backend != Backend::Nftables {
        iptables::check_bridge(iso.as_ref())?;
    }
    let checked = match backend {
        Backend::Iptables => iptables::check(&conf.admin_chain, &ips, true, iso.as_ref()),
        Backend::Nftables => {
            let owner = nft::owner(&conf.name, &args.container_id, &args.ifname);
            nft::check(&host, &ips, &owner, iso.as_ref())
        }
        Backend::Firewalld => {
            firewalld::check(&conf.zone, &ips)?;
            iptables::check(&conf.admin_chain, &ips, false, iso.as_ref())
        }
    };
    Ok(checked?)
}
