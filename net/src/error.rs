//! The one error type of this crate: what was being done, to which object,
//! and why (an errno from the kernel, or a sentence when there is none).
//! Plugins map it to their CNI error at their own boundary: this crate sits
//! below the protocol layer and knows nothing of CNI codes.

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
    kind: ErrorKind,
}

/// What kind of failure an [`Error`] is, for callers that choose what to do
/// next by it rather than by its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The kernel refused or failed the operation, or the input was bad.
    Failed,
    /// The kernel has no nf_tables (no `NETLINK_NETFILTER`, no nf_tables
    /// subsystem, or no support for the table family or chain type used):
    /// a caller may fall back to another firewall backend.
    NftUnavailable,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// `op` failed with `errno`.
    pub fn errno(op: impl Into<String>, errno: Errno) -> Error {
        Error {
            op: op.into(),
            errno: Some(errno),
            detail: String::new(),
            kind: ErrorKind::Failed,
        }
    }

    /// `op` failed for a reason that has no errno.
    pub fn other(op: impl Into<String>, detail: impl Into<String>) -> Error {
        Error {
            op: op.into(),
            errno: None,
            detail: detail.into(),
            kind: ErrorKind::Failed,
        }
    }

    /// `op` failed with `errno` because nf_tables is not available.
    pub fn nft_unavailable(op: impl Into<String>, errno: Errno) -> Error {
        Error {
            kind: ErrorKind::NftUnavailable,
            ..Error::errno(op, errno)
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

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// nf_tables is not available in this kernel (see
    /// [`ErrorKind::NftUnavailable`]).
    pub fn is_nft_unavailable(&self) -> bool {
        self.kind == ErrorKind::NftUnavailable
    }
}

/// Go's lowercase wording of an errno (`no such file or directory`), which
/// the plugins' messages repeat byte for byte.
pub fn errno_text(e: Errno) -> String {
    match e {
        // nix words errno 95 after the BSD socket meaning; Linux (and Go)
        // say "operation not supported".
        Errno::EOPNOTSUPP => "operation not supported".to_string(),
        _ => {
            let desc = e.desc();
            let mut c = desc.chars();
            match c.next() {
                Some(f) => f.to_lowercase().chain(c).collect(),
                None => String::new(),
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errno {
            Some(e) if self.detail.is_empty() => write!(f, "{}: {}", self.op, errno_text(e)),
            _ => write!(f, "{}: {}", self.op, self.detail),
        }
    }
}

impl std::error::Error for Error {}

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
        assert_eq!(e.kind(), ErrorKind::Failed);
        let e = Error::nft_unavailable("open netfilter socket", Errno::EPROTONOSUPPORT);
        assert!(e.is_nft_unavailable());
        assert_eq!(
            e.to_string(),
            "open netfilter socket: protocol not supported"
        );
    }

    #[test]
    fn errno_wording_is_gos() {
        assert_eq!(errno_text(Errno::ENOENT), "no such file or directory");
        assert_eq!(errno_text(Errno::EOPNOTSUPP), "operation not supported");
        assert_eq!(errno_text(Errno::EEXIST), "file exists");
    }
}
