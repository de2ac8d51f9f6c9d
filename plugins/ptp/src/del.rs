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
    // Kill points (tests): DEL after a kill anywhere finishes the job.
    skel::failpoint::pass("ptp/del-ipam-started");
    // Addresses narrow which iptables families are read; prevResult and the
    // interface both tell them. Without prevResult (an ADD killed before it
    // returned one), the interface may not hold them all: the addresses of
    // the container's other links tell which rules are not this one's.
    let mut addrs = teardown::prev_addrs(&args.stdin);
    let seen = addrs.is_empty();
    let link = match &args.netns {
        Netns::Open { file, .. } => teardown::delete_link_among(file, &args.ifname, seen),
        _ => Ok((Vec::new(), Vec::new())),
    };
    skel::failpoint::pass("ptp/del-link-deleted");
    let mut errors = Vec::new();
    if let Err(e) = ipam.and_then(|running| running.wait()) {
        errors.push(e.into());
    }
    skel::failpoint::pass("ptp/del-ipam-done");
    let mut others = Vec::new();
    match link {
        Ok((found, other)) => {
            addrs.extend(found);
            others = other;
        }
        Err(e) => errors.push(e),
    }
    if conf.ip_masq {
        let scope = Scope::of(conf.ip_masq_backend);
        let view = (&addrs[..], seen.then_some(&others[..]));
        let removed = Netlink::host()
            .map_err(Error::from)
            .and_then(|host| masq::teardown(args, &conf, &host, scope, view));
        if let Err(e) = removed {
            errors.push(e);
        }
    }
    join(errors)
}
