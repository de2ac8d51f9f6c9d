//! The lease store: the only module that touches files in the network
//! directory. The layout is the reference's, byte for byte:
//!
//! ```text
//! <dataDir>/<network>/lock                  empty, flock(LOCK_EX) while in use
//! <dataDir>/<network>/<ip>                  "<containerID>\r\n<ifname>", no newline
//! <dataDir>/<network>/last_reserved_ip.<N>  the last address handed out from set N
//! ```
//!
//! Our own bookkeeping lives next to it, in `<dataDir>/.host-local/<network>/`
//! (`tmp/` for lease files being written, `owners/` and `stamp` for the
//! index, see `index.rs`). The Go host-local never looks there: it walks
//! only `<dataDir>/<network>` (recursively, matching every file by its
//! content), and no network can be named `.host-local` because network
//! names start with a letter or digit.
//!
//! A lease is written to a temporary file first and then hard-linked to its
//! final name. `link()` fails with `EEXIST` like `O_CREAT|O_EXCL`, so the
//! exclusive-create protocol the Go plugin relies on still holds, and a
//! lease name never exists with partial content, whatever happens to the
//! writer (SIGKILL, full disk).
//!
//! No file is opened through a link planted at its name
//! ([`skel::statefile`]): `lock` and `last_reserved_ip.N` are opened with
//! `O_NOFOLLOW` (a link there is replaced by the file), temporary files
//! are created with `O_EXCL`, and a network directory that is a link is
//! refused. Leases are read as the reference reads them, links followed
//! (a lease that is a link is a lease; reading harms no file). The lock is waited for
//! within [`skel::deadline::timeout`].

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;

use crate::error::Error;
use crate::gotext::{ip_string, lease_name_ip, parse_ip, trim_space};

/// Where our own files live, relative to dataDir.
pub const STATE_DIR: &str = ".host-local";
const LOCK: &str = "lock";
const LAST_RESERVED: &str = "last_reserved_ip.";

/// The content of a lease owned by `(id, ifname)`, which is also the key
/// the reference matches leases by.
pub fn lease_key(container_id: &str, ifname: &str) -> String {
    format!("{}\r\n{ifname}", container_id.trim())
}

/// The key of a lease written before v0.8.0: the container ID alone.
pub fn legacy_key(container_id: &str) -> String {
    container_id.trim().to_string()
}

/// The longest `last_reserved_ip` content that can be an address
/// (`ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255`).
const LAST_RESERVED_MAX: usize = 45;

/// Lease contents longer than this belong to nobody. A key is a container
/// ID and an ifname from the environment, where one string is at most
/// 128 KiB (`MAX_ARG_STRLEN`).
const LEASE_MAX: usize = 256 * 1024;

/// What one directory read found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Taken addresses: entries of any type named exactly as the address
    /// (an exclusive create of that name fails, in Go as here).
    pub taken: HashSet<IpAddr>,
}

/// A file the reference treats as a lease when it looks for an owner's
/// addresses: any non-directory in the network directory or below whose
/// name parses as an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseFile {
    /// Relative to the network directory, `/`-separated.
    pub path: String,
    pub ip: IpAddr,
}

/// What a walk of the network directory found.
#[derive(Debug, Default)]
pub struct Walk {
    /// In the order of Go's `filepath.Walk` (lexical, depth first).
    pub files: Vec<LeaseFile>,
    /// Whether there are subdirectories. Changes inside them do not touch
    /// the network directory's times, so the index cannot be sealed.
    pub nested: bool,
}

/// The address a lease path names, if the path is one a walk could have
/// produced: relative, plain components, its last one an address.
pub fn lease_path_ip(path: &str) -> Option<IpAddr> {
    if path.split('/').any(|c| matches!(c, "" | "." | "..")) {
        return None;
    }
    parse_ip(path.rsplit('/').next()?.as_bytes())
}

/// Go's `filepath.Walk` order of two walk paths: component by component.
pub fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

/// FNV-1a, 64 bit: stable across builds, unlike std's hasher, because the
/// values end up on disk as file names.
pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The network directory's identity, modification and change times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirStamp {
    pub ino: u64,
    pub mtime: i64,
    pub mtime_nsec: i64,
    pub ctime: i64,
    pub ctime_nsec: i64,
}

impl DirStamp {
    /// Whether this can be a seal: a create or unlink sets mtime and ctime
    /// to the same instant, a seal leaves mtime behind ctime.
    pub fn is_seal(&self) -> bool {
        (self.mtime, self.mtime_nsec) != (self.ctime, self.ctime_nsec)
    }
}

/// An open, locked network directory. The lock is released when dropped.
#[derive(Debug)]
pub struct Store {
    net_dir: PathBuf,
    state_dir: PathBuf,
    _lock: File,
    seq: u32,
    /// A temporary lease file kept across failed `link()` attempts.
    pending: Option<(PathBuf, String)>,
}

/// `<dataDir>/<name>`. The name was validated by `IpamConfig::load`; this
/// guards the invariant that it is one ordinary path component.
fn net_dir(data_dir: &Path, name: &str) -> Result<PathBuf, Error> {
    if name.is_empty() || name.starts_with('.') || name.contains('/') {
        return Err(Error::config(format!("invalid network name {name:?}")));
    }
    Ok(data_dir.join(name))
}

fn mkdir(path: &Path, mode: u32) -> Result<(), Error> {
    skel::statefile::create_dir(path, mode).map_err(|e| Error::io("mkdir", path, &e))
}

impl Store {
    /// Open `<dataDir>/<name>`, creating it if needed, and take its lock.
    pub fn open(data_dir: &Path, name: &str) -> Result<Store, Error> {
        let net_dir = net_dir(data_dir, name)?;
        mkdir(&net_dir, 0o755)?;
        Store::lock(data_dir, name, net_dir)
    }

    /// Like [`Store::open`] for a network that may never have been used:
    /// `None` when its directory does not exist (nothing was leased there).
    pub fn open_existing(data_dir: &Path, name: &str) -> Result<Option<Store>, Error> {
        let net_dir = net_dir(data_dir, name)?;
        if !net_dir.is_dir() {
            return Ok(None);
        }
        Store::lock(data_dir, name, net_dir).map(Some)
    }

    fn lock(data_dir: &Path, name: &str, net_dir: PathBuf) -> Result<Store, Error> {
        let lock_path = net_dir.join(LOCK);
        let lock = skel::statefile::open_lock(&lock_path, 0o600)
            .map_err(|e| Error::io("open", &lock_path, &e))?;
        // The Go plugin locks the same file with flock(LOCK_EX), as
        // statefile::lock does, so the two exclude each other.
        skel::statefile::lock(&lock).map_err(|e| Error::io("lock", &lock_path, &e))?;
        let state_dir = data_dir.join(STATE_DIR).join(name);
        mkdir(&state_dir.join("tmp"), 0o700)?;
        mkdir(&state_dir.join("owners"), 0o700)?;
        Ok(Store {
            net_dir,
            state_dir,
            _lock: lock,
            seq: 0,
            pending: None,
        })
    }

    pub fn net_dir(&self) -> &Path {
        &self.net_dir
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    fn lease_path(&self, ip: IpAddr) -> PathBuf {
        self.net_dir.join(ip_string(ip))
    }

    pub fn dir_stamp(&self) -> Result<DirStamp, Error> {
        let m = fs::metadata(&self.net_dir).map_err(|e| Error::io("stat", &self.net_dir, &e))?;
        Ok(DirStamp {
            ino: m.ino(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
            ctime: m.ctime(),
            ctime_nsec: m.ctime_nsec(),
        })
    }

    /// Mark the directory as "as we left it": set its mtime to one second
    /// before its current value (which also sets its ctime to now). Every
    /// later create or unlink in it (by us or by the Go plugin) sets both
    /// mtime and ctime to the current time, so the pair can never again be
    /// the sealed one, whose mtime is behind its ctime, whatever the
    /// timestamp granularity and even if the clock is stepped back onto
    /// the sealed mtime (the mtime alone would then match: plausible with
    /// one-second timestamps). The mark proves that nothing changed.
    pub fn seal(&self) -> Result<DirStamp, Error> {
        let m = fs::metadata(&self.net_dir).map_err(|e| Error::io("stat", &self.net_dir, &e))?;
        let past = m
            .modified()
            .ok()
            .and_then(|t| t.checked_sub(std::time::Duration::from_secs(1)))
            .unwrap_or(std::time::UNIX_EPOCH);
        let dir = File::open(&self.net_dir).map_err(|e| Error::io("open", &self.net_dir, &e))?;
        dir.set_times(fs::FileTimes::new().set_modified(past))
            .map_err(|e| Error::io("set times of", &self.net_dir, &e))?;
        self.dir_stamp()
    }

    /// The owner recorded in the lease file at `path` (relative to the
    /// network directory): its content trimmed as Go's `TrimSpace` does.
    /// `None` when there is no readable regular file there, as the
    /// reference skips what it cannot read; an owner that is not UTF-8
    /// can equal no key, and reads as `""` (nobody).
    pub fn read_lease(&self, path: &str) -> Option<String> {
        let bytes = read_small(&self.net_dir.join(path), LEASE_MAX)?;
        Some(String::from_utf8(trim_space(&bytes).to_vec()).unwrap_or_default())
    }

    fn temp_path(&mut self) -> PathBuf {
        self.seq += 1;
        self.state_dir
            .join("tmp")
            .join(format!("{}.{}", std::process::id(), self.seq))
    }

    /// Write `content` to a new private file under `tmp/`.
    fn write_temp(&mut self, content: &[u8]) -> Result<PathBuf, Error> {
        let tmp = self.temp_path();
        let written = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(content)
        })();
        match written {
            Ok(()) => Ok(tmp),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(Error::io("write", &tmp, &e))
            }
        }
    }

    /// Overwrite a small file in place. No temporary file and no
    /// truncation to zero: creating inodes is the slowest step of a call
    /// on ext4, and truncating a freshly written file forces a flush. With
    /// `pad`, a shorter content is padded with spaces instead of shrinking
    /// the file (for JSON, where trailing whitespace is harmless).
    ///
    /// Not atomic: callers only use it for hints (`last_reserved_ip`) and
    /// for index files written while the index is known to be unsealed,
    /// so a torn file is never trusted.
    pub fn write_in_place(path: &Path, content: &[u8], pad: bool) -> Result<(), Error> {
        skel::statefile::write_in_place(path, content, pad, 0o600)
            .map_err(|e| Error::io("write", path, &e))
    }

    /// Create the lease `ip` holding `key`; `false` when the address is
    /// already leased.
    pub fn reserve(&mut self, ip: IpAddr, key: &str) -> Result<bool, Error> {
        let path = self.lease_path(ip);
        let tmp = match self.pending.take() {
            Some((tmp, k)) if k == key => tmp,
            other => {
                if let Some((old, _)) = other {
                    let _ = fs::remove_file(old);
                }
                self.write_temp(key.as_bytes())?
            }
        };
        match fs::hard_link(&tmp, &path) {
            Ok(()) => {
                let _ = fs::remove_file(&tmp);
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Keep the temporary file for the next candidate.
                self.pending = Some((tmp, key.to_string()));
                Ok(false)
            }
            // A file system without hard links, or dataDir split over two
            // mounts: fall back to the reference's exclusive create,
            // removing the file again if it cannot be completed.
            Err(e)
                if [Errno::EXDEV, Errno::EPERM, Errno::EOPNOTSUPP]
                    .iter()
                    .any(|n| e.raw_os_error() == Some(*n as i32)) =>
            {
                let _ = fs::remove_file(&tmp);
                self.reserve_in_place(ip, key)
            }
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(Error::io("link", &path, &e))
            }
        }
    }

    fn reserve_in_place(&self, ip: IpAddr, key: &str) -> Result<bool, Error> {
        let path = self.lease_path(ip);
        let mut f = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(Error::io("open", &path, &e)),
        };
        match f.write_all(key.as_bytes()) {
            Ok(()) => Ok(true),
            Err(e) => {
                let _ = fs::remove_file(&path);
                Err(Error::io("write", &path, &e))
            }
        }
    }

    /// Remove the lease `ip`; `false` when it was already gone.
    pub fn release(&self, ip: IpAddr) -> Result<bool, Error> {
        self.release_path(&ip_string(ip))
    }

    /// Remove the lease file at `path` (relative to the network
    /// directory); `false` when it was already gone.
    pub fn release_path(&self, path: &str) -> Result<bool, Error> {
        let path = self.net_dir.join(path);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io("remove", &path, &e)),
        }
    }

    /// `last_reserved_ip.<set>` read as the reference reads it: the raw
    /// content through `net.ParseIP`, so `10.0.0.5\n` is no address.
    /// Anything else means "none" and round robin restarts at the
    /// range start, as in the reference.
    pub fn last_reserved(&self, set: usize) -> Option<IpAddr> {
        let path = self.net_dir.join(format!("{LAST_RESERVED}{set}"));
        parse_ip(&read_small(&path, LAST_RESERVED_MAX)?)
    }

    /// Record the last address handed out from set `set`, in the
    /// reference's format (the address, no newline). Written in place like
    /// the reference does: a torn value only restarts round robin.
    pub fn set_last_reserved(&mut self, set: usize, ip: IpAddr) -> Result<(), Error> {
        let path = self.net_dir.join(format!("{LAST_RESERVED}{set}"));
        Store::write_in_place(&path, ip_string(ip).as_bytes(), false)
    }

    /// Remove temporary files left by a writer that died: every writer
    /// holds the lock, so while we hold it any file in `tmp/` is stale.
    pub fn clean_tmp(&self) -> Result<(), Error> {
        let dir = self.state_dir.join("tmp");
        let entries = fs::read_dir(&dir).map_err(|e| Error::io("read", &dir, &e))?;
        for entry in entries.flatten() {
            let _ = fs::remove_file(entry.path());
        }
        Ok(())
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.pending.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// At most `max` bytes of the regular file at `path`; `None` when it is
/// missing, unreadable, not a regular file or longer. Opened without
/// blocking and read with a bound, so a FIFO or a link to `/dev/zero`
/// under a lease's name cannot stall the call (the reference would hang).
/// Unlike writes, reads follow a link, as the reference's do.
fn read_small(path: &Path, max: usize) -> Option<Vec<u8>> {
    skel::statefile::read_small_following(path, max)
}

/// The taken addresses in `dir`. Costs one `readdir`, no file is opened.
pub fn scan_dir(dir: &Path) -> Result<Scan, Error> {
    let mut scan = Scan::default();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(scan),
        Err(e) => return Err(Error::io("read", dir, &e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read", dir, &e))?;
        if let Some(ip) = entry.file_name().to_str().and_then(lease_name_ip) {
            scan.taken.insert(ip);
        }
    }
    Ok(scan)
}

/// Every lease file under `dir`, as the reference's `filepath.Walk` finds
/// them: sorted by name, depth first, symbolic links not followed into.
/// Unreadable subdirectories are skipped, as Go's walk callback does.
pub fn walk_leases(dir: &Path) -> Result<Walk, Error> {
    let mut walk = Walk::default();
    match fs::read_dir(dir) {
        Ok(entries) => walk_into(entries, "", &mut walk),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("read", dir, &e)),
    }
    Ok(walk)
}

fn walk_into(entries: fs::ReadDir, prefix: &str, walk: &mut Walk) {
    let mut entries: Vec<fs::DirEntry> = entries.flatten().collect();
    entries.sort_by_cached_key(|e| e.file_name());
    for entry in entries {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        walk.nested |= is_dir;
        // A name that is not UTF-8 is no address. Leases below a directory
        // so named are not seen (Go would see them): paths are strings in
        // the index.
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let path = format!("{prefix}{name}");
        if is_dir {
            if let Ok(sub) = fs::read_dir(entry.path()) {
                walk_into(sub, &format!("{path}/"), walk);
            }
        } else if let Some(ip) = parse_ip(name.as_bytes()) {
            walk.files.push(LeaseFile { path, ip });
        }
    }
}

#[cfg(test)]
mod tests;
