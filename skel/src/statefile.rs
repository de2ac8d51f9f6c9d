//! State files: what plugins write as root under their `dataDir`
//! (`/var/lib/cni/...`, `/run/cni/...`), the one way to write, lock and
//! read them.
//!
//! - **A planted symbolic link is never followed.** Whoever can write in a
//!   state directory could otherwise make root write to any file through
//!   a link at a name we are known to use. Files are opened with
//!   `O_NOFOLLOW`; a temporary file is created with `O_CREAT|O_EXCL`
//!   (which never follows a link and never reuses a file), and `rename`
//!   replaces whatever is at the final name, a link included, without
//!   following it. A link where a file of ours should be is removed and
//!   the file made afresh. A directory we create under `dataDir` that
//!   turns out to be a link is refused ([`create_dir`]); `dataDir` itself
//!   may be one (the administrator's choice).
//! - **A crash leaves nothing that DEL or GC cannot find.** A temporary
//!   file's name is fixed by the caller for each final file (not by the
//!   process), so DEL and GC of the attachment remove one a killed call
//!   left ([`remove`]), and the next write replaces it.
//! - **Locks are waited for within [`crate::deadline::timeout`]** ([`lock`]):
//!   the error names the lock and the process holding it.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::Path;

use nix::libc;

/// How often a name is freed and created again when something keeps
/// taking it between the two.
const CREATE_ATTEMPTS: usize = 3;

/// Create `path` and its missing parents (`mode`); the last component
/// must be a directory, not a link to one.
pub fn create_dir(path: &Path, mode: u32) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(mode).create(path)?;
    if fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(io::Error::other(
            "is a symbolic link, not a directory (refusing to follow it)",
        ));
    }
    Ok(())
}

/// Write `bytes` to `dir/name` atomically: to the temporary file
/// `dir/tmp` (mode `mode`, created anew: whatever was at that name, a
/// file a killed call left or a link, is removed first), then renamed
/// into place. On failure the temporary file is removed.
pub fn write(dir: &Path, name: &str, tmp: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = dir.join(tmp);
    let mut f = create_new(&tmp, mode)?;
    let written = f.write_all(bytes).and_then(|()| {
        crate::failpoint::pass("statefile/temp-written");
        fs::rename(&tmp, dir.join(name))
    });
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// A new file at `path`, never an existing one nor through a link: what is
/// at `path` is removed first.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    let mut last = None;
    for _ in 0..CREATE_ATTEMPTS {
        match options(mode).create_new(true).open(path) {
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                remove(path)?;
                last = Some(e);
            }
            other => return other,
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(ErrorKind::AlreadyExists)))
}

/// Write, not truncate: `O_NOFOLLOW`, no `O_TRUNC`.
fn options(mode: u32) -> OpenOptions {
    let mut o = OpenOptions::new();
    o.write(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    o
}

/// Open `path` with `open`, created with `mode` when missing; a link in
/// its place is removed and the file created.
fn open_own(path: &Path, open: impl Fn() -> io::Result<File>) -> io::Result<File> {
    match open() {
        // ELOOP: the last component is a link (O_NOFOLLOW).
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            remove(path)?;
            open()
        }
        other => other,
    }
}

/// Overwrite the small file `path` in place (created with `mode` when
/// missing), without truncating it to zero first: a shorter content is
/// padded with spaces when `pad`, else the file is cut after it. Not
/// atomic: for hints whose torn value does no harm.
pub fn write_in_place(path: &Path, bytes: &[u8], pad: bool, mode: u32) -> io::Result<()> {
    let f = open_own(path, || options(mode).create(true).open(path))?;
    let old = f.metadata()?.len();
    f.write_all_at(bytes, 0)?;
    let len = bytes.len() as u64;
    if old > len {
        if pad {
            let spaces = vec![b' '; usize::try_from(old - len).unwrap_or(0)];
            f.write_all_at(&spaces, len)?;
        } else {
            f.set_len(len)?;
        }
    }
    Ok(())
}

/// The lock file `path` (created empty with `mode` when missing), open
/// for [`lock`].
pub fn open_lock(path: &Path, mode: u32) -> io::Result<File> {
    open_own(path, || {
        options(mode)
            .read(true)
            .create(true)
            .truncate(false)
            .open(path)
    })
}

/// Take `file`'s exclusive `flock` (what the reference's plugins take on
/// their lock files, so either suite's calls exclude the other's),
/// waiting at most [`crate::deadline::timeout`]. When it ends, the error
/// ([`ErrorKind::TimedOut`]) says who holds the lock.
pub fn lock(file: &File) -> io::Result<()> {
    let mut failed = None;
    let got = crate::deadline::retry(crate::deadline::from_now(), || match file.try_lock() {
        Ok(()) => Some(true),
        Err(fs::TryLockError::WouldBlock) => None,
        Err(fs::TryLockError::Error(e)) => {
            failed = Some(e);
            Some(false)
        }
    });
    match (got, failed) {
        (Some(true), _) => Ok(()),
        (_, Some(e)) => Err(e),
        _ => Err(io::Error::new(
            ErrorKind::TimedOut,
            format!(
                "still held after {}{}",
                crate::deadline::describe(crate::deadline::timeout()),
                holder(file).map(|h| format!(" by {h}")).unwrap_or_default()
            ),
        )),
    }
}

/// The process holding a `flock` on `file`, from `/proc/locks`:
/// `process 123 (host-local)`.
fn holder(file: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata().ok()?;
    let (major, minor) = (libc::major(m.dev()), libc::minor(m.dev()));
    let inode = format!("{major:02x}:{minor:02x}:{}", m.ino());
    let locks = fs::read_to_string("/proc/locks").ok()?;
    // "1: FLOCK  ADVISORY  WRITE 123 00:2a:456 0 EOF"
    let pid = locks.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        (w.get(1) == Some(&"FLOCK") && w.get(5) == Some(&inode.as_str()))
            .then(|| w.get(4).copied())?
    })?;
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    Some(format!("process {pid} ({})", comm.trim()))
}

/// Open the state file `path` for reading, not through a link, and
/// without blocking (a FIFO put there cannot stall the call).
pub fn open_read(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// At most `max` bytes of the regular file `path` (not through a link);
/// `None` when it is missing, not a regular file, unreadable or longer.
pub fn read_small(path: &Path, max: usize) -> Option<Vec<u8>> {
    read_bounded(open_read(path).ok()?, max)
}

/// [`read_small`], through a link at `path` (for files the reference
/// reads so: a lease that is a link is a lease, and reading harms no
/// file), still without blocking on a FIFO.
pub fn read_small_following(path: &Path, max: usize) -> Option<Vec<u8>> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    read_bounded(f, max)
}

fn read_bounded(f: File, max: usize) -> Option<Vec<u8>> {
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        match (&f).read(&mut chunk) {
            Ok(0) => return Some(buf),
            Ok(n) if buf.len() + n <= max => buf.extend_from_slice(&chunk[..n]),
            Ok(_) => return None,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Remove the file (or link) `path`; `false` when there was none. A
/// `dataDir` that is not a directory holds nothing to remove.
pub fn remove(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests;
