//! STATUS and GC (CNI 1.1).

use cni_firewall::{Scope, ipmasq, spoofchk};
use cni_net::Netlink;
use skel::CmdArgs;

use crate::config::Config;
use crate::error::Error;

/// Ready when the IPAM plugin is (L2 needs nothing).
pub fn status(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    if conf.is_layer3() {
        skel::invoke::delegate(&conf.ipam_type, "STATUS", &args.path, &args.stdin)?;
    }
    Ok(())
}

/// Remove firewall rules of attachments that are no longer valid, then
/// forward GC to IPAM. Every step runs; failures are reported together.
/// Without a list of valid attachments no rule is removed (as host-local
/// releases no lease): every attachment may still be in use.
pub fn gc(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let valid = skel::conf::valid_attachments(&args.stdin)?;
    if valid.is_none() && (conf.is_layer3() || conf.macspoofchk) {
        eprintln!(
            "bridge: GC of network {} without cni.dev/valid-attachments: removing no rules",
            conf.name
        );
    }
    let mut errors = Vec::new();
    if let Some(valid) = &valid
        && (conf.is_layer3() || conf.macspoofchk)
        && let Err(e) = firewall(&conf, valid)
    {
        errors.push(e);
    }
    if conf.is_layer3()
        && let Err(e) = skel::invoke::delegate(&conf.ipam_type, "GC", &args.path, &args.stdin)
    {
        errors.push(e.into());
    }
    crate::error::join(errors)
}

/// Remove the masquerade and spoof-check rules of attachments not in
/// `valid`.
fn firewall(conf: &Config, valid: &[(String, String)]) -> Result<(), Error> {
    let host = Netlink::host()?;
    let mut errors = Vec::new();
    if conf.is_layer3()
        && let Err(e) = ipmasq::gc(&host, Scope::of(conf.ip_masq_backend), &conf.name, valid)
    {
        errors.push(e);
    }
    if conf.macspoofchk {
        let keep: Vec<String> = valid
            .iter()
            .map(|(cid, ifname)| spoofchk::id(cid, ifname))
            .collect();
        // A lookup that fails counts as a live link: its rules stay.
        let exists = |name: &str| host.find_link(name).map_or(true, |l| l.is_some());
        if let Err(e) = spoofchk::gc(&host, &keep, &exists) {
            errors.push(e);
        }
    }
    Ok(cni_firewall::join(errors)?)
}
