//! The plugin's error and its CNI code.
//!
//! The reference reports every tuning failure as a plain Go error (code
//! 999); so do we, in its words where it has them. Errors from skel keep
//! their code.

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// A refusal or failure with the reference's (or our) wording.
    Config(String),
    /// A namespace or netlink operation failed.
    Net(cni_net::Error),
    /// An error that already carries its CNI code.
    Cni(skel::Error),
}

impl Error {
    pub fn config(msg: impl Into<String>) -> Error {
        Error::Config(msg.into())
    }

    /// Prefix the message with what was being done.
    pub fn context(self, what: impl fmt::Display) -> Error {
        match self {
            Error::Config(m) => Error::Config(format!("{what}: {m}")),
            Error::Net(e) => Error::Net(e.context(what)),
            Error::Cni(e) => Error::Cni(e.context(what)),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => f.write_str(m),
            Error::Net(e) => write!(f, "{e}"),
            Error::Cni(e) => write!(f, "{e}"),
        }
    }
}

impl From<cni_net::Error> for Error {
    fn from(e: cni_net::Error) -> Error {
        Error::Net(e)
    }
}

impl From<skel::Error> for Error {
    fn from(e: skel::Error) -> Error {
        Error::Cni(e)
    }
}

impl From<skel::gojson::DecodeError> for Error {
    fn from(e: skel::gojson::DecodeError) -> Error {
        Error::Config(e.to_string())
    }
}

/// At the plugin boundary ([`cni_attach::Chained`]): the same code and
/// text as [`skel::Error`]'s.
impl From<Error> for cni_attach::Error {
    fn from(e: Error) -> cni_attach::Error {
        cni_attach::Error(e.into())
    }
}

impl From<Error> for skel::Error {
    fn from(e: Error) -> skel::Error {
        match e {
            Error::Cni(e) => e,
            other => skel::Error::internal(other.to_string()),
        }
    }
}
