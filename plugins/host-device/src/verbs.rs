//! DEL, CHECK, STATUS and GC.
//!
//! DEL (`cni_attach::teardown::del`): IPAM DEL, also when `CNI_NETNS` is
//! empty (the reference skips it there and leaks the address, #1196); the
//! device moved back under its alias (its host name) with its alias
//! cleared and the MAC it had at ADD (`prevResult`), also when the
//! container renamed it (#773: found by its alias or MAC); without the
//! namespace, a physical device the kernel returned to the host when the
//! namespace was deleted gets its name back. A device already back, or a
//! repeated DEL, is success (the reference fails). The device is left
//! down, as the reference does. DEL needs no lookup of `deviceID` or the
//! PCI device, which may be gone.

use cni_attach::check;
use cni_attach::error::join;
use cni_attach::teardown::{self, Back, Removal};
use cni_net::Netlink;
use skel::CmdArgs;
use skel::types::Result1;

use crate::config::{Config, parse_mac};
use crate::error::Error;

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::keys(&args.stdin)?;
    let prev_mac = prev(args)
        .ok()
        .flatten()
        .and_then(|p| {
            p.interfaces
                .into_iter()
                .find(|i| i.name == args.ifname && i.sandbox == args.netns_path)
        })
        .and_then(|i| parse_mac(&i.mac).ok());
    let back = Back {
        name: Some(conf.device.clone()).filter(|d| !d.is_empty()),
        // `hwaddr` names the device's MAC only when it selected the device.
        mac: prev_mac.or_else(|| conf.device.is_empty().then(|| conf.mac()).flatten()),
    };
    let ipam = Some(conf.ipam_type.as_str()).filter(|t| !t.is_empty());
    join(teardown::del(args, ipam, Removal::MoveBack(back)).errors)
}

/// `prevResult` in 1.x form, when there is one.
fn prev(args: &CmdArgs) -> Result<Option<Result1>, Error> {
    let Some(prev) = skel::conf::NetConf::parse(&args.stdin)?.prev_result()? else {
        return Ok(None);
    };
    Ok(Some(prev.into_v1()?))
}

/// The reference's CHECK: IPAM CHECK, then (not in DPDK mode) the
/// interface of `prevResult` in the container with its MAC, addresses and
/// routes.
pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let ns = args.netns.file().map_err(|e| {
        Error::from(e).context(format!("failed to open netns {:?}", args.netns_path))
    })?;
    if !conf.ipam_type.is_empty() {
        skel::invoke::delegate(&conf.ipam_type, "CHECK", &args.path, &args.stdin)?;
    }
    let prev = prev(args)?.ok_or_else(|| Error::internal("Required prevResult missing"))?;
    if conf.dpdk {
        return Ok(());
    }
    let intf = check::prev_interface(&prev, args, "Sandbox")?;
    let cont = Netlink::in_netns(ns)?;
    let link = cont.find_link(&intf.name)?.ok_or_else(|| {
        Error::internal(format!(
            "Container Interface name in prevResult: {} not found",
            intf.name
        ))
    })?;
    let mac = link.mac_string();
    if !intf.mac.is_empty() && intf.mac != mac {
        return Err(Error::internal(format!(
            "Interface {} Mac {} doesn't match container Mac: {mac}",
            intf.name, intf.mac
        )));
    }
    check::addresses_and_routes(&cont, &link, &prev)
}

/// Ready when the IPAM plugin is (none: ready).
pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::keys(&args.stdin)?;
    if !conf.ipam_type.is_empty() {
        skel::invoke::delegate(&conf.ipam_type, "STATUS", &args.path, &args.stdin)?;
    }
    Ok(())
}

/// GC goes to IPAM, which releases what no valid attachment holds (the
/// reference has no GC).
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::keys(&args.stdin)?;
    if !conf.ipam_type.is_empty() {
        skel::invoke::delegate(&conf.ipam_type, "GC", &args.path, &args.stdin)?;
    }
    Ok(())
}
