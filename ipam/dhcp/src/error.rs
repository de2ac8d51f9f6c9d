//! The crate's error type. The plugin maps it to a CNI error at the skel
//! boundary (code 999 like the reference's plain Go errors, 50 for
//! STATUS when the daemon is away); the daemon sends its text back to the
//! plugin as the RPC error.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A bad configuration, argument or flag.
    Config(String),
    /// The daemon could not be reached: `absent` when there is nobody to
    /// answer at all (no socket file, or nobody listening on it).
    Dial { msg: String, absent: bool },
    /// A call to the daemon failed (the daemon's own error, or a broken
    /// or silent connection).
    Call(String),
    /// A namespace, link or socket operation failed.
    Net(String),
    /// The DHCP exchange failed (no answer, refusal, bad reply).
    Dhcp(String),
    /// A file operation failed (state directory, pidfile, socket file).
    Io(String),
}

impl Error {
    /// `<op> <path>: <errno text>`, in Go's wording.
    pub fn io(op: &str, path: &std::path::Path, e: &std::io::Error) -> Error {
        Error::Io(format!("{op} {}: {}", path.display(), skel::io_text(e)))
    }

    /// Prefix the message with what was being done.
    pub fn context(self, what: impl fmt::Display) -> Error {
        let pre = |m: String| format!("{what}: {m}");
        match self {
            Error::Config(m) => Error::Config(pre(m)),
            Error::Dial { msg, absent } => Error::Dial {
                msg: pre(msg),
                absent,
            },
            Error::Call(m) => Error::Call(pre(m)),
            Error::Net(m) => Error::Net(pre(m)),
            Error::Dhcp(m) => Error::Dhcp(pre(m)),
            Error::Io(m) => Error::Io(pre(m)),
        }
    }

    fn msg(&self) -> &str {
        match self {
            Error::Config(m)
            | Error::Call(m)
            | Error::Net(m)
            | Error::Dhcp(m)
            | Error::Io(m)
            | Error::Dial { msg: m, .. } => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.msg())
    }
}

impl std::error::Error for Error {}

impl From<cni_net::Error> for Error {
    fn from(e: cni_net::Error) -> Error {
        Error::Net(e.to_string())
    }
}

impl From<Error> for skel::Error {
    fn from(e: Error) -> skel::Error {
        skel::Error::internal(e.msg())
    }
}

pub type Result<T> = std::result::Result<T, Error>;
