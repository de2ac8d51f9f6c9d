//! Checking `CNI_NETNS` before a plugin does anything.
//!
//! The reference checks whether `CNI_NETNS` is the plugin's own namespace
//! only *after* ADD or DEL ran, which is how a recycled `/proc/PID/ns/net`
//! once let loopback DEL take down the host's `lo`. For plugins that use
//! the namespace we open the path once, check the open file, and hand that
//! same file to the plugin ([`open`]), so the namespace that was checked is
//! the one that gets used; every other plugin gets the reference's check,
//! made before it runs ([`refuse_own`]).

use std::fs::File;
use std::os::unix::fs::MetadataExt;

use nix::sys::statfs::{FsType, fstatfs, statfs};

use crate::error::{Error, code};

const NSFS_MAGIC: i64 = 0x6e73_6673;
const PROC_SUPER_MAGIC: i64 = 0x9fa0;

/// What `CNI_NETNS` turned out to be.
#[derive(Debug, Default)]
pub enum Netns {
    /// `CNI_NETNS` was empty (or the plugin does not use namespaces).
    #[default]
    Unset,
    /// The path does not exist: the namespace is gone. DEL treats this as
    /// success; ADD and CHECK fail with [`Netns::file`]'s error.
    Missing(String),
    /// An open namespace file that is not the plugin's own namespace.
    Open { path: String, file: File },
}

impl Netns {
    /// The open namespace, or the error a plugin reports when it needs one.
    pub fn file(&self) -> Result<&File, Error> {
        match self {
            Netns::Open { file, .. } => Ok(file),
            Netns::Missing(path) => Err(Error::internal(format!(
                "failed to Statfs {path:?}: no such file or directory"
            ))),
            Netns::Unset => Err(Error::new(code::INVALID_ENVIRONMENT, "CNI_NETNS is empty")),
        }
    }
}

// The width of `f_type` differs between architectures.
#[allow(clippy::unnecessary_cast)]
fn is_ns_magic(t: FsType) -> bool {
    let t = t.0 as i64;
    t == NSFS_MAGIC || t == PROC_SUPER_MAGIC
}

/// Whether `path` exists on a filesystem that holds no namespaces (a
/// plain file, an unmounted bind-mount point).
pub fn is_other_fs(path: &str) -> bool {
    matches!(statfs(path), Ok(st) if !is_ns_magic(st.filesystem_type()))
}

/// Open and vet `path`. `allow_own` skips the own-namespace refusal
/// (`CNI_NETNS_OVERRIDE`).
pub fn open(path: &str, allow_own: bool) -> Result<Netns, Error> {
    if path.is_empty() {
        return Ok(Netns::Unset);
    }
    // statfs first: it never opens the file, so a FIFO or device cannot
    // block or be triggered, and ENOENT stays distinguishable.
    match statfs(path) {
        Ok(st) if is_ns_magic(st.filesystem_type()) => {}
        Ok(st) => {
            return Err(Error::new(
                code::INVALID_NETNS,
                format!("unknown FS magic on {path:?}: {:x}", st.filesystem_type().0),
            ));
        }
        Err(nix::errno::Errno::ENOENT) => return Ok(Netns::Missing(path.to_string())),
        Err(e) => {
            return Err(Error::new(
                code::INVALID_NETNS,
                format!("failed to Statfs {path:?}: {}", crate::errno_text(e)),
            ));
        }
    }
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Netns::Missing(path.to_string()));
        }
        Err(e) => {
            return Err(Error::new(
                code::INVALID_NETNS,
                format!("failed to open netns {path:?}: {}", crate::io_text(&e)),
            ));
        }
    };
    // Check the file we actually hold, in case the path changed under us.
    match fstatfs(&file) {
        Ok(st) if is_ns_magic(st.filesystem_type()) => {}
        _ => {
            return Err(Error::new(
                code::INVALID_NETNS,
                format!("{path:?} is not a network namespace"),
            ));
        }
    }
    if !allow_own {
        let theirs = file.metadata().map_err(|e| {
            Error::new(
                code::INVALID_NETNS,
                format!("failed to stat netns: {}", crate::io_text(&e)),
            )
        })?;
        refuse_if_own(&theirs)?;
    }
    Ok(Netns::Open {
        path: path.to_string(),
        file,
    })
}

/// The reference skel's check after ADD and DEL, made before the plugin
/// runs, for plugins that never open `CNI_NETNS`: refuse a path naming the
/// plugin's own namespace. A path that cannot be looked at (gone, empty,
/// not permitted) is not ours, as in the reference, so DEL after the
/// namespace vanished goes ahead. `stat` rather than `open`: it cannot
/// block on a FIFO.
pub fn refuse_own(path: &str) -> Result<(), Error> {
    if path.is_empty() {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Ok(theirs) => refuse_if_own(&theirs),
        Err(_) => Ok(()),
    }
}

fn refuse_if_own(theirs: &std::fs::Metadata) -> Result<(), Error> {
    let ours = std::fs::metadata("/proc/thread-self/ns/net")
        .or_else(|_| std::fs::metadata("/proc/self/ns/net"))
        .map_err(|e| {
            Error::new(
                code::INVALID_NETNS,
                format!("failed to stat own netns: {}", crate::io_text(&e)),
            )
        })?;
    if theirs.dev() == ours.dev() && theirs.ino() == ours.ino() {
        return Err(Error::new(
            code::INVALID_NETNS,
            "plugin's netns and netns from CNI_NETNS should not be the same",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_unset() {
        assert!(matches!(open("", false), Ok(Netns::Unset)));
    }

    #[test]
    fn missing_path_is_distinguishable() {
        let n = open("/nonexistent/cni-rs-test/ns", false).unwrap();
        assert!(matches!(n, Netns::Missing(_)));
        assert_eq!(
            n.file().unwrap_err().msg,
            "failed to Statfs \"/nonexistent/cni-rs-test/ns\": no such file or directory"
        );
    }

    #[test]
    fn regular_file_is_refused() {
        let e = open("/etc/hostname", false).unwrap_err();
        assert_eq!(e.code, code::INVALID_NETNS);
        assert!(
            e.msg.starts_with("unknown FS magic on \"/etc/hostname\""),
            "{}",
            e.msg
        );
    }

    #[test]
    fn refuse_own_compares_the_namespace_not_the_path() {
        for own in ["/proc/self/ns/net", "/proc/thread-self/ns/net"] {
            assert_eq!(refuse_own(own).unwrap_err().code, code::INVALID_NETNS);
        }
        let by_pid = format!("/proc/{}/ns/net", std::process::id());
        assert!(refuse_own(&by_pid).is_err());
        for other in [
            "",
            "/nonexistent/cni-rs-test/ns",
            "/etc/hostname",
            "/proc/self/ns/uts",
        ] {
            assert_eq!(refuse_own(other), Ok(()), "{other}");
        }
    }

    #[test]
    fn own_namespace_is_refused_unless_overridden() {
        let e = open("/proc/self/ns/net", false).unwrap_err();
        assert_eq!(
            e.msg,
            "plugin's netns and netns from CNI_NETNS should not be the same"
        );
        assert!(matches!(
            open("/proc/self/ns/net", true),
            Ok(Netns::Open { .. })
        ));
    }
}
