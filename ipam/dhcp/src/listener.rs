//! The daemon's listening socket: the one systemd passes (socket
//! activation, `LISTEN_PID`/`LISTEN_FDS`), else one bound at the socket
//! path. A socket file left by a daemon that died is replaced; anything
//! else at the path (a live daemon, a file that is no socket) is not
//! touched. At exit the path is removed only if it is still the socket
//! this daemon bound: never systemd's, never a successor's.

use std::fs::{self, DirBuilder};
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use nix::sys::stat::{SFlag, fstat};

use crate::error::{Error, Result};

/// The first descriptor systemd passes.
const LISTEN_FDS_START: i32 = 3;

/// Where the listener came from, and what to clean up at exit.
pub struct Listener {
    pub socket: UnixListener,
    /// The path we bound and the inode of the socket there; `None` for
    /// systemd's socket, which systemd owns.
    bound: Option<(PathBuf, (u64, u64))>,
}

impl Listener {
    /// Systemd's socket if it passed one, else a socket bound at `path`.
    pub fn open(path: &Path) -> Result<Listener> {
        if let Some(socket) = from_systemd()? {
            return Ok(Listener {
                socket,
                bound: None,
            });
        }
        let socket = bind(path)?;
        let meta = fs::symlink_metadata(path).map_err(|e| Error::io("stat", path, &e))?;
        Ok(Listener {
            socket,
            bound: Some((path.to_path_buf(), (meta.dev(), meta.ino()))),
        })
    }

    /// Whether systemd passed the socket.
    pub fn activated(&self) -> bool {
        self.bound.is_none()
    }

    /// Remove the socket file if it is still the one we bound.
    pub fn remove(&self) {
        let Some((path, id)) = &self.bound else {
            return;
        };
        if let Ok(m) = fs::symlink_metadata(path)
            && (m.dev(), m.ino()) == *id
        {
            let _ = fs::remove_file(path);
        }
    }
}

/// go-systemd's `activation.Listeners`: descriptors passed to this very
/// process (`LISTEN_PID`), at most one here. The variables are removed
/// so that nothing this process starts takes them for its own.
fn from_systemd() -> Result<Option<UnixListener>> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    // SAFETY: called at start-up, before the daemon starts any thread.
    unsafe {
        std::env::remove_var("LISTEN_PID");
        std::env::remove_var("LISTEN_FDS");
        std::env::remove_var("LISTEN_FDNAMES");
    }
    let ours = pid.and_then(|p| p.parse::<u32>().ok()) == Some(std::process::id());
    let n: i32 = match fds.and_then(|n| n.parse().ok()) {
        Some(n) if ours && n > 0 => n,
        _ => return Ok(None),
    };
    if n > 1 {
        return Err(Error::Config(format!(
            "Too many ({n}) FDs passed through socket activation"
        )));
    }
    // SAFETY: only looked at here; owned below once known to be a socket.
    let passed = unsafe { BorrowedFd::borrow_raw(LISTEN_FDS_START) };
    match fstat(passed) {
        Ok(st) if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFSOCK => {}
        _ => return Err(Error::Config("LISTEN_FDS=1 but no FD found".into())),
    }
    let _ = nix::fcntl::fcntl(
        passed,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    );
    // SAFETY: systemd hands this descriptor to us and nothing else in the
    // process uses it.
    let fd = unsafe { OwnedFd::from_raw_fd(LISTEN_FDS_START) };
    Ok(Some(UnixListener::from(fd)))
}

/// `listen unix <path>` with the reference's wording of failures, after
/// making the directory (0700) and clearing a stale socket.
fn bind(path: &Path) -> Result<UnixListener> {
    let fail = |e: &std::io::Error| {
        Error::Io(format!(
            "Error getting listener: listen unix {}: bind: {}",
            path.display(),
            skel::io_text(e)
        ))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io("Error getting listener: mkdir", dir, &e))?;
    }
    clear_stale(path)?;
    // Only root may connect, as the reference's socket (umask 022 makes
    // it srwxr-xr-x): the daemon acts in any namespace it is told to.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let bound = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    bound.map_err(|e| fail(&e))
}

/// A socket file nobody listens on is what a killed daemon leaves
/// (#760): remove it. A live one, or anything that is not a socket, is
/// left for bind to refuse.
fn clear_stale(path: &Path) -> Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Ok(());
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(Error::Io(format!(
            "Error getting listener: listen unix {}: bind: address already in use \
             (another dhcp daemon is listening there)",
            path.display()
        ))),
        Err(e) if e.raw_os_error() == Some(nix::libc::ECONNREFUSED) => {
            fs::remove_file(path).map_err(|e| Error::io("remove stale socket", path, &e))
        }
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_socket_is_replaced_a_live_one_is_not() {
        let dir = testsupport::TempDir::new("listener");
        let path = dir.join("sub/d.sock");
        let first = Listener::open(&path).unwrap();
        assert!(!first.activated());
        let mode = fs::metadata(dir.join("sub")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // A live daemon keeps its socket.
        let e = Listener::open(&path).err().unwrap();
        assert!(e.to_string().contains("address already in use"), "{e}");
        // Dead without cleanup: the next one takes over.
        drop(first);
        let second = Listener::open(&path).unwrap();
        second.remove();
        assert!(!path.exists());
    }

    #[test]
    fn only_our_own_socket_is_removed() {
        let dir = testsupport::TempDir::new("listener");
        let path = dir.join("d.sock");
        let first = Listener::open(&path).unwrap();
        // Another daemon replaced it meanwhile (ours was unlinked).
        fs::remove_file(&path).unwrap();
        let _second = UnixListener::bind(&path).unwrap();
        first.remove();
        assert!(path.exists());
    }

    #[test]
    fn a_file_that_is_no_socket_is_left_alone() {
        let dir = testsupport::TempDir::new("listener");
        let path = dir.join("d.sock");
        fs::write(&path, "precious").unwrap();
        let e = Listener::open(&path).err().unwrap();
        assert!(e.to_string().contains("address already in use"), "{e}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "precious");
    }
}
