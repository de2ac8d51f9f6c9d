//! CHECK: the VRF exists (with `table`, when configured) and the
//! interface is enslaved to it.

use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::{Error, find_vrf};

pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    conf.require_prev()?;
    let nl = Netlink::in_netns(args.netns.file()?)?;
    let name = &conf.vrfname;
    let Some((vrf, table)) = find_vrf(&nl, name)? else {
        return Err(Error::internal("Link not found"));
    };
    if conf.table != 0 && conf.table != table {
        return Err(Error::internal(format!(
            "VRF {name} already exist with different routing table {table}"
        )));
    }
    let enslaved = nl
        .find_link(&args.ifname)?
        .is_some_and(|l| l.master == Some(vrf.index));
    if !enslaved {
        return Err(Error::internal(format!(
            "failed to find {} associated to vrf {name}",
            args.ifname
        )));
    }
    Ok(())
}
