//! The `dummy` plugin: a dummy link in the container under `CNI_IFNAME`,
//! with IPAM's addresses (a stable address that belongs to no physical
//! link). IPAM's routes and DNS go into the result unchanged. The rest is
//! `cni_attach::onelink`, shared with macvlan, ipvlan and vlan.

pub use cni_attach::error;

use cni_attach::onelink::{self, Addressing, Attachment, Expect, Links};
use cni_net::{Kind, Link};
use skel::CmdArgs;
use skel::conf::NetConf;
use skel::types::Result1;

use crate::error::Error;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Main = cni_attach::Main {
    name: "dummy",
    since: "",
    add,
    del,
    check,
    status,
    gc,
};

/// The config's common keys, in the reference's words.
fn parse(stdin: &[u8]) -> Result<NetConf, Error> {
    NetConf::parse(stdin).map_err(|mut e| {
        e.msg = e.msg.replacen(
            "failed to load netconf",
            "failed to parse network config",
            1,
        );
        e.into()
    })
}

/// The IPAM plugin, which ADD and CHECK need.
fn required_ipam(c: &NetConf) -> Result<&str, Error> {
    match c.ipam.plugin_type.as_str() {
        "" => Err(Error::config(
            "dummy interface requires an IPAM configuration",
        )),
        t => Ok(t),
    }
}

fn add(args: &CmdArgs) -> Result<Result1, Error> {
    let c = parse(&args.stdin)?;
    let ipam = required_ipam(&c)?;
    let links = Links::open(args)?;
    let a = Attachment {
        plugin: "dummy",
        kind: Kind::Dummy,
        master: None,
        in_container: false,
        mtu: 0,
        mac: None,
        addressing: Addressing::Ipam(ipam.to_string()),
        announce: None,
        dns: None,
        cni_version: &c.cni_version,
    };
    onelink::add(args, &links, &a)
}

fn del(args: &CmdArgs) -> Result<(), Error> {
    parse(&args.stdin)?;
    onelink::del(args)
}

fn check(args: &CmdArgs) -> Result<(), Error> {
    let c = parse(&args.stdin)?;
    let ipam = required_ipam(&c)?;
    let verify = |l: &Link| {
        if !l.up {
            return Err(Error::internal(format!("Interface {} is down", l.name)));
        }
        Ok(())
    };
    let words = onelink::Words {
        prev_missing: "dummy: Required prevResult missing",
        ..onelink::UPPER
    };
    onelink::check(
        args,
        &Expect {
            ipam_type: ipam,
            words,
            kind: "dummy",
            master: None,
            verify: &verify,
        },
    )
}

fn status(args: &CmdArgs) -> Result<(), Error> {
    parse(&args.stdin)?;
    onelink::status(args)
}

fn gc(args: &CmdArgs) -> Result<(), Error> {
    parse(&args.stdin)?;
    onelink::gc(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipam_is_required_in_the_references_words() {
        let c = parse(br#"{"cniVersion":"1.0.0","name":"n"}"#).unwrap();
        let e = required_ipam(&c).unwrap_err();
        assert_eq!(
            (e.code, e.msg.as_str()),
            (7, "dummy interface requires an IPAM configuration")
        );
        let c = parse(br#"{"name":"n","ipam":{"type":"static"}}"#).unwrap();
        assert_eq!(required_ipam(&c).unwrap(), "static");
        let e = parse(b"{").unwrap_err();
        assert!(
            e.msg.starts_with("failed to parse network config: "),
            "{}",
            e.msg
        );
    }
}
