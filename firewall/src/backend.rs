//! The firewall backends, named as the configurations and the records name
//! them (`iptables`, `nftables`, `firewalld`): parsed in one place
//! ([`Backend`]'s `FromStr`), printed in one ([`Backend`]'s `Display`).
//! Which names a setting accepts, and what it does with the others, is
//! each consumer's rule ([`crate::select`]).

use std::fmt;
use std::str::FromStr;

/// A firewall backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    Iptables,
    Nftables,
    Firewalld,
}

impl Backend {
    const ALL: [(Backend, &'static str); 3] = [
        (Backend::Iptables, "iptables"),
        (Backend::Nftables, "nftables"),
        (Backend::Firewalld, "firewalld"),
    ];

    /// The configuration value: `iptables`, `nftables`, `firewalld`.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(b, _)| *b == self)
            .map_or("", |(_, n)| n)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no backend's (`unknown firewall backend "x"`); each
/// consumer words its own refusal, or takes it for "auto".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBackend(pub String);

impl fmt::Display for UnknownBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown firewall backend {}",
            skel::gojson::quote(&self.0)
        )
    }
}

impl std::error::Error for UnknownBackend {}

/// A backend by its exact name.
impl FromStr for Backend {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<Backend, UnknownBackend> {
        Self::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(b, _)| *b)
            .ok_or_else(|| UnknownBackend(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        for (b, n) in Backend::ALL {
            assert_eq!(n.parse::<Backend>(), Ok(b));
            assert_eq!(b.to_string(), n);
        }
        for bad in ["", "IPTABLES", "nft", "iptables ", "auto"] {
            assert_eq!(bad.parse::<Backend>(), Err(UnknownBackend(bad.into())));
        }
        assert_eq!(
            UnknownBackend("x".into()).to_string(),
            r#"unknown firewall backend "x""#
        );
    }
}
