//! The `macvlan` plugin: a macvlan link on a parent ("master") interface,
//! in the container under `CNI_IFNAME`, with IPAM's addresses or, without
//! `ipam`, none (an L2 attachment). Its configuration is [`config`]; the
//! rest is `cni_attach::onelink`, shared with ipvlan, vlan and dummy.

pub mod config;

pub use cni_attach::error;

use cni_attach::onelink::{self, Addressing, Attachment, Expect, Links};
use cni_net::{Kind, Link};
use skel::CmdArgs;
use skel::types::Result1;

use crate::config::Config;
use crate::error::Error;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Main = cni_attach::Main {
    name: "macvlan",
    since: "",
    add,
    del: onelink::del,
    check,
    status: onelink::status,
    gc: onelink::gc,
};

fn kind(c: &Config) -> Kind {
    Kind::Macvlan {
        mode: c.mode,
        bcqueuelen: Some(c.bcqueuelen).filter(|q| *q > 0),
    }
}

fn master(links: &Links, c: &Config) -> Result<Link, Error> {
    let m = onelink::master(links, Some(&c.master), c.link_in_container)?;
    onelink::check_mtu(&m, c.mtu)?;
    Ok(m)
}

fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let c = Config::parse(&args.stdin, &args.args)?;
    let links = Links::open(args)?;
    let master = master(&links, &c)?;
    let addressing = match c.ipam_type.as_str() {
        "" => Addressing::None,
        t => Addressing::Ipam(t.to_string()),
    };
    let a = Attachment {
        plugin: "macvlan",
        kind: kind(&c),
        master: Some(&master),
        in_container: c.link_in_container,
        mtu: c.mtu as u32,
        mac: c.mac,
        addressing,
        announce: Some(true),
        dns: Some(c.dns.clone()),
        cni_version: &c.cni_version,
    };
    onelink::add(args, &links, &a)
}

fn check(args: &CmdArgs) -> Result<(), Error> {
    let c = Config::parse(&args.stdin, &args.args)?;
    let master = master(&Links::open(args)?, &c)?;
    let verify = |l: &Link| match &l.kind {
        Kind::Macvlan { mode, .. } if *mode != c.mode => Err(Error::internal(format!(
            "container macvlan mode {} does not match expected value: {}",
            mode.name(),
            c.mode.name()
        ))),
        _ => Ok(()),
    };
    onelink::check(
        args,
        &Expect {
            ipam_type: &c.ipam_type,
            words: onelink::LOWER,
            kind: "macvlan",
            master: Some((&master.name, c.link_in_container)),
            verify: &verify,
        },
    )
}
