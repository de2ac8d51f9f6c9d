//! `sbr`: the chained CNI plugin for source-based routing. For the
//! interface `CNI_IFNAME` of a container it adds a policy rule
//! `from <address> lookup <table>` per address and moves the interface's
//! routes from `main` into that table, so that replies leave by the
//! interface their request came in on, whatever the main table's default
//! route says. With `table` (v1.6) only the rules are added; `gateways`
//! and `addSourceHints` are upstream main's (PR #1217).
//!
//! Behaviour follows the reference Go plugin (`plugins/meta/sbr`): the same
//! keys, messages, rules and tables, and the same lock (an exclusive
//! `flock` on the namespace file), so either suite's calls exclude the
//! other's and each picks its table by scanning what the other made.
//! Fixed: an IPv4 table no longer gets the IPv6 routes, and an IPv6
//! default route via a link-local (or any off-prefix) gateway is moved
//! into the table instead of dropped (openshift/containernetworking-plugins
//! #222); the table is chosen against routes in every table, not only
//! `main`; a failed ADD undoes what it did; DEL also removes the table's
//! routes, and succeeds without a namespace; CHECK checks.
//!
//! Modules: [`config`] (stdin, address selection), [`table`] (which
//! table, which routes go into it), [`add`], [`del`], [`check`].

pub mod add;
pub mod check;
pub mod config;
pub mod del;
pub mod table;

pub use cni_attach::Error;

/// The plugin, for `skel::plugin_main!`: in the container's namespace,
/// every spec version (the reference's `version.All`).
pub const PLUGIN: cni_attach::Chained<true> = cni_attach::Chained {
    name: "sbr",
    since: "",
    add: add::add,
    del: del::del,
    check: check::check,
    status: cni_attach::plugin::nothing,
    gc: cni_attach::plugin::nothing,
};

/// Take the namespace file's exclusive `flock`, as the reference does on
/// the same file: concurrent sbr calls on one container (ours or the Go
/// plugin's) pick their tables one after the other. Bounded by
/// [`skel::deadline`]; released when the process exits.
pub fn lock(args: &skel::CmdArgs) -> Result<(), Error> {
    let ns = args.netns.file()?;
    skel::statefile::lock(ns)
        .map_err(|e| Error::internal(format!("lock {}: {e}", args.netns_path)))?;
    skel::failpoint::pass("sbr/locked");
    Ok(())
}
