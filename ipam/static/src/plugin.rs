//! ADD and CHECK; DEL, GC and STATUS have nothing to do.

use ipnetwork::IpNetwork;
use skel::conf::NetConf;
use skel::types::{Cidr, IpConfig, Result1};
use skel::{CmdArgs, Error, Outcome, Plugin, Reply};

use crate::config::{Address, Config};

/// The plugin: skel calls one method per CNI command.
pub struct Static;

impl Plugin for Static {
    fn about(&self) -> String {
        skel::about("static")
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        let conf = Config::load(&args.stdin, &args.args)?;
        Ok(Reply::Result(result(&conf).into()))
    }

    fn check(&self, args: &CmdArgs) -> Outcome {
        let conf = Config::load(&args.stdin, &args.args)?;
        check(&conf, &args.stdin, &args.ifname)?;
        Ok(Reply::None)
    }
}

/// The configured addresses, routes and DNS, in the newest version; skel
/// converts it to the config's.
pub fn result(conf: &Config) -> Result1 {
    Result1 {
        cni_version: skel::version::CURRENT.to_string(),
        ips: conf
            .addresses
            .iter()
            .map(|a| IpConfig {
                address: cidr(a),
                gateway: a.gateway,
                interface: None,
            })
            .collect(),
        routes: conf.routes.clone(),
        dns: conf.dns.clone(),
        ..Default::default()
    }
}

fn cidr(a: &Address) -> Cidr {
    Cidr(IpNetwork::new(a.ip, a.prefix).unwrap_or_else(|_| IpNetwork::from(a.ip)))
}

/// Every configured address must be in `prevResult`, with the configured
/// gateway when there is one. The reference lets an address missing from
/// `prevResult` pass; that is what CHECK exists to catch.
fn check(conf: &Config, stdin: &[u8], ifname: &str) -> Result<(), Error> {
    let net = NetConf::parse(stdin).map_err(|e| Error::internal(e.msg))?;
    let Some(prev) = net.prev_result()? else {
        return Err(Error::internal("Required prevResult missing"));
    };
    let prev = prev.into_v1()?;
    for want in &conf.addresses {
        let found = prev
            .ips
            .iter()
            .find(|got| got.address.ip().to_canonical() == want.ip);
        let matches = found.is_some_and(|got| {
            want.gateway.is_none() || want.gateway == got.gateway.map(|g| g.to_canonical())
        });
        if !matches {
            return Err(Error::internal(format!(
                "static: Failed to match addr {} on interface {ifname}",
                want.ip
            )));
        }
    }
    Ok(())
}
