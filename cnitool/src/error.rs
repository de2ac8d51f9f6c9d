//! cnitool's one error type. Every failure carries a CNI error code (the
//! plugin's own when a plugin reported one) for the JSON printed on stdout,
//! and a [`Kind`] that selects the process exit status.

use std::fmt;

use skel::code;

/// What failed, which decides the exit status of the `cnitool` binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plugin reported an error, could not be run, timed out, crashed or
    /// printed something that is not a result; or STATUS says "not ready".
    Plugin,
    /// Bad command line, flag or environment value.
    Usage,
    /// The network configuration could not be found, loaded or validated,
    /// or a plugin it names is missing or does not speak its version.
    Config,
    /// The result cache could not be read or written.
    Cache,
}

impl Kind {
    /// The documented exit status for this kind of failure.
    pub fn exit_code(self) -> i32 {
        match self {
            Kind::Plugin => 1,
            Kind::Usage => 2,
            Kind::Config => 3,
            Kind::Cache => 4,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    /// CNI error code: the plugin's, or the closest spec code.
    pub code: u32,
    pub msg: String,
    pub details: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: Kind, code: u32, msg: impl Into<String>) -> Error {
        Error {
            kind,
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    pub fn usage(msg: impl Into<String>) -> Error {
        Error::new(Kind::Usage, code::INVALID_ENVIRONMENT, msg)
    }

    pub fn config(msg: impl Into<String>) -> Error {
        Error::new(Kind::Config, code::INVALID_NETWORK_CONFIG, msg)
    }

    pub fn cache(msg: impl Into<String>) -> Error {
        Error::new(Kind::Cache, code::IO_FAILURE, msg)
    }

    pub fn plugin(code: u32, msg: impl Into<String>) -> Error {
        Error::new(Kind::Plugin, code, msg)
    }

    /// A validation error from skel (container ID, interface, network name).
    pub fn from_skel(kind: Kind, e: skel::Error) -> Error {
        Error {
            kind,
            code: e.code,
            msg: e.msg,
            details: e.details,
        }
    }

    /// Prefix the message with what was being done.
    pub fn context(mut self, what: impl fmt::Display) -> Error {
        self.msg = format!("{what}: {}", self.msg);
        self
    }

    /// The error as JSON, in the shape plugins use on stdout.
    pub fn to_json(&self) -> String {
        skel::Error::with_details(self.code, self.msg.clone(), self.details.clone()).to_json()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.msg)?;
        if !self.details.is_empty() {
            write!(f, " ({})", self.details)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
