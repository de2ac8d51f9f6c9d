//! `dhcp daemon`: the long-running half, with an entry point of its own
//! (the one-shot plugin frame of skel is not for it).
//!
//! Start-up: flags, pidfile, the state directory (locked), the socket
//! (systemd's or bound here), then the leases of the store are taken up
//! again. The main thread waits for connections and for SIGTERM/SIGINT
//! (on a signalfd, so nothing runs in a signal handler); each connection
//! is served on a thread of its own, each lease is kept by one. On a
//! signal the daemon removes its socket (only if it bound it) and its
//! pidfile and exits; leases are neither released nor lost: the next
//! daemon resumes them from the store.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use crate::client::Params;
use crate::error::{Error, Result};
use crate::flags::{self, Flags, Parsed};
use crate::lease::Ctx;
use crate::listener::Listener;
use crate::log::log;
use crate::rpc;
use crate::service::Service;
use crate::store::Store;

/// A connection idle this long (no request, or a peer that does not
/// read) is closed.
const IDLE: Duration = Duration::from_secs(60);
/// At most this many connections are served at once; more are closed.
const MAX_CONNECTIONS: usize = 1024;
const CONNECTION_STACK: usize = 512 << 10;

/// Run the daemon with the arguments after `daemon`; the exit code.
pub fn main(args: &[String]) -> i32 {
    let flags = match flags::parse(args) {
        Ok(Parsed::Run(f)) => f,
        Ok(Parsed::Help) => {
            eprint!("{}", flags::USAGE);
            return 0;
        }
        Err(e) => {
            eprint!("{e}\n{}", flags::USAGE);
            return 2;
        }
    };
    match run(&flags) {
        Ok(()) => 0,
        Err(e) => {
            log(e);
            1
        }
    }
}

fn prefixed(prefix: &str, path: &Path) -> PathBuf {
    PathBuf::from(format!("{prefix}{}", path.display()))
}

fn run(flags: &Flags) -> Result<()> {
    // Before any thread exists, so that every thread inherits the mask
    // and the signals wait on the signalfd.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals
        .thread_block()
        .map_err(|e| Error::Io(format!("block signals: {}", skel::errno_text(e))))?;
    let sfd = SignalFd::with_flags(&signals, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| Error::Io(format!("signalfd: {}", skel::errno_text(e))))?;

    let pidfile = match &flags.pidfile {
        Some(p) => Some(write_pidfile(p)?),
        None => None,
    };
    let store = Store::open(&prefixed(&flags.hostprefix, &flags.statedir))?;
    let listener = Listener::open(&prefixed(&flags.hostprefix, &flags.socketpath))?;
    listener
        .socket
        .set_nonblocking(true)
        .map_err(|e| Error::Io(format!("listener: {}", skel::io_text(&e))))?;
    let params = Params {
        timeout: flags.timeout,
        resend_max: flags.resendmax,
        resend_timeout: flags.resendtimeout,
        broadcast: flags.broadcast,
    };
    let ctx = Arc::new(Ctx::new(params, store));
    let service = Arc::new(Service::new(ctx, flags.hostprefix.clone()));
    let resumed = service.resume();
    log(format!(
        "dhcp daemon listening on {}{}, {resumed} lease{} resumed from {}",
        if listener.activated() {
            "systemd's socket for "
        } else {
            ""
        },
        prefixed(&flags.hostprefix, &flags.socketpath).display(),
        if resumed == 1 { "" } else { "s" },
        service.ctx.store.dir().display()
    ));

    serve(&listener, &sfd, &service);

    listener.remove();
    if let Some(p) = pidfile {
        remove_pidfile(&p);
    }
    log("dhcp daemon stopped");
    Ok(())
}

/// Accept connections until a signal arrives.
fn serve(listener: &Listener, sfd: &SignalFd, service: &Arc<Service>) {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let mut fds = [
            PollFd::new(listener.socket.as_fd(), PollFlags::POLLIN),
            PollFd::new(sfd.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                log(format!("poll: {}", skel::errno_text(e)));
                return;
            }
        }
        if fds[1].any().unwrap_or(false) {
            if let Ok(Some(sig)) = sfd.read_signal() {
                log(format!("signal {}: shutting down", sig.ssi_signo));
            }
            return;
        }
        let stream = match listener.socket.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => {
                log(format!("accept: {}", skel::io_text(&e)));
                // Out of descriptors, say: do not spin.
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if active.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            log("too many connections: closing one");
            continue;
        }
        let _ = stream.set_nonblocking(false);
        active.fetch_add(1, Ordering::Relaxed);
        let (service, active_c) = (Arc::clone(service), Arc::clone(&active));
        let started = std::thread::Builder::new()
            .name("rpc".into())
            .stack_size(CONNECTION_STACK)
            .spawn(move || {
                let _ = rpc::serve(stream, &*service, IDLE);
                active_c.fetch_sub(1, Ordering::Relaxed);
            });
        if let Err(e) = started {
            active.fetch_sub(1, Ordering::Relaxed);
            log(format!("cannot serve a connection: {e}"));
        }
    }
}

/// Write our pid to `path` (absolute, as the reference requires).
fn write_pidfile(path: &Path) -> Result<PathBuf> {
    let quoted = skel::gojson::quote(&path.display().to_string());
    if !path.is_absolute() {
        return Err(Error::Config(format!(
            "Error writing pidfile {quoted}: path not absolute"
        )));
    }
    // A state file as any other (`skel::statefile`): written to a fresh
    // temporary file beside it and renamed, never through a planted link.
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(d), Some(n)) => (d, n.to_string_lossy()),
        _ => {
            return Err(Error::Config(format!(
                "Error writing pidfile {quoted}: not a file name"
            )));
        }
    };
    let pid = std::process::id().to_string();
    skel::statefile::write(dir, &name, &format!(".{name}.tmp"), pid.as_bytes(), 0o644).map_err(
        |e| {
            Error::Io(format!(
                "Error writing pidfile {quoted}: {}",
                skel::io_text(&e)
            ))
        },
    )?;
    Ok(path.to_path_buf())
}

/// Remove the pidfile if it still holds our pid (a successor's is not
/// ours to remove); a link there is not followed.
fn remove_pidfile(path: &Path) {
    let ours = std::process::id().to_string();
    if skel::statefile::read_small(path, 64)
        .is_some_and(|s| String::from_utf8_lossy(&s).trim() == ours)
    {
        let _ = skel::statefile::remove(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pidfile is a state file: a link planted at its name or at its
    /// temporary name is replaced, never written through; it is removed
    /// only while it holds our pid.
    #[test]
    fn the_pidfile_never_follows_a_planted_link() {
        let dir = testsupport::TempDir::new("pidfile");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let pid = dir.join("d.pid");
        for planted in [pid.clone(), dir.join(".d.pid.tmp")] {
            std::os::unix::fs::symlink(&victim, &planted).unwrap();
            write_pidfile(&pid).unwrap();
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
            assert!(!std::fs::symlink_metadata(&pid).unwrap().is_symlink());
            assert_eq!(
                std::fs::read_to_string(&pid).unwrap(),
                std::process::id().to_string()
            );
            remove_pidfile(&pid);
            assert!(!pid.exists());
            assert!(!dir.join(".d.pid.tmp").exists());
        }
        // A successor's pidfile is not ours to remove.
        std::fs::write(&pid, "1").unwrap();
        remove_pidfile(&pid);
        assert!(pid.exists());
    }
}
