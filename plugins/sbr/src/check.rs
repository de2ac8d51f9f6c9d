//! CHECK: each address of the interface has its rule (to `table` when
//! configured) and, without `table`, the rule's table holds the
//! interface's routes, with the default route via the gateway when there
//! is one. The reference's CHECK checks nothing.

use cni_net::{Netlink, RouteInfo};
use skel::CmdArgs;

use crate::config::{self, Config};
use crate::{Error, table};

pub fn check(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let fixed = conf.table()?;
    let (_, current) = conf.require_prev()?;
    let ips = config::addresses(&args.ifname, &current)?;
    let gateways = conf.gateways()?;
    let nl = Netlink::in_netns(args.netns.file()?)?;
    let link = nl.find_link(&args.ifname)?.ok_or_else(|| {
        Error::internal(format!(
            "Cannot find network interface {}: Link not found",
            args.ifname
        ))
    })?;
    let rules = nl.rules()?;
    for ip in &ips {
        let addr = ip.address.ip();
        let Some(rule) = rules
            .iter()
            .find(|r| table::rule_from(r, addr) && fixed.is_none_or(|t| r.table == t))
        else {
            return Err(Error::internal(format!(
                "no rule from {addr} to a table of {}",
                args.ifname
            )));
        };
        if fixed.is_some() {
            continue;
        }
        let routes: Vec<RouteInfo> =
            nl.routes(!ip.address.is_ipv4(), Some(link.index), Some(rule.table))?;
        if routes.is_empty() {
            return Err(Error::internal(format!(
                "table {} of {addr} has no route via {}",
                rule.table, args.ifname
            )));
        }
        if let Some(gw) = gateways.for_ip(ip)
            && !routes
                .iter()
                .any(|r| r.dst.prefix() == 0 && r.gw == Some(gw))
        {
            return Err(Error::internal(format!(
                "table {} of {addr} has no default route via {gw}",
                rule.table
            )));
        }
    }
    Ok(())
}
