//! DEL: restore the saved link attributes, then forget them.

use std::fs::File;

use cni_net::Netlink;
use skel::CmdArgs;
use skel::netns::Netns;

use crate::backup::{Backup, Found};
use crate::config::Config;
use crate::error::Error;
use crate::link;

pub fn del(args: &CmdArgs) -> Result<(), cni_attach::Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    let backup = Backup::new(&conf.data_dir, &args.container_id, &args.ifname, &conf.name);
    match &args.netns {
        Netns::Open { file, .. } => restore(file, &args.ifname, &backup)?,
        // The namespace is gone, and the link with it (a physical device
        // went back to the host under whatever name it got): nothing can
        // ever be restored. The reference keeps the file forever.
        Netns::Unset | Netns::Missing(_) => backup.remove()?,
    }
    Ok(())
}

/// Restore and remove the backup. Failures to restore a link that exists
/// are reported and the backup kept, so that DEL can be retried (the
/// reference ignores them and keeps the file), unless no retry could ever
/// succeed (a value invalid in the file or for the device: noted, the
/// backup goes); a missing link or an invalid file leaves nothing to
/// restore.
fn restore(ns: &File, ifname: &str, backup: &Backup) -> Result<(), Error> {
    let saved = match backup.read() {
        Found::Absent => return backup.remove(),
        Found::Invalid(why) => {
            eprintln!("tuning: {why}: not a backup; removed");
            return backup.remove();
        }
        Found::Saved(s) => s,
        Found::Truncated(s) => {
            eprintln!(
                "tuning: {}: cut short; restoring what it holds",
                backup.path().display()
            );
            s
        }
    };
    let nl = Netlink::in_netns(ns)?;
    let Some(link) = nl.find_link(ifname)? else {
        return backup.remove();
    };
    let failed = link::restore(&nl, &link, &saved);
    // Kill point (tests): DEL after a kill anywhere finishes the job.
    skel::failpoint::pass("tuning/del-restored");
    if !failed.retry.is_empty() {
        return Err(Error::config(
            [failed.retry, failed.never].concat().join("; "),
        ));
    }
    for never in failed.never {
        eprintln!("tuning: {never}: cannot ever be restored; backup removed");
    }
    backup.remove()
}
