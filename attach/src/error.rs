//! The error of the main plugins and of this crate: skel's CNI error (code,
//! message, and the details of a delegated plugin's error), wrapped so that
//! `cni-net` and `cni-firewall` failures convert into it here, at the
//! plugin boundary, as code 999 like every plain error of the reference
//! (an invalid firewall setting as 7). Neither crate knows CNI codes.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// A CNI error of a main plugin; reads and writes like [`skel::Error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub skel::Error);

impl Error {
    /// See [`skel::Error::internal`].
    pub fn internal(msg: impl Into<String>) -> Error {
        Error(skel::Error::internal(msg))
    }

    /// See [`skel::Error::config`].
    pub fn config(msg: impl Into<String>) -> Error {
        Error(skel::Error::config(msg))
    }

    /// See [`skel::Error::decode`].
    pub fn decode(msg: impl Into<String>) -> Error {
        Error(skel::Error::decode(msg))
    }

    /// See [`skel::Error::context`].
    pub fn context(self, what: impl fmt::Display) -> Error {
        Error(self.0.context(what))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Deref for Error {
    type Target = skel::Error;
    fn deref(&self) -> &skel::Error {
        &self.0
    }
}

impl DerefMut for Error {
    fn deref_mut(&mut self) -> &mut skel::Error {
        &mut self.0
    }
}

impl From<skel::Error> for Error {
    fn from(e: skel::Error) -> Error {
        Error(e)
    }
}

/// Every namespace, netlink or nftables failure is a plain error (999),
/// its message the `cni-net` error's text.
impl From<cni_net::Error> for Error {
    fn from(e: cni_net::Error) -> Error {
        Error::internal(e.to_string())
    }
}

/// A firewall failure is a plain error (999), except an invalid
/// firewall configuration (an unknown backend), which is code 7 like every
/// other invalid key of the plugins.
impl From<cni_firewall::Error> for Error {
    fn from(e: cni_firewall::Error) -> Error {
        match e.kind() {
            cni_firewall::ErrorKind::Invalid => Error::config(e.to_string()),
            _ => Error::internal(e.to_string()),
        }
    }
}

impl From<Error> for skel::Error {
    fn from(e: Error) -> skel::Error {
        e.0
    }
}

/// Several independent failures (DEL, GC) reported together
/// ([`skel::error::join`]).
pub fn join(errors: Vec<Error>) -> Result<(), Error> {
    skel::error::join(errors.into_iter().map(|e| e.0).collect()).map_err(Error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_keeps_the_first_code() {
        let e = join(vec![Error::config("a"), Error::internal("b")]).unwrap_err();
        assert_eq!(
            (e.code, e.msg.as_str()),
            (skel::code::INVALID_NETWORK_CONFIG, "a; b")
        );
    }

    #[test]
    fn firewall_errors_are_internal_unless_the_setting_is_invalid() {
        let invalid = Error::from(cni_firewall::Error::invalid("unknown ipmasq backend \"x\""));
        assert_eq!(invalid, Error::config("unknown ipmasq backend \"x\""));
        let failed = Error::from(cni_firewall::Error::failed("set up ip masquerade: boom"));
        assert_eq!(failed.code, skel::code::INTERNAL);
    }

    #[test]
    fn net_errors_are_internal_with_their_text() {
        let n = cni_net::Error::errno("find link eth9", cni_net::Errno::ENODEV);
        let e = skel::Error::from(Error::from(n));
        assert_eq!(e.code, skel::code::INTERNAL);
        assert_eq!(e.msg, "find link eth9: no such device");
    }
}
