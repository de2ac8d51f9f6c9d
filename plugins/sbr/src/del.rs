//! DEL: under the namespace's lock, the routes via the interface in the
//! tables that the rules from its addresses point to go, then those rules
//! (the reference's DEL removes the rules only, and leaves the routes
//! until the interface goes). Best effort: every step is tried, the
//! last failure reported. Nothing is left to do, and DEL succeeds, when
//! the namespace or the interface is gone: the rules and routes went with
//! them (the reference fails without the namespace, and creates a file at
//! its path).

use cni_net::{Netlink, Rule};
use skel::CmdArgs;
use skel::netns::Netns;

use crate::config::Config;
use crate::{Error, lock, table};

/// Tables that are never sbr's, whatever points to them.
const RESERVED: [u32; 4] = [0, 253, 254, 255];

pub fn del(args: &CmdArgs) -> Result<(), Error> {
    let conf = Config::parse(&args.stdin)?;
    let fixed = conf.table()?;
    if !matches!(args.netns, Netns::Open { .. }) {
        return Ok(());
    }
    lock(args)?;
    let nl = Netlink::in_netns(args.netns.file()?)?;
    let Some(link) = nl.find_link(&args.ifname)? else {
        return Ok(());
    };
    let rules = nl.rules().map_err(|e| match fixed {
        Some(t) => Error::internal(format!("failed to list rules of table {t} to tidy: {e}")),
        None => Error::internal(format!("Failed to list all rules to tidy: {e}")),
    })?;
    let addrs = nl
        .addrs(Some(&link))
        .map_err(|e| Error::internal(format!("Failed to list all addrs: {e}")))?;
    let ours: Vec<&Rule> = rules
        .iter()
        .filter(|r| fixed.is_none_or(|t| r.table == t))
        .filter(|r| addrs.iter().any(|a| table::rule_from(r, a.addr.ip())))
        .collect();
    let mut failed = None;
    // Tables first: a DEL killed between the two finds the rules again,
    // and through them the tables.
    if fixed.is_none() {
        // A table only these rules point to: its routes via this
        // interface go.
        let tables = ours.iter().map(|r| r.table).filter(|t| {
            !RESERVED.contains(t) && !rules.iter().any(|o| o.table == *t && !ours.contains(&o))
        });
        for t in tables {
            if let Err(e) = flush(&nl, t, link.index) {
                failed = Some(Error::internal(format!(
                    "Failed to delete routes of table {t}: {e}"
                )));
            }
            skel::failpoint::pass("sbr/del-table");
        }
    }
    for r in &ours {
        if let Err(e) = nl.delete_rule(r) {
            failed = Some(Error::internal(format!("Failed to delete rule {e}")));
        }
        skel::failpoint::pass("sbr/del-rule");
    }
    failed.map_or(Ok(()), Err)
}

/// Delete the routes via `oif` in table `t`.
fn flush(nl: &Netlink, t: u32, oif: u32) -> cni_net::Result<()> {
    for ipv6 in [false, true] {
        for r in nl.routes(ipv6, Some(oif), Some(t))? {
            match nl.delete_listed_route(&r) {
                Err(e) if !e.is(cni_net::Errno::ESRCH) => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}
