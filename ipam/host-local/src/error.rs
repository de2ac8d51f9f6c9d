//! The crate's error type, mapped to a CNI error at the skel boundary.
//!
//! The reference reports every host-local failure as a plain Go error, i.e.
//! code 999; we keep that, and use a specific code only where the spec has
//! one (STATUS: 50, invalid network name: 7).

use std::fmt;
use std::io;
use std::path::Path;

#[derive(Debug)]
pub enum Error {
    /// Bad config, CNI_ARGS or allocation failure: code 999, as the reference.
    Config(String),
    /// A file-system operation failed.
    Io(String),
    /// No address left in a range set (STATUS): code 50.
    Unavailable(String),
    /// An error that already carries its CNI code.
    Cni(skel::Error),
}

impl Error {
    pub fn config(msg: impl Into<String>) -> Error {
        Error::Config(msg.into())
    }

    /// `<op> <path>: <errno text>`, in Go's wording (`open /x: no such file
    /// or directory`).
    pub fn io(op: &str, path: &Path, e: &io::Error) -> Error {
        Error::Io(format!("{op} {}: {}", path.display(), skel::io_text(e)))
    }

    /// Prefix the message with what was being done.
    pub fn context(self, what: impl fmt::Display) -> Error {
        match self {
            Error::Config(m) => Error::Config(format!("{what}: {m}")),
            Error::Io(m) => Error::Io(format!("{what}: {m}")),
            Error::Unavailable(m) => Error::Unavailable(format!("{what}: {m}")),
            Error::Cni(e) => Error::Cni(e.context(what)),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) | Error::Io(m) | Error::Unavailable(m) => f.write_str(m),
            Error::Cni(e) => write!(f, "{e}"),
        }
    }
}

impl From<Error> for skel::Error {
    fn from(e: Error) -> skel::Error {
        match e {
            Error::Config(m) | Error::Io(m) => skel::Error::internal(m),
            Error::Unavailable(m) => skel::Error::new(skel::code::PLUGIN_NOT_AVAILABLE, m),
            Error::Cni(e) => e,
        }
    }
}
