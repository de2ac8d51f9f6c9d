//! The one error type of this crate: what was being done, to which object,
//! and why (an errno from the kernel, or a sentence when there is none).

use std::fmt;

pub use nix::errno::Errno;

/// A failed namespace or netlink operation, e.g.
/// `create veth pair eth0/veth1a2b3c4d: file exists`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The operation and its object (`set lo up`).
    op: String,
    /// The kernel's answer, when it gave one.
    errno: Option<Errno>,
    /// Text used instead of the errno wording (`dump interrupted 5 times`).
    detail: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// `op` failed with `errno`.
    pub fn errno(op: impl Into<String>, errno: Errno) -> Error {
        Error {
            op: op.into(),
            errno: Some(errno),
            detail: String::new(),
        }
    }

    /// `op` failed for a reason that has no errno.
    pub fn other(op: impl Into<String>, detail: impl Into<String>) -> Error {
        Error {
            op: op.into(),
            errno: None,
            detail: detail.into(),
        }
    }

    /// `op` failed with an I/O error (the errno is kept when there is one).
    pub fn io(op: impl Into<String>, e: &std::io::Error) -> Error {
        match e.raw_os_error() {
            Some(n) => Error::errno(op, Errno::from_raw(n)),
            None => Error::other(op, e.to_string()),
        }
    }

    /// Prefix the operation with what the caller was doing.
    pub fn context(mut self, what: impl fmt::Display) -> Error {
        self.op = format!("{what}: {}", self.op);
        self
    }

    /// The errno, if the kernel gave one.
    pub fn code(&self) -> Option<Errno> {
        self.errno
    }

    /// Whether the kernel answered `errno`.
    pub fn is(&self, errno: Errno) -> bool {
        self.errno == Some(errno)
    }

    /// `EEXIST`: the object is already there.
    pub fn is_exists(&self) -> bool {
        self.is(Errno::EEXIST)
    }

    /// The object is not there: `ENODEV` (links), `ENOENT`, `ESRCH`
    /// (routes) or `EADDRNOTAVAIL` (addresses).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self.errno,
            Some(Errno::ENODEV | Errno::ENOENT | Errno::ESRCH | Errno::EADDRNOTAVAIL)
        )
    }

    /// The operation and object part of the message.
    pub fn op(&self) -> &str {
        &self.op
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errno {
            Some(e) if self.detail.is_empty() => write!(f, "{}: {}", self.op, skel::errno_text(e)),
            _ => write!(f, "{}: {}", self.op, self.detail),
        }
    }
}

impl std::error::Error for Error {}

/// At the plugin boundary every namespace/netlink failure is a plain
/// error, which the reference reports as code 999.
impl From<Error> for skel::Error {
    fn from(e: Error) -> skel::Error {
        skel::Error::internal(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_go() {
        let e = Error::errno("create veth pair eth0/veth1a2b3c4d", Errno::EEXIST);
        assert_eq!(
            e.to_string(),
            "create veth pair eth0/veth1a2b3c4d: file exists"
        );
        assert!(e.is_exists());
        assert!(!e.is_not_found());
        let e = Error::errno("find link eth9", Errno::ENODEV).context("check");
        assert_eq!(e.to_string(), "check: find link eth9: no such device");
        assert!(e.is_not_found());
        let e = Error::other("list links", "dump interrupted");
        assert_eq!(e.to_string(), "list links: dump interrupted");
        assert_eq!(e.code(), None);
        let s: skel::Error = e.into();
        assert_eq!(s.code, skel::code::INTERNAL);
    }
}
