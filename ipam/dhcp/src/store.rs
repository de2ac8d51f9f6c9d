//! The lease store: the only module that touches the daemon's state
//! directory, so that a restarted daemon keeps renewing the leases its
//! predecessor held (the reference forgets them, #767).
//!
//! ```text
//! <dir>/lock                 flock(LOCK_EX) for the daemon's lifetime
//! <dir>/<hash>.json          one lease: its attachment, options and ACK
//! <dir>/.tmp-<hash>          that record being written
//! ```
//!
//! `<hash>` is the first 32 hex digits of the SHA-512 of the client
//! identifier. Files go through `skel::statefile`, as every plugin's state
//! files: a record is written whole to its temporary file, made anew
//! (`O_EXCL`: whatever is at that name, a link included, is removed
//! first), and renamed over the old one: a daemon killed at any point
//! leaves the old record or the new one, never a torn one, and at most
//! one temporary file per record, which the next write of the record or
//! the next daemon's start removes.
//! Nothing is synced to disk: a record matters only while its container's
//! namespace exists, and no namespace outlives the machine going down
//! (an fsync was 4 ms of every ADD on a busy machine). Everything is
//! root-only (files 0600, the directory 0700), and records are opened
//! without following symlinks.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lease::{Attachment, Bound};
use crate::log::log;
use crate::options::Options;
use crate::packet::Message;

const LOCK: &str = "lock";
const TMP: &str = ".tmp-";
/// A record is a few hundred bytes; anything much larger is not ours.
const MAX_RECORD: u64 = 256 << 10;
const VERSION: u32 = 1;

/// A lease as stored: whom it is for, and what was granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub att: Attachment,
    pub bound: Bound,
}

/// The file format (JSON).
#[derive(Debug, Serialize, Deserialize)]
struct Disk {
    version: u32,
    #[serde(rename = "clientId")]
    client_id: String,
    #[serde(rename = "containerId")]
    container_id: String,
    network: String,
    #[serde(rename = "ifName")]
    ifname: String,
    netns: String,
    #[serde(rename = "netnsDev")]
    netns_dev: u64,
    #[serde(rename = "netnsIno")]
    netns_ino: u64,
    mac: String,
    /// Options sent: `[code, base64 value]`.
    send: Vec<(u8, String)>,
    /// The parameter request list.
    request: Vec<u8>,
    /// The DHCPACK, base64.
    ack: String,
    #[serde(rename = "serverMac")]
    server_mac: String,
    /// When the ACK arrived, in milliseconds since the epoch.
    #[serde(rename = "ackedAt")]
    acked_at: u64,
}

fn mac_text(m: &[u8; 6]) -> String {
    cni_net::format_mac(m)
}

fn mac_parse(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

impl Record {
    fn to_disk(&self) -> Disk {
        let a = &self.att;
        let b64 = skel::base64::encode;
        Disk {
            version: VERSION,
            client_id: a.client_id.clone(),
            container_id: a.container_id.clone(),
            network: a.network.clone(),
            ifname: a.ifname.clone(),
            netns: a.netns.clone(),
            netns_dev: a.netns_id.0,
            netns_ino: a.netns_id.1,
            mac: mac_text(&a.mac),
            send: a.options.send.iter().map(|(c, v)| (*c, b64(v))).collect(),
            request: a.options.request.clone(),
            ack: b64(&self.bound.ack.encode()),
            server_mac: mac_text(&self.bound.server_mac),
            acked_at: self
                .bound
                .acked_at
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis() as u64,
        }
    }

    fn from_disk(d: Disk) -> std::result::Result<Record, String> {
        if d.version != VERSION {
            return Err(format!("record version {}", d.version));
        }
        let b64 = |s: &str| skel::base64::decode(s);
        let send = d
            .send
            .iter()
            .map(|(c, v)| Ok((*c, b64(v)?)))
            .collect::<std::result::Result<Vec<_>, String>>()?;
        let ack = Message::parse(&b64(&d.ack)?)?;
        Ok(Record {
            att: Attachment {
                client_id: d.client_id,
                container_id: d.container_id,
                network: d.network,
                ifname: d.ifname,
                netns: d.netns,
                netns_id: (d.netns_dev, d.netns_ino),
                mac: mac_parse(&d.mac).ok_or("bad mac")?,
                options: Options {
                    send,
                    request: d.request,
                },
            },
            bound: Bound {
                ack,
                server_mac: mac_parse(&d.server_mac).ok_or("bad server mac")?,
                acked_at: UNIX_EPOCH + Duration::from_millis(d.acked_at),
            },
        })
    }
}

/// The state directory, locked by this daemon.
pub struct Store {
    dir: PathBuf,
    _lock: Flock<File>,
    /// Held while a record is written: its temporary file's name is fixed
    /// (one per record), and two threads may write the same record.
    writing: Mutex<()>,
}

impl Store {
    /// Open (creating it root-only if needed) and lock `dir`. A symlink
    /// there is refused; so is a directory another daemon holds.
    pub fn open(dir: &Path) -> Result<Store> {
        skel::statefile::create_dir(dir, 0o700).map_err(|e| Error::io("mkdir", dir, &e))?;
        let meta = fs::symlink_metadata(dir).map_err(|e| Error::io("stat", dir, &e))?;
        if !meta.is_dir() {
            return Err(Error::Io(format!(
                "state directory {} is not a directory",
                dir.display()
            )));
        }
        if meta.mode() & 0o022 != 0 || meta.uid() != nix::unistd::geteuid().as_raw() {
            return Err(Error::Io(format!(
                "state directory {} is writable by others than us: refusing it",
                dir.display()
            )));
        }
        let path = dir.join(LOCK);
        // Held for the daemon's lifetime: another daemon is refused at
        // once rather than waited for.
        let file =
            skel::statefile::open_lock(&path, 0o600).map_err(|e| Error::io("open", &path, &e))?;
        let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| {
            Error::Io(format!(
                "lock {}: {} (another dhcp daemon uses this state directory)",
                path.display(),
                skel::errno_text(e)
            ))
        })?;
        let store = Store {
            dir: dir.to_path_buf(),
            _lock: lock,
            writing: Mutex::new(()),
        };
        store.clean_temps();
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The record's hash, which names its file and its temporary file.
    fn hash(client_id: &str) -> String {
        skel::sha512::hex_prefix(client_id, 32)
    }

    fn path(&self, client_id: &str) -> PathBuf {
        self.dir.join(format!("{}.json", Store::hash(client_id)))
    }

    /// Write `rec`, replacing the record of the same lease.
    pub fn save(&self, rec: &Record) -> Result<()> {
        let mut text = serde_json::to_vec_pretty(&rec.to_disk())
            .map_err(|e| Error::Io(format!("encode lease record: {e}")))?;
        text.push(b'\n');
        let hash = Store::hash(&rec.att.client_id);
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        skel::statefile::write(
            &self.dir,
            &format!("{hash}.json"),
            &format!("{TMP}{hash}"),
            &text,
            0o600,
        )
        .map_err(|e| Error::io("write lease record", &self.path(&rec.att.client_id), &e))
    }

    /// The record of `client_id`, if there is a readable one.
    pub fn load(&self, client_id: &str) -> Option<Record> {
        let rec = read(&self.path(client_id))?;
        (rec.att.client_id == client_id).then_some(rec)
    }

    /// Forget the lease of `client_id`.
    pub fn remove(&self, client_id: &str) {
        let path = self.path(client_id);
        if let Err(e) = skel::statefile::remove(&path) {
            log(format!("remove {}: {}", path.display(), skel::io_text(&e)));
        }
    }

    /// Every readable record; others are reported and left alone.
    pub fn list(&self) -> Vec<Record> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out: Vec<Record> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| read(&e.path()))
            .collect();
        out.sort_by(|a, b| a.att.client_id.cmp(&b.att.client_id));
        out
    }

    /// Remove what a daemon killed while writing left.
    fn clean_temps(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(TMP) {
                let _ = skel::statefile::remove(&e.path());
            }
        }
    }
}

/// A record file: a regular file (a symlink is not followed), of bounded
/// size, that decodes. What does not is reported.
fn read(path: &Path) -> Option<Record> {
    let file = skel::statefile::open_read(path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            log(format!(
                "ignoring {}: {}",
                path.display(),
                skel::io_text(&e)
            ));
            return None;
        }
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        log(format!("ignoring {}: not a regular file", path.display()));
        return None;
    }
    let mut text = Vec::new();
    if Read::by_ref(&mut file)
        .take(MAX_RECORD)
        .read_to_end(&mut text)
        .is_err()
    {
        return None;
    }
    let decoded = serde_json::from_slice::<Disk>(&text)
        .map_err(|e| e.to_string())
        .and_then(Record::from_disk);
    match decoded {
        Ok(r) => Some(r),
        Err(e) => {
            log(format!("ignoring {}: {e}", path.display()));
            None
        }
    }
}

#[cfg(test)]
mod tests;
