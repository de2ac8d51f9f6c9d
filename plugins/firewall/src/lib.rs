//! The `firewall` CNI plugin, chained after bridge (or ptp): lets the
//! container's forwarded traffic through the host's `FORWARD` chain (a
//! restrictive one, e.g. Docker's policy DROP: outgoing traffic and the
//! replies to it; new inbound connections are the admin's to allow), or
//! puts its addresses into a firewalld zone; optionally isolates the
//! bridge (`ingressPolicy`).
//!
//! Behaviour, objects and messages follow the reference Go plugin
//! (`plugins/meta/firewall`, v1.9.1): the iptables rules are the
//! reference's, byte for byte, so a node can switch suites with live
//! containers and either suite removes the other's rules. Ours besides:
//! an nftables backend ([`nft`]), DEL without `prevResult` (a record per
//! attachment, [`record`]), GC and STATUS ([`gc`]), a CHECK that changes
//! nothing and checks the bridge rules too, validation before any change
//! and a failed ADD undone.
//!
//! Modules: [`config`], [`add`], [`del`], [`check`], [`gc`], the
//! backends [`iptables`], [`nft`] and [`firewalld`], [`record`].

pub mod add;
pub mod check;
pub mod config;
pub mod del;
pub mod firewalld;
pub mod gc;
pub mod iptables;
pub mod nft;
#[cfg(test)]
mod proptests;
pub mod record;

use skel::{CmdArgs, Outcome, Reply};

/// The plugin as skel sees it.
pub struct Firewall;

impl skel::Plugin for Firewall {
    /// `CNI firewall plugin v1.9.1+cni-rs.<ours>`: nerdctl reads it to
    /// decide which `ingressPolicy` values it may use (`isolated` needs
    /// v1.7.1 or later).
    fn about(&self) -> String {
        skel::about("firewall")
    }

    /// 0.4.0 and later, as the reference (`VersionsStartingFrom("0.4.0")`).
    fn versions(&self) -> Vec<String> {
        skel::version::starting_from("0.4.0")
    }

    fn add(&self, args: &CmdArgs) -> Outcome {
        Ok(Reply::Result(add::add(args)?))
    }

    fn del(&self, args: &CmdArgs) -> Outcome {
        del::del(args)?;
        Ok(Reply::None)
    }

    fn check(&self, args: &CmdArgs) -> Outcome {
        check::check(args)?;
        Ok(Reply::None)
    }

    fn status(&self, args: &CmdArgs) -> Outcome {
        gc::status(args)?;
        Ok(Reply::None)
    }

    fn gc(&self, args: &CmdArgs) -> Outcome {
        gc::gc(args)?;
        Ok(Reply::None)
    }
}
