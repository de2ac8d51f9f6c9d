//! CHECK: every rule of every mapping, per container address family (as
//! the reference since v1.2.0), with the configured backend or the one
//! ADD would choose. Errors are not wrapped, as in the reference.

use cni_attach::Error;
use cni_firewall::{Backend, System};
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::{iptables, nft};

pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let host = Netlink::host().map_err(|e| Error::internal(e.to_string()))?;
    let backend = conf.backend(true, &System::new(&host))?;
    if conf.prev_result.is_none() {
        return Err(Error::internal("Required prevResult missing"));
    }
    if conf.mappings.is_empty() {
        return Ok(());
    }
    let cid = args.container_id.as_str();
    for addr in conf.container_addrs(&args.ifname)? {
        match backend {
            Some(Backend::Nftables) => nft::check(&host, &conf, &addr, cid)?,
            _ => iptables::check(&conf, &addr, cid)?,
        }
    }
    Ok(())
}
