//! The owner index: which addresses each `(container ID, ifname)` holds,
//! so that DEL, CHECK and ADD's duplicate check read one small file
//! instead of every lease (the reference reads the whole directory on each
//! of them, which is what makes it slow on a full network).
//!
//! Files, in `<dataDir>/.host-local/<network>/`:
//! - `owners/<fnv64(key) mod 64, 2 hex digits>`: a bucket, JSON
//!   `{"<lease content>": ["<lease path>", ...], ...}`, a path being
//!   relative to the network directory (normally just the address);
//! - `stamp`: `v3 <boot id> <dir inode> <dir mtime s> <ns> <dir ctime s>
//!   <ns>`, the network directory as we last left it (see [`Store::seal`]).
//!
//! The index is trusted only while the directory still carries our seal.
//! Any create or unlink there since — a lease taken or released by the Go
//! plugin, a crash half-way through one of our updates, an index that does
//! not exist yet — breaks the seal, and the index is rebuilt from the
//! leases themselves before use. Subdirectories in the network directory
//! (the reference walks them) are outside the seal: while there are any,
//! the index is rebuilt on every call. So does a reboot: the buckets and the
//! stamp are overwritten in place without `fsync`, and after a power loss
//! the stamp may have reached the disk while a bucket written before it
//! did not. Every address the index yields is also checked against its
//! lease file.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::store::{DirStamp, LeaseFile, Store, fnv64, lease_path_ip, walk_leases, walk_order};

type OwnerFile = BTreeMap<String, Vec<String>>;

/// Owners are spread over this many bucket files: an update rewrites one
/// small file (a few dozen owners at 10,000 leases), and a rebuild writes
/// at most this many files, however many leases there are.
const BUCKETS: u64 = 64;

#[derive(Debug)]
pub struct Index {
    owners: PathBuf,
    stamp: PathBuf,
    /// Owner files changed by this call, written by [`Index::commit`].
    dirty: BTreeMap<PathBuf, OwnerFile>,
    /// This boot's ID: a stamp written before a reboot is not trusted.
    boot: String,
    /// Whether this call had to rebuild the index.
    pub rebuilt: bool,
    /// Whether the lease files include some the seal does not cover.
    unsealable: bool,
}

/// Fixed width, so that overwriting the stamp in place never shrinks it.
fn stamp_text(boot: &str, d: DirStamp) -> String {
    format!(
        "v3 {boot} {:020} {:020} {:010} {:020} {:010}\n",
        d.ino, d.mtime, d.mtime_nsec, d.ctime, d.ctime_nsec
    )
}

/// The kernel's random ID of this boot; empty without procfs (then the
/// stamp is only as good as the directory's times).
fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn read_owner_file(path: &Path) -> Result<OwnerFile, Error> {
    match fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_default()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(OwnerFile::new()),
        Err(e) => Err(Error::io("read", path, &e)),
    }
}

impl Index {
    /// The index of `store`, rebuilt first unless the directory still
    /// carries the seal recorded in the stamp.
    pub fn load(store: &mut Store) -> Result<Index, Error> {
        let mut index = Index {
            owners: store.state_dir().join("owners"),
            stamp: store.state_dir().join("stamp"),
            dirty: BTreeMap::new(),
            boot: boot_id(),
            rebuilt: false,
            unsealable: false,
        };
        let want = stamp_text(&index.boot, store.dir_stamp()?);
        let have = fs::read_to_string(&index.stamp).unwrap_or_default();
        if have != want {
            index.rebuild(store)?;
        }
        Ok(index)
    }

    fn owner_path(&self, key: &str) -> PathBuf {
        self.owners
            .join(format!("{:02x}", fnv64(key.as_bytes()) % BUCKETS))
    }

    /// Recompute every bucket from the lease files, then seal. Buckets
    /// that already hold the right content are left untouched, so after a
    /// single foreign change only one or two files are written.
    fn rebuild(&mut self, store: &mut Store) -> Result<(), Error> {
        self.invalidate();
        let mut fresh: BTreeMap<PathBuf, OwnerFile> = (0..BUCKETS)
            .map(|b| (self.owners.join(format!("{b:02x}")), OwnerFile::new()))
            .collect();
        let walk = walk_leases(store.net_dir())?;
        self.unsealable = walk.nested;
        for file in walk.files {
            // An empty file (a writer of the reference plugin that died
            // before writing) belongs to nobody; GC removes it.
            let Some(key) = store.read_lease(&file.path).filter(|k| !k.is_empty()) else {
                continue;
            };
            let path = self.owner_path(&key);
            let paths = fresh.entry(path).or_default().entry(key).or_default();
            paths.push(file.path);
            paths.sort();
        }
        // Anything else in owners/ is not ours to keep.
        if let Ok(entries) = fs::read_dir(&self.owners) {
            for entry in entries.flatten() {
                if !fresh.contains_key(&entry.path()) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        self.dirty.clear();
        for (path, map) in fresh {
            if read_owner_file(&path)? != map {
                self.dirty.insert(path, map);
            }
        }
        self.rebuilt = true;
        self.commit(store)
    }

    fn owner_file(&mut self, path: PathBuf) -> Result<&mut OwnerFile, Error> {
        if !self.dirty.contains_key(&path) {
            let map = read_owner_file(&path)?;
            self.dirty.insert(path.clone(), map);
        }
        Ok(self.dirty.entry(path).or_default())
    }

    /// Lease files whose content is exactly `key`, each confirmed by
    /// reading it, in the reference's walk order.
    pub fn lookup(&self, store: &Store, key: &str) -> Result<Vec<LeaseFile>, Error> {
        let path = self.owner_path(key);
        let map = match self.dirty.get(&path) {
            Some(m) => m.clone(),
            None => read_owner_file(&path)?,
        };
        let mut out: Vec<LeaseFile> = map
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|path| {
                let ip = lease_path_ip(path)?;
                (store.read_lease(path)? == key).then(|| LeaseFile {
                    path: path.clone(),
                    ip,
                })
            })
            .collect();
        out.sort_by(|a, b| walk_order(&a.path, &b.path));
        Ok(out)
    }

    /// Record a lease file we created.
    pub fn add(&mut self, key: &str, path: &str) -> Result<(), Error> {
        let bucket = self.owner_path(key);
        let paths = self.owner_file(bucket)?.entry(key.to_string()).or_default();
        if !paths.iter().any(|p| p == path) {
            paths.push(path.to_string());
            paths.sort();
        }
        Ok(())
    }

    /// Forget a lease file we removed.
    pub fn remove(&mut self, key: &str, path: &str) -> Result<(), Error> {
        let bucket = self.owner_path(key);
        let map = self.owner_file(bucket)?;
        if let Some(paths) = map.get_mut(key) {
            paths.retain(|p| p != path);
            if paths.is_empty() {
                map.remove(key);
            }
        }
        Ok(())
    }

    /// Write the changed owner files, seal the lease directory and record
    /// the seal. Called last, after every change to the lease directory;
    /// if anything fails the stamp is removed so the next call rebuilds.
    pub fn commit(&mut self, store: &mut Store) -> Result<(), Error> {
        let result = self.write(store);
        if result.is_err() {
            self.invalidate();
        }
        result
    }

    fn write(&mut self, store: &mut Store) -> Result<(), Error> {
        // Buckets are overwritten in place, which is only safe while the
        // stamp does not vouch for them. Normally the lease directory has
        // changed by now (that is why buckets are dirty) and the stamp no
        // longer matches; if it somehow still does, drop it first.
        if !self.dirty.is_empty() {
            let sealed = fs::read_to_string(&self.stamp).unwrap_or_default();
            if sealed == stamp_text(&self.boot, store.dir_stamp()?) {
                self.invalidate();
            }
        }
        for (path, map) in std::mem::take(&mut self.dirty) {
            // An empty bucket stays as `{}`: recreating the file later
            // would cost a new inode.
            let text = serde_json::to_vec(&map).unwrap_or_default();
            Store::write_in_place(&path, &text, true)?;
        }
        if self.unsealable {
            self.invalidate();
            return Ok(());
        }
        let sealed = store.seal()?;
        if !sealed.is_seal() {
            // The clock went back between the last change and the seal,
            // onto the sealed mtime: such a stamp would not prove anything.
            self.invalidate();
            return Ok(());
        }
        let text = stamp_text(&self.boot, sealed);
        Store::write_in_place(&self.stamp, text.as_bytes(), false)
    }

    /// Make the next call rebuild.
    pub fn invalidate(&self) {
        let _ = fs::remove_file(&self.stamp);
    }
}

#[cfg(test)]
mod tests;
