//! IP masquerade of the container's addresses through `cni-firewall`:
//! bridge's rules, names and comments (the reference's `pkg/ip` ipmasq is
//! shared by both plugins too), so each suite removes the other's.

use cni_firewall::ipmasq::{self, Owner};
use cni_firewall::{Backend, Scope, System, select};
use cni_net::{IpNetwork, Netlink};
use skel::CmdArgs;
use skel::types::Result1;

use crate::config::Config;
use crate::error::Error;

fn owner<'a>(args: &'a CmdArgs, conf: &'a Config) -> Owner<'a> {
    Owner {
        network: &conf.name,
        ifname: &args.ifname,
        container_id: &args.container_id,
    }
}

fn addresses(result: &Result1) -> Vec<IpNetwork> {
    result.ips.iter().map(|ip| ip.address.0).collect()
}

/// Install the rules of `result`'s addresses with the configured backend
/// (or the one `cni-firewall` picks, once for the call), returned for the
/// undo. nftables rules are in place on return; `iptables-restore` runs on
/// and is awaited through the [`ipmasq::Pending`].
pub fn setup(
    args: &CmdArgs,
    conf: &Config,
    host: &Netlink,
    result: &Result1,
) -> Result<(Backend, ipmasq::Pending), Error> {
    let backend = select::ipmasq(conf.ip_masq_backend, &System::new(host))
        .map_err(|e| e.context("set up ip masquerade"))?;
    let pending = ipmasq::setup(host, backend, &addresses(result), &owner(args, conf))?;
    Ok((backend, pending))
}

/// Remove the attachment's rules from `scope`'s backends; `addrs` (maybe
/// none) only narrows the iptables families looked at, unless they were
/// only seen on the interface: then with the addresses of the container's
/// other links (see [`ipmasq::teardown_seen`]).
pub fn teardown(
    args: &CmdArgs,
    conf: &Config,
    host: &Netlink,
    scope: Scope,
    (addrs, others): (&[IpNetwork], Option<&[IpNetwork]>),
) -> Result<(), Error> {
    let o = owner(args, conf);
    Ok(match others {
        Some(others) => ipmasq::teardown_seen(host, scope, addrs, others, &o),
        None => ipmasq::teardown(host, scope, addrs, &o),
    }?)
}

/// The rules of every address of `prev` are installed.
pub fn check(args: &CmdArgs, conf: &Config, prev: &Result1) -> Result<(), Error> {
    let host = Netlink::host()?;
    let scope = Scope::of(conf.ip_masq_backend);
    Ok(ipmasq::check(
        &host,
        scope,
        &addresses(prev),
        &owner(args, conf),
    )?)
}

/// Remove the rules of this network's attachments not in `valid`.
pub fn gc(conf: &Config, valid: &[(String, String)]) -> Result<(), Error> {
    let host = Netlink::host()?;
    let scope = Scope::of(conf.ip_masq_backend);
    Ok(ipmasq::gc(&host, scope, &conf.name, valid)?)
}
