//! ADD: under the namespace's lock, one rule (and, without `table`, one
//! table) per address of the interface: rule, the interface's routes
//! copied in, default route via the gateway; then
//! the routes leave `main` (or, with `addSourceHints`, only those that
//! are not subnet routes, which get a source hint). Every change is
//! recorded and a failure undoes them all, newest first.

use cni_net::{IpNetwork, Link, Netlink, RouteInfo, RouteSpec, Rule};
use skel::CmdArgs;
use skel::types::{CniResult, IpConfig};

use crate::config::{self, Config, FIRST_TABLE, Gateways};
use crate::{Error, lock, table};

pub fn add(args: &CmdArgs) -> Result<CniResult, Error> {
    let conf = Config::parse(&args.stdin)?;
    let fixed = conf.table()?;
    let (_, current) = conf.require_prev()?;
    let ips = config::addresses(&args.ifname, &current)?;
    let gateways = conf.gateways()?;
    lock(args)?;
    let nl = Netlink::in_netns(args.netns.file()?)?;
    let mut undo = Vec::new();
    let done = match fixed {
        Some(t) => rules_only(&nl, &ips, t, &mut undo),
        None => {
            let link = nl.find_link(&args.ifname)?.ok_or_else(|| {
                Error::internal(format!(
                    "Cannot find network interface {}: Link not found",
                    args.ifname
                ))
            })?;
            let plan = Plan {
                nl: &nl,
                link: &link,
                ips: &ips,
                gateways,
            };
            plan.run(conf.add_source_hints, &mut undo)
        }
    };
    if let Err(e) = done {
        for step in undo.iter().rev() {
            if let Err(u) = step.revert(&nl) {
                eprintln!("sbr: cleanup after the failed ADD: {u}");
            }
        }
        return Err(e);
    }
    conf.output(current)
}

/// A change made, and how to take it back.
#[derive(Debug)]
enum Undo {
    /// A rule added: delete it.
    Rule(Rule),
    /// A route added to a table: delete it.
    Added(RouteSpec),
    /// A route deleted from `main`: add it again.
    Deleted(RouteSpec),
    /// A route of `main` replaced (by a source hint): put back the one it
    /// replaced, or delete it.
    Replaced(Option<RouteSpec>, RouteSpec),
}

impl Undo {
    fn revert(&self, nl: &Netlink) -> cni_net::Result<()> {
        let gone = |r: cni_net::Result<()>| match r {
            Err(e) if e.is_not_found() || e.is(cni_net::Errno::ESRCH) => Ok(()),
            other => other,
        };
        match self {
            Undo::Rule(r) => gone(nl.delete_rule(r)),
            Undo::Added(r) => gone(nl.delete_route(r)),
            Undo::Deleted(r) => nl.replace_route(r),
            Undo::Replaced(Some(old), _) => nl.replace_route(old),
            Undo::Replaced(None, new) => gone(nl.delete_route(new)),
        }
    }
}

/// `from <address>/32|128 lookup <table>`.
fn rule(ip: &IpConfig, table: u32) -> Rule {
    let len = if ip.address.is_ipv4() { 32 } else { 128 };
    let src = IpNetwork::new(ip.address.ip(), len).unwrap_or(ip.address.0);
    Rule::from_source(src, table)
}

/// With `table`: the rules only.
fn rules_only(nl: &Netlink, ips: &[IpConfig], t: u32, undo: &mut Vec<Undo>) -> Result<(), Error> {
    for ip in ips {
        let r = rule(ip, t);
        nl.add_rule(&r)
            .map_err(|e| Error::internal(format!("failed to add rule: {e}")))?;
        undo.push(Undo::Rule(r));
        skel::failpoint::hit("sbr/rule")?;
    }
    Ok(())
}

/// Without `table`: what [`Plan::run`] works on.
struct Plan<'a> {
    nl: &'a Netlink,
    link: &'a Link,
    ips: &'a [IpConfig],
    gateways: Gateways,
}

impl Plan<'_> {
    fn run(&self, source_hints: bool, undo: &mut Vec<Undo>) -> Result<(), Error> {
        let nl = self.nl;
        let rules = nl
            .rules()
            .map_err(|e| Error::internal(format!("Failed to list all rules: {e}")))?;
        let all = all_routes(nl)
            .map_err(|e| Error::internal(format!("Failed to list all routes: {e}")))?;
        let mine: Vec<RouteInfo> = all
            .iter()
            .filter(|r| r.table == cni_net::route::TABLE_MAIN && r.oif == Some(self.link.index))
            .cloned()
            .collect();
        let mut t = table::free_table(FIRST_TABLE, &rules, &all);
        for ip in self.ips {
            self.fill(ip, t, &mine, undo)?;
            t = table::free_table(t + 1, &rules, &all);
        }
        if source_hints {
            self.hint(&mine, undo)
        } else {
            for r in &mine {
                nl.delete_listed_route(r)
                    .map_err(|e| Error::internal(format!("Failed to delete route: {e}")))?;
                undo.push(Undo::Deleted(r.spec()));
                skel::failpoint::hit("sbr/route-deleted")?;
            }
            Ok(())
        }
    }

    /// The rule of `ip` and its table `t`: the interface's routes of `ip`
    /// (from `mine`), its subnet route when main had none, and the
    /// default route via its gateway. The reference adds the default
    /// route first, which fails when main has no subnet route (`network
    /// is unreachable`).
    fn fill(
        &self,
        ip: &IpConfig,
        t: u32,
        mine: &[RouteInfo],
        undo: &mut Vec<Undo>,
    ) -> Result<(), Error> {
        let nl = self.nl;
        let r = rule(ip, t);
        nl.add_rule(&r)
            .map_err(|e| Error::internal(format!("Failed to add rule: {e}")))?;
        undo.push(Undo::Rule(r));
        skel::failpoint::hit("sbr/rule")?;
        let mut copied = Vec::new();
        for r in mine.iter().filter(|r| table::belongs(r, ip, self.ips)) {
            let mut spec = r.spec();
            spec.table = Some(t);
            nl.replace_route(&spec)
                .map_err(|e| Error::internal(format!("Failed to readd route: {e}")))?;
            copied.push(spec.dst);
            undo.push(Undo::Added(spec));
            skel::failpoint::hit("sbr/route-copied")?;
        }
        let net = subnet(ip);
        if !copied.contains(&net) {
            // main had no subnet route (a repeated ADD after DEL moved
            // it): without one the gateway is unreachable from the table.
            let mut spec = RouteSpec::new(net);
            spec.oif = Some(self.link.index);
            spec.src = Some(ip.address.ip());
            spec.scope = Some(cni_net::route::SCOPE_LINK);
            spec.table = Some(t);
            nl.replace_route(&spec)
                .map_err(|e| Error::internal(format!("Failed to readd route: {e}")))?;
            undo.push(Undo::Added(spec));
            skel::failpoint::hit("sbr/subnet-route")?;
        }
        if let Some(gw) = self.gateways.for_ip(ip) {
            let any = if ip.address.is_ipv4() {
                "0.0.0.0/0"
            } else {
                "::/0"
            };
            let mut d = RouteSpec::new(any.parse().expect("a default route"));
            d.gw = Some(gw);
            d.oif = Some(self.link.index);
            d.table = Some(t);
            match nl.add_route(&d) {
                Ok(()) => undo.push(Undo::Added(d)),
                // Copied from main just now.
                Err(e) if e.is_exists() => {}
                Err(e) => {
                    return Err(Error::internal(format!(
                        "Failed to add default route to {gw}: {e}"
                    )));
                }
            }
            skel::failpoint::hit("sbr/default-route")?;
        }
        Ok(())
    }

    /// `addSourceHints`: each address's subnet route stays in `main` with
    /// the address as source hint; the interface's other routes (not of
    /// link scope) leave it. Failures are only reported, as upstream.
    fn hint(&self, mine: &[RouteInfo], undo: &mut Vec<Undo>) -> Result<(), Error> {
        let nl = self.nl;
        for ip in self.ips {
            let net =
                IpNetwork::new(ip.address.0.network(), ip.address.prefix()).unwrap_or(ip.address.0);
            let mut spec = RouteSpec::new(net);
            spec.oif = Some(self.link.index);
            spec.src = Some(ip.address.ip());
            spec.scope = Some(cni_net::route::SCOPE_LINK);
            let old = mine
                .iter()
                .find(|r| r.dst == net && r.priority.unwrap_or(0) == 0)
                .map(RouteInfo::spec);
            match nl.replace_route(&spec) {
                Ok(()) => {
                    undo.push(Undo::Replaced(old, spec));
                    skel::failpoint::hit("sbr/source-hint")?;
                }
                Err(e) => eprintln!("sbr: Warning: Failed to add subnet route to main table: {e}"),
            }
        }
        for r in mine
            .iter()
            .filter(|r| r.scope != cni_net::route::SCOPE_LINK)
        {
            match nl.delete_listed_route(r) {
                Ok(()) => {
                    undo.push(Undo::Deleted(r.spec()));
                    skel::failpoint::hit("sbr/route-deleted")?;
                }
                Err(e) => eprintln!("sbr: Warning: Failed to delete route: {e}"),
            }
        }
        Ok(())
    }
}

/// The subnet of `ip`'s address.
fn subnet(ip: &IpConfig) -> IpNetwork {
    IpNetwork::new(ip.address.0.network(), ip.address.prefix()).unwrap_or(ip.address.0)
}

/// Every route of both families in every table.
pub(crate) fn all_routes(nl: &Netlink) -> cni_net::Result<Vec<RouteInfo>> {
    let mut all = nl.routes(false, None, None)?;
    all.extend(nl.routes(true, None, None)?);
    Ok(all)
}
