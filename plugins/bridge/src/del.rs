//! DEL: idempotent and best effort. Every step runs even when an earlier
//! one failed, and all failures are reported together.
//!
//! The reference deletes the container link (which takes the host veth
//! with it), then runs IPAM DEL, then removes the spoof check and
//! masquerade rules. Here IPAM DEL is started first and runs while the
//! kernel unregisters the link, as ptp does (and as ADD overlaps IPAM with
//! the veth setup); its outcome is collected, and reported, after the
//! link's. A lease released a few hundred microseconds before its
//! interface is gone can only be handed to another container's new
//! interface, never to this one's. The masquerade rules are removed by
//! their comment / chain name, so they go even when `CNI_NETNS` is empty
//! or the namespace is gone.

use cni_attach::teardown;
use cni_firewall::ipmasq::{self, Owner};
use cni_firewall::{Scope, spoofchk};
use cni_net::{IpNetwork, Netlink};
use skel::failpoint::pass;
use skel::{CmdArgs, Netns};

use crate::config::Config;
use crate::error::Error;

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let ipam = conf
        .is_layer3()
        .then(|| skel::invoke::start(&conf.ipam_type, "DEL", &args.path, &args.stdin));
    // Kill points (tests): DEL after a kill anywhere finishes the job.
    pass("bridge/del-ipam-started");
    let mut errors = Vec::new();
    // Addresses narrow which iptables families are read; prevResult and the
    // link both tell them. Without prevResult (an ADD killed before it
    // returned one), the link may not hold them all: the addresses of the
    // container's other links tell which rules are not this attachment's.
    let mut addrs = teardown::prev_addrs(&args.stdin);
    let seen = addrs.is_empty();
    let mut others = Vec::new();
    if let Netns::Open { file, .. } = &args.netns {
        match teardown::delete_link_among(file, &args.ifname, seen) {
            Ok((found, other)) => {
                addrs.extend(found);
                others = other;
            }
            Err(e) => errors.push(e),
        }
    }
    pass("bridge/del-link-deleted");
    if let Some(Err(e)) = ipam.map(|started| started.and_then(|running| running.wait())) {
        errors.push(e.into());
    }
    pass("bridge/del-ipam-done");
    let masq = conf.is_layer3() && conf.ip_masq;
    let view = (&addrs[..], seen.then_some(&others[..]));
    if (conf.macspoofchk || masq)
        && let Err(e) = firewall(args, &conf, masq, view)
    {
        errors.push(e);
    }
    crate::error::join(errors)
}

/// Remove the spoof check and (with `masq`) the masquerade rules, from
/// the configured backend or, when unset, from every backend; the
/// attachment's addresses, and those of the container's other links when
/// they were only seen on the link (see [`ipmasq::teardown_seen`]).
fn firewall(
    args: &CmdArgs,
    conf: &Config,
    masq: bool,
    (addrs, others): (&[IpNetwork], Option<&[IpNetwork]>),
) -> Result<(), Error> {
    let host = Netlink::host()?;
    let mut errors = Vec::new();
    if conf.macspoofchk
        && let Err(e) = spoofchk::teardown(&host, &spoofchk::id(&args.container_id, &args.ifname))
    {
        errors.push(e);
    }
    let owner = Owner {
        network: &conf.name,
        ifname: &args.ifname,
        container_id: &args.container_id,
    };
    let scope = Scope::of(conf.ip_masq_backend);
    let removed = match (masq, others) {
        (false, _) => Ok(()),
        (true, Some(others)) => ipmasq::teardown_seen(&host, scope, addrs, others, &owner),
        (true, None) => ipmasq::teardown(&host, scope, addrs, &owner),
    };
    if let Err(e) = removed {
        errors.push(e);
    }
    Ok(cni_firewall::join(errors)?)
}
