//! DEL: idempotent and best effort. Every step runs even when an earlier
//! one failed, and all failures are reported together.
//!
//! The reference deletes the container link (which takes the host veth
//! with it), then runs IPAM DEL, then removes the spoof check and
//! masquerade rules. Here IPAM DEL is started first and runs while the
//! kernel unregisters the link (`cni_attach::teardown::del`, shared with
//! ptp; as ADD overlaps IPAM with the veth setup); its outcome is
//! collected, and reported, after the link's. The masquerade rules are removed by
//! their comment / chain name, so they go even when `CNI_NETNS` is empty
//! or the namespace is gone.

use cni_attach::teardown::{self, Removal, Teardown};
use cni_firewall::ipmasq::{self, Owner};
use cni_firewall::{Scope, spoofchk};
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::error::Error;

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let ipam = conf.is_layer3().then_some(conf.ipam_type.as_str());
    // Addresses narrow which iptables families are read; prevResult and the
    // link both tell them. Without prevResult (an ADD killed before it
    // returned one), the link may not hold them all: the addresses of the
    // container's other links tell which rules are not this attachment's.
    let mut t = teardown::del(args, ipam, Removal::Delete);
    let masq = conf.is_layer3() && conf.ip_masq;
    if (conf.macspoofchk || masq)
        && let Err(e) = firewall(args, &conf, masq, &t)
    {
        t.errors.push(e);
    }
    crate::error::join(t.errors)
}

/// Remove the spoof check and (with `masq`) the masquerade rules, from
/// the configured backend or, when unset, from every backend; the
/// attachment's addresses, and those of the container's other links when
/// they were only seen on the link (see [`ipmasq::teardown_seen`]).
fn firewall(args: &CmdArgs, conf: &Config, masq: bool, t: &Teardown) -> Result<(), Error> {
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
    let removed = match (masq, &t.others) {
        (false, _) => Ok(()),
        (true, Some(others)) => ipmasq::teardown_seen(&host, scope, &t.addrs, others, &owner),
        (true, None) => ipmasq::teardown(&host, scope, &t.addrs, &owner),
    };
    if let Err(e) = removed {
        errors.push(e);
    }
    Ok(cni_firewall::join(errors)?)
}
