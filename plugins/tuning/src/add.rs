//! ADD: everything is checked before the first change (keys, allowlist,
//! `prevResult`, values, sysctl files, the link and what it takes); the
//! changes then run in the reference's order (sysctls, backup, link),
//! each followed by a failpoint, and a failure undoes all of them.

use cni_net::{Link, Netlink, format_mac};
use skel::CmdArgs;
use skel::types::CniResult;

use crate::backup::{Backup, Found};
use crate::config::{self, Config, Plan};
use crate::error::Error;
use crate::link;
use crate::{allowlist, sysctl};

/// `prevResult` in the config's version; the reference requires one.
pub fn prev_result(conf: &Config) -> Result<CniResult, Error> {
    let net = skel::conf::NetConf {
        cni_version: conf.cni_version.clone(),
        prev_result: conf.prev_result.clone(),
        ..Default::default()
    };
    net.prev_result()?
        .ok_or_else(|| Error::config("Required prevResult missing"))
}

pub fn add(args: &CmdArgs) -> Result<CniResult, cni_attach::Error> {
    config::check_duplicate_sysctl_keys(&args.stdin)?;
    let conf = Config::parse(&args.stdin, &args.args)?;
    allowlist::check(conf.sysctl.keys())?;
    let prev = prev_result(&conf)?;
    let plan = Plan::new(&conf, &args.ifname)?;
    let ns = args.netns.file()?;
    let mut sysctls = sysctl::prepare(ns, &plan.sysctls)?;
    let target = if plan.changes_link() {
        let nl = Netlink::in_netns(ns)?;
        let link = link::find(&nl, &args.ifname)?;
        plan.check_link(&link)?;
        Some((nl, link))
    } else {
        None
    };
    let backup = Backup::new(&conf.data_dir, &args.container_id, &args.ifname, &conf.name);

    let mut undo = Undo::default();
    let applied = (|| -> Result<(), Error> {
        sysctls.apply()?;
        skel::failpoint::hit("tuning/sysctls")?;
        if let Some((nl, link)) = &target {
            save(&backup, &plan, link, &mut undo)?;
            skel::failpoint::hit("tuning/backup")?;
            undo.link = true;
            link::apply(nl, link, &plan)?;
            skel::failpoint::hit("tuning/link")?;
        }
        Ok(())
    })();
    if let Err(e) = applied {
        let mut failed = sysctls.undo();
        if let Some((nl, link)) = &target
            && undo.link
            && let Err(e) = link::undo(nl, link, &plan)
        {
            failed.push(e.to_string());
        }
        if let Some(previous) = &undo.backup
            && let Err(e) = backup.put_back(previous.as_deref())
        {
            failed.push(e.to_string());
        }
        for f in failed {
            eprintln!("tuning: cleanup after the failed ADD: {f}");
        }
        return Err(e.into());
    }
    Ok(with_mac(prev, &plan, &args.ifname)?)
}

/// What a failed ADD must put back besides the sysctls.
#[derive(Default)]
struct Undo {
    /// The link change was sent (it may have been applied in part).
    link: bool,
    /// The backup file as it was (`Some(None)`: there was none), once
    /// this ADD has written it.
    backup: Option<Option<Vec<u8>>>,
}

/// Record the original values. An existing backup (a repeated ADD) keeps
/// its values: they are the originals, the link now holds tuned ones; it
/// only gains the attributes it lacks.
fn save(backup: &Backup, plan: &Plan, link: &Link, undo: &mut Undo) -> Result<(), Error> {
    let previous = backup.raw()?;
    let now = link::saved_of(plan, link);
    let saved = match backup.parse(previous.as_deref()) {
        Found::Saved(earlier) | Found::Truncated(earlier) => earlier.or(now),
        Found::Absent | Found::Invalid(_) => now,
    };
    undo.backup = Some(previous);
    backup.write(saved.to_json().as_bytes())
}

/// `prev` with the new MAC on every interface named `ifname`, as the
/// reference reports it (canonical lowercase form, where the reference
/// copies the configured text).
fn with_mac(prev: CniResult, plan: &Plan, ifname: &str) -> Result<CniResult, Error> {
    let Some(mac) = &plan.mac else {
        return Ok(prev);
    };
    let mut r = prev.into_v1()?;
    for i in r.interfaces.iter_mut().filter(|i| i.name == ifname) {
        i.mac = format_mac(mac);
    }
    Ok(r.into())
}
