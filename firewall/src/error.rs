//! The one error type of this crate: a message that says what failed on
//! which object, and a [`ErrorKind`] callers decide by (fall back to
//! another backend, skip a backend that cannot hold rules, map to a CNI
//! code), never by the text.

use std::fmt;

use crate::backend::Backend;

/// A firewall failure, e.g. `add rule inet cni_plugins_masquerade
/// masq_checks: no such file or directory`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    msg: String,
    kind: ErrorKind,
    /// The D-Bus error (name, message), when firewalld (or the bus)
    /// answered a call with one.
    dbus: Option<Box<(String, String)>>,
}

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The backend was usable and refused or failed the operation.
    Failed,
    /// The configuration is invalid: an unknown backend, options of the
    /// other backend. Plugins report it as a configuration error.
    Invalid,
    /// The backend cannot be used on this node: its tool is not on `PATH`
    /// (iptables), the kernel has no nf_tables (nftables), there is no
    /// system bus or firewalld is not on it (firewalld). Nothing can have
    /// been installed through it.
    Unavailable(Backend),
    /// No backend is usable; the message names each one tried and why it
    /// failed.
    NoBackend,
    /// firewalld (or the bus) answered a call with a D-Bus error, named by
    /// [`Error::dbus_name`]; firewalld's own code (`INVALID_ZONE`) is
    /// [`Error::firewalld_code`].
    Dbus,
}

pub type Result<T> = std::result::Result<T, Error>;

/// The D-Bus error of every firewalld refusal; the code leads its message
/// ([`crate::firewalld::EXCEPTION`]).
pub(crate) const FIREWALLD_EXCEPTION: &str = "org.fedoraproject.FirewallD1.Exception";

impl Error {
    pub fn failed(msg: impl Into<String>) -> Error {
        Error {
            msg: msg.into(),
            kind: ErrorKind::Failed,
            dbus: None,
        }
    }

    pub fn invalid(msg: impl Into<String>) -> Error {
        Error {
            msg: msg.into(),
            kind: ErrorKind::Invalid,
            dbus: None,
        }
    }

    pub fn unavailable(backend: Backend, msg: impl Into<String>) -> Error {
        Error {
            msg: msg.into(),
            kind: ErrorKind::Unavailable(backend),
            dbus: None,
        }
    }

    /// None of `tried` works: `no firewall backend is usable (iptables:
    /// <why>; nftables: <why>)`.
    pub fn no_backend(tried: &[(Backend, Error)]) -> Error {
        let why: Vec<String> = tried.iter().map(|(b, e)| format!("{b}: {e}")).collect();
        Error {
            msg: format!("no firewall backend is usable ({})", why.join("; ")),
            kind: ErrorKind::NoBackend,
            dbus: None,
        }
    }

    /// A D-Bus error reply `name`, `message` to `what` (`failed to add
    /// the address ... to trusted zone`): [`ErrorKind::Dbus`], or `kind`
    /// when the caller knows better (firewalld not on the bus is
    /// unavailable).
    pub fn dbus(kind: ErrorKind, what: impl fmt::Display, name: &str, message: &str) -> Error {
        // As godbus words a D-Bus error: its message, else its name.
        let text = if message.is_empty() { name } else { message };
        Error {
            msg: format!("{what}: {text}"),
            kind,
            dbus: Some(Box::new((name.to_string(), message.to_string()))),
        }
    }

    /// The D-Bus error name of a refused call
    /// (`org.fedoraproject.FirewallD1.Exception`,
    /// `org.freedesktop.DBus.Error.AccessDenied`).
    pub fn dbus_name(&self) -> Option<&str> {
        self.dbus.as_ref().map(|d| d.0.as_str())
    }

    /// firewalld's error code (`ZONE_ALREADY_SET`, `INVALID_ZONE`): it
    /// answers every refusal with the one D-Bus error
    /// `org.fedoraproject.FirewallD1.Exception`, the code leading the
    /// message (`INVALID_ZONE: nozone`).
    pub fn firewalld_code(&self) -> Option<&str> {
        let (name, message) = self.dbus.as_deref()?;
        if name != FIREWALLD_EXCEPTION {
            return None;
        }
        let code = message.split(':').next().unwrap_or_default();
        (!code.is_empty()).then_some(code)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the backend (any backend, for [`ErrorKind::NoBackend`]) is
    /// unusable here, as opposed to a usable one failing.
    pub fn is_unavailable(&self) -> bool {
        matches!(self.kind, ErrorKind::Unavailable(_) | ErrorKind::NoBackend)
    }

    /// Prefix the message with what the caller was doing; the kind stays.
    pub fn context(mut self, what: impl fmt::Display) -> Error {
        self.msg = format!("{what}: {}", self.msg);
        self
    }

    pub fn message(&self) -> &str {
        &self.msg
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Error {}

/// nf_tables failures keep their kind: a kernel without nf_tables is
/// [`ErrorKind::Unavailable`]`(Nftables)`.
impl From<cni_net::Error> for Error {
    fn from(e: cni_net::Error) -> Error {
        if e.is_nft_unavailable() {
            Error::unavailable(Backend::Nftables, e.to_string())
        } else {
            Error::failed(e.to_string())
        }
    }
}

/// Independent failures (teardown of several rule sets) reported together:
/// the messages joined with `; `, the first error's kind.
pub fn join(errors: Vec<Error>) -> Result<()> {
    let joined = errors.into_iter().reduce(|mut all, e| {
        all.msg = format!("{}; {}", all.msg, e.msg);
        all
    });
    joined.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_survive_context_and_conversion() {
        let n = cni_net::Error::nft_unavailable(
            "open netfilter netlink socket",
            cni_net::Errno::EPROTONOSUPPORT,
        );
        let e = Error::from(n).context("list rules");
        assert_eq!(e.kind(), ErrorKind::Unavailable(Backend::Nftables));
        assert!(e.is_unavailable());
        assert_eq!(
            e.to_string(),
            "list rules: open netfilter netlink socket: protocol not supported"
        );
        let f = Error::from(cni_net::Error::errno(
            "add rule inet t c",
            cni_net::Errno::ENOENT,
        ));
        assert_eq!(f.kind(), ErrorKind::Failed);
        assert!(!f.is_unavailable());
    }

    #[test]
    fn no_backend_names_every_attempt() {
        let e = Error::no_backend(&[
            (
                Backend::Iptables,
                Error::unavailable(Backend::Iptables, "a"),
            ),
            (
                Backend::Nftables,
                Error::unavailable(Backend::Nftables, "b"),
            ),
        ]);
        assert_eq!(
            e.to_string(),
            "no firewall backend is usable (iptables: a; nftables: b)"
        );
        assert_eq!(e.kind(), ErrorKind::NoBackend);
    }

    #[test]
    fn join_keeps_every_message_and_the_first_kind() {
        assert_eq!(join(vec![]), Ok(()));
        let e = join(vec![Error::invalid("a"), Error::failed("b")]).unwrap_err();
        assert_eq!((e.kind(), e.message()), (ErrorKind::Invalid, "a; b"));
    }
}
