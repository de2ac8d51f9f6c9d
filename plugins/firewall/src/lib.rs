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

/// The plugin, for `skel::plugin_main!`. Its version,
/// `CNI firewall plugin v1.9.1+cni-rs.<ours>`, is read by nerdctl to
/// decide which `ingressPolicy` values it may use (`isolated` needs v1.7.1
/// or later). 0.4.0 and later, as the reference
/// (`VersionsStartingFrom("0.4.0")`).
pub const PLUGIN: cni_attach::Chained<false> = cni_attach::Chained {
    name: "firewall",
    since: "0.4.0",
    add: add::add,
    del: del::del,
    check: check::check,
    status: gc::status,
    gc: gc::gc,
};
