//! Backend selection, in one place, with the reference's rules for each
//! consumer:
//!
//! - ipmasq (bridge, ptp; `ipMasqBackend`): `iptables`, `nftables`, or
//!   unset = auto ([`parse_ipmasq`], [`ipmasq`]);
//! - portmap (`backend`), with its check that the configuration holds no
//!   options of the other backend ([`portmap`]);
//! - the firewall plugin (`backend`): `firewalld` when its D-Bus name has
//!   an owner on the system bus ([`crate::firewalld::running`]), else
//!   iptables; plus our own `nftables` ([`firewall`]).
//!
//! Auto follows the reference (`pkg/utils/netfilter.go`): iptables when
//! iptables is usable, else nftables when nf_tables is usable. "Usable" is
//! decided without starting a process ([`System`]):
//!
//! - iptables: `iptables-restore`, the tool every write goes through, is a
//!   file in a `PATH` directory (the reference runs `iptables --version`
//!   and `iptables -S INPUT 1`);
//! - nftables: the kernel accepts a check-only nf_tables transaction
//!   creating `ip supports_nftables_test` on the netlink socket (what the
//!   reference asks `nft --check`); nothing is created.
//!
//! When no backend is usable the error names each one tried and why it
//! failed ([`crate::ErrorKind::NoBackend`]); the reference picks iptables
//! then and fails on its first `iptables` call. DEL, CHECK and GC with the
//! backend unset look at every backend ([`Scope::Every`]), since the rules
//! may have been made by another version or configuration.

use std::cell::OnceCell;
use std::fmt;

use cni_net::Netlink;

use crate::backend::Backend;
use crate::error::{Error, Result};

/// Which backends DEL, CHECK and GC look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The configured backend only.
    Only(Backend),
    /// Every backend (the backend is unset): the rules may have been made
    /// by another version or configuration. One that is unusable here is
    /// skipped, since nothing can have been installed through it.
    Every,
}

impl Scope {
    /// The scope for a configured backend (`None`: unset).
    pub fn of(configured: Option<Backend>) -> Scope {
        configured.map_or(Scope::Every, Scope::Only)
    }

    pub fn includes(self, b: Backend) -> bool {
        match self {
            Scope::Only(o) => o == b,
            Scope::Every => true,
        }
    }
}

/// Whether each backend can be used on this node. [`System`] asks the
/// node; tests give fixed answers.
pub trait Probe {
    /// `Ok` when iptables is usable, else why not
    /// ([`crate::ErrorKind::Unavailable`]).
    fn iptables(&self) -> Result<()>;
    /// `Ok` when nf_tables is usable, else why not.
    fn nftables(&self) -> Result<()>;
    /// Whether firewalld's D-Bus name has an owner.
    fn firewalld(&self) -> bool;
}

/// The node's answers, each asked at most once (see the module overview
/// for what is asked). firewalld is asked on the system bus
/// ([`crate::firewalld::running`]), only by the firewall plugin's
/// selection; [`System::with_firewalld`] asks another function instead.
pub struct System<'a> {
    nl: &'a Netlink,
    firewalld: Option<&'a dyn Fn() -> bool>,
    iptables: OnceCell<Result<()>>,
    nftables: OnceCell<Result<()>>,
    running: OnceCell<bool>,
}

impl<'a> System<'a> {
    /// Probes in the namespace of `nl` (the plugin's host namespace).
    pub fn new(nl: &'a Netlink) -> System<'a> {
        System {
            nl,
            firewalld: None,
            iptables: OnceCell::new(),
            nftables: OnceCell::new(),
            running: OnceCell::new(),
        }
    }

    /// Ask `running` whether firewalld runs (a bus other than the system
    /// bus, a test's fixed answer).
    pub fn with_firewalld(mut self, running: &'a dyn Fn() -> bool) -> System<'a> {
        self.firewalld = Some(running);
        self
    }
}

impl fmt::Debug for System<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("System")
            .field("iptables", &self.iptables.get())
            .field("nftables", &self.nftables.get())
            .finish()
    }
}

impl Probe for System<'_> {
    fn iptables(&self) -> Result<()> {
        self.iptables.get_or_init(crate::iptables::usable).clone()
    }

    fn nftables(&self) -> Result<()> {
        self.nftables
            .get_or_init(|| crate::nft::usable(self.nl))
            .clone()
    }

    fn firewalld(&self) -> bool {
        *self.running.get_or_init(|| match self.firewalld {
            Some(f) => f(),
            None => crate::firewalld::running(),
        })
    }
}

/// `ipMasqBackend` (bridge, ptp): `iptables`, `nftables`, or unset.
pub fn parse_ipmasq(value: Option<&str>) -> Result<Option<Backend>> {
    let Some(name) = value else {
        return Ok(None);
    };
    match name.parse() {
        Ok(b @ (Backend::Iptables | Backend::Nftables)) => Ok(Some(b)),
        _ => Err(Error::invalid(format!(
            "unknown ipmasq backend {}",
            skel::gojson::quote(name)
        ))),
    }
}

/// The ipmasq backend for ADD: the configured one, or auto.
pub fn ipmasq(configured: Option<Backend>, probe: &dyn Probe) -> Result<Backend> {
    match configured {
        Some(b) => Ok(b),
        None => auto(probe),
    }
}

/// iptables when usable, else nftables when usable, else an error naming
/// both.
fn auto(probe: &dyn Probe) -> Result<Backend> {
    let ipt = match probe.iptables() {
        Ok(()) => return Ok(Backend::Iptables),
        Err(e) => e,
    };
    match probe.nftables() {
        Ok(()) => Ok(Backend::Nftables),
        Err(nft) => Err(Error::no_backend(&[
            (Backend::Iptables, ipt),
            (Backend::Nftables, nft),
        ])),
    }
}

/// The portmap options that belong to one backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct PortmapOptions<'a> {
    /// `externalSetMarkChain` is set (iptables only).
    pub external_set_mark_chain: bool,
    /// `conditionsV4`: iptables conditions when the first token starts
    /// with `-` or `!`, nftables conditions otherwise.
    pub conditions_v4: &'a [String],
    pub conditions_v6: &'a [String],
}

impl PortmapOptions<'_> {
    /// The option names of each backend, in the reference's order.
    fn of(&self, b: Backend) -> Vec<&'static str> {
        let mut out = Vec::new();
        if b == Backend::Iptables && self.external_set_mark_chain {
            out.push("externalSetMarkChain");
        }
        for (name, conds) in [
            ("conditionsV4", self.conditions_v4),
            ("conditionsV6", self.conditions_v6),
        ] {
            if conditions_backend(conds) == Some(b) {
                out.push(name);
            }
        }
        out
    }

    fn any(&self) -> bool {
        !self.of(Backend::Iptables).is_empty() || !self.of(Backend::Nftables).is_empty()
    }
}

/// The backend a condition list is written for (`None` when empty): the
/// first token of an iptables condition starts with `-` or `!`.
pub fn conditions_backend(conds: &[String]) -> Option<Backend> {
    let first = conds.first().filter(|c| !c.is_empty())?;
    Some(if first.starts_with(['-', '!']) {
        Backend::Iptables
    } else {
        Backend::Nftables
    })
}

/// portmap's `backend` (`None`: unset), checked as the reference does:
/// the configuration must hold no option of the other backend (`nftables
/// backend was requested but configuration contains iptables-specific
/// options [externalSetMarkChain]`), then the name must be known
/// (`unrecognized backend "x"`). Auto is decided only when an option
/// depends on it or the caller needs it; call with `need` false to
/// validate a call that installs nothing (no port mappings).
pub fn portmap(
    configured: Option<&str>,
    opts: &PortmapOptions<'_>,
    need: bool,
    probe: &dyn Probe,
) -> Result<Option<Backend>> {
    let requested = match configured {
        Some(name) => name.to_string(),
        None if !need && !opts.any() => return Ok(None),
        None => auto(probe)?.to_string(),
    };
    let parsed = requested.parse::<Backend>();
    let wrong = if parsed == Ok(Backend::Iptables) {
        Backend::Nftables
    } else {
        Backend::Iptables
    };
    let names = opts.of(wrong);
    if !names.is_empty() {
        return Err(Error::invalid(format!(
            "{requested} backend was requested but configuration contains {wrong}-specific options [{}]",
            names.join(" ")
        )));
    }
    match parsed {
        Ok(b @ (Backend::Iptables | Backend::Nftables)) => Ok(Some(b)),
        _ => Err(Error::invalid(format!(
            "unrecognized backend {}",
            skel::gojson::quote(&requested)
        ))),
    }
}

/// The firewall plugin's `backend`: `iptables`, `firewalld` and (ours)
/// `nftables` as named; anything else, as in the reference, means auto:
/// firewalld when it is running, else iptables when usable, else
/// nftables when usable (the reference stops at iptables).
pub fn firewall(configured: Option<&str>, probe: &dyn Probe) -> Result<Backend> {
    match configured.map(str::parse) {
        Some(Ok(b)) => Ok(b),
        _ if probe.firewalld() => Ok(Backend::Firewalld),
        _ => auto(probe),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use std::cell::Cell;

    /// Fixed answers, counting how often each was asked.
    #[derive(Default)]
    struct Fake {
        iptables: bool,
        nftables: bool,
        firewalld: bool,
        asked: Cell<u32>,
    }

    impl Fake {
        fn new(iptables: bool, nftables: bool) -> Fake {
            Fake {
                iptables,
                nftables,
                ..Fake::default()
            }
        }
    }

    /// `Ok`, or the unavailable error a node without `b` gives.
    fn answer(usable: bool, b: Backend, why: &str) -> Result<()> {
        match usable {
            true => Ok(()),
            false => Err(Error::unavailable(b, why)),
        }
    }

    impl Probe for Fake {
        fn iptables(&self) -> Result<()> {
            self.asked.set(self.asked.get() + 1);
            let why = "exec: \"iptables-restore\": executable file not found in $PATH";
            answer(self.iptables, Backend::Iptables, why)
        }
        fn nftables(&self) -> Result<()> {
            self.asked.set(self.asked.get() + 1);
            let why = "open netfilter netlink socket: protocol not supported";
            answer(self.nftables, Backend::Nftables, why)
        }
        fn firewalld(&self) -> bool {
            self.firewalld
        }
    }

    const NONE_WORKS: &str = "no firewall backend is usable (iptables: exec: \"iptables-restore\": executable file not found in $PATH; nftables: open netfilter netlink socket: protocol not supported)";

    #[test]
    fn ipmasq_values() {
        assert_eq!(parse_ipmasq(None), Ok(None));
        assert_eq!(parse_ipmasq(Some("iptables")), Ok(Some(Backend::Iptables)));
        assert_eq!(parse_ipmasq(Some("nftables")), Ok(Some(Backend::Nftables)));
        for bad in ["pf", "", "NFTABLES", "firewalld"] {
            let e = parse_ipmasq(Some(bad)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Invalid);
            assert_eq!(e.to_string(), format!("unknown ipmasq backend {bad:?}"));
        }
    }

    #[test]
    fn ipmasq_auto_prefers_iptables() {
        let pick = |i, n| ipmasq(None, &Fake::new(i, n));
        assert_eq!(pick(true, true), Ok(Backend::Iptables));
        assert_eq!(pick(true, false), Ok(Backend::Iptables));
        assert_eq!(pick(false, true), Ok(Backend::Nftables));
        let e = pick(false, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoBackend);
        assert_eq!(e.to_string(), NONE_WORKS);
        // A configured backend is taken as is, without asking the node.
        let f = Fake::new(false, false);
        assert_eq!(ipmasq(Some(Backend::Nftables), &f), Ok(Backend::Nftables));
        assert_eq!(ipmasq(Some(Backend::Iptables), &f), Ok(Backend::Iptables));
        assert_eq!(f.asked.get(), 0);
        // Auto with iptables usable never probes nf_tables.
        let f = Fake::new(true, false);
        ipmasq(None, &f).unwrap();
        assert_eq!(f.asked.get(), 1);
    }

    #[test]
    fn scope() {
        assert_eq!(Scope::of(None), Scope::Every);
        let s = Scope::of(Some(Backend::Nftables));
        assert!(s.includes(Backend::Nftables) && !s.includes(Backend::Iptables));
        assert!(Scope::Every.includes(Backend::Iptables));
    }

    fn conds(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn portmap_rules() {
        let both = Fake::new(true, true);
        let none = PortmapOptions::default();
        let pm = |b: Option<&str>, o: &PortmapOptions, p: &Fake| portmap(b, o, true, p);
        assert_eq!(pm(None, &none, &both), Ok(Some(Backend::Iptables)));
        assert_eq!(
            pm(None, &none, &Fake::new(false, true)),
            Ok(Some(Backend::Nftables))
        );
        assert_eq!(
            pm(Some("nftables"), &none, &both),
            Ok(Some(Backend::Nftables))
        );
        let e = pm(Some("pf"), &none, &both).unwrap_err();
        assert_eq!(e.to_string(), "unrecognized backend \"pf\"");
        assert_eq!(e.kind(), ErrorKind::Invalid);
        let e = pm(None, &none, &Fake::new(false, false)).unwrap_err();
        assert_eq!(e.to_string(), NONE_WORKS);

        let ipt4 = conds(&["!", "-s", "192.0.2.0/24"]);
        let ipt6 = conds(&["-s", "fd40::/64"]);
        let nft4 = conds(&["ip", "saddr", "192.0.2.0/24"]);
        let ipt_opts = PortmapOptions {
            external_set_mark_chain: true,
            conditions_v4: &ipt4,
            conditions_v6: &ipt6,
        };
        let e = pm(Some("nftables"), &ipt_opts, &both).unwrap_err();
        assert_eq!(
            e.to_string(),
            "nftables backend was requested but configuration contains iptables-specific options [externalSetMarkChain conditionsV4 conditionsV6]"
        );
        // Auto resolves first, then validates (nft-only node).
        let e = pm(None, &ipt_opts, &Fake::new(false, true)).unwrap_err();
        assert!(e.to_string().starts_with("nftables backend was requested"));
        assert_eq!(pm(None, &ipt_opts, &both), Ok(Some(Backend::Iptables)));
        let nft_opts = PortmapOptions {
            conditions_v4: &nft4,
            ..Default::default()
        };
        let e = pm(None, &nft_opts, &both).unwrap_err();
        assert_eq!(
            e.to_string(),
            "iptables backend was requested but configuration contains nftables-specific options [conditionsV4]"
        );
        // An unknown name is checked against the iptables options first.
        let e = pm(Some("pf"), &ipt_opts, &both).unwrap_err();
        assert!(e.to_string().starts_with(
            "pf backend was requested but configuration contains iptables-specific options"
        ));
        let e = pm(Some("pf"), &nft_opts, &both).unwrap_err();
        assert_eq!(e.to_string(), "unrecognized backend \"pf\"");
        // Empty condition lists, or an empty first token, belong to no one.
        let empty = conds(&[""]);
        let o = PortmapOptions {
            conditions_v4: &empty,
            ..Default::default()
        };
        assert_eq!(pm(Some("nftables"), &o, &both), Ok(Some(Backend::Nftables)));
    }

    #[test]
    fn portmap_without_need_asks_nothing() {
        let f = Fake::new(false, false);
        let none = PortmapOptions::default();
        assert_eq!(portmap(None, &none, false, &f), Ok(None));
        assert_eq!(f.asked.get(), 0);
        assert_eq!(
            portmap(Some("iptables"), &none, false, &f),
            Ok(Some(Backend::Iptables))
        );
        assert_eq!(f.asked.get(), 0);
    }

    #[test]
    fn firewall_rules() {
        let mut f = Fake::new(true, true);
        for (name, b) in [
            ("iptables", Backend::Iptables),
            ("firewalld", Backend::Firewalld),
            ("nftables", Backend::Nftables),
        ] {
            assert_eq!(firewall(Some(name), &f), Ok(b));
        }
        assert_eq!(firewall(None, &f), Ok(Backend::Iptables));
        assert_eq!(firewall(Some("pf"), &f), Ok(Backend::Iptables));
        f.firewalld = true;
        assert_eq!(firewall(None, &f), Ok(Backend::Firewalld));
        assert_eq!(firewall(Some("pf"), &f), Ok(Backend::Firewalld));
        assert_eq!(firewall(Some("iptables"), &f), Ok(Backend::Iptables));
        assert_eq!(
            firewall(None, &Fake::new(false, true)),
            Ok(Backend::Nftables)
        );
        let e = firewall(None, &Fake::new(false, false)).unwrap_err();
        assert_eq!(e.to_string(), NONE_WORKS);
    }
}
