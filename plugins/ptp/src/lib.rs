//! The `ptp` CNI plugin: a veth pair per container, routed through the
//! host instead of bridged. The container's addresses come from IPAM; the
//! gateway address sits on the host end, and the container reaches
//! everything, even its own subnet, via that gateway ([`p2p`]).
//!
//! Behaviour follows the reference Go plugin (`plugins/main/ptp`), with
//! its leaks and crash fixed: a failed ADD undoes what it did, DEL removes
//! masquerade rules even without the netns, an address without a gateway
//! is refused, GC exists.
//!
//! Modules: [`config`], [`add`], [`p2p`] (the point-to-point addressing
//! of both ends), [`del`], [`check`], [`gc`] (GC and STATUS), [`masq`]
//! (masquerade through `cni-firewall`). The veth pair, the container
//! interface's configuration and the error type are `cni-attach`'s, shared
//! with bridge; all namespace and netlink work goes through `cni-net`.

pub mod add;
pub mod check;
pub mod config;
pub mod del;
pub mod gc;
pub mod masq;
pub mod p2p;

pub use cni_attach::error;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Main = cni_attach::Main {
    name: "ptp",
    since: "",
    add: add::add,
    del: del::del,
    check: check::check,
    status: gc::status,
    gc: gc::gc,
};
