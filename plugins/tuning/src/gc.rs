//! GC (CNI 1.1): forget the backups of this network's attachments that
//! the runtime no longer knows. The reference has no GC, and its backups
//! of attachments deleted without their namespace stay forever.

use std::collections::HashSet;

use skel::CmdArgs;

use crate::backup::{Backup, file_name, records_dir};
use crate::config::Config;
use crate::error::Error;

pub fn gc(args: &CmdArgs) -> Result<(), cni_attach::Error> {
    let conf = Config::parse(&args.stdin, &args.args)?;
    sweep_dead_temporaries(&conf.data_dir);
    let Some(valid) = skel::conf::valid_attachments(&args.stdin)? else {
        eprintln!(
            "tuning: GC of network {} without cni.dev/valid-attachments: removing nothing",
            conf.name
        );
        return Ok(());
    };
    let keep: HashSet<String> = valid
        .iter()
        .map(|(cid, ifname)| file_name(cid, ifname))
        .collect();
    let dir = records_dir(&conf.data_dir, &conf.name);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        // No records (a dataDir that is a file holds none: GC failed forever).
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(());
        }
        Err(e) => {
            return Err(
                Error::config(format!("read {}: {}", dir.display(), skel::io_text(&e))).into(),
            );
        }
    };
    let mut failed = Vec::new();
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if keep.contains(&name) {
            continue;
        }
        if let Err(e) = Backup::from_file_name(&conf.data_dir, &name, &conf.name).remove() {
            failed.push(e.to_string());
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::config(failed.join("; ")).into())
    }
}

/// Remove the temporary files earlier versions named after their process
/// (`.tuning-<pid>.tmp`), left by an ADD killed before its rename, whose
/// process is gone: no later call could tell them for anyone's. (Those of
/// this version are named after their backup and go with it.)
fn sweep_dead_temporaries(data_dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(data_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(".tuning-")?.strip_suffix(".tmp"))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = skel::statefile::remove(&entry.path());
        }
    }
}
