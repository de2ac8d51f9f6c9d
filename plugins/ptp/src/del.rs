//! DEL: idempotent and best effort. IPAM DEL first, as the reference,
//! though not waited for (`cni_attach::teardown::del`, shared with
//! bridge): it runs while the container interface is
//! deleted (which takes the host end, its addresses and routes with it;
//! the kernel needs 10–20 ms to delete a veth pair). Then the masquerade
//! rules, by their comment / chain name, so they go even when `CNI_NETNS`
//! is empty, the namespace is gone or the interface is. Every step runs
//! even when an earlier one failed, and all failures are reported together.

use cni_attach::error::join;
use cni_attach::teardown::{self, Removal};
use cni_firewall::Scope;
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::error::Error;
use crate::masq;

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    // Addresses narrow which iptables families are read; prevResult and the
    // interface both tell them. Without prevResult (an ADD killed before it
    // returned one), the interface may not hold them all: the addresses of
    // the container's other links tell which rules are not this one's.
    let mut t = teardown::del(args, Some(&conf.ipam_type), Removal::Delete);
    if conf.ip_masq {
        let scope = Scope::of(conf.ip_masq_backend);
        let view = (&t.addrs[..], t.others.as_deref());
        let removed = Netlink::host()
            .map_err(Error::from)
            .and_then(|host| masq::teardown(args, &conf, &host, scope, view));
        if let Err(e) = removed {
            t.errors.push(e);
        }
    }
    join(t.errors)
}
