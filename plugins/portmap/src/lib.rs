//! The `portmap` CNI plugin: host ports forwarded to a container, chained
//! after the plugin that made its interface (bridge, ptp). For each port
//! mapping of `runtimeConfig.portMappings` and each container address
//! (the first IPv4 and IPv6 of `prevResult`), traffic to the host port on
//! any local address (or `hostIP` only) is DNAT'ed to the container, from
//! outside, from the host itself (also through 127.0.0.1) and from
//! containers, the container itself included (hairpin masquerade).
//!
//! Behaviour, objects and messages follow the reference Go plugin
//! (`plugins/meta/portmap`, v1.9.1), so a node can switch suites with
//! live containers and either suite removes the other's rules. Fixed:
//! a failed ADD undoes what it did; DEL also removes the UDP conntrack
//! entries of the removed mappings (#1190) and works without mappings
//! when ADD left a record (#752, #683); bad ports, protocols and
//! addresses are refused before anything changes; GC and STATUS exist.
//!
//! Modules: [`config`] (stdin, validation, container addresses), [`add`],
//! [`del`], [`check`], [`gc`] (GC and STATUS), the backends [`iptables`]
//! and [`nft`] (rules of `cni-firewall`'s transports), [`conntrack`]
//! (UDP entries through `cni-net`), [`record`] (what ADD installed, per
//! attachment).

pub mod add;
pub mod check;
pub mod config;
pub mod conntrack;
pub mod del;
pub mod gc;
pub mod iptables;
pub mod nft;
#[cfg(test)]
mod proptests;
pub mod record;

/// The plugin, for `skel::plugin_main!`.
pub const PLUGIN: cni_attach::Chained<false> = cni_attach::Chained {
    name: "portmap",
    since: "",
    add: add::add,
    del: del::del,
    check: check::check,
    status: gc::status,
    gc: gc::gc,
};
