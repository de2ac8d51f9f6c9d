//! Where plugins with firewall rules (portmap, the firewall plugin) keep
//! one record per attachment, the files themselves: the plugin decides
//! what a record holds.
//!
//! - `<dataDir>/<network>/<containerID>:<ifname>`: skel refuses a `:` in
//!   both, so no two attachments share a file (as they would with `_`,
//!   which both may hold). A network name or file name too long for a file
//!   system is hashed (`sha512-<32 hex>`), so a record must say whose it is
//!   and readers check that.
//! - Written to a temporary file (`.<name>.tmp`) renamed into place, so a
//!   reader never sees half a record, through [`skel::statefile`]: no
//!   link planted at either name is followed, and a temporary file a
//!   killed call left is removed with its record ([`remove_path`]), by GC
//!   ([`sweep`]) or replaced by the next write.
//! - `<dataDir>/.lock`: one exclusive `flock` per data directory, as the
//!   reference's plugins lock their state, waited for within
//!   [`skel::deadline::timeout`].
//! - Root's alone: records and the lock are mode 0600, network
//!   directories 0700 (no other tool reads them).
//! - Entries whose names start with `.` (temporary files, the lock) are
//!   never records.

use std::fs;
use std::path::{Path, PathBuf};

use skel::Error;
use skel::statefile;

/// The mode of records and of the lock file.
const FILE_MODE: u32 = 0o600;
/// The mode of a network's directory.
const DIR_MODE: u32 = 0o700;
/// A record is a few hundred bytes; anything larger is not one of ours.
const RECORD_MAX: usize = 1 << 20;

/// The longest plain file name: room left for the temporary file's `.`
/// and `.tmp` within `NAME_MAX` (255).
const NAME_MAX_PLAIN: usize = 200;

/// `name`, or its hash when it is longer than a file name may be.
pub fn bounded(name: &str) -> String {
    match name.len() <= NAME_MAX_PLAIN {
        true => name.to_string(),
        false => format!("sha512-{}", skel::sha512::hex_prefix(name, 32)),
    }
}

/// `<dataDir>/<network>`.
pub fn dir(data_dir: &Path, network: &str) -> PathBuf {
    data_dir.join(bounded(network))
}

/// `<containerID>:<ifname>`, bounded.
pub fn file_name(cid: &str, ifname: &str) -> String {
    bounded(&format!("{cid}:{ifname}"))
}

/// The attachment's record file.
pub fn path(data_dir: &Path, network: &str, cid: &str, ifname: &str) -> PathBuf {
    dir(data_dir, network).join(file_name(cid, ifname))
}

/// `<what> <path>: <reason>`, code 999.
pub fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::internal(format!("{what} {}: {}", path.display(), skel::io_text(e)))
}

/// The temporary file of the record file `name`.
fn temp_name(name: &str) -> String {
    format!(".{name}.tmp")
}

/// Write the attachment's record: `bytes` to a temporary file renamed into
/// place, the network's directory created when missing. A write or rename
/// that fails (a full disk) removes the temporary file again.
pub fn write(
    data_dir: &Path,
    network: &str,
    cid: &str,
    ifname: &str,
    bytes: &[u8],
) -> Result<(), Error> {
    let d = dir(data_dir, network);
    statefile::create_dir(&d, DIR_MODE).map_err(|e| io_error("create", &d, &e))?;
    let name = file_name(cid, ifname);
    statefile::write(&d, &name, &temp_name(&name), bytes, FILE_MODE)
        .map_err(|e| io_error("write", &d.join(&name), &e))
}

/// Remove a record file and the temporary file a killed write of it may
/// have left; missing ones are fine (with `dataDir` a file, there is no
/// record anywhere).
pub fn remove_path(path: &Path) -> Result<(), Error> {
    if let (Some(d), Some(name)) = (path.parent(), path.file_name()) {
        let tmp = d.join(temp_name(&name.to_string_lossy()));
        statefile::remove(&tmp).map_err(|e| io_error("remove", &tmp, &e))?;
    }
    statefile::remove(path)
        .map(drop)
        .map_err(|e| io_error("remove", path, &e))
}

/// Remove every temporary file in `network`'s directory, which killed
/// writes left: only while holding [`lock`], which every writer holds.
pub fn sweep(data_dir: &Path, network: &str) {
    let Ok(entries) = fs::read_dir(dir(data_dir, network)) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.as_encoded_bytes();
        if name.starts_with(b".") && name.ends_with(b".tmp") {
            let _ = statefile::remove(&e.path());
        }
    }
}

/// The record file at `path`, not through a link; `None` when there is
/// none (or something else is there).
pub fn read(path: &Path) -> Option<Vec<u8>> {
    statefile::read_small(path, RECORD_MAX)
}

/// The contents of every record file in `d` (one network's directory).
pub fn files_in(d: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = fs::read_dir(d) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
        .filter_map(|e| read(&e.path()))
        .collect()
}

/// Every network directory under `data_dir`, with its name.
pub fn networks(data_dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(nets) = fs::read_dir(data_dir) else {
        return Vec::new();
    };
    nets.flatten()
        .filter(|n| n.path().is_dir())
        .filter_map(|n| Some((n.path(), n.file_name().into_string().ok()?)))
        .collect()
}

/// An exclusive lock on `<dataDir>/.lock` (created with the directory),
/// released when the file is dropped; waited for within
/// [`skel::deadline::timeout`].
pub fn lock(data_dir: &Path) -> Result<fs::File, Error> {
    fs::create_dir_all(data_dir).map_err(|e| io_error("create", data_dir, &e))?;
    let path = data_dir.join(".lock");
    let f = statefile::open_lock(&path, FILE_MODE).map_err(|e| io_error("open", &path, &e))?;
    statefile::lock(&f).map_err(|e| io_error("lock", &path, &e))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_attachments_share_a_file() {
        assert_ne!(file_name("x", "eth_0"), file_name("x_eth", "0"));
        let long = "c".repeat(300);
        let name = file_name(&long, "eth0");
        assert!(name.starts_with("sha512-") && name.len() < NAME_MAX_PLAIN);
        assert_ne!(name, file_name(&long, "eth1"));
        assert_eq!(bounded(&"n".repeat(NAME_MAX_PLAIN)).len(), NAME_MAX_PLAIN);
    }

    #[test]
    fn written_records_are_read_back_and_removed() {
        let d = std::env::temp_dir().join(format!("cnirs-records-{}", std::process::id()));
        write(&d, "net", "c1", "eth0", b"{}").unwrap();
        write(&d, "net", "c1", "eth0", b"{\"a\":1}").unwrap();
        assert_eq!(files_in(&dir(&d, "net")), vec![b"{\"a\":1}".to_vec()]);
        assert_eq!(networks(&d), vec![(dir(&d, "net"), "net".to_string())]);
        let _l = lock(&d).unwrap();
        remove_path(&path(&d, "net", "c1", "eth0")).unwrap();
        remove_path(&path(&d, "net", "c1", "eth0")).unwrap();
        assert!(files_in(&dir(&d, "net")).is_empty());
        fs::remove_dir_all(&d).unwrap();
    }

    /// A record that cannot be put in place (here its name is taken by a
    /// directory that is not empty) leaves no temporary file behind.
    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let d = std::env::temp_dir().join(format!("cnirs-records-tmp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let taken = path(&d, "net", "c1", "eth0");
        fs::create_dir_all(taken.join("x")).unwrap();
        let e = write(&d, "net", "c1", "eth0", b"{}").unwrap_err();
        assert!(e.msg.starts_with("write "), "{}", e.msg);
        let names: Vec<_> = fs::read_dir(dir(&d, "net"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("c1:eth0")]);
        fs::remove_dir_all(&d).unwrap();
    }
}
