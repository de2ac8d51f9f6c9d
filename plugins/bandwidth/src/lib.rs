//! The `bandwidth` CNI plugin: limits a container's traffic with token
//! bucket filters, chained after a plugin that made a veth pair (bridge,
//! ptp). Traffic into the container is shaped by a `tbf` on the host end
//! of the veth; traffic out of it is redirected from the host end's
//! ingress to an IFB device (`bwp` + 12 hex digits, the reference's name)
//! and shaped there.
//!
//! Behaviour follows the reference Go plugin (`plugins/meta/bandwidth`):
//! the same keys, precedence, validation messages, tc objects and numbers,
//! so either suite's CHECK and DEL work on the other's objects. Fixed: a
//! qdisc of another tool in the way is named instead of "file exists", a
//! retried ADD succeeds, a failed ADD removes what it made, no panic
//! without `prevResult`, CHECK verifies what it claims to, GC exists.
//!
//! Modules: [`config`] (stdin), [`add`], [`shape`] (each tc object,
//! ownership and undo), [`veth`] (the host end), [`check`], [`del`] (DEL
//! and GC), [`ifb`] (the IFB device's name and ownership alias). All tc
//! and netlink work goes through `cni-net`.

pub mod add;
pub mod check;
pub mod config;
pub mod del;
pub mod ifb;
pub mod shape;
pub mod veth;

pub use cni_attach::Error;

/// The plugin, for `skel::plugin_main!`: in the container's namespace
/// (its DEL succeeds on a path that is no namespace, as the Go plugin's);
/// 0.3.0 and later, as the reference (`VersionsStartingFrom("0.3.0")`).
pub const PLUGIN: cni_attach::Chained<true> = cni_attach::Chained {
    name: "bandwidth",
    since: "0.3.0",
    add: add::add,
    del: del::del,
    check: check::check,
    status: cni_attach::plugin::nothing,
    gc: del::gc,
};
