//! DEL: idempotent and best effort. Every step runs even when an earlier
//! one failed, and all failures are reported together.
//!
//! Order as the reference (§5.4): container link (which takes the host
//! veth with it), then IPAM, then spoof check and masquerade rules. The
//! masquerade rules are removed by their comment / chain name, so they go
//! even when `CNI_NETNS` is empty or the namespace is gone.

use cni_attach::teardown;
use skel::types::Cidr;
use skel::{CmdArgs, Netns};

use crate::config::Config;
use crate::error::Error;
use crate::masq::{self, Owner};
use crate::spoofchk;

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let mut errors = Vec::new();
    // Addresses narrow which iptables families are read; prevResult and the
    // link both tell them.
    let mut addrs: Vec<Cidr> = teardown::prev_addrs(&args.stdin)
        .into_iter()
        .map(Cidr)
        .collect();

    if let Netns::Open { file, .. } = &args.netns {
        match teardown::delete_link(file, &args.ifname) {
            Ok(found) => addrs.extend(found.into_iter().map(Cidr)),
            Err(e) => errors.push(e),
        }
    }
    if conf.is_layer3()
        && let Err(e) = skel::invoke::delegate(&conf.ipam_type, "DEL", &args.path, &args.stdin)
    {
        errors.push(e.into());
    }
    if conf.macspoofchk
        && let Err(e) = spoofchk::teardown(&spoofchk::id(&args.container_id, &args.ifname))
    {
        errors.push(e);
    }
    if conf.is_layer3() && conf.ip_masq {
        let owner = Owner {
            network: &conf.name,
            ifname: &args.ifname,
            container_id: &args.container_id,
        };
        if let Err(e) = masq::teardown(conf.ip_masq_backend, &addrs, &owner) {
            errors.push(e);
        }
    }
    crate::error::join(errors)
}
