//! DEL, CHECK, STATUS and GC.
//!
//! DEL (`cni_attach::teardown::del`): IPAM DEL, the tap deleted; an empty
//! `CNI_NETNS`, a gone namespace or a missing tap is success, as the
//! reference. CHECK is the reference's (IPAM CHECK, the interface of
//! `prevResult` in the container, its addresses and routes) and also
//! requires the interface to be a tap.

use cni_attach::check;
use cni_attach::error::join;
use cni_attach::teardown::{self, Removal};
use cni_net::{Kind, Netlink};
use skel::CmdArgs;

use crate::config::Config;
use crate::error::Error;

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let ipam = Some(conf.ipam_type.as_str()).filter(|t| !t.is_empty());
    join(teardown::del(args, ipam, Removal::Delete).errors)
}

pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let ns = args.netns.file().map_err(|e| {
        Error::from(e).context(format!("failed to open netns {:?}", args.netns_path))
    })?;
    if !conf.ipam_type.is_empty() {
        skel::invoke::delegate(&conf.ipam_type, "CHECK", &args.path, &args.stdin)?;
    }
    let prev = check::prev_result(args, "Required prevResult missing")?;
    check::prev_interface(&prev, args, "Sandbox")?;
    let cont = Netlink::in_netns(ns)?;
    let link = cont
        .find_link(&args.ifname)?
        .ok_or_else(|| Error::internal(format!("Cannot find container link {}", args.ifname)))?;
    if !matches!(&link.kind, Kind::Tun(t) if t.tap) {
        return Err(Error::internal(format!(
            "container interface {} is a {}, not a tap",
            link.name,
            link.kind.name()
        )));
    }
    check::addresses_and_routes(&cont, &link, &prev)
}

/// Ready when the IPAM plugin is (none: ready).
pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, "")?;
    if !conf.ipam_type.is_empty() {
        skel::invoke::delegate(&conf.ipam_type, "STATUS", &args.path, &args.stdin)?;
    }
    Ok(())
}

/// GC goes to IPAM (the reference has no GC).
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, "")?;
    if !conf.ipam_type.is_empty() {
        skel::invoke::delegate(&conf.ipam_type, "GC", &args.path, &args.stdin)?;
    }
    Ok(())
}
