//! The `bridge` CNI plugin: attaches a container to a Linux bridge on the
//! host through a veth pair, optionally as the container's gateway with
//! IP masquerade, VLANs, hairpin/isolation and a MAC spoof check.
//!
//! Behaviour follows the reference Go plugin (`plugins/main/bridge`), with
//! its leaks fixed: a failed ADD undoes what it did, DEL removes
//! masquerade rules even without the netns, L2 CHECK works, GC exists.
//!
//! Modules: [`config`] (stdin keys and validation), [`add`], [`del`],
//! [`check`], [`gc`] (GC and STATUS), [`bridge`] (bridge device, gateway
//! addresses, VLAN gateway interface), [`container`] (addresses, routes and
//! sysctls inside the container), [`error`]. All namespace and netlink work
//! goes through `cni-net`; masquerade and spoof-check rules, and the choice
//! of their backend, through `cni-firewall`.

pub mod add;
pub mod bridge;
pub mod check;
pub mod config;
pub mod container;
pub mod del;
pub mod error;
pub mod gc;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Main = cni_attach::Main {
    name: "bridge",
    since: "",
    add: add::add,
    del: del::del,
    check: check::check,
    status: gc::status,
    gc: gc::gc,
};
