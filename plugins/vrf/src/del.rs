//! DEL: release the interface from the VRF, and delete the VRF once no
//! interface is left in it. Nothing to do (success) when the namespace,
//! the VRF or the interface is gone (the reference fails on the last:
//! `resetMaster: could not get link by name ...`), and an interface with
//! another master is left alone. Deleting a VRF a concurrent DEL deleted
//! first is success too.

use cni_net::Netlink;
use skel::CmdArgs;
use skel::netns::Netns;

use crate::config::Config;
use crate::{Error, find_vrf};

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let Netns::Open { file, .. } = &args.netns else {
        return Ok(());
    };
    let nl = Netlink::in_netns(file)?;
    let Some((vrf, _)) = find_vrf(&nl, &conf.vrfname)? else {
        return Ok(());
    };
    if let Some(link) = nl.find_link(&args.ifname)?
        && link.master == Some(vrf.index)
    {
        nl.set_master(&link, None).map_err(|_| {
            Error::internal(format!(
                "resetMaster: could reset master to {}",
                args.ifname
            ))
        })?;
        skel::failpoint::pass("vrf/del-released");
    }
    let links = nl.links()?;
    if links.iter().all(|l| l.master != Some(vrf.index)) {
        match nl.delete_link(&vrf) {
            Err(e) if !e.is(cni_net::Errno::ENODEV) => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}
