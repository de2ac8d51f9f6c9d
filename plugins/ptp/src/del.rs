//! DEL: idempotent and best effort. IPAM DEL first, as the reference,
//! though not waited for: it runs while the container interface is
//! deleted (which takes the host end, its addresses and routes with it;
//! the kernel needs 10–20 ms to delete a veth pair). Then the masquerade
//! rules, by their comment / chain name, so they go even when `CNI_NETNS`
//! is empty, the namespace is gone or the interface is. Every step runs
//! even when an earlier one failed, and all failures are reported together.

use cni_attach::error::join;
use cni_attach::teardown;
use cni_firewall::Scope;
use cni_net::Netlink;
use skel::{CmdArgs, Netns};

use crate::config::Config;
use crate::error::Error;
use crate::masq;

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let ipam = skel::invoke::start(&conf.ipam_type, "DEL", &args.path, &args.stdin);
    // Addresses narrow which iptables families are read; prevResult and the
    // interface both tell them.
    let mut addrs = teardown::prev_addrs(&args.stdin);
    let link = match &args.netns {
        Netns::Open { file, .. } => teardown::delete_link(file, &args.ifname),
        _ => Ok(Vec::new()),
    };
    let mut errors = Vec::new();
    if let Err(e) = ipam.and_then(|running| running.wait()) {
        errors.push(e.into());
    }
    match link {
        Ok(found) => addrs.extend(found),
        Err(e) => errors.push(e),
    }
    if conf.ip_masq {
        let scope = Scope::of(conf.ip_masq_backend);
        let removed = Netlink::host()
            .map_err(Error::from)
            .and_then(|host| masq::teardown(args, &conf, &host, scope, &addrs));
        if let Err(e) = removed {
            errors.push(e);
        }
    }
    join(errors)
}
