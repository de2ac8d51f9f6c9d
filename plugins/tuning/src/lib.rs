//! `tuning`: the chained CNI plugin that changes a container interface's
//! link attributes (MAC, MTU, promiscuous and all-multicast mode, queue
//! length) and network sysctls inside the container's namespace, saving
//! the original link attributes so that DEL restores them. Compatible with
//! the reference Go plugin: same keys, same messages, and the same backup
//! files, so either plugin restores what the other changed.
//!
//! Data path: skel → [`add`], [`del`], [`check`], [`gc`] → [`config`]
//! (Go-rules decoding, precedence, validation into a [`config::Plan`]),
//! [`allowlist`] (with [`regexp`], a small RE2 subset), [`sysctl`]
//! (key-to-file rule, writes inside the namespace), [`link`] (attributes
//! through `cni-net`), [`backup`] (the saved-state file), [`mac`] (Go's
//! MAC syntax); [`error`] maps our errors to CNI codes.

pub mod add;
pub mod allowlist;
pub mod backup;
pub mod check;
pub mod config;
pub mod del;
pub mod error;
pub mod gc;
pub mod link;
pub mod mac;
#[cfg(test)]
mod proptests;
pub mod regexp;
pub mod sysctl;

/// The plugin, for `skel::plugin_main!`: in the container's namespace
/// (the Go plugin's DEL succeeds on a path that is no namespace).
pub const PLUGIN: cni_attach::Chained<true> = cni_attach::Chained {
    name: "tuning",
    since: "",
    add: add::add,
    del: del::del,
    check: check::check,
    status: cni_attach::plugin::nothing,
    gc: gc::gc,
};
