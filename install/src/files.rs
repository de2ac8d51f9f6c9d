//! The file operations of an install: a temporary file that cannot
//! pre-exist and is gone unless renamed into place, copies, hard links,
//! digests, and a backup that keeps what it saves as it was.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::sha256;

/// A new file `.<name>.tmp-<tag>` in a directory, removed when dropped
/// unless [`Temp::rename_to`] moved it into place.
pub struct Temp {
    path: PathBuf,
    placed: bool,
}

impl Temp {
    /// `dir/.<name>.tmp-<tag>` created anew (`O_EXCL`: a planted file or
    /// symlink of that name is never written through; one left by an
    /// earlier run killed at that point is removed first) with `mode`,
    /// filled by `fill`, its data on disk before it is renamed.
    pub fn create(
        dir: &Path,
        name: &str,
        tag: &str,
        mode: u32,
        fill: impl FnOnce(&mut File, &Path) -> Result<()>,
    ) -> Result<Temp> {
        let path = Temp::path(dir, name, tag);
        // The one way a file that cannot pre-exist is made (state files
        // too): O_EXCL, O_NOFOLLOW, what is in the way removed first.
        let mut file =
            skel::statefile::create_new(&path, mode).map_err(Error::io("create", &path))?;
        let temp = Temp {
            path,
            placed: false,
        };
        fill(&mut file, &temp.path)?;
        // The mode again: the umask may have taken bits off.
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
            .map_err(Error::io("chmod", &temp.path))?;
        file.sync_all().map_err(Error::io("sync", &temp.path))?;
        Ok(temp)
    }

    /// `dir/.<name>.tmp-<tag>` made a hard link to `target`, if the
    /// directory can hold one (`None` otherwise).
    pub fn link(dir: &Path, name: &str, tag: &str, target: &Path) -> Result<Option<Temp>> {
        let path = Temp::path(dir, name, tag);
        let linked = match hard_link(target, &path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                remove(&path)?;
                hard_link(target, &path)
            }
            r => r,
        };
        Ok(linked.ok().map(|()| Temp {
            path,
            placed: false,
        }))
    }

    /// The temporary name of `name` in `dir`.
    pub fn path(dir: &Path, name: &str, tag: &str) -> PathBuf {
        dir.join(format!(".{name}.tmp-{tag}"))
    }

    /// Rename over `dest`: whoever opens `dest` gets the old file or the
    /// new one, never a part; a process running the old one keeps it.
    pub fn rename_to(mut self, dest: &Path) -> Result<()> {
        skel::failpoint::hit("install/rename").map_err(|e| Error::Io {
            what: "rename",
            path: self.path.clone(),
            source: std::io::Error::other(e.msg),
        })?;
        std::fs::rename(&self.path, dest).map_err(Error::io("rename", &self.path))?;
        self.placed = true;
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A hard link `link` to `target` (the link itself where `target` is a
/// symlink: `linkat` without `AT_SYMLINK_FOLLOW`). The debug build's
/// failpoint `install/hard-link` fails it, as a filesystem without hard
/// links would.
pub fn hard_link(target: &Path, link: &Path) -> std::io::Result<()> {
    if skel::failpoint::hit("install/hard-link").is_err() {
        return Err(std::io::Error::from_raw_os_error(nix::libc::EPERM));
    }
    std::fs::hard_link(target, link)
}

fn remove(path: &Path) -> Result<()> {
    skel::statefile::remove(path)
        .map(drop)
        .map_err(Error::io("remove", path))
}

/// Copy `src`'s bytes into `dst`.
pub fn copy_into(src: &Path, dst: &mut File, dst_path: &Path) -> Result<()> {
    let mut from = File::open(src).map_err(Error::io("open", src))?;
    std::io::copy(&mut from, dst).map_err(Error::io("write", dst_path))?;
    dst.flush().map_err(Error::io("write", dst_path))
}

/// The SHA-256 of `path`'s content (following symlinks), hex.
pub fn digest(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(Error::io("read", path))?;
    sha256::hex_of_reader(&mut f).map_err(Error::io("read", path))
}

/// Whether `a` and `b` are one file (both resolved through symlinks).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
        _ => false,
    }
}

/// Keep `path` as `into` before it is replaced: a hard link (the very
/// file, or symlink, with its mode, owner and times), else a copy that
/// keeps a symlink a symlink and a file's mode and modification time.
pub fn back_up(path: &Path, into: &Path) -> Result<()> {
    if hard_link(path, into).is_ok() {
        return Ok(());
    }
    copy_keeping(path, into)
}

/// A copy of `path` as `into` that keeps a symlink a symlink and a file's
/// mode and modification time.
fn copy_keeping(path: &Path, into: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).map_err(Error::io("stat", path))?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).map_err(Error::io("readlink", path))?;
        return std::os::unix::fs::symlink(target, into).map_err(Error::io("symlink", into));
    }
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(meta.mode() & 0o7777)
        .open(into)
        .map_err(Error::io("create", into))?;
    copy_into(path, &mut out, into)?;
    let times =
        std::fs::FileTimes::new().set_modified(meta.modified().map_err(Error::io("stat", path))?);
    out.set_times(times)
        .map_err(Error::io("set times of", into))?;
    out.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(
        meta.mode() & 0o7777,
    ))
    .map_err(Error::io("chmod", into))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A symlink planted at the temporary name is replaced, never written
    /// through; a dropped temp file is gone; a renamed one is in place.
    #[test]
    fn temp_files_never_follow_a_planted_symlink() {
        let dir = testsupport::TempDir::new("temp");
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, Temp::path(dir.path(), "x", "t")).unwrap();
        let t = Temp::create(dir.path(), "x", "t", 0o755, |f, p| {
            f.write_all(b"new").map_err(Error::io("write", p))
        })
        .unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        drop(t);
        assert!(std::fs::symlink_metadata(Temp::path(dir.path(), "x", "t")).is_err());
        let t = Temp::create(dir.path(), "x", "t", 0o755, |f, p| {
            f.write_all(b"new").map_err(Error::io("write", p))
        })
        .unwrap();
        t.rename_to(&dir.join("x")).unwrap();
        assert_eq!(std::fs::read(dir.join("x")).unwrap(), b"new");
        let mode = std::fs::metadata(dir.join("x")).unwrap().mode();
        assert_eq!(mode & 0o7777, 0o755);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// A backup keeps a symlink a symlink and a file's mode and time.
    #[test]
    fn backups_keep_symlinks_and_modes() {
        let dir = testsupport::TempDir::new("backup");
        let file = dir.join("f");
        std::fs::write(&file, b"old").unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o750))
            .unwrap();
        std::os::unix::fs::symlink("/bin/true", dir.join("l")).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let f = File::options().write(true).open(&file).unwrap();
        f.set_times(std::fs::FileTimes::new().set_modified(old))
            .unwrap();
        // Linked where the directory allows it, else copied.
        for (how, bak) in [
            (back_up as fn(&Path, &Path) -> Result<()>, ".bak"),
            (copy_keeping, ".copy"),
        ] {
            how(&file, &dir.join(&format!("f{bak}"))).unwrap();
            how(&dir.join("l"), &dir.join(&format!("l{bak}"))).unwrap();
            assert_eq!(std::fs::read(dir.join(&format!("f{bak}"))).unwrap(), b"old");
            let m = std::fs::metadata(dir.join(&format!("f{bak}"))).unwrap();
            assert_eq!(
                (m.mode() & 0o7777, m.modified().unwrap()),
                (0o750, old),
                "{bak}"
            );
            let l = dir.join(&format!("l{bak}"));
            assert_eq!(std::fs::read_link(l).unwrap(), Path::new("/bin/true"));
        }
        let copied = std::fs::metadata(dir.join("f.copy")).unwrap();
        assert_ne!(copied.ino(), std::fs::metadata(&file).unwrap().ino());
    }
}
