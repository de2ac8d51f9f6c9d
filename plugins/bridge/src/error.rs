//! The plugin's error: a CNI code and a message, converted to
//! [`skel::Error`] at the skel boundary.

use std::fmt;

use skel::code;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: u32,
    pub msg: String,
    /// Kept from a delegated plugin's error.
    pub details: String,
}

impl Error {
    pub fn new(code: u32, msg: impl Into<String>) -> Error {
        Error {
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    /// A failed operation (code 999, like every plain error of the reference).
    pub fn internal(msg: impl Into<String>) -> Error {
        Error::new(code::INTERNAL, msg)
    }

    /// An invalid configuration value or combination (code 7).
    pub fn config(msg: impl Into<String>) -> Error {
        Error::new(code::INVALID_NETWORK_CONFIG, msg)
    }

    /// Undecodable input (code 6).
    pub fn decode(msg: impl Into<String>) -> Error {
        Error::new(code::DECODING_FAILURE, msg)
    }

    /// Prefix the message with what was being done.
    pub fn context(mut self, what: impl fmt::Display) -> Error {
        self.msg = format!("{what}: {}", self.msg);
        self
    }

    /// Several independent failures (DEL, GC) reported together: the first
    /// error's code, all messages joined with `; `.
    pub fn join(errors: Vec<Error>) -> Result<(), Error> {
        let mut iter = errors.into_iter();
        let Some(first) = iter.next() else {
            return Ok(());
        };
        let mut out = first;
        for e in iter {
            out.msg.push_str("; ");
            out.msg.push_str(&e.msg);
        }
        Err(out)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Error {}

impl From<skel::Error> for Error {
    fn from(e: skel::Error) -> Error {
        Error {
            code: e.code,
            msg: e.msg,
            details: e.details,
        }
    }
}

impl From<cni_net::Error> for Error {
    fn from(e: cni_net::Error) -> Error {
        Error::internal(e.to_string())
    }
}

impl From<Error> for skel::Error {
    fn from(e: Error) -> skel::Error {
        skel::Error::with_details(e.code, e.msg, e.details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_keeps_every_message() {
        assert_eq!(Error::join(vec![]), Ok(()));
        let e = Error::join(vec![Error::internal("a"), Error::config("b")]).unwrap_err();
        assert_eq!(e, Error::internal("a; b"));
    }
}
