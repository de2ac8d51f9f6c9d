//! `vrf`: the chained CNI plugin that puts a container's interface into a
//! VRF device (a routing domain with a table of its own) inside the
//! container's namespace. The VRF `vrfname` is made on first use, with
//! `table` or the first free table; later attachments with the same name
//! join it. The interface keeps its addresses (IPv6 ones the kernel drops
//! on enslavement are added again) and its routes are copied into the
//! VRF's table (reference v1.9.1, #874). DEL releases the interface and
//! removes the VRF when its last interface left.
//!
//! Behaviour follows the reference Go plugin (`plugins/meta/vrf`): the same
//! keys, messages and devices. Fixed: DEL succeeds when the interface is
//! gone (and never releases an interface from another master), a failed
//! ADD undoes what it did, a repeated ADD of an interface already in its
//! VRF succeeds, routes are added to the VRF's table next to those of the
//! VRF's other interfaces instead of replacing them, and a new VRF's
//! table is also one no rule or route uses.
//!
//! Modules: [`config`] (stdin), [`add`], [`del`], [`check`].

pub mod add;
pub mod check;
pub mod config;
pub mod del;

pub use cni_attach::Error;

/// The plugin, for `skel::plugin_main!`: in the container's namespace;
/// 0.3.1 and later, as the reference (`VersionsStartingFrom("0.3.1")`).
pub const PLUGIN: cni_attach::Chained<true> = cni_attach::Chained {
    name: "vrf",
    since: "0.3.1",
    add: add::add,
    del: del::del,
    check: check::check,
    status: cni_attach::plugin::nothing,
    gc: cni_attach::plugin::nothing,
};

/// A netlink failure as the Go netlink library words it: the errno's text
/// alone (`operation not supported`).
pub(crate) fn bare(e: &cni_net::Error) -> String {
    match e.code() {
        Some(code) => cni_net::error::errno_text(code),
        None => e.to_string(),
    }
}

/// The VRF `name` in `nl`'s namespace: `None` when there is no such link,
/// the reference's error when it is not a VRF.
pub(crate) fn find_vrf(
    nl: &cni_net::Netlink,
    name: &str,
) -> Result<Option<(cni_net::Link, u32)>, Error> {
    match nl.find_link(name)? {
        None => Ok(None),
        Some(l) => match l.kind {
            cni_net::Kind::Vrf { table } => Ok(Some((l, table))),
            _ => Err(Error::internal(format!("Netlink {name} is not a VRF"))),
        },
    }
}
